"""The GPU generations of the catalog (A100, H100, H800, H200) and the presets built from them: every GPU and NIC
entry carries every spec the mechanisms read, with the datasheets' figures where they tell generations apart; every
preset of a generation builds with its GPU and NIC on the topology; a malformed spec is refused naming its field."""
import pytest

from sim.core.errors import SpecError
from sim.fabric.catalog import SPECS, load_catalog, parse_catalog
from sim.fabric.spec import load_spec
from sim.fabric.topology import load_topology

GPU_KEYS = ("memory_gb", "memory_bandwidth_gbps", "bf16_tflops", "fp8_tflops", "tf32_tflops", "nvlink_gbps",
            "nvlink_generation", "nvls", "sms", "boost_clock_mhz", "power_w", "pcie_gen", "arch",
            "compute_capability")
NIC_KEYS = ("speed_gbps", "ports", "pcie_gen", "pcie_lanes", "transport")
GPUS = ("a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm-80gb", "h100-sxm-96gb", "h800-sxm-80gb", "h200-sxm-141gb")


def gpu(slug):
    return load_catalog().models["gpu"][slug].specs


def test_the_catalog_holds_the_generations():
    assert set(GPUS) <= set(load_catalog().models["gpu"])


@pytest.mark.parametrize("slug", sorted(load_catalog().models["gpu"]))
def test_every_gpu_has_every_spec(slug):
    specs = gpu(slug)
    assert set(GPU_KEYS) <= set(specs), set(GPU_KEYS) - set(specs)
    assert set(GPU_KEYS) == {"nvlink_gbps"} | set(SPECS["gpu"])      # the contract's keys are the parser's
    assert specs["arch"] in ("ampere", "hopper") and isinstance(specs["nvls"], bool)
    hopper = specs["arch"] == "hopper"
    assert specs["compute_capability"] == (90 if hopper else 80)
    assert specs["nvlink_generation"] == (4 if hopper else 3) and specs["pcie_gen"] == (5 if hopper else 4)
    assert specs["nvls"] == hopper                  # NVLink SHARP: Hopper's 3rd-gen NVSwitch only
    assert (specs["fp8_tflops"] > 0) == hopper      # Ampere has no FP8 tensor cores
    # dense peaks: TF32 half of BF16 on both generations, FP8 twice BF16 on Hopper
    assert specs["tf32_tflops"] == pytest.approx(specs["bf16_tflops"] / 2, rel=0.01)
    if hopper:
        assert specs["fp8_tflops"] == pytest.approx(2 * specs["bf16_tflops"], rel=0.01)
    # the dense BF16 peak is SMs x tensor FLOP per clock x the clock it is quoted at: 2,048 per SM on Ampere,
    # 4,096 on Hopper
    per_sm = 4096 if hopper else 2048
    assert specs["sms"] * per_sm * specs["boost_clock_mhz"] * 1e6 == pytest.approx(specs["bf16_tflops"] * 1e12,
                                                                                     rel=0.01)
    # HBM: a sane ratio of bandwidth to capacity, 10 to 100 GB/s per GB
    assert 10 <= specs["memory_bandwidth_gbps"] / 8 / specs["memory_gb"] <= 100
    assert specs["power_w"] == (700 if hopper else 400)


@pytest.mark.parametrize("slug, nvlink_gb_s", [("a100-sxm-40gb", 600), ("a100-sxm-80gb", 600),
                                               ("h100-sxm-80gb", 900), ("h100-sxm-96gb", 900),
                                               ("h800-sxm-80gb", 400), ("h200-sxm-141gb", 900)])
def test_nvlink_per_gpu_as_the_datasheets_give_it(slug, nvlink_gb_s):
    assert gpu(slug)["nvlink_gbps"] == nvlink_gb_s * 8        # Gb/s, both directions per GPU


@pytest.mark.parametrize("slug, memory_gb, hbm_tb_s", [("a100-sxm-40gb", 40, 1.555), ("a100-sxm-80gb", 80, 2.039),
                                                       ("h100-sxm-80gb", 80, 3.35), ("h200-sxm-141gb", 141, 4.8)])
def test_memory_as_the_datasheets_give_it(slug, memory_gb, hbm_tb_s):
    assert gpu(slug)["memory_gb"] == memory_gb
    assert gpu(slug)["memory_bandwidth_gbps"] == pytest.approx(hbm_tb_s * 8000)


@pytest.mark.parametrize("slug", sorted(load_catalog().models["nic"]))
def test_every_nic_has_every_spec(slug):
    specs = load_catalog().models["nic"][slug].specs
    assert set(NIC_KEYS) <= set(specs), set(NIC_KEYS) - set(specs)
    assert specs["speed_gbps"] % specs["ports"] == 0
    # the host link carries the NIC's rate: a PCIe lane is about 16 Gb/s on Gen4, 32 on Gen5 (before encoding)
    assert specs["pcie_lanes"] * 8 * 2 ** (specs["pcie_gen"] - 3) >= specs["speed_gbps"]


# preset: (GPUs at least, GPU, backend NIC, per-GPU NIC rate Gb/s, NIC ports)
PRESETS = {"dgx-a100-superpod": (3072, "a100-sxm-80gb", "cx6-200g", 200, 1),
           "aws-p4d-pod": (512, "a100-sxm-40gb", "efa-p4d-50g", 50, 1),
           "dgx-h100-eos": (10752, "h100-sxm-80gb", "cx7-400g", 400, 1),
           "hgx-h800-pod": (2048, "h800-sxm-80gb", "cx7-400g", 400, 1),
           "hgx-h200-pod": (1024, "h200-sxm-141gb", "cx7-400g", 400, 1),
           "aws-p5-pod": (1024, "h100-sxm-80gb", "efa-p5-4x100g", 400, 4)}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_each_generation_preset_builds_with_its_gpu_and_nic(name):
    at_least, gpu_slug, nic_slug, nic_gbps, ports = PRESETS[name]
    spec = load_spec(name)
    assert spec.layout.gpus >= at_least and spec.layout.gpus_per_host == 8
    topo = load_topology(preset=name)[1]
    assert topo.n_gpus == spec.layout.gpus and topo.gpu_usable.all()
    assert topo.gpu_model["slug"] == gpu_slug and topo.nic_model["slug"] == nic_slug
    assert topo.nvlink_bandwidth == pytest.approx(gpu(gpu_slug)["nvlink_gbps"] * 1e9 / 8)
    assert topo.nic_bandwidth == pytest.approx(nic_gbps * 1e9 / 8) and topo.ports_per_nic == ports
    # one backend NIC per GPU, each on the fabric: every NIC port has a live uplink
    assert (topo.gpu_port_uplink >= 0).all()


def test_selene_and_eos_sizes():
    assert load_spec("dgx-a100-superpod").layout.hosts == 560        # Selene: 560 DGX A100
    assert load_spec("dgx-h100-eos").layout.gpus == 10752             # Eos's MLPerf Training v3.1 runs


def minimal(**gpu_specs):
    return {"gpu": {"g": {"vendor": "v", "name": "n", "nvlink_gbps": 1, **gpu_specs}}}


@pytest.mark.parametrize("specs, field, reason", [
    ({"nvls": "yes"}, "catalog.gpu.g.nvls", "must be true or false"),
    ({"nvls": 1}, "catalog.gpu.g.nvls", "must be true or false"),
    ({"arch": "volta"}, "catalog.gpu.g.arch", "must be one of ampere, hopper"),
    ({"fp8_tflops": -1}, "catalog.gpu.g.fp8_tflops", "a number of at least 0"),
    ({"tf32_tflops": "fast"}, "catalog.gpu.g.tf32_tflops", "a number of at least 1"),
    ({"tf32_tflops": float("nan")}, "catalog.gpu.g.tf32_tflops", "a number of at least 1"),
    ({"sms": 13.5}, "catalog.gpu.g.sms", "a whole number of at least 1"),
    ({"pcie_gen": True}, "catalog.gpu.g.pcie_gen", "a whole number of at least 1"),
])
def test_a_malformed_gpu_spec_is_refused_naming_its_field(specs, field, reason):
    with pytest.raises(SpecError) as info:
        parse_catalog(minimal(**specs))
    assert info.value.field == field and reason in str(info.value)


def test_a_malformed_nic_or_switch_spec_is_refused_naming_its_field():
    with pytest.raises(SpecError) as info:
        parse_catalog({"nic": {"n": {"vendor": "v", "name": "n", "speed_gbps": 400, "transport": "carrier pigeon"}}})
    assert info.value.field == "catalog.nic.n.transport"
    with pytest.raises(SpecError) as info:
        parse_catalog({"switch": {"s": {"vendor": "v", "name": "n", "ports": 64, "speed_gbps": 400,
                                        "modular": "no"}}})
    assert info.value.field == "catalog.switch.s.modular" and "true or false" in str(info.value)


@pytest.mark.parametrize("specs, field, reason", [
    ({"ordered_128b": "yes"}, "catalog.nic.n.ordered_128b", "must be true or false"),
    ({"net_latency_us": -1}, "catalog.nic.n.net_latency_us", "a number of at least 0"),
    ({"ofi_tuner": "p4d"}, "catalog.nic.n.ofi_tuner", "must be one of p5"),
    ({"ofi_tuner": "p5", "transport": "roce"}, "catalog.nic.n.ofi_tuner", 'transport "efa" only'),
    ({"ofi_tuner": "p5", "transport": None}, "catalog.nic.n.ofi_tuner", 'transport "efa" only'),
])
def test_a_malformed_network_plugin_key_is_refused_naming_its_field(specs, field, reason):
    nic = {"vendor": "v", "name": "n", "speed_gbps": 400, "transport": "efa", **specs}
    nic = {k: v for k, v in nic.items() if v is not None}
    with pytest.raises(SpecError) as info:
        parse_catalog({"nic": {"n": nic}})
    assert info.value.field == field and reason in str(info.value)


def test_the_generation_specs_are_optional_in_a_users_catalog_and_kept_when_given():
    assert parse_catalog(minimal()).models["gpu"]["g"].specs == {"nvlink_gbps": 1}
    specs = parse_catalog(minimal(nvls=False, fp8_tflops=0, tf32_tflops=156)).models["gpu"]["g"].specs
    assert specs["nvls"] is False and specs["fp8_tflops"] == 0 and specs["tf32_tflops"] == 156


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_each_generation_preset_has_power_models_at_its_gpus_tdp(name):
    # the power capability refuses a slug it has no model for: every device of these presets has one, and a GPU's
    # limits end at its catalog TDP
    from sim.power.devices import gpu_power, host_power, switch_power
    spec = load_spec(name)
    model = gpu_power(spec.layout.gpu)
    assert model.max_cap == model.at_cap == gpu(spec.layout.gpu)["power_w"]
    assert 0 < model.idle < model.wait < model.comm < model.memory < model.at_cap and model.min_cap < model.max_cap
    assert host_power(spec.layout.host_platform).other > 0
    for fabric in spec.fabrics:
        for tier in fabric.tiers:
            assert switch_power(tier.model) > 0
