"""A rehearsal's dumps kept compact: what every rank's dump is made of (:class:`sim.debug.writer.DumpSet`) in one
compressed ``.npz``, from which :func:`load` and the writer give back the very bytes of every dump.

Why a module: the dumps of 16,384 ranks are 4.8 GB of one 145-byte record repeated with a few numbers changing;
packing them took the twin's worker more CPU than simulating and analyzing together. What changes from rank to rank
is the window of its times (two int64 a record), its states and its process groups; the rest is its stage's program.
Stored as they are made, each time column minus the one of the rank before in its stage (ranks of a stage run in
step, so the differences are mostly zero) and split into byte planes, they deflate at gzip's fastest level to a
few MB in a few seconds (docs/debugging.md, "The twin's debug run at 16,384 ranks"). The twin keeps this file
with the run and builds the archive of the dumps when it is downloaded (:func:`sim.debug.archive.stream`).

An ``.npz`` read here is the twin's own (written by :func:`save` in its run files), read with numpy's loader without
pickles (``allow_pickle=False``); a file that is not one is refused with a DumpError naming it.
"""
from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence

import numpy as np

from sim.core.progress import silent
from sim.debug.dumpformat import DumpError
from sim.debug.faults import Fault
from sim.debug.programs import DIM_NAMES
from sim.debug.writer import OP_COLUMNS, STEP_COLUMNS, DumpSet, StageDumps

FORMAT = "cluster-twin dumpset 1"
PARAMS = ("entries", "timeout_s", "steps_before") + DIM_NAMES     # the job's parameters the writer reads
LEVEL = 1                                                          # deflate's fastest: the planes are mostly zeros
STAGE_ARRAYS = ("ops", "ranks", "n_present", "n_done", "live", "created", "done", "completed", "desync")


def _planes(a: np.ndarray) -> np.ndarray:
    """An (n, w) int64 array as the byte planes (8, n * w) of each row minus the row before (the first as is)."""
    d = np.empty_like(a)
    if a.size:
        d[:1] = a[:1]
        np.subtract(a[1:], a[:-1], out=d[1:])
    return np.ascontiguousarray(d.reshape(-1).view(np.uint8).reshape(-1, 8).T)


def _from_planes(p: np.ndarray, shape) -> np.ndarray:
    """The inverse of :func:`_planes`."""
    d = np.ascontiguousarray(p.T).view(np.int64).reshape(shape)
    return np.cumsum(d, axis=0, dtype=np.int64)


def save(ds: DumpSet, out, progress=None) -> None:
    """Write ``ds`` into ``out`` (a binary file object) as a compressed ``.npz``; ``progress(fraction)`` per stage."""
    say = progress or silent
    meta = {"format": FORMAT, "params": {k: ds.params[k] for k in PARAMS},
            "fault": {"kind": ds.fault.kind, "what": ds.fault.what}, "t0_ns": int(ds.t0_ns), "cluster": ds.cluster,
            "cluster_gpus": int(ds.cluster_gpus), "stages": [],
            "pg_names": {d: [ds.pg_names.get((d, i)) for i in range(ds.group_ranks[d].shape[0])] for d in DIM_NAMES}}
    arrays = {"gpus": np.asarray(ds.gpus, np.int64), "dead": np.asarray(ds.dead, bool)}
    for d in DIM_NAMES:
        arrays[f"rank_group_{d}"] = np.asarray(ds.rank_group[d], np.int64)
        arrays[f"group_ranks_{d}"] = np.asarray(ds.group_ranks[d], np.int64)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=LEVEL) as z:
        def put(name, a):
            with z.open(name + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asarray(a), allow_pickle=False)
        for i, sd in enumerate(ds.stages):
            meta["stages"].append({"stage": sd.stage, "lo": sd.lo, "shape": list(sd.created.shape)})
            put(f"s{i}_ops", np.stack([sd.ops[k] for k in OP_COLUMNS + STEP_COLUMNS]))
            for k in ("ranks", "n_present", "n_done"):
                put(f"s{i}_{k}", np.asarray(getattr(sd, k), np.int64))
            put(f"s{i}_live", sd.live)
            put(f"s{i}_created", _planes(sd.created))
            put(f"s{i}_done", _planes(np.where(sd.completed, sd.done - sd.created, 0)))
            put(f"s{i}_completed", np.packbits(sd.completed, axis=None))
            put(f"s{i}_desync", np.packbits(sd.desync, axis=None))
            say((i + 1) / len(ds.stages))
        for k, a in arrays.items():
            put(k, a)
        put("meta", np.frombuffer(json.dumps(meta).encode(), np.uint8))


class _Stages(Sequence):
    """The stages of a kept DumpSet, read from its ``.npz`` when first looked at; ``keep`` of them held at a time
    (None: all), so a download stage after stage holds one stage's times (:func:`sim.debug.archive.stream`)."""

    def __init__(self, z, meta: dict, keep: int | None):
        self.z, self.meta, self.keep, self.held = z, meta, keep, {}

    def __len__(self):
        return len(self.meta["stages"])

    def __getitem__(self, i):
        if not isinstance(i, int) or not 0 <= i < len(self):
            raise IndexError(i)
        got = self.held.get(i)
        if got is None:
            if self.keep is not None and len(self.held) >= self.keep:
                self.held.clear()
            got = self.held[i] = _stage(self.z, i, self.meta["stages"][i])
        return got


def _stage(z, i: int, m: dict) -> StageDumps:
    shape = tuple(m["shape"])
    n = int(np.prod(shape))
    ops = dict(zip(OP_COLUMNS + STEP_COLUMNS, z[f"s{i}_ops"]))
    created = _from_planes(z[f"s{i}_created"], shape)
    completed = np.unpackbits(z[f"s{i}_completed"], count=n).astype(bool).reshape(shape)
    return StageDumps(stage=int(m["stage"]), ranks=z[f"s{i}_ranks"], ops=ops, n_present=z[f"s{i}_n_present"],
                      n_done=z[f"s{i}_n_done"], live=z[f"s{i}_live"], lo=int(m["lo"]), created=created,
                      done=np.where(completed, created + _from_planes(z[f"s{i}_done"], shape), 0),
                      completed=completed,
                      desync=np.unpackbits(z[f"s{i}_desync"], count=n).astype(bool).reshape(shape))


def load(path, keep: int | None = None) -> DumpSet:
    """The :class:`DumpSet` :func:`save` wrote at ``path``; its stages read when first looked at, ``keep`` of them
    held at a time (None: all of them, once read); DumpError naming the file if it is not one (its stages are
    checked to be there; a stage that cannot be read later raises as numpy does)."""
    try:
        z = np.load(path, allow_pickle=False)
        try:
            meta = json.loads(bytes(z["meta"]).decode())
            if meta.get("format") != FORMAT:
                raise ValueError(f"format {str(meta.get('format'))[:60]!r}, not {FORMAT!r}")
            missing = {f"s{i}_{k}" for i in range(len(meta["stages"])) for k in STAGE_ARRAYS} - set(z.files)
            if missing:
                raise KeyError(f"no {sorted(missing)[0]}")
            pg_names = {(d, i): name for d, names in meta["pg_names"].items() for i, name in enumerate(names)
                        if name is not None}
            return DumpSet(params=meta["params"], fault=Fault(kind=meta["fault"]["kind"], what=meta["fault"]["what"]),
                           gpus=z["gpus"], dead=z["dead"], rank_group={d: z[f"rank_group_{d}"] for d in DIM_NAMES},
                           group_ranks={d: z[f"group_ranks_{d}"] for d in DIM_NAMES}, pg_names=pg_names,
                           t0_ns=int(meta["t0_ns"]), cluster=meta["cluster"], cluster_gpus=int(meta["cluster_gpus"]),
                           stages=_Stages(z, meta, keep))
        except BaseException:
            z.close()
            raise
    except FileNotFoundError:
        raise DumpError(f"{path}: no such file") from None
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, zipfile.BadZipFile,
            json.JSONDecodeError) as e:
        raise DumpError(f"{path}: not a rehearsal's dumps kept by the twin ({type(e).__name__}: "
                        f"{str(e)[:200]})") from None
