"""The ``sh twin`` examples of README.md and docs/ (tests/doc_examples.py), run as written against this package's
running twin: its address in place of the docs' (DOCS_TWIN_URL), ``$TOKEN`` a token of its superuser, ``manage.py`` on
its database. ``curl`` fails on an HTTP error (``--fail-with-body``), so an example that the twin refuses fails here.
An example about a debug run's download (``run-<id>-...``) gets a debug run of this twin, downloaded as the docs say,
first. The runs an example starts are cancelled once it is taken, and what it changed is put back after (links it failed, clusters
it built)."""
import os
import re
import subprocess
import urllib.request

import pytest

from tests.doc_examples import DOCS_TWIN_URL, of
from tests.e2e.conftest import in_thread
from tests.e2e.test_debug import JOB
from tests.processes import database_url, wait_for

EXAMPLES = of("sh", "twin")
CURL = 'curl() { command curl --fail-with-body --show-error "$@"; echo; }\n'


def download_debug_run(twin, folder) -> int:
    """A finished debug run on meta-roce-24k, its dumps downloaded as the docs name them (run-<id>-dumps.tar.gz)."""
    run = twin.api("/api/runs/", {"kind": "debug", "cluster": "meta-roce-24k", "params": {**JOB, "inject": "hang:rank=5"}})
    twin.wait_run(run["id"])
    req = urllib.request.Request(f"{twin.url}/api/runs/{run['id']}/dumps/",
                                 headers={"Authorization": f"Token {twin.token}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        (folder / f"run-{run['id']}-dumps.tar.gz").write_bytes(r.read())
    return run["id"]


def end_runs(twin):
    """The runs an example started, cancelled (the example was taken; what they compute is other tests' concern),
    and waited for, so that the next test finds the worker free."""
    from twin.runs.choices import ACTIVE
    from twin.runs.models import SimulationRun
    for run_id in SimulationRun.objects.filter(status__in=ACTIVE).values_list("pk", flat=True):
        twin.api(f"/api/runs/{run_id}/cancel/", {})
    wait_for(lambda: not SimulationRun.objects.filter(status__in=ACTIVE).exists(), timeout=120, interval=0.25,
             what="the runs the example started to end")


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_every_twin_example_runs_against_the_twin(twin, orm, example, tmp_path):
    from twin.inventory.models import Cluster, Link
    failed_before = set(Link.objects.filter(status="failed").values_list("pk", flat=True))
    clusters_before = set(Cluster.objects.values_list("pk", flat=True))
    text = example.text.replace(DOCS_TWIN_URL, twin.url)
    if "<id>" in text:
        text = text.replace("<id>", str(download_debug_run(twin, tmp_path)))
    if "-m torch." in text and subprocess.run(["python", "-c", "import torch"], capture_output=True).returncode:
        text = re.sub(r"^(.*-m torch\..*)$", r": # (no PyTorch here: tests/torch runs fr_trace) \1", text, flags=re.M)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "TOKEN": twin.token, "DATABASE_URL": database_url(),
           "PATH": f"{root}/.venv/bin:{os.environ['PATH']}"}
    for name in (".venv", "manage.py", "sim", "twin"):
        (tmp_path / name).symlink_to(os.path.join(root, name))
    try:
        done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + CURL + text], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{example.id}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        end_runs(twin)
    finally:
        Link.objects.exclude(pk__in=failed_before).filter(status="failed").update(status="active")
        for cluster in Cluster.objects.exclude(pk__in=clusters_before):      # one the example built
            in_thread(cluster.delete)
