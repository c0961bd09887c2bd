"""The debugging run kinds: ``debug`` (a fault rehearsed on the cluster's inventory, its dumps stored with the run,
downloadable, deleted with it) and ``startup``, through real workers; a fault naming the cluster's own items, and
bad input refused with a 400 naming the field. Given / when / then."""
import io
import os
import pickle
import shutil
import tarfile

import numpy as np
import pytest

from tests.runs.test_runs import finished
from sim.core.errors import ParamError
from twin.inventory.choices import FabricRole, Status
from twin.inventory.models import GPU, Host, Link
from twin.capabilities.debug import live as debug_live
from twin.live import frames
from twin.runs import actions, files
from twin.runs.models import SimulationRun

JOB = {"model": "llama3-8b", "gpus": 64, "tp": 8, "pp": 2, "batch_tokens": "1M"}


def _archive(body: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() if m.isfile() else None for m in tar.getmembers()}


# ------------------------------------------------------------------------------------- run files, no engine
@pytest.mark.django_db
def test_a_runs_dumps_archive_is_private_streamed_and_deleted_with_the_run(runner, demo, tmp_path,
                                                                           django_capture_on_commit_callbacks):
    # given a finished debug run whose worker packed three per-rank files
    run = SimulationRun.objects.create(kind="debug", cluster=demo, status="succeeded", params={})
    for r in range(3):
        (tmp_path / f"nccl_trace_rank_{r}").write_bytes(pickle.dumps({"rank": r, "entries": list(range(r))}))
    path = files.pack_folder(run.pk, tmp_path)
    # then the archive and its directory are the owner's alone
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    # when it is downloaded, then it comes streamed, as an attachment, holding every rank's file as written
    r = runner.get(f"/api/runs/{run.pk}/dumps/")
    assert r.status_code == 200 and r.streaming and r["Content-Type"] == "application/gzip"
    assert f'filename="run-{run.pk}-dumps.tar.gz"' in r["Content-Disposition"]
    got = _archive(b"".join(r.streaming_content))
    assert sorted(got) == [f"nccl_trace_rank_{k}" for k in range(3)]
    assert pickle.loads(got["nccl_trace_rank_2"]) == {"rank": 2, "entries": [0, 1]}
    # when the run is deleted over the API, then its files go with it
    with django_capture_on_commit_callbacks(execute=True):
        assert runner.delete(f"/api/runs/{run.pk}/").status_code == 204
    assert not files.run_dir(run.pk).exists()


@pytest.fixture
def kept_run(demo):
    """A finished debug run of 32 ranks on demo-256 (the host of rank 5 died: ranks 0-7 left no dump) keeping its
    dumps as the worker does (sim.debug.dumpstate), and the folder the command line writes of the same rehearsal."""
    from sim.debug import dumpstate
    from sim.debug.params import DEBUG
    from sim.debug.recorder import rehearse
    from sim.debug.writer import DumpSet
    reh = rehearse("demo-256", DEBUG.validate(dict(gpus=32, tp=8, pp=2, dp=2, model="llama3-8b",
                                                   batch_tokens=8192 * 2 * 4, inject="host:rank=5", entries=200)))
    run = SimulationRun.objects.create(kind="debug", cluster=demo, status="succeeded", params={})
    shutil.rmtree(files.run_dir(run.pk), ignore_errors=True)
    files.write_archive(run.pk, lambda raw: dumpstate.save(DumpSet.of(reh), raw), name=files.DUMPS_STATE)
    folder = files.root() / f"cli-{run.pk}"
    reh.write_dumps(folder)
    yield run, folder
    files.delete(run.pk)
    shutil.rmtree(folder, ignore_errors=True)


def _unzip(body: bytes) -> dict[str, bytes]:
    import zipfile
    with zipfile.ZipFile(io.BytesIO(body)) as z:
        return {i.filename: None if i.is_dir() else z.read(i) for i in z.infolist()}


@pytest.mark.django_db
@pytest.mark.parametrize("query, content_type, ext, read", [("", "application/gzip", "tar.gz", _archive),
                                                            ("?archive=tar.gz", "application/gzip", "tar.gz", _archive),
                                                            ("?archive=zip", "application/zip", "zip", _unzip)])
def test_a_runs_dumps_download_is_the_folder_of_the_dumps_as_written(runner, kept_run, query, content_type, ext,
                                                                    read):
    run, cli = kept_run
    # when the dumps are downloaded (as a tar.gz by default, or a zip)
    r = runner.get(f"/api/runs/{run.pk}/dumps/{query}")
    # then they come streamed, as an attachment named after the folder they unpack to
    assert r.status_code == 200 and r.streaming and r["Content-Type"] == content_type
    assert f'filename="run-{run.pk}-dumps.{ext}"' in r["Content-Disposition"]
    got = read(b"".join(r.streaming_content))
    # holding the folder of every rank's dump, the bytes the command line writes, and the placement beside it
    top = f"run-{run.pk}-dumps"
    dumps = sorted(p.name for p in cli.iterdir() if p.name.startswith("nccl_trace_rank_"))
    files_in = sorted(k for k, v in got.items() if v is not None and k.startswith(top + "/"))
    assert files_in == sorted(f"{top}/{n}" for n in dumps) and len(dumps) == 24
    assert all(got[f"{top}/{n}"] == (cli / n).read_bytes() for n in dumps)
    assert got[f"{top}.placement.json"] == (cli / "twin_placement.json").read_bytes()
    assert set(got) - set(files_in) - {f"{top}.placement.json"} <= {top, top + "/"}     # the folder's own entry


@pytest.mark.django_db
@pytest.mark.parametrize("query, ext, read", [("", "tar.gz", _archive), ("?archive=zip", "zip", _unzip)])
def test_one_ranks_dump_downloads_alone_in_a_folder_of_its_own(runner, kept_run, query, ext, read):
    run, cli = kept_run
    r = runner.get(f"/api/runs/{run.pk}/dumps/17/{query}")
    assert r.status_code == 200 and r.streaming
    assert f'filename="run-{run.pk}-rank-17.{ext}"' in r["Content-Disposition"]
    got = {k: v for k, v in read(b"".join(r.streaming_content)).items() if v is not None}
    assert got == {f"run-{run.pk}-rank-17/nccl_trace_rank_17": (cli / "nccl_trace_rank_17").read_bytes()}


@pytest.mark.django_db
def test_a_bad_archive_format_is_a_400_and_a_rank_without_a_dump_a_404_saying_why(runner, kept_run):
    run, _ = kept_run
    r = runner.get(f"/api/runs/{run.pk}/dumps/?archive=rar")
    assert r.status_code == 400 and "one of tar.gz, zip" in " ".join(r.json()["archive"])
    r = runner.get(f"/api/runs/{run.pk}/dumps/5/")
    assert r.status_code == 404 and "rank 5: left no dump" in r.json()["detail"]
    r = runner.get(f"/api/runs/{run.pk}/dumps/32/")
    assert r.status_code == 404 and "not a rank of the job" in r.json()["detail"]
    assert runner.get(f"/api/runs/{run.pk}/dumps/x/").status_code == 404


@pytest.mark.django_db
def test_kept_dumps_that_cannot_be_read_back_are_a_500_saying_so(runner, demo):
    # given a finished debug run whose kept dumps file is damaged
    run = SimulationRun.objects.create(kind="debug", cluster=demo, status="succeeded", params={})
    files.write_archive(run.pk, lambda raw: raw.write(b"PK not a zip"), name=files.DUMPS_STATE)
    # when they are downloaded, then the answer says why, naming no server path
    try:
        r = runner.get(f"/api/runs/{run.pk}/dumps/")
        assert r.status_code == 500 and "cannot be read back" in r.json()["detail"]
        assert str(files.root()) not in r.json()["detail"]
    finally:
        files.delete(run.pk)                    # the next test's run may take the same id


@pytest.mark.django_db
def test_a_run_without_dumps_answers_404_saying_why(runner, demo):
    queued = actions.create_run("collective", {"gpus": 16}, demo, enqueue=False)
    r = runner.get(f"/api/runs/{queued.pk}/dumps/")
    assert r.status_code == 404 and "not finished" in r.json()["detail"]
    done = SimulationRun.objects.create(kind="collective", cluster=demo, status="succeeded", params={})
    # (run ids repeat from test database to test database, run files do not: an earlier test's run of this id may
    # have left its dumps; in the twin an id is never reused)
    shutil.rmtree(files.run_dir(done.pk), ignore_errors=True)
    assert "a collective run keeps none" in runner.get(f"/api/runs/{done.pk}/dumps/").json()["detail"]


@pytest.mark.django_db
def test_a_clusters_deletion_takes_its_runs_files(demo, tmp_path, django_capture_on_commit_callbacks):
    run = SimulationRun.objects.create(kind="debug", cluster=demo, status="succeeded", params={})
    (tmp_path / "nccl_trace_rank_0").write_bytes(b"x")
    files.pack_folder(run.pk, tmp_path)
    with django_capture_on_commit_callbacks(execute=True):
        demo.delete()
    assert not files.run_dir(run.pk).exists()


# ------------------------------------------------------------------------------------------------ bad input
@pytest.mark.django_db
@pytest.mark.parametrize("inject, says", [
    ("hang:gpu=demo-256.z09.r000.h0.gpu0", "has no gpu named"),
    ("slow:host=nowhere", "has no host named"),
    ("link:id=not-a-link", "has no link named"),
    ("hang", "hang needs rank=N"),
    ("hang:rank=1,rank=2", "rank is given twice"),                      # the engine's parser, as on the CLI
    ("hang:host=demo-256.z00.r000.h0,gpu=demo-256.z00.r000.h0.gpu0", "takes one of rank=, gpu=, host="),
    ("hang:rank=1,op=99999999999", "is out of range"),
    ("desync:rank=9,op=100000", "is past the last collective"),
    ("desync:host=demo-256.z00.r000.h1,op=100000", "is past the last collective"),
])
def test_a_fault_naming_what_the_cluster_lacks_is_a_400_naming_inject(runner, demo, inject, says):
    r = runner.post("/api/runs/", {"kind": "debug", "cluster": "demo-256", "params": {**JOB, "inject": inject}},
                    format="json")
    assert r.status_code == 400, r.json()
    assert says in " ".join(r.json()["params"]["inject"])
    assert not SimulationRun.objects.exists()


@pytest.mark.django_db
def test_a_gpu_outside_the_job_and_too_many_ranks_are_400s(runner, demo, settings):
    # given a 64-GPU job placed topology-aware on demo-256: the last host's GPUs are not in it
    last = GPU.objects.filter(cluster=demo).order_by("-index").first()
    r = runner.post("/api/runs/", {"kind": "debug", "cluster": "demo-256",
                                   "params": {**JOB, "inject": f"hang:gpu={last.name}"}}, format="json")
    assert r.status_code == 400 and "holds no rank of the job" in " ".join(r.json()["params"]["inject"])
    settings.TWIN_DEBUG_MAX_RANKS = 32
    r = runner.post("/api/runs/", {"kind": "debug", "cluster": "demo-256", "params": JOB}, format="json")
    assert r.status_code == 400 and "TWIN_DEBUG_MAX_RANKS" in " ".join(r.json()["params"]["gpus"])


# ------------------------------------------------------------------------------------------- through workers
@pytest.mark.django_db(transaction=True)
def test_a_hang_on_a_named_gpu_is_rehearsed_found_stored_and_shown(workers, runner, demo):
    # given demo-256 and the GPU that holds rank 5 of the same job run as a ``job`` kind (its placement and seed)
    import json
    from sim.jobs.params import JOB as JOB_PARAMS
    from sim.fabric.topology import topology_from_layout
    from twin.inventory.adapter import layout_from_db
    from twin.capabilities.jobs.kinds import place
    gpus = place(topology_from_layout(layout_from_db(demo)), JOB_PARAMS.validate(JOB))
    target = GPU.objects.get(cluster=demo, index=int(gpus[5]))
    # when a hang of that GPU (by its inventory name) is rehearsed over REST
    r = runner.post("/api/runs/", {"kind": "debug", "cluster": "demo-256",
                                   "params": {**JOB, "inject": f"hang:gpu={target.name}"}}, format="json")
    assert r.status_code == 201, r.json()
    run = finished(runner, r.json()["id"], timeout=120)
    assert run["status"] == "succeeded", run["error"]
    s = run["summary"]
    # then the analyzer names rank 5, its GPU and its host (with the inventory's ids)
    assert s["engine_inject"].startswith("hang:rank=5") and s["verdict"] == "hang"
    c = s["culprit"]
    assert c["ranks"] == [5] and c["gpus"] == [target.index]
    assert [h["id"] for h in c["hosts"]] == [target.host_id]
    # and its links are the inventory's links of its GPU's NIC (both directions of one cable: one row)
    nic_links = set(Link.objects.filter(a_port__nic__gpu=target).values_list("id", flat=True)) | set(
        Link.objects.filter(b_port__nic__gpu=target).values_list("id", flat=True))
    assert c["links"] and {link["id"] for link in c["links"]} == nic_links
    assert all(link["name"] == Link.objects.get(id=link["id"]).name and len(link["directions"]) == 2
               for link in c["links"])
    # and the dumps are stored with the run: one file per rank in one folder (sim.debug.archive), downloadable,
    # with the placement the job kind makes beside it
    got = _archive(b"".join(runner.get(f"/api/runs/{run['id']}/dumps/").streaming_content))
    top = f"run-{run['id']}-dumps"
    assert sorted(got) == sorted([top] + [f"{top}/nccl_trace_rank_{k}" for k in range(64)]
                                 + [f"{top}.placement.json"])
    assert json.loads(got[f"{top}.placement.json"])["gpus"] == gpus.tolist() and s["dumps_bytes"] > 0
    rank_gpu = runner.get(f"/api/runs/{run['id']}/results/", {"names": "rank_gpu"}).json()["arrays"]["rank_gpu"]
    assert rank_gpu["data"] == gpus.tolist()
    # and the GPU page's colouring marks the culprit's GPU, and no GPU outside the job
    stop = np.asarray(runner.get(f"/api/runs/{run['id']}/results/", {"names": "gpu_stop"}).json()
                      ["arrays"]["gpu_stop"]["data"])
    assert stop[target.index] == debug_live.DEBUG_CULPRIT
    outside = np.setdiff1d(np.arange(256), gpus)
    assert (stop[outside] == debug_live.DEBUG_NOT_IN_JOB).all() and (stop[gpus] != debug_live.DEBUG_NOT_IN_JOB).all()
    # and the run's last frame carried the stage "done" and the same colouring
    import base64
    f = frames.decode(base64.b64decode(runner.get(f"/api/live/runs/{run['id']}/snapshot/").json()["frame_b64"]))
    row = f.value("debug_progress")[0]
    assert row["stage"] == "done" and row["ranks"] == 64
    assert f.value("debug_stop").tolist() == stop.tolist()
    # when the run is deleted, then its dumps go too
    assert runner.delete(f"/api/runs/{run['id']}/").status_code == 204
    assert not files.run_dir(run["id"]).exists()


@pytest.mark.django_db(transaction=True)
def test_a_clean_rehearsal_names_no_culprit_and_startup_grows_with_ranks(workers, runner, demo):
    r = runner.post("/api/runs/", {"kind": "debug", "cluster": "demo-256", "params": JOB}, format="json")
    s = runner.post("/api/runs/", {"kind": "startup", "cluster": "demo-256", "params": {"gpus": "1024:8192"}},
                    format="json")
    assert r.status_code == 201 and s.status_code == 201, (r.json(), s.json())
    clean = finished(runner, r.json()["id"], timeout=120)
    assert clean["status"] == "succeeded", clean["error"]
    assert clean["summary"]["culprit"] is None and clean["summary"]["verdict"] == "clean"
    up = finished(runner, s.json()["id"], timeout=60)
    assert up["status"] == "succeeded", up["error"]
    rows = up["summary"]["rows"]
    assert [row["gpus"] for row in rows] == [1024, 2048, 4096, 8192]
    assert all(a["total_s"] < b["total_s"] for a, b in zip(rows, rows[1:]))
    assert up["headline"][0]["value"].startswith("8,192 ranks")


def test_host_names_resolve_to_the_layouts_host_order(db, demo):
    """A host named by the inventory is the layout's host of that position by id (twin.inventory.adapter): the
    engine resolves it (sim.debug.faults.resolve_fault, sim.fabric.names) to the first rank on its GPUs."""
    from sim.debug.faults import parse_fault, resolve_fault
    from sim.fabric.topology import topology_from_layout
    from twin.inventory.adapter import layout_from_db
    host = Host.objects.filter(cluster=demo).order_by("id")[7]
    lay = layout_from_db(demo)
    on_host = sorted(GPU.objects.filter(host=host).values_list("index", flat=True))
    assert np.flatnonzero(lay.gpu_host == 7).tolist() == on_host
    gpus = np.arange(lay.gpu_host.size)[::-1]                       # rank r on GPU G - 1 - r
    fault = resolve_fault(parse_fault(f"hang:host={host.name}"), topology_from_layout(lay), gpus)
    assert fault.rank == int(np.flatnonzero(np.isin(gpus, on_host))[0])
    gpu = GPU.objects.filter(host=host).order_by("index").last()
    fault = resolve_fault(parse_fault(f"slow:gpu={gpu.name},factor=3"), topology_from_layout(lay), gpus)
    assert fault.text() == f"slow:rank={lay.gpu_host.size - 1 - gpu.index},factor=3"


def test_a_link_named_by_the_inventory_is_the_link_the_engine_slows(runner, demo):
    """``link:id=<Link name>`` becomes the engine's ``id=`` (a directed link of the topology, whose cable is
    ``id % n_cables``): the link the engine slows is the inventory's link of that name, in both directions."""
    from sim.debug.faults import parse_fault, with_link_fault
    from sim.fabric.topology import topology_from_layout
    from twin.inventory.adapter import layout_from_db
    from twin.capabilities.debug.kinds import engine_inject
    topo = topology_from_layout(layout_from_db(demo))
    backend = Link.objects.filter(cluster=demo, fabric__role=FabricRole.BACKEND).order_by("id")
    rows = Link.objects.filter(cluster=demo).order_by("id").values_list("id", flat=True)
    position = {row: i for i, row in enumerate(rows)}   # the layout's link order (twin.inventory.adapter)
    for link in (backend.first(), backend.order_by("-id").first()):   # a leaf cable and a spine cable
        text = engine_inject({"inject": f"link:id={link.name},factor=4"}, np.arange(8), topo)
        fault = parse_fault(text)
        slowed = np.flatnonzero(with_link_fault(topo, fault).link_capacity < np.asarray(topo.link_capacity))
        assert slowed.size == 2 and set(np.asarray(topo.link_cable)[slowed].tolist()) == {position[link.id]}
    # a link the inventory has failed is not in the fabric the engine routes on: a 400 naming inject
    link = backend.first()
    link.status = Status.FAILED
    link.save()
    with pytest.raises(ParamError, match="not an active link"):
        engine_inject({"inject": f"link:id={link.name}"}, np.arange(8), topology_from_layout(layout_from_db(demo)))
    r = runner.post("/api/runs/", {"kind": "debug", "cluster": "demo-256",
                                   "params": {**JOB, "inject": f"link:id={link.name}"}}, format="json")
    assert r.status_code == 400 and "not an active link" in " ".join(r.json()["params"]["inject"])


@pytest.mark.django_db
def test_dumps_over_the_bound_are_a_400_naming_entries(runner, demo):
    # 16,384 ranks x 100,000 entries: about 238 GB of dumps (the probe), refused before the cluster is looked at
    params = {"model": "llama3-405b", "gpus": 16384, "tp": 8, "pp": 16, "entries": 100_000}
    r = runner.post("/api/runs/", {"kind": "debug", "cluster": "demo-256", "params": params}, format="json")
    assert r.status_code == 400 and "MAX_DUMPS_BYTES" in " ".join(r.json()["params"]["entries"]), r.json()
    assert not SimulationRun.objects.exists()


# ------------------------------------------------------------------------------------------- temporary files
@pytest.mark.django_db
def test_temporary_dumps_of_runs_no_longer_running_are_swept(demo, tmp_path):
    from twin.runs import beat, tempfiles
    # given the folders a killed worker left for a finished run, a requeued run's first attempt and a deleted run,
    # and the folder of a run running its second attempt
    done = SimulationRun.objects.create(kind="debug", cluster=demo, status="failed", params={}, attempts=1)
    running = SimulationRun.objects.create(kind="debug", cluster=demo, status="running", params={}, attempts=2)
    gone = SimulationRun.objects.create(kind="debug", cluster=demo, status="running", params={}, attempts=1)
    folders = {}
    for name, run, attempt in (("done", done, 1), ("stale", running, 1), ("live", running, 2), ("gone", gone, 1)):
        with tempfiles.run_temp_dir(run, "debug") as f:
            pass
        d = tmp_path / f"twin-debug-{run.pk}-a{attempt}-x{name}"
        d.mkdir()
        (d / "nccl_trace_rank_0").write_bytes(b"\0" * 4096)
        folders[name] = d
    assert os.path.basename(f).startswith(f"twin-debug-{gone.pk}-a1-")          # how run_temp_dir names them
    gone_id = gone.pk
    gone.delete()
    other = tmp_path / "twin-debug-notarun"
    other.mkdir()
    # when the sweeper runs, then only the running attempt's folder (and what is not a run's) is kept
    swept = tempfiles.sweep_temp_dirs(tmp_path)
    assert {d["run"] for d in swept} == {done.pk, running.pk, gone_id} and len(swept) == 3
    assert [n for n, d in folders.items() if d.exists()] == ["live"] and other.exists()
    # and beat's pass runs it (on the twin's own temporary folder, not the system's /tmp, which other twins share)
    import tempfile
    elsewhere = tempfile.mkdtemp(prefix=f"twin-debug-{done.pk}-a1-")
    left = tempfile.mkdtemp(prefix=f"twin-debug-{done.pk}-a1-", dir=tempfiles.temp_root())
    beat.sweep()
    assert not os.path.exists(left)
    assert os.path.exists(elsewhere)                # another twin's, maybe: not ours to judge
    os.rmdir(elsewhere)
