"""Raw nccl-tests output, pasted or given whole (one or several logs, each binary, old and new column layouts), as the
calibration takes it: parsed into logs (sim.calibrate.nccltests.parse_logs), turned into nccl-tests entries
(sim.calibrate.measurements.raw_entries), the GPU checked against the cluster's, and run by the command line."""
import json
import tomllib

import pytest

from sim.calibrate.measurements import read_measurements
from sim.calibrate.nccltests import DEVICE_GPUS, LogError, gpu_slugs, is_log, parse_log, parse_logs
from sim.cli import main
from sim.core.errors import ParamError
from sim.fabric.catalog import CATALOG_PATH
from tests.sim.nccl_logs import log

SIZES = (1 << 20, 8 << 20, 64 << 20)


@pytest.mark.parametrize("binary, collective", [("all_reduce_perf", "allreduce"), ("all_gather_perf", "allgather"),
                                                ("reduce_scatter_perf", "reducescatter"),
                                                ("alltoall_perf", "alltoall")])
@pytest.mark.parametrize("layout", ["new", "noroot", "bare"])
def test_each_binary_in_each_layout(binary, collective, layout):
    text = log(binary, SIZES, layout=layout)
    [one] = parse_logs(text)
    assert one.collective == collective and one.binary == binary
    assert [r.size for r in one.rows] == list(SIZES) and {r.type for r in one.rows} == {"float"}
    assert one.rows[0].root == (-1 if layout == "new" else None)
    assert one.rows[0].redop == ({"all_reduce_perf": "sum", "reduce_scatter_perf": "sum"}.get(binary, "none")
                                 if layout != "bare" else "?")
    # both halves, read by the column header's names
    assert one.rows[1].time["in-place"] < one.rows[1].time["out-of-place"]
    assert one.n_ranks == 16 and one.ranks[8] == ("node0002", 0)
    assert one.gpu == "NVIDIA H100 80GB HBM3" and one.gpu_slugs == ("h100-sxm-80gb",)
    lines = text.splitlines()
    assert lines[one.rows[0].line - 1].strip().startswith(str(SIZES[0]))
    [e] = read_measurements(text)
    assert e.raw and e.values["collective"] == collective and e.values["gpus"] == 16
    assert e.values["sizes"] == ",".join(map(str, SIZES)) and e.name == f"{binary} line 1"


def test_the_ranks_when_the_log_has_no_rank_lines():
    """An old log under mpirun with -g 1 and no device report: the pasted mpirun -np line says how many ranked."""
    [one] = parse_logs(log("all_gather_perf", SIZES, layout="bare", rank_section=False))
    assert one.ranks == [] and one.gpu is None and one.launched == 16 and one.n_ranks == 16
    # without it, the log does not say: the hosts are asked for by name
    text = log("all_gather_perf", SIZES, layout="bare", rank_section=False).replace("mpirun -np 16 ", "")
    with pytest.raises(ParamError) as err:
        read_measurements(text)
    assert list(err.value.errors) == ["hosts"] and "does not say how many ranks ran" in err.value.errors["hosts"][0]
    [e] = read_measurements(text, hosts="demo-256.z00.r000.h0 slots=8\ndemo-256.z00.r001.h0 slots=8\n")
    assert "slots=8" in e.values["hosts"]
    # a log that does not name its binary: asked for, naming the line
    with pytest.raises(ParamError) as err:
        read_measurements("\n".join(text.splitlines()[1:]) + "\n", hosts="demo-256.z00.r000.h0 slots=8\n")
    assert err.value.errors["measurements"][0].startswith("line 1: the log from this line does not name its binary")


def test_several_logs_one_after_the_other():
    """Each its own collective, line numbers counted over the whole paste (the bug: all were merged into the
    first's)."""
    parts = [log("all_reduce_perf", SIZES), log("all_gather_perf", SIZES[:2], info=True),
             log("reduce_scatter_perf", SIZES, layout="noroot"), log("alltoall_perf", SIZES[1:], layout="bare")]
    text = "\n".join(parts)
    logs = parse_logs(text)
    assert [x.collective for x in logs] == ["allreduce", "allgather", "reducescatter", "alltoall"]
    assert [len(x.rows) for x in logs] == [3, 2, 3, 2]
    lines = text.splitlines()
    for x in logs:
        for r in x.rows:
            assert lines[r.line - 1].split()[0] == str(r.size)
    second = len(parts[0].splitlines()) + 2
    assert logs[1].first == second and lines[second - 1].startswith("# nccl-tests version")
    entries = read_measurements(text)
    assert [e.values["collective"] for e in entries] == ["allreduce", "allgather", "reducescatter", "alltoall"]
    assert [e.name for e in entries] == [f"{x.binary} line {x.first}" for x in logs]
    # one entry's log holds one log: two are refused there, naming the second's line
    with pytest.raises(LogError, match=f"line {second}: holds 2 logs"):
        parse_log(parts[0] + "\n" + parts[1])


def test_a_truncated_log_is_refused_naming_its_last_line():
    whole = log("all_reduce_perf", SIZES).splitlines()
    cut = whole[:-4]                                   # no footer: cut off after its last row
    n = len(cut)
    with pytest.raises(LogError, match=f"line {n}: truncated after line {n}"):
        parse_logs("\n".join(cut) + "\n")
    # the first of two logs cut off: named, not merged into the second
    text = "\n".join(cut[:-1]) + "\n" + log("all_gather_perf", SIZES)
    with pytest.raises(LogError, match=f"truncated after line {n - 1}"):
        parse_logs(text)
    # cut inside a row: the row is named
    with pytest.raises(LogError, match=f"line {n}: .* fields where the column header has"):
        parse_logs("\n".join(cut[:-1] + [cut[-1][:30]]) + "\n")
    # a second column header after the rows (two tables run together with no header line between)
    rows_only = [x for x in whole if not x.startswith("# Out") and not x.startswith("# Avg")
                 and not x.startswith("# Collective test concluded")]
    header = next(i for i, x in enumerate(whole) if "size" in x and "busbw" in x)
    with pytest.raises(LogError, match="a second column header"):
        parse_logs("\n".join(rows_only + whole[header:]) + "\n")


def test_sendrecv_is_refused_naming_the_line():
    text = log("all_reduce_perf", SIZES) + log("sendrecv_perf", SIZES)
    start = len(log("all_reduce_perf", SIZES).splitlines()) + 2
    with pytest.raises(LogError, match=f"line {start}: sendrecv_perf .* is not modelled"):
        parse_logs(text)
    with pytest.raises(ParamError) as err:
        read_measurements(text)
    assert err.value.errors["measurements"][0].startswith(f"line {start}: sendrecv_perf")


def test_other_bad_logs_name_the_line():
    with pytest.raises(LogError, match="line 2: broadcast_mpi_perf|line 2: .*not a collective"):
        parse_logs(log().replace("all_reduce_perf", "gather_perf"))
    mixed = log().replace("device  3 [0000:48:00] NVIDIA H100 80GB HBM3",
                          "device  3 [0000:48:00] NVIDIA A100-SXM4-80GB")
    with pytest.raises(LogError, match="line 9: rank 3 runs on 'NVIDIA A100-SXM4-80GB'"):
        parse_logs(mixed)
    with pytest.raises(LogError, match="a data row after the footer"):
        parse_logs(log() + "     1048576        262144     float     sum      -1    43.46   24.13   45.24       0    "
                           "43.24   24.25   45.46       0\n")


@pytest.mark.parametrize("name, slugs", [
    ("NVIDIA H100 80GB HBM3", ("h100-sxm-80gb",)), ("NVIDIA H100", ("h100-sxm-80gb", "h100-sxm-96gb")),
    ("NVIDIA A100-SXM4-40GB", ("a100-sxm-40gb",)), ("NVIDIA A100-SXM4-80GB", ("a100-sxm-80gb",)),
    ("NVIDIA H800", ("h800-sxm-80gb",)), ("NVIDIA H200", ("h200-sxm-141gb",)), ("NVIDIA H100 PCIe", ()),
    ("NVIDIA H100 NVL", ()), ("NVIDIA B200", ()), ("Tesla V100-SXM2-32GB", ()),
])
def test_gpu_names_map_to_the_catalog(name, slugs):
    assert gpu_slugs(name) == slugs


def test_the_gpu_table_names_catalog_slugs():
    with open(CATALOG_PATH, "rb") as f:
        catalog = tomllib.load(f)["gpu"]
    assert {s for slugs in DEVICE_GPUS.values() for s in slugs} <= set(catalog)


def test_measurements_files_and_logs_are_told_apart():
    assert is_log(log()) and not is_log('[[entry]]\nkind = "job"\nstep_time_s = 1\n')
    # a log inside a TOML file is the file's, not raw output
    text = 'log = """\n' + log() + '"""\nkind = "nccl-tests"\n'
    [e] = read_measurements("[[entry]]\n" + text)
    assert not e.raw and e.values["collective"] == "allreduce"
    with pytest.raises(ParamError) as err:
        read_measurements("[[entry]]\n" + text, hosts="demo-256.z00.r000.h0 slots=8\n")
    assert list(err.value.errors) == ["hosts"]


# ---------------------------------------------------------------------------------------------- command line
HOSTS = "demo-256.z00.r000.h0 slots=8\ndemo-256.z00.r001.h0 slots=8\n"


def test_the_command_line_takes_raw_logs(tmp_path, capsys):
    """--measurements with a raw log, --log repeated, --hostfile: the collectives each log names, its rows."""
    a, b = tmp_path / "ar.log", tmp_path / "ag.log"
    a.write_text(log("all_reduce_perf", SIZES))
    b.write_text(log("all_gather_perf", SIZES[:2], layout="noroot") + log("alltoall_perf", SIZES[:1]))
    hosts = tmp_path / "hosts.txt"
    hosts.write_text(HOSTS)
    assert main(["calibrate", "--preset", "demo-256", "--log", str(a), "--log", str(b), "--hostfile", str(hosts),
                 "--fit", "base_rtt_us", "--json", "-q"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [r["label"] for r in d["entries"]] == ["time 1M", "time 8M", "time 64M", "time 1M", "time 8M", "time 1M"]
    second = len(a.read_text().splitlines()) + 1
    third = second + len(log("all_gather_perf", SIZES[:2], layout="noroot").splitlines())
    assert {r["name"] for r in d["entries"]} == {"all_reduce_perf line 1", f"all_gather_perf line {second}",
                                                  f"alltoall_perf line {third}"}
    assert all(r["before"]["predicted"] > 0 for r in d["entries"])
    # one raw file as --measurements, placed by the default placement (no hosts), in-place column
    assert main(["calibrate", "--preset", "demo-256", "--measurements", str(a), "--column", "in-place",
                 "--fit", "base_rtt_us", "--json", "-q"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["entries"][0]["measured"] == pytest.approx((40.0 + (1 << 20) / 150e3) * 0.99e-6, rel=1e-3)


def test_the_command_line_refuses_naming_the_file_and_line(tmp_path, capsys):
    good, bad = tmp_path / "good.log", tmp_path / "bad.log"
    good.write_text(log("all_reduce_perf", SIZES))
    cut = log("all_gather_perf", SIZES).splitlines()[:-4]
    bad.write_text("\n".join(cut) + "\n")
    assert main(["calibrate", "--preset", "demo-256", "--log", str(good), "--log", str(bad), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"--log {bad}: line {len(cut)}: truncated after line {len(cut)}" in err and "Traceback" not in err
    both = tmp_path / "both.log"
    both.write_text(good.read_text() + bad.read_text())
    assert main(["calibrate", "--preset", "demo-256", "--measurements", str(both), "-q"]) == 2
    n = len(good.read_text().splitlines()) + len(cut)
    assert f"measurements: line {n}: truncated after line {n}" in capsys.readouterr().err
    # a GPU other than the cluster's: refused by name, with the Rank line
    a100 = tmp_path / "a100.log"
    a100.write_text(log("all_reduce_perf", SIZES, gpu="NVIDIA A100-SXM4-80GB"))
    assert main(["calibrate", "--preset", "demo-256", "--measurements", str(a100), "-q"]) == 2
    err = capsys.readouterr().err
    assert ("measurements: line 6: the log ran on 'NVIDIA A100-SXM4-80GB' (a100-sxm-80gb in the catalog) but "
            "demo-256's GPUs are h100-sxm-80gb") in err
