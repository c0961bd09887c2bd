"""Inventory models, split by topic: the hardware catalog, sites (cluster, zone, rack), devices, network, storage,
the change log, and NetBox transfers."""
from .catalog import CableModel, GPUModel, HostPlatform, NICModel, SSDModel, StorageServerModel, SwitchModel
from .changes import InventoryVersion, ObjectChange
from .devices import GPU, NIC, Host, Switch
from .netbox import NetBoxTransfer
from .network import Fabric, Link, Port
from .sites import Cluster, Rack, Zone
from .storage import SSD, StorageCluster, StorageServer

CATALOG_MODELS = {"gpu": GPUModel, "nic": NICModel, "switch": SwitchModel, "platform": HostPlatform,
                  "storage_server": StorageServerModel, "ssd": SSDModel, "cable": CableModel}

__all__ = ["CableModel", "GPUModel", "HostPlatform", "NICModel", "SSDModel", "StorageServerModel", "SwitchModel",
           "GPU", "NIC", "Host", "Switch", "Fabric", "Link", "Port", "Cluster", "Rack", "Zone", "SSD",
           "StorageCluster", "StorageServer", "ObjectChange", "InventoryVersion", "NetBoxTransfer", "CATALOG_MODELS"]
