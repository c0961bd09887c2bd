"""The fault a rehearsal injects: its text syntax, parsed here and nowhere else, and what a link fault does to the
cluster.

Why a module: the command line, the parameter checks (:func:`sim.debug.recorder.check_debug`), the rehearsal and
the twin (``twin.runs.debug_kinds``) all read the same ``inject`` text; one parser (:func:`parse_fault`) refuses
bad text in the same words everywhere (a :class:`ParamError` naming ``inject``), and :func:`resolve_fault` turns
the cluster's item names a fault may give (``gpu=``, ``host=``, ``link:id=<name>``, named by
:mod:`sim.fabric.names` as the inventory names them) into the engine's numbers.

Syntax: ``hang:rank=R[,op=K]`` (rank R never enters its K-th collective of the last step), ``desync:rank=R[,op=K]
[,what=size|op]``, ``slow:rank=R[,factor=X]`` (its GPU X times slower), ``link:id=L[,factor=X]`` (a backend link X
times slower; ``factor=inf``: failed), ``host:rank=R[,op=K]`` (R's host dies); null, empty or ``none``: a clean
job. A ranked fault may give ``gpu=<GPU name>`` (the rank on that GPU) or ``host=<host name>`` (the host's first
rank) instead of ``rank=``, and a link fault ``id=<link name>``. Each key at most once.
"""
from __future__ import annotations

import math
from copy import copy
from dataclasses import dataclass, replace

import numpy as np

from sim.core.errors import ParamError, UsageError
from sim.fabric.layout import STATUS_FAILED
from sim.fabric.names import gpu_name, host_names, item_names
from sim.fabric.topology import topology_from_layout

FAULTS = ("hang", "desync", "slow", "link", "host")
RANKED = ("hang", "desync", "slow", "host")          # the faults that take a rank (link takes a link id)
MAX_FAULT_OP = 10_000_000                            # an op index above this is no step's collective: a typo
KEYS = {"hang": ("rank", "op"), "desync": ("rank", "op", "what"), "host": ("rank", "op"), "slow": ("rank", "factor"),
        "link": ("id", "factor")}
RANK_NAMES = ("gpu", "host")                         # the item names a ranked fault may give instead of rank=
DEFAULT_FACTOR = {"slow": 2.0, "link": 4.0}


@dataclass(frozen=True)
class Fault:
    kind: str                         # one of FAULTS, or "none"
    rank: int = -1
    op: int | None = None             # index into the rank's last-step program (None: its middle)
    what: str = "size"                # desync: size or op
    factor: float = 1.0               # slow / link
    link: int = -1
    gpu: str | None = None            # the rank given as its GPU's name (resolve_fault)
    host: str | None = None           # the rank given as its host's name (the host's first rank)
    link_name: str | None = None      # the link given as its name (resolve_fault)

    def names(self) -> dict[str, str]:
        """The cluster item names the fault gives, by key: ``gpu``, ``host``, ``link``."""
        return {k: v for k, v in (("gpu", self.gpu), ("host", self.host), ("link", self.link_name)) if v is not None}

    def to_dict(self) -> dict:
        d = {"kind": self.kind}
        if self.kind in ("hang", "desync", "slow", "host"):
            d["rank"] = self.rank
        if self.kind in ("hang", "desync", "host"):
            d["op"] = self.op
        if self.kind == "desync":
            d["what"] = self.what
        if self.kind in ("slow", "link"):
            d["factor"] = self.factor if math.isfinite(self.factor) else "inf"
        if self.kind == "link":
            d["link"] = self.link
        return d

    def text(self) -> str:
        """The fault in the syntax :func:`parse_fault` reads (``parse_fault(f.text()) == f``)."""
        if self.kind == "none":
            return "none"
        args = []
        if self.kind == "link":
            args.append(f"id={self.link_name if self.link_name is not None else self.link}")
        else:
            args.append(f"gpu={self.gpu}" if self.gpu is not None else f"host={self.host}" if self.host is not None
                        else f"rank={self.rank}")
        if self.op is not None:
            args.append(f"op={self.op}")
        if self.kind == "desync" and self.what != "size":
            args.append(f"what={self.what}")
        if self.kind in ("slow", "link"):
            f = repr(self.factor)                                 # inf, 2.5, 1e+300; 4.0 as 4
            args.append(f"factor={f[:-2] if f.endswith('.0') else f}")
        return f"{self.kind}:" + ",".join(args)


def parse_fault(text: str | None) -> Fault:
    """``kind:key=value,...`` (the module docstring) -> :class:`Fault`; ParamError naming ``inject``."""
    if text is None or not text.strip() or text.strip().lower() == "none":
        return Fault("none")
    kind, _, rest = text.strip().partition(":")
    kind = kind.strip().lower()
    if kind not in FAULTS:
        raise ParamError("inject", f"unknown fault {kind!r}: choose one of {', '.join(FAULTS)}")
    args = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        k, eq, v = part.partition("=")
        k, v = k.strip().lower(), v.strip()
        if not eq or not k or not v:
            raise ParamError("inject", f"{part[:80]!r} is not key=value")
        if k in args:
            raise ParamError("inject", f"{k} is given twice: each key at most once")
        args[k] = v
    allowed = set(KEYS[kind]) | (set(RANK_NAMES) if kind in RANKED else set())
    extra = set(args) - allowed
    if extra:
        raise ParamError("inject", f"{kind} takes {', '.join(sorted(allowed))}, not {', '.join(sorted(extra))}")

    def whole(name, required=True):
        if name not in args:
            if required:
                raise ParamError("inject", f"{kind} needs {name}=N")
            return None
        v = args[name]
        if not (v.isascii() and v.isdigit()):
            raise ParamError("inject", f"{name} must be a whole number, got {v[:80]!r}")
        return int(v)

    def factor():
        try:
            f = float(args.get("factor", DEFAULT_FACTOR[kind]))
        except ValueError:
            raise ParamError("inject", f"factor must be a number, got {args['factor'][:80]!r}") from None
        if not f > 1.0:
            raise ParamError("inject", "factor must be above 1 (how many times slower)")
        if kind == "slow" and not math.isfinite(f):
            raise ParamError("inject", "a slow GPU needs a finite factor (a GPU that stops is a hang)")
        return f

    if kind == "link":
        if "id" in args and not args["id"].isdigit():
            return Fault("link", link_name=args["id"], factor=factor())
        return Fault("link", link=whole("id"), factor=factor())
    given = [k for k in ("rank",) + RANK_NAMES if k in args]
    if len(given) > 1:
        raise ParamError("inject", f"{kind} takes one of rank=, gpu=, host=, not {' and '.join(given)}")
    names = {k: args[k] for k in RANK_NAMES if k in args}
    rank = -1 if names else whole("rank")
    if kind == "slow":
        return Fault("slow", rank=rank, factor=factor(), **names)
    what = args.get("what", "size")
    if what not in ("size", "op"):
        raise ParamError("inject", f"what must be size or op, got {what[:80]!r}")
    op = whole("op", required=False)
    if op is not None and op > MAX_FAULT_OP:
        raise ParamError("inject", f"op {op:,} is out of range: a step's collectives are numbered from 0 "
                                   f"(at most {MAX_FAULT_OP:,})")
    return Fault(kind, rank=rank, op=op, what=what, **names)


def fault_op_error(k: int, rank: int, n: int) -> ParamError:
    """The refusal of an op past the last collective of a step on the rank's stage (``n`` collectives)."""
    return ParamError("inject", f"op {k} is past the last collective of a step on rank {rank}'s stage ({n} "
                                f"collectives: 0..{n - 1})")


def resolve_fault(fault: Fault, topo, gpus) -> Fault:
    """``fault`` with the item names it gives (:meth:`Fault.names`) replaced by the engine's numbers, on ``topo``
    with the job's ranks on ``gpus`` (rank -> GPU): ``gpu=`` the rank on that GPU, ``host=`` the host's first rank,
    a link's name its up link among the topology's directed links (whose cable ``id % n_cables`` a link fault
    slows in both directions). Names are :mod:`sim.fabric.names`' (the inventory's, for a layout read from it);
    ParamError naming ``inject`` for a name the cluster lacks, a GPU or host holding no rank of the job, a link
    that is not an active backend link."""
    names = fault.names()
    if not names:
        return fault
    lay = topo.layout
    cluster = lay.spec.name
    if fault.link_name is not None:
        position = {n: i for i, n in enumerate(item_names(lay)["link"])}.get(fault.link_name)
        if position is None:
            raise ParamError("inject", f"{cluster} has no link named {fault.link_name[:120]!r}")
        hit = np.flatnonzero(np.asarray(topo.link_cable) == position)
        if hit.size == 0:
            raise ParamError("inject", f"link {fault.link_name[:120]!r} is not an active link of the backend fabric")
        return replace(fault, link=int(hit[0]), link_name=None)
    hosts = host_names(lay)
    gpus = np.asarray(gpus)
    if fault.host is not None:
        key, name = "host", fault.host
        h = {n: i for i, n in enumerate(hosts)}.get(name)
        if h is None:
            raise ParamError("inject", f"{cluster} has no host named {name[:120]!r}")
        held = np.flatnonzero(np.isin(gpus, np.flatnonzero(np.asarray(lay.gpu_host) == h)))
    else:
        key, name = "gpu", fault.gpu
        g = {gpu_name(hosts[h], s): i for i, (h, s) in enumerate(zip(lay.gpu_host.tolist(),
                                                                     lay.gpu_slot.tolist()))}.get(name)
        if g is None:
            raise ParamError("inject", f"{cluster} has no gpu named {name[:120]!r}")
        held = np.flatnonzero(gpus == g)
    if held.size == 0:
        raise ParamError("inject", f"{key} {name[:120]!r} holds no rank of the job")
    return replace(fault, rank=int(held[0]), gpu=None, host=None)


def with_link_fault(topo, fault: Fault):
    """A copy of ``topo`` with the cable of directed link ``fault.link`` slower by ``fault.factor`` (both
    directions), or failed (``inf``: the topology rebuilt without it, so routing avoids it)."""
    if not 0 <= fault.link < topo.n_links:
        raise UsageError(f"inject: link {fault.link} is not a backend link of the cluster (0..{topo.n_links - 1})")
    cable = fault.link % topo.n_cables
    if math.isfinite(fault.factor):
        t = copy(topo)
        cap = np.array(topo.link_capacity, dtype=np.float64)
        cap[[cable, cable + topo.n_cables]] /= fault.factor
        t.link_capacity = cap
        t.cache = {}
        return t
    lay = copy(topo.layout)
    lay.link_status = np.array(lay.link_status).copy()
    lay.link_status[int(topo.link_cable[cable])] = STATUS_FAILED
    return topology_from_layout(lay, hop_latency=topo.hop_latency)
