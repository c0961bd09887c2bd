"""The hardware catalog, seeded from ``sim/presets/catalog.toml`` (field names equal the file's keys)."""
from django.db import models

from twin.inventory.choices import CableMedium

from .base import HardwareModelBase


class GPUModel(HardwareModelBase):
    """A GPU product (H100 SXM 80 GB): memory, memory bandwidth, dense TFLOP/s, NVLink bandwidth, power; its
    generation's specs (NVLink generation, NVLink SHARP, SMs, clock, PCIe, architecture) may be unknown (null) for a
    model added by hand: the built-in catalog gives them all (``sim.fabric.catalog.SPECS``)."""

    memory_gb = models.PositiveIntegerField()
    memory_bandwidth_gbps = models.PositiveIntegerField(help_text="HBM bandwidth, Gbit/s")
    bf16_tflops = models.PositiveIntegerField(help_text="dense BF16 TFLOP/s")
    fp8_tflops = models.PositiveIntegerField(help_text="dense FP8 TFLOP/s (0: none)")
    nvlink_gbps = models.PositiveIntegerField(help_text="NVLink bandwidth per GPU, Gbit/s")
    power_w = models.PositiveIntegerField()
    tf32_tflops = models.FloatField(null=True, blank=True, help_text="dense TF32 TFLOP/s")
    nvlink_generation = models.PositiveSmallIntegerField(null=True, blank=True)
    nvls = models.BooleanField(null=True, blank=True, help_text="NVSwitch with NVLink SHARP (in-switch reductions)")
    sms = models.PositiveSmallIntegerField(null=True, blank=True, help_text="streaming multiprocessors")
    boost_clock_mhz = models.PositiveIntegerField(null=True, blank=True,
                                                  help_text="the clock the dense tensor peak is quoted at, MHz")
    pcie_gen = models.PositiveSmallIntegerField(null=True, blank=True, help_text="PCIe generation of the host link")
    arch = models.CharField(max_length=32, blank=True, default="", help_text="architecture (ampere, hopper)")
    compute_capability = models.PositiveSmallIntegerField(null=True, blank=True, help_text="80 = sm_80")


class NICModel(HardwareModelBase):
    """A network adapter product: its port count and speed (the whole NIC's, split over its ports), its PCIe link
    and its transport (null / blank where unknown: a model added by hand); on EFA, what its network plugin does
    (``sim.fabric.netplugin``, ``sim.fabric.ofi_tuner``)."""

    ports = models.PositiveSmallIntegerField()
    speed_gbps = models.PositiveIntegerField()
    pcie_gen = models.PositiveSmallIntegerField(null=True, blank=True)
    pcie_lanes = models.PositiveSmallIntegerField(null=True, blank=True)
    transport = models.CharField(max_length=16, blank=True, default="", help_text="ib, roce, efa, ethernet or vpi")
    ordered_128b = models.BooleanField(null=True, blank=True,
                                       help_text="EFA: delivers aligned 128-byte writes in order (NCCL's LL and LL128 "
                                                 "allowed over aws-ofi-nccl)")
    net_latency_us = models.FloatField(null=True, blank=True,
                                       help_text="the latency the network plugin reports to NCCL, us (null: its "
                                                 "default)")
    ofi_tuner = models.CharField(max_length=16, blank=True, default="",
                                 help_text="EFA: the platform whose aws-ofi-nccl tuner regions choose NCCL's algorithm "
                                           "and protocol (p5; blank: NCCL's own choice)")


class SwitchModel(HardwareModelBase):
    """A switch product: port count and speed, switching capacity, packet buffer; modular (chassis) or not; whether
    it reduces in the network (InfiniBand SHARP, what NCCL's CollNet needs; null where unknown)."""

    ports = models.PositiveIntegerField()
    speed_gbps = models.PositiveIntegerField()
    capacity_tbps = models.FloatField()
    buffer_mb = models.PositiveIntegerField()
    modular = models.BooleanField()
    sharp = models.BooleanField(null=True, blank=True,
                                help_text="InfiniBand SHARP streaming aggregation (in-network reduction, CollNet)")


class HostPlatform(HardwareModelBase):
    """A GPU server platform (Grand Teton): GPUs, CPUs and NIC slots per host."""

    gpus = models.PositiveSmallIntegerField()
    cpus = models.PositiveSmallIntegerField()
    backend_nics = models.PositiveSmallIntegerField()
    frontend_nics = models.PositiveSmallIntegerField()
    memory_gb = models.PositiveIntegerField()


class StorageServerModel(HardwareModelBase):
    """A storage server product (YV3 Sierra Point): SSD slots and NICs."""

    ssd_slots = models.PositiveSmallIntegerField()
    nics = models.PositiveSmallIntegerField()
    memory_gb = models.PositiveIntegerField()


class SSDModel(HardwareModelBase):
    """A flash drive product (E1.S): capacity and sequential bandwidths."""

    capacity_tb = models.FloatField()
    read_gbps = models.PositiveIntegerField(help_text="sequential read, Gbit/s")
    write_gbps = models.PositiveIntegerField(help_text="sequential write, Gbit/s")


class CableModel(HardwareModelBase):
    """A cable or optic product: medium, speed and reach."""

    medium = models.CharField(max_length=16, choices=CableMedium.choices)
    speed_gbps = models.PositiveIntegerField()
    reach_m = models.PositiveIntegerField()
