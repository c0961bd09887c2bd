"""Every inventory endpoint passes the shared API checks (tests/api/checks.py); each class declares its data."""
import tomllib

import pytest

from sim.fabric.spec import PRESETS_DIR
from tests.api.checks import APIChecks
from twin.inventory import models as m

pytestmark = pytest.mark.django_db
SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional
CATALOG_BRIEF = ("id", "url", "display", "slug", "name")
ITEM_BRIEF = ("id", "url", "display", "name", "status")


def first(model, **filters):
    return model.objects.filter(**filters).order_by("id").first()


def item(demo, kind, n):
    return {"name": f"api-{kind}-{n}", "serial": f"API-{kind}-{n}", "cluster": demo.id}


class TestGPUModel(APIChecks):
    model, endpoint, brief_fields = m.GPUModel, "gpu-models", CATALOG_BRIEF
    update_data, invalid_data = {"name": "B200"}, {"memory_gb": -1}

    def create_data(self, demo, n):
        return {"slug": f"gpu-{n}", "vendor": "NVIDIA", "name": f"G{n}", "memory_gb": 192,
                "memory_bandwidth_gbps": 64000, "bf16_tflops": 2250, "fp8_tflops": 4500, "nvlink_gbps": 14400,
                "power_w": 1000}


class TestNICModel(APIChecks):
    model, endpoint, brief_fields = m.NICModel, "nic-models", CATALOG_BRIEF
    update_data, invalid_data = {"speed_gbps": 800}, {"ports": "many"}

    def create_data(self, demo, n):
        return {"slug": f"nic-{n}", "vendor": "NVIDIA", "name": f"N{n}", "ports": 2, "speed_gbps": 400}


class TestSwitchModel(APIChecks):
    model, endpoint, brief_fields = m.SwitchModel, "switch-models", CATALOG_BRIEF
    update_data, invalid_data = {"buffer_mb": 128}, {"ports": -5}

    def create_data(self, demo, n):
        return {"slug": f"sw-{n}", "vendor": "Broadcom", "name": f"S{n}", "ports": 128, "speed_gbps": 800,
                "capacity_tbps": 102.4, "buffer_mb": 64, "modular": False}


class TestHostPlatform(APIChecks):
    model, endpoint, brief_fields = m.HostPlatform, "host-platforms", CATALOG_BRIEF
    update_data, invalid_data = {"memory_gb": 4096}, {"gpus": None}

    def create_data(self, demo, n):
        return {"slug": f"plat-{n}", "vendor": "OCP", "name": f"P{n}", "gpus": 8, "cpus": 2, "backend_nics": 8,
                "frontend_nics": 2, "memory_gb": 2048}


class TestStorageServerModel(APIChecks):
    model, endpoint, brief_fields = m.StorageServerModel, "storage-server-models", CATALOG_BRIEF
    update_data, invalid_data = {"ssd_slots": 8}, {"nics": "two"}

    def create_data(self, demo, n):
        return {"slug": f"srv-{n}", "vendor": "OCP", "name": f"V{n}", "ssd_slots": 4, "nics": 1, "memory_gb": 256}


class TestSSDModel(APIChecks):
    model, endpoint, brief_fields = m.SSDModel, "ssd-models", CATALOG_BRIEF
    update_data, invalid_data = {"capacity_tb": 15.36}, {"read_gbps": -1}

    def create_data(self, demo, n):
        return {"slug": f"ssd-{n}", "vendor": "x", "name": f"D{n}", "capacity_tb": 7.68, "read_gbps": 52,
                "write_gbps": 28}


class TestCableModel(APIChecks):
    model, endpoint, brief_fields = m.CableModel, "cable-models", CATALOG_BRIEF
    update_data, invalid_data = {"reach_m": 500}, {"medium": "plasma"}

    def create_data(self, demo, n):
        return {"slug": f"cbl-{n}", "vendor": "x", "name": f"C{n}", "medium": "fiber", "speed_gbps": 800,
                "reach_m": 100}


class TestCluster(APIChecks):
    model, endpoint = m.Cluster, "clusters"
    update_data, invalid_data = {"title": "Renamed"}, {"status": "exploded"}

    def create_data(self, demo, n):
        spec = tomllib.loads((PRESETS_DIR / "demo-256.toml").read_text())
        spec["name"] = f"api-cluster-{n}"
        spec["layout"]["racks_per_zone"] = 2
        return {"spec": spec}


class TestFabric(APIChecks):
    model, endpoint = m.Fabric, "fabrics"
    update_data, invalid_data = {"speed_gbps": 800}, {"kind": "token-ring"}

    def create_data(self, demo, n):
        bare, _ = m.Cluster.objects.get_or_create(name=f"bare-{n}", defaults={"title": "bare", "spec": {}})
        return {"cluster": bare.id, "name": f"bare-{n}.be", "role": 0, "kind": "backend-roce", "speed_gbps": 400}


class TestZone(APIChecks):
    model, endpoint, brief_fields = m.Zone, "zones", ("id", "url", "display", "name", "status")
    update_data, invalid_data = {"status": "drained"}, {"kind": 7}

    def create_data(self, demo, n):
        return {"cluster": demo.id, "name": f"api-zone-{n}", "kind": 0, "number": 10 + n}


class TestStorageCluster(APIChecks):
    model, endpoint, brief_fields = m.StorageCluster, "storage-clusters", ("id", "url", "display", "name", "status")
    update_data, invalid_data = {"status": "maintenance"}, {"kind": "ceph"}

    def create_data(self, demo, n):
        return {"cluster": demo.id, "name": f"api-store-{n}", "kind": "tectonic"}


class TestRack(APIChecks):
    model, endpoint, brief_fields = m.Rack, "racks", ITEM_BRIEF
    update_data, invalid_data = {"status": "maintenance"}, {"zone": 10**9}

    def create_data(self, demo, n):
        return {**item(demo, "rack", n), "zone": first(m.Zone).id, "number": 100 + n}


class TestHost(APIChecks):
    model, endpoint, brief_fields = m.Host, "hosts", ITEM_BRIEF
    update_data, invalid_data = {"status": "drained"}, {"platform": "grand-teton"}

    def create_data(self, demo, n):
        return {**item(demo, "host", n), "rack": first(m.Rack).id, "platform": first(m.HostPlatform).id, "slot": 5 + n}


class TestGPU(APIChecks):
    model, endpoint, brief_fields = m.GPU, "gpus", ITEM_BRIEF
    update_data, invalid_data = {"status": "failed"}, {"index": -1}

    def create_data(self, demo, n):
        return {**item(demo, "gpu", n), "host": first(m.Host).id, "model": first(m.GPUModel).id, "slot": 8 + n,
                "index": 10000 + n}


class TestNIC(APIChecks):
    model, endpoint, brief_fields = m.NIC, "nics", ITEM_BRIEF
    update_data, invalid_data = {"status": "failed"}, {"slot": -1}

    def create_data(self, demo, n):
        return {**item(demo, "nic", n), "fabric": first(m.Fabric, role=1).id, "host": first(m.Host).id,
                "model": first(m.NICModel).id, "slot": 4 + n}


class TestSwitch(APIChecks):
    model, endpoint, brief_fields = m.Switch, "switches", ITEM_BRIEF
    update_data, invalid_data = {"status": "drained"}, {"tier": 9}

    def create_data(self, demo, n):
        return {**item(demo, "switch", n), "fabric": first(m.Fabric).id, "model": first(m.SwitchModel).id,
                "tier": 0, "role": "rtsw", "zone": first(m.Zone).id, "group": 50 + n}


class TestPort(APIChecks):
    model, endpoint, brief_fields = m.Port, "ports", ITEM_BRIEF
    update_data, invalid_data = {"status": "failed"}, {"speed_gbps": "fast"}

    def create_data(self, demo, n):
        return {"cluster": demo.id, "name": f"api-port-{n}", "switch": first(m.Switch, tier=1).id, "slot": 400 + n,
                "speed_gbps": 400}


class TestLink(APIChecks):
    model, endpoint, brief_fields = m.Link, "links", ITEM_BRIEF
    update_data, invalid_data = {"status": "failed"}, {"status": "flapping"}

    def create_data(self, demo, n):
        spine, core = first(m.Switch, tier=1), first(m.Switch, tier=2)
        a, _ = m.Port.objects.get_or_create(cluster=demo, name=f"api-a-{n}", switch=spine, slot=300 + n, speed_gbps=400)
        b, _ = m.Port.objects.get_or_create(cluster=demo, name=f"api-b-{n}", switch=core, slot=300 + n, speed_gbps=400)
        return {**item(demo, "link", n), "fabric": spine.fabric_id, "tier": 2, "a_port": a.id, "b_port": b.id,
                "speed_gbps": 400, "cable": first(m.CableModel).id}


class TestStorageServer(APIChecks):
    model, endpoint, brief_fields = m.StorageServer, "storage-servers", ITEM_BRIEF
    update_data, invalid_data = {"status": "maintenance"}, {"storage_cluster": "tectonic"}

    def create_data(self, demo, n):
        server = first(m.StorageServer)
        return {**item(demo, "server", n), "storage_cluster": server.storage_cluster_id, "rack": server.rack_id,
                "model": server.model_id, "slot": 40 + n}


class TestSSD(APIChecks):
    model, endpoint, brief_fields = m.SSD, "ssds", ITEM_BRIEF
    update_data, invalid_data = {"status": "failed"}, {"server": None}

    def create_data(self, demo, n):
        return {**item(demo, "ssd", n), "server": first(m.StorageServer).id, "model": first(m.SSDModel).id,
                "slot": 4 + n}


@pytest.mark.parametrize("path, body, fields", [
    ("/api/inventory/ports/", {"name": "p-orphan", "slot": 0, "speed_gbps": 400}, "switch, nic"),
    ("/api/inventory/nics/", {"name": "nic-orphan", "slot": 0}, "host, storage_server"),
])
def test_an_item_in_no_device_is_refused_naming_the_fields(demo, writer, path, body, fields):
    """Exactly one device holds a port (switch or NIC) or a NIC (host or storage server): a 400 that names both."""
    before = writer.get(path, {"cluster": demo.name}).json()
    body = {"cluster": demo.pk, **body}
    if path.endswith("nics/"):
        nic = m.NIC.objects.filter(cluster=demo).first()
        body.update(model=nic.model_id, fabric=nic.fabric_id, serial="SN-NIC-ORPHAN")
    response = writer.post(path, body, format="json")
    assert response.status_code == 400, response.content
    assert fields in str(response.json()), response.json()
    assert writer.get(path, {"cluster": demo.name}).json().get("count") == before.get("count")
