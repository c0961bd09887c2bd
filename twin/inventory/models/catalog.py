"""The hardware catalog, seeded from ``sim/presets/catalog.toml`` (field names equal the file's keys)."""
from django.db import models

from twin.inventory.choices import CableMedium

from .base import HardwareModelBase


class GPUModel(HardwareModelBase):
    """A GPU product (H100 SXM 80 GB): memory, memory bandwidth, dense TFLOP/s, NVLink bandwidth, power."""

    memory_gb = models.PositiveIntegerField()
    memory_bandwidth_gbps = models.PositiveIntegerField(help_text="HBM bandwidth, Gbit/s")
    bf16_tflops = models.PositiveIntegerField(help_text="dense BF16 TFLOP/s")
    fp8_tflops = models.PositiveIntegerField(help_text="dense FP8 TFLOP/s")
    nvlink_gbps = models.PositiveIntegerField(help_text="NVLink bandwidth per GPU, Gbit/s")
    power_w = models.PositiveIntegerField()


class NICModel(HardwareModelBase):
    """A network adapter product: its port count and port speed."""

    ports = models.PositiveSmallIntegerField()
    speed_gbps = models.PositiveIntegerField()


class SwitchModel(HardwareModelBase):
    """A switch product: port count and speed, switching capacity, packet buffer; modular (chassis) or not."""

    ports = models.PositiveIntegerField()
    speed_gbps = models.PositiveIntegerField()
    capacity_tbps = models.FloatField()
    buffer_mb = models.PositiveIntegerField()
    modular = models.BooleanField()


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
