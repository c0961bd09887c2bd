"""The clusters the NetBox tests export, and the seeded NetBox template they start from (tests/netbox/env.py,
``seeded``): demo-256 and dgx-h100-superpod scaled down to two scalable units, written into NetBox once per version
of the code that writes them, by ``manage.py build_cluster`` and ``netbox_export`` in a throwaway SQLite twin."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from sim.fabric.spec import PRESETS_DIR

ROOT = Path(__file__).resolve().parents[2]


def dgx_small() -> dict:
    """dgx-h100-superpod's shape at 352 cables: 2 scalable units of 8 DGX H100 (NIC k of each on rail leaf k of its
    SU), 4 spines per SU with 4 uplinks each, 2 cores per plane; the frontend as in the preset."""
    data = tomllib.loads((PRESETS_DIR / "dgx-h100-superpod.toml").read_text())
    data["name"] = "dgx-small"
    data["title"] = "DGX H100 SuperPOD, 2 small SU"
    data["layout"].update(zones=2, racks_per_zone=2)
    data["backend"]["leaf"].update(hosts_per_switch=8, uplinks=8)
    data["backend"]["spine"].update(per_zone=4, uplinks=4)
    data["backend"]["core"].update(per_plane=2)
    return data


def spec_files(tmp: Path) -> dict[str, str]:
    """Cluster name -> what build_cluster takes (a preset name or a spec file written into ``tmp``)."""
    small = tmp / "dgx-small.json"
    small.write_text(json.dumps(dgx_small()))
    return {"demo-256": "demo-256", "dgx-small": str(small)}


SPECS = [PRESETS_DIR / "demo-256.toml", PRESETS_DIR / "dgx-h100-superpod.toml"]


def export_all(server) -> None:
    """Build each cluster in a throwaway SQLite twin and export it into ``server``'s NetBox."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp}/seed.sqlite3", "TWIN_VAR_DIR": tmp}
        env.pop("DJANGO_SETTINGS_MODULE", None)

        def manage(*args):
            subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True,
                           stdout=subprocess.DEVNULL)

        manage("migrate", "--noinput", "-v0")
        for name, spec in spec_files(Path(tmp)).items():
            manage("build_cluster", spec, "--no-progress")
            manage("netbox_export", name, "--url", server.url, "--token", server.token, "--no-progress")
