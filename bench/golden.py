"""Golden outputs of the engine: every ``python -m sim`` command on the three presets, and the live frames of the
run kinds, recorded once and compared after a change that must not change a number (the move of ``sim/`` into
packages).

    .venv/bin/python bench/golden.py record [--only NAME ...]   # writes bench/golden/<case>.json
    .venv/bin/python bench/golden.py check  [--only NAME ...]   # re-runs and compares; exit 1 if any case differs

NAME is a case name or a pattern (``coll-*``, ``frames-*``). CLI cases run ``python -m sim <command> ... --json
--quiet`` as a subprocess of this interpreter from the repository root (the command line is the contract: this
module imports neither ``sim`` nor ``twin`` for them), two at a time. The ``frames-*`` cases run the run kinds in
one child process on Django (a throwaway SQLite database, no Redis, no Celery) and record the sha256 of every live
frame their reports encode, the summary and the sha256 of each returned array; their imports are in
:data:`IMPORTS` and :func:`frames_cases` only.

Outputs are normalized before they are stored and compared: wall-clock timings (:data:`DROP`) are left out, the
temporary folder of a case reads ``<TMP>``, a list longer than :data:`BIG_LIST` of a case not on demo-256 is kept
as its length and sha256. Numbers compare exactly (a float as its repr).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import fnmatch
import glob
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "bench" / "golden"
WORKERS = 2                    # the machine's cores
TIMEOUT_S = 600
BIG_LIST = 256                 # longer lists of a case not on demo-256 are stored as length + sha256
SHOWN_DIFFS = 10

# Module paths the frames part imports (frames_cases); the only place to update when they move.
IMPORTS = {
    "frames": "twin.live.frames",             # build_sections, encode, Frame, tables
    "registry": "twin.runs.registry",         # kinds(): name -> Kind (run, validated, wants_run)
    "actions": "twin.runs.actions",           # create_run(..., enqueue=False): the row a wants_run kind reads
    "adapter": "twin.inventory.adapter",      # layout_from_db(cluster)
    "inventory": "twin.inventory.models",     # Cluster
    "kept": "twin.inventory.kept",            # clear_all(): values kept per process, between cases
    "structure_cache": "twin.inventory.structure_cache",   # forget()
}

# Keys left out before storing and comparing, by command: JSON paths ("a.b", "a[].b" for every item of a list) of
# wall-clock timings. Not timings, so kept: "wall_s" (failures: the simulated wall clock of the timeline),
# "memory_gb" (job: the model's memory per GPU), "seconds" of storage-fanout (the simulated time to read the files),
# "dump_time_s" (debug: simulated).
DROP = {
    "collective": ["seconds"],                                      # {"total", "phases"}: solve wall time
    "checkpoint": ["seconds"],
    "storage-fanout": ["wall_seconds"],
    "job": ["seconds"],
    "jobs": ["seconds", "jobs[].seconds"],
    "schedule": ["seconds"],
    "failures": ["result.solves.seconds"],
    "debug": ["seconds"],
    "debug-analyze": ["seconds"],
    "startup": ["seconds"],
    "figure": ["seconds"],                                          # the data file's run time
    # frames: the kinds' summaries
    "frames:collective": [], "frames:fabric_health": [], "frames:figure": [],
    "frames:checkpoint": ["seconds"], "frames:storage": ["wall_seconds"],
    "frames:job": ["seconds"], "frames:jobs": ["seconds", "jobs[].seconds"], "frames:schedule": ["seconds"],
    "frames:failures": ["replay.solves.seconds", "per_seed[].solves.seconds"],
    # dumps_bytes: the size of the dumps' tar.gz, which holds the files' mtimes (its size varies by a few bytes)
    "frames:debug": ["seconds", "rehearsal.seconds", "dumps_bytes"],
    "frames:startup": ["seconds"],
}

DEMO = "demo-256"
ROCE = "meta-roce-24k"
IB = "meta-ib-24k"
POD = "dgx-h100-superpod"
HPN, MP4 = "alibaba-hpn", "multiplane-4"

JOBS_JSON = json.dumps([
    {"name": "pretrain", "model": "llama3-70b", "gpus": 128, "tp": 8, "pp": 4, "seed": 1},
    {"name": "finetune", "model": "llama3-8b", "gpus": 64, "tp": 8, "placement": "fragmented", "seed": 2},
    {"name": "small", "model": "llama3-8b", "gpus": 16, "tp": 8, "fsdp": False},
])
JOBS_TOML = """\
[[job]]
name = "pretrain"
arrival_hours = 0
model = "llama3-70b"
gpus = 128
tp = 8
pp = 4
steps = 200

[[job]]
name = "eval"
arrival_hours = 0.5
model = "llama3-8b"
gpus = 64
tp = 8
hours = 2.5

[[job]]
name = "sweep"
arrival_hours = 1
model = "llama3-8b"
gpus = 128
tp = 8
steps = 500
"""


# ----------------------------------------------------------------------------------------------------- cases
@dataclass
class Case:
    """One CLI case: ``python -m sim <args>`` (``{tmp}``: the case's temporary folder). ``setup``: commands run
    before it (not recorded); ``inputs``: files written into ``{tmp}`` first; ``files``: globs under ``{tmp}`` whose
    contents are recorded (JSON parsed, CSV as lines, anything else as sha256); ``rc``: the expected exit status."""

    name: str
    args: str
    preset: str | None = None
    setup: list[str] = field(default_factory=list)
    inputs: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    json: bool = True
    rc: int = 0

    @property
    def command(self) -> str:
        a = shlex.split(self.args)
        return "debug-analyze" if a[:2] == ["debug", "analyze"] else a[0]


def coll(name, preset, args, **kw):
    return Case(f"coll-{name}", f"collective --preset {preset} {args}", preset, **kw)


CASES = [
    # collective, demo-256: every flow and link in full
    coll("demo-ag-ecmp-flows", DEMO, "--gpus 64 --sizes 1M:64M --flows --links"),
    coll("demo-alltoall-flows", DEMO, "-c alltoall --gpus 32 --sizes 1M,16M --flows --links"),
    coll("demo-ar-tree-flows", DEMO, "-c allreduce --algorithm tree --gpus 32 --sizes 64M --flows --links"),
    coll("demo-frag-eecmp16", DEMO, "--gpus 128 --placement fragmented --routing eecmp --qps 16 --links"),
    coll("demo-te", DEMO, "--gpus 128 --routing te"),
    coll("demo-pinned-frag", DEMO, "--gpus 128 --routing pinned --placement fragmented"),
    coll("demo-dmodk", DEMO, "--gpus 128 --routing dmodk"),
    coll("demo-random-crc16-seeds3", DEMO, "--gpus 96 --placement random --hash crc16 --seeds 3"),
    coll("demo-bcast-ll128", DEMO, "-c broadcast --root 5 --gpus 64 --protocol LL128 --type half"),
    coll("demo-reduce-channels", DEMO, "-c reduce --root 3 --gpus 64 --channels 8 --sizes 1K:1G:4"),
    # collective, meta-roce-24k
    coll("roce-ag-4k-ecmp", ROCE, "--gpus 4096"),
    coll("roce-ag-4k-frag-eecmp16", ROCE, "--gpus 4096 --placement fragmented --routing eecmp --qps 16"),
    coll("roce-ag-4k-te", ROCE, "--gpus 4096 --routing te"),
    coll("roce-ag-4k-pinned", ROCE, "--gpus 4096 --routing pinned"),
    coll("roce-ag-4k-dmodk", ROCE, "--gpus 4096 --routing dmodk"),
    coll("roce-ag-16k-frag-eecmp16", ROCE, "--gpus 16384 --placement fragmented --routing eecmp --qps 16"),
    coll("roce-ag-8k-frag-crc32-seeds3", ROCE, "--gpus 8192 --placement fragmented --hash crc32 --seeds 3"),
    coll("roce-ar-tree-8k", ROCE, "-c allreduce --algorithm tree --gpus 8192"),
    coll("roce-rs-1k-fixed-sport", ROCE, "-c reducescatter --gpus 1024 --placement first-fit --udp-sport fixed "
                                         "--hash crc32"),
    coll("roce-alltoall-512", ROCE, "-c alltoall --gpus 512"),
    coll("roce-alltoall-refused", ROCE, "-c alltoall --gpus 1024", rc=2),
    # collective, meta-ib-24k
    coll("ib-ag-4k-default", IB, "--gpus 4096"),
    coll("ib-ag-4k-frag-ecmp", IB, "--gpus 4096 --placement fragmented --routing ecmp"),
    coll("ib-ag-4k-eecmp16", IB, "--gpus 4096 --routing eecmp --qps 16"),
    coll("ib-ag-4k-pinned", IB, "--gpus 4096 --routing pinned"),
    coll("ib-ag-4k-te", IB, "--gpus 4096 --routing te"),
    coll("ib-ar-tree-2k", IB, "-c allreduce --algorithm tree --gpus 2048"),
    coll("ib-alltoall-256", IB, "-c alltoall --gpus 256"),
    coll("ib-ag-2k-random-seeds3", IB, "--gpus 2048 --placement random --seeds 3"),
    # collective, dgx-h100-superpod (rail-optimized: every routing mode, rail-local and cross-rail traffic)
    coll("pod-ag-4k-default", POD, "--gpus 4096"),
    coll("pod-ag-4k-random-ecmp", POD, "--gpus 4096 --placement random --routing ecmp"),
    coll("pod-ag-4k-frag-eecmp16", POD, "--gpus 4096 --placement fragmented --routing eecmp --qps 16"),
    coll("pod-ag-4k-random-pinned", POD, "--gpus 4096 --placement random --routing pinned"),
    coll("pod-ag-4k-random-te", POD, "--gpus 4096 --placement random --routing te"),
    coll("pod-ar-tree-2k", POD, "-c allreduce --algorithm tree --gpus 2048"),
    coll("pod-alltoall-256-links", POD, "-c alltoall --gpus 256 --links"),
    # collective, alibaba-hpn and multiplane-4 (planes, dual-ToR and multi-port NICs: every routing mode)
    coll("hpn-ag-4k-default", HPN, "--gpus 4096 --qps 16"),
    coll("hpn-ag-4k-random-eecmp", HPN, "--gpus 4096 --placement random --routing eecmp --qps 16"),
    coll("hpn-ag-4k-frag-pinned", HPN, "--gpus 4096 --placement fragmented --routing pinned --qps 16"),
    coll("hpn-ag-4k-random-dmodk", HPN, "--gpus 4096 --placement random --routing dmodk --qps 16"),
    coll("hpn-ag-4k-random-te", HPN, "--gpus 4096 --placement random --routing te --qps 16"),
    coll("hpn-alltoall-256-links", HPN, "-c alltoall --gpus 256 --links"),
    coll("mp4-ag-8k-default", MP4, "--gpus 8192 --qps 16"),
    coll("mp4-ag-4k-random-ecmp", MP4, "--gpus 4096 --placement random --routing ecmp --qps 16"),
    coll("mp4-ag-4k-random-dmodk", MP4, "--gpus 4096 --placement random --routing dmodk --qps 4"),
    coll("mp4-ag-4k-random-te", MP4, "--gpus 4096 --placement random --routing te --qps 16"),
    coll("mp4-ar-tree-2k-pinned", MP4, "-c allreduce --algorithm tree --gpus 2048 --routing pinned --qps 4"),
    # figure: the data files (JSON, CSV), not the drawings
    Case("figure-allgather-quick", "figure allgather-scale --quick --out {tmp}/fig", DEMO, json=False,
         files=["fig/*.json", "fig/*.csv"]),
    Case("figure-roce-vs-ib-quick", "figure roce-vs-ib --quick --out {tmp}/fig", DEMO, json=False,
         files=["fig/*.json", "fig/*.csv"]),
    Case("figure-allgather-roce", f"figure allgather-scale --preset {ROCE} --jobs 512,2048 --seeds 1 "
                                  "--no-background --out {tmp}/fig", ROCE, json=False,
         files=["fig/*.json", "fig/*.csv"]),
    Case("figure-allgather-ib", f"figure allgather-scale --preset {IB} --jobs 512,2048 --seeds 1 --no-background "
                                "--out {tmp}/fig", IB, json=False, files=["fig/*.json", "fig/*.csv"]),
    # checkpoint
    Case("ckpt-demo-series", f"checkpoint --preset {DEMO} --gpus 128 --series --samples 20", DEMO),
    Case("ckpt-roce-async", f"checkpoint --preset {ROCE} --gpus 1024", ROCE),
    Case("ckpt-roce-sync-loading", f"checkpoint --preset {ROCE} --gpus 512 --mode sync --data-loading-gbps 50 "
                                   "--writers 64 --redundancy replicate-3", ROCE),
    Case("ckpt-ib-restore-hammerspace", f"checkpoint --preset {IB} --gpus 256 --restore --store hammerspace "
                                        "--bytes-per-gpu 1G --servers 20", IB),
    # storage-fanout
    Case("fanout-demo", f"storage-fanout --preset {DEMO} --clients 256", DEMO),
    Case("fanout-roce-sweep", f"storage-fanout --preset {ROCE} --clients 8192 --files 20", ROCE),
    Case("fanout-ib-tectonic", f"storage-fanout --preset {IB} --store tectonic --clients 2048 --no-sweep "
                               "--file-size 1M", IB),
    # job
    Case("job-demo-8b", f"job --preset {DEMO} --gpus 64", DEMO),
    Case("job-roce-70b", f"job --preset {ROCE} --model llama3-70b --gpus 1024 --tp 8 --pp 4", ROCE),
    Case("job-roce-8b-ddp-frag", f"job --preset {ROCE} --gpus 256 --no-fsdp --placement fragmented --qps 4", ROCE),
    Case("job-ib-custom-interleaved", f"job --preset {IB} --model custom --layers 16 --dim 4096 --ffn-dim 14336 "
                                      "--heads 32 --kv-heads 8 --gpus 512 --tp 4 --pp 4 --schedule interleaved "
                                      "--virtual-stages 2 --precision fp8", IB),
    # jobs sharing the fabric
    Case("jobs-demo", f"jobs --preset {DEMO} --jobs {{tmp}}/jobs.json", DEMO, inputs={"jobs.json": JOBS_JSON}),
    Case("jobs-roce", f"jobs --preset {ROCE} --jobs {{tmp}}/jobs.json --routing eecmp --qps 4", ROCE,
         inputs={"jobs.json": JOBS_JSON}),
    Case("jobs-ib", f"jobs --preset {IB} --jobs {{tmp}}/jobs.json", IB, inputs={"jobs.json": JOBS_JSON}),
    # schedule
    Case("sched-demo-toml", f"schedule --preset {DEMO} --jobs {{tmp}}/jobs.toml --gpu-ids", DEMO,
         inputs={"jobs.toml": JOBS_TOML}),
    Case("sched-roce-topology", f"schedule --preset {ROCE} --arrivals 40 --days 3", ROCE),
    Case("sched-ib-random", f"schedule --preset {IB} --policy random --arrivals 30 --days 2 --seed 3", IB),
    # failures
    Case("fail-demo-inject", f"failures --preset {DEMO} --model llama3-70b --gpus 128 --pp 4 --days 2 --seeds 2 "
                             "--inject gpu:demo-256.z00.r000.h0.gpu3@10h,switch:demo-256.be.ctsw.z00.s01@20h,"
                             "software@30h --sweep-interval 10m:2h:3", DEMO),
    Case("fail-roce-405b", f"failures --preset {ROCE} --days 3 --seeds 2", ROCE),
    Case("fail-ib-store-off", f"failures --preset {IB} --model llama3-70b --gpus 2048 --pp 4 --days 5 --seeds 3 "
                              "--store off --no-reroute", IB),
    # debug, and debug analyze of its dumps
    Case("debug-demo-hang", f"debug --preset {DEMO} --gpus 64 --inject hang:rank=5 --dump {{tmp}}/dump", DEMO,
         files=["dump/*"]),
    Case("debug-demo-slow", f"debug --preset {DEMO} --gpus 128 --pp 2 --inject slow:rank=17,factor=3 --entries 400 "
                            "--dump {tmp}/dump", DEMO, files=["dump/*"]),
    Case("debug-analyze-demo-hang", f"debug analyze {{tmp}}/dump --preset {DEMO}", DEMO,
         setup=[f"debug --preset {DEMO} --gpus 64 --inject hang:rank=5 --dump {{tmp}}/dump --json --quiet"]),
    Case("debug-analyze-roce-desync", f"debug analyze {{tmp}}/dump --preset {ROCE}", ROCE,
         setup=[f"debug --preset {ROCE} --gpus 64 --inject desync:rank=9,what=size --entries 300 "
                "--dump {tmp}/dump --json --quiet"]),
    # startup
    Case("startup-default", "startup"),
    Case("startup-legacy-eager", "startup --gpus 512,4096,32768 --store-backend legacy --creation eager --no-split "
                                 "--no-local-sync --pp 8 --cp 2"),
]

# The frames part: (case, kind, parameters) run in process on demo-256 built from its preset.
FRAMES = [
    ("frames-collective-ecmp-seeds2", "collective", {"gpus": 128, "placement": "fragmented", "seeds": 2}),
    ("frames-collective-te-tree", "collective", {"collective": "allreduce", "algorithm": "tree", "gpus": 64,
                                                 "routing": "te", "sizes": "1M:256M"}),
    ("frames-fabric-health", "fabric_health", {"sizes": "1G"}),
    ("frames-figure", "figure", {"figure": "allgather-scale", "jobs": [32, 64], "seeds": 1, "background": False}),
    ("frames-checkpoint", "checkpoint", {"gpus": 128, "samples": 20}),
    ("frames-checkpoint-restore", "checkpoint", {"gpus": 64, "restore": True, "mode": "sync", "samples": 10}),
    ("frames-storage", "storage", {"clients": 256, "files": 20}),
    ("frames-job", "job", {"model": "llama3-8b", "gpus": 64, "tp": 8}),
    ("frames-jobs", "jobs", {"jobs": JOBS_JSON}),
    ("frames-schedule", "schedule", {"jobs": JOBS_TOML}),
    ("frames-failures", "failures", {"model": "llama3-70b", "gpus": 128, "pp": 4, "days": 4, "seeds": 2,
                                     "rate_scale": 30}),
    ("frames-debug", "debug", {"gpus": 64, "inject": "hang:rank=5", "entries": 200}),
    ("frames-startup", "startup", {"gpus": "1024:8192"}),
]
FRAMES_NAMES = [name for name, _, _ in FRAMES]


# ---------------------------------------------------------------------------------------------- normalizing
def _tmp_pattern(tmp: str | None):
    """Temporary paths: the case's folder, then any other under the system's temporary folder (random names)."""
    pats = []
    if tmp:
        pats.append((re.compile(re.escape(tmp)), "<TMP>"))
    base = tempfile.gettempdir().rstrip("/")
    pats.append((re.compile(re.escape(base) + r"/[^\s/\"',;:]+"), "<TMP>"))
    return pats


def normalize(obj, drop=(), tmp: str | None = None, big: bool = False):
    """``obj`` without the ``drop`` paths, temporary paths as ``<TMP>``, and (``big``) lists longer than BIG_LIST
    replaced by their length and sha256 (of their normalized JSON)."""
    drops = set(drop)
    pats = _tmp_pattern(tmp)

    def text(s):
        for p, r in pats:
            s = p.sub(r, s)
        return s

    def walk(x, path):
        if isinstance(x, dict):
            out = {}
            for k, v in x.items():
                p = f"{path}.{k}" if path else str(k)
                if p in drops:
                    continue
                out[text(str(k))] = walk(v, p)
            return out
        if isinstance(x, (list, tuple)):
            items = [walk(v, f"{path}[]") for v in x]
            if big and len(items) > BIG_LIST:
                return {"<list>": len(items), "sha256": sha256_text(canonical(items))}
            return items
        if isinstance(x, str):
            return text(x)
        return x

    return walk(obj, "")


def canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True)


def sha256_text(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def dumps(obj, indent: int = 0, width: int = 118) -> str:
    """JSON with a container on one line when it fits in ``width``, else one item per line (small, diffable)."""
    flat = json.dumps(obj, allow_nan=True)
    if len(flat) + indent <= width or not isinstance(obj, (dict, list)) or not obj:
        return flat
    pad, inner = " " * indent, " " * (indent + 1)
    if isinstance(obj, dict):
        parts = [f"{inner}{json.dumps(k)}: {dumps(v, indent + 1, width).lstrip()}" for k, v in obj.items()]
        return "{\n" + ",\n".join(parts) + f"\n{pad}}}"
    parts = [f"{inner}{dumps(v, indent + 1, width).lstrip()}" for v in obj]
    return "[\n" + ",\n".join(parts) + f"\n{pad}]"


# ----------------------------------------------------------------------------------------------- CLI cases
def _argv(case: Case, args: str, tmp: str, output: bool = True) -> list[str]:
    a = shlex.split(args.replace("{tmp}", tmp))
    if output:
        a += (["--json"] if case.json else []) + ["--quiet"]
    return [sys.executable, "-m", "sim", *a]


def child_env() -> dict:
    env = dict(os.environ)
    env.update(PYTHONHASHSEED="0", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env


def run_cli(case: Case) -> dict:
    tmp = tempfile.mkdtemp(prefix="golden-")
    try:
        for name, content in case.inputs.items():
            Path(tmp, name).write_text(content)
        for step in case.setup:
            p = subprocess.run(_argv(case, step, tmp, output=False), cwd=ROOT, env=child_env(), capture_output=True,
                               text=True, timeout=TIMEOUT_S)
            if p.returncode:
                raise RuntimeError(f"setup {step!r} exited {p.returncode}: {p.stderr.strip()[-500:]}")
        argv = _argv(case, case.args, tmp)
        p = subprocess.run(argv, cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=TIMEOUT_S)
        drop = DROP.get(case.command, [])
        big = case.preset != DEMO
        if case.json and p.returncode == 0:
            stdout = normalize(json.loads(p.stdout), drop, tmp, big)
        else:
            stdout = normalize(p.stdout.splitlines(), (), tmp)
        doc = {"case": case.name, "argv": normalize(["python", *argv[1:]], (), tmp), "returncode": p.returncode,
               "stdout": stdout}
        if p.stderr.strip():
            doc["stderr"] = normalize(p.stderr.splitlines(), (), tmp)
        files = {}
        for pattern in case.files:
            for f in sorted(glob.glob(os.path.join(tmp, pattern))):
                rel = os.path.relpath(f, tmp)
                if f.endswith(".json"):
                    files[rel] = normalize(json.loads(Path(f).read_text()), DROP.get(case.command, []), tmp, big)
                elif f.endswith(".csv"):
                    files[rel] = normalize(Path(f).read_text().splitlines(), (), tmp, big)
                else:
                    files[rel] = {"bytes": os.path.getsize(f), "sha256": sha256_file(Path(f))}
        if case.files:
            doc["files"] = files
        return doc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -------------------------------------------------------------------------------------------- frames cases
def frames_cases(names: list[str]) -> dict[str, dict]:
    """Run the FRAMES cases ``names`` in this process: Django on a throwaway SQLite database (no Redis, no
    Celery), demo-256 built from its preset, each kind's ``run(layout, validated params, reporter)`` in a
    transaction rolled back afterwards (each case sees the same database, whatever ran before it)."""
    import importlib
    import io

    tmp = tempfile.mkdtemp(prefix="golden-")
    os.environ.update(DJANGO_SETTINGS_MODULE="twin.settings", DATABASE_URL=f"sqlite:///{tmp}/db.sqlite3",
                      SECRET_KEY="golden-not-a-secret-" * 3, TWIN_VAR_DIR=f"{tmp}/var",
                      TWIN_RUN_FILES_DIR=f"{tmp}/run-files", TWIN_STRUCTURE_CACHE_DIR=f"{tmp}/structure-cache",
                      TWIN_WARM_STRUCTURES="false")
    sys.path.insert(0, str(ROOT))
    import django
    django.setup()
    import numpy as np
    from django.conf import settings
    from django.core.management import call_command
    from django.db import transaction
    settings.TWIN_KEPT_CACHE = ""                # kept values per process only: nothing in Redis
    settings.TWIN_LIVE_TICK_HZ = float("inf")    # failures: a frame at every failure, not every 0.25 s of wall time
    mod = {k: importlib.import_module(v) for k, v in IMPORTS.items()}
    frames = mod["frames"]
    call_command("migrate", verbosity=0, stdout=io.StringIO())
    call_command("build_cluster", DEMO, "--no-progress", stdout=io.StringIO())
    cluster = mod["inventory"].Cluster.objects.get(name=DEMO)
    kinds = mod["registry"].kinds()
    params_of = {name: (kind, params) for name, kind, params in FRAMES}

    class Reporter:
        """A run's reporter that encodes every report as a live frame and keeps its sha256 and sections."""

        def __init__(self):
            self.frames = []

        def __call__(self, fraction=None, message="", *, force=False, **values):
            # every section by the keyword the kind reports it under (link_util, gpu_state and the capabilities'),
            # each encoded in a frame of its own: the digest does not depend on the order sections are packed in
            given = {k: v for k, v in values.items() if v is not None}
            sections = frames.build_sections(**given)
            names = {int(k): v for k, v in frames.tables()["sections"].items()}
            progress = 100.0 * float(fraction) if fraction is not None else 0.0
            digests, sizes = {}, {}
            for sid, a in sections.items():
                # time_ms must not be 0: encode() writes the current time for 0
                raw = frames.encode(frames.Frame(type=1, seq=len(self.frames), run_id=1, cluster_id=1,
                                                 progress=progress, status="running", time_ms=1.0,
                                                 sections={sid: a}))
                digests[names.get(sid, str(sid))] = hashlib.sha256(raw).hexdigest()
                sizes[names.get(sid, str(sid))] = int(np.asarray(a).size)
            self.frames.append({"progress": progress, "force": bool(force), "sections": sizes,
                                "sha256": dict(sorted(digests.items()))})

    def array_digest(a):
        a = np.ascontiguousarray(a)
        return {"dtype": str(a.dtype), "shape": list(a.shape), "sha256": hashlib.sha256(a.tobytes()).hexdigest()}

    out = {}
    layout = mod["adapter"].layout_from_db(cluster)
    for name in names:
        kind_name, values = params_of[name]
        kind = kinds[kind_name]
        mod["kept"].clear_all()
        mod["structure_cache"].forget()
        with transaction.atomic():
            params = kind.validated(values, cluster)
            extra = {}
            if kind.wants_run:
                extra["run"] = mod["actions"].create_run(kind_name, params, cluster, enqueue=False, validated=True)
            reporter = Reporter()
            summary, arrays = kind.run(layout, params, reporter, **extra)
            transaction.set_rollback(True)
        out[name] = {"case": name, "kind": kind_name, "params": normalize(params, (), tmp),
                     "summary": normalize(summary, DROP.get(f"frames:{kind_name}", []), tmp),
                     "arrays": {k: array_digest(v) for k, v in sorted(arrays.items())},
                     "frames": reporter.frames}
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def run_frames(names: list[str]) -> dict[str, dict]:
    """frames_cases in a child process (its own Django, environment and imports); the results through a file."""
    with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
        result = Path(tmp, "frames.json")
        p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "_frames", str(result), *names], cwd=ROOT,
                           env=child_env(), capture_output=True, text=True, timeout=TIMEOUT_S)
        if p.returncode:
            raise RuntimeError(f"frames exited {p.returncode}: {p.stderr.strip()[-2000:]}")
        return json.loads(result.read_text())


# ----------------------------------------------------------------------------------------------- comparing
def differences(old, new, path="", out=None, limit=SHOWN_DIFFS):
    """The first ``limit`` JSON paths where ``old`` and ``new`` differ: (path, old, new); types compare too (1 is
    not 1.0 nor True), NaN equals NaN."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(old, dict) and isinstance(new, dict):
        for k in list(old) + [k for k in new if k not in old]:
            p = f"{path}.{k}" if path else k
            if k not in new:
                out.append((p, old[k], "<absent>"))
            elif k not in old:
                out.append((p, "<absent>", new[k]))
            else:
                differences(old[k], new[k], p, out, limit)
            if len(out) >= limit:
                break
    elif isinstance(old, list) and isinstance(new, list):
        for i, (a, b) in enumerate(zip(old, new)):
            differences(a, b, f"{path}[{i}]", out, limit)
            if len(out) >= limit:
                return out
        if len(old) != len(new) and len(out) < limit:
            out.append((f"{path}.length", len(old), len(new)))
    elif type(old) is not type(new):
        out.append((path, old, new))
    elif isinstance(old, float):
        if not (old == new or (old != old and new != new)):
            out.append((path, old, new))
    elif old != new:
        out.append((path, old, new))
    return out


def _short(v, n=100) -> str:
    s = repr(v) if not isinstance(v, (dict, list)) else json.dumps(v)
    return s if len(s) <= n else s[:n - 3] + "..."


# ------------------------------------------------------------------------------------------------- running
def selected(only: list[str] | None) -> tuple[list[Case], list[str]]:
    def pick(name):
        return not only or any(fnmatch.fnmatchcase(name, pat) for pat in only)

    cases = [c for c in CASES if pick(c.name)]
    frames = [n for n in FRAMES_NAMES if pick(n)]
    if only:
        known = [c.name for c in CASES] + FRAMES_NAMES
        unknown = [pat for pat in only if not any(fnmatch.fnmatchcase(n, pat) for n in known)]
        if unknown:
            sys.exit(f"golden: no case matches {', '.join(unknown)}")
    return cases, frames


def run_all(cases: list[Case], frames: list[str], on_done) -> None:
    """Every case, WORKERS at a time (the frames part is one job, started first: the longest); ``on_done(name,
    doc or exception, seconds)`` as each ends."""
    def timed(fn, arg):
        t0 = time.perf_counter()
        try:
            return fn(arg), time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001 - reported as the case's failure
            return e, time.perf_counter() - t0

    with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {}
        if frames:
            futures[pool.submit(timed, run_frames, frames)] = frames
        for c in cases:
            futures[pool.submit(timed, run_cli, c)] = c.name
        for fut in concurrent.futures.as_completed(futures):
            result, seconds = fut.result()
            key = futures[fut]
            if isinstance(key, list):                          # the frames job: one result per case
                for name in key:
                    on_done(name, result if isinstance(result, Exception) else result[name], seconds)
            else:
                on_done(key, result, seconds)


def expected_rc(name: str) -> int:
    return next((c.rc for c in CASES if c.name == name), 0)


def record(only, folder: Path) -> int:
    cases, frames = selected(only)
    folder.mkdir(parents=True, exist_ok=True)
    bad = []

    def done(name, doc, seconds):
        if isinstance(doc, Exception):
            bad.append(name)
            print(f"{name}: FAILED ({type(doc).__name__}: {doc})", flush=True)
            return
        if doc.get("returncode", 0) != expected_rc(name):
            bad.append(name)
            print(f"{name}: exit status {doc['returncode']}, expected {expected_rc(name)}: "
                  f"{' | '.join(doc.get('stderr', [])[-3:])}", flush=True)
        (folder / f"{name}.json").write_text(dumps(doc) + "\n")
        print(f"{name}: recorded ({seconds:.1f} s)", flush=True)

    t0 = time.perf_counter()
    run_all(cases, frames, done)
    n = len(cases) + len(frames)
    size = sum(p.stat().st_size for p in folder.glob("*.json"))
    print(f"golden: {n - len(bad)} recorded, {len(bad)} failed in {time.perf_counter() - t0:.1f} s "
          f"({size / 1e6:.2f} MB in {folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder})")
    return 1 if bad else 0


def check(only, folder: Path) -> int:
    cases, frames = selected(only)
    same, differ = [], []

    def done(name, doc, seconds):
        path = folder / f"{name}.json"
        if isinstance(doc, Exception):
            differ.append(name)
            print(f"{name}: FAILED ({type(doc).__name__}: {doc})", flush=True)
            return
        if not path.exists():
            differ.append(name)
            print(f"{name}: not recorded ({path.name} missing)", flush=True)
            return
        old = json.loads(path.read_text())
        new = json.loads(dumps(doc))              # as stored: the same JSON round trip
        diffs = differences(old, new)
        if not diffs:
            same.append(name)
            print(f"{name}: same ({seconds:.1f} s)", flush=True)
            return
        differ.append(name)
        lines = [f"{name}: DIFFER ({seconds:.1f} s)"]
        lines += [f"  {p}: {_short(a)} -> {_short(b)}" for p, a, b in diffs]
        print("\n".join(lines), flush=True)

    t0 = time.perf_counter()
    run_all(cases, frames, done)
    if not only:
        known = {c.name for c in CASES} | set(FRAMES_NAMES)
        stale = sorted(p.stem for p in folder.glob("*.json") if p.stem not in known)
        if stale:
            print(f"golden: recorded files of no case (not compared): {', '.join(stale)}")
    print(f"golden: {len(same)} same, {len(differ)} differ ({time.perf_counter() - t0:.1f} s)")
    return 1 if differ else 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_frames"]:                  # the frames part's child process: _frames RESULT NAME...
        Path(argv[1]).write_text(json.dumps(frames_cases(argv[2:])))
        return 0
    ap = argparse.ArgumentParser(prog="bench/golden.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("record", "check", "list"))
    ap.add_argument("--only", nargs="+", metavar="NAME", help="case names or patterns (coll-*, frames-*)")
    ap.add_argument("--dir", default=str(GOLDEN), help="folder of the recorded files (default bench/golden)")
    args = ap.parse_args(argv)
    folder = Path(args.dir).resolve()
    if args.mode == "list":
        cases, frames = selected(args.only)
        for c in cases:
            print(f"{c.name:34} python -m sim {c.args}")
        for n in frames:
            kind, params = next((k, p) for name, k, p in FRAMES if name == n)
            print(f"{n:34} kind {kind} {json.dumps(params)[:80]}")
        return 0
    return record(args.only, folder) if args.mode == "record" else check(args.only, folder)


if __name__ == "__main__":
    sys.exit(main())
