"""User placements: a host list or a GPU list, read into a rank -> GPU map, the order given kept.

Two forms, one entry per line (blank lines and ``#`` comments ignored):

- a **host list** (``--hostfile FILE``; the ``hosts`` parameter of the API), as ``mpirun`` and ``torchrun`` take
  one: ranks follow the lines, and each host gives its GPUs in slot order (local rank ``i`` on GPU ``i``, the
  ``LOCAL_RANK -> cuda device`` binding of launchers). A line is ``host`` (all the host's GPUs), ``host slots=N``
  (Open MPI's hostfile: its first ``N`` GPUs) or ``host:N`` (MPICH's ``host:n`` form: the same);
- a **GPU list** (``--gpus-file FILE``; ``gpu_list``): rank ``r`` on the GPU of line ``r``, given as a global GPU
  id (``1234``), ``host:slot`` or the inventory's GPU name (``<host>.gpu<slot>``). Any order, inside a host too.

Host names are the inventory's (:func:`sim.fabric.names.host_names`, e.g. ``meta-roce-24k.z03.r045.h1``); the cluster
prefix may be left out (``z03.r045.h1``). A list is refused, naming the source (file or field), the line and the
reason, when it names an unknown host or slot, gives a GPU twice, gives a GPU no job can use (GPU, NIC, NIC cable
or leaf not active: ``Topology.gpu_usable``), asks for more slots than a host has, holds no entry, or is larger
than :data:`MAX_LIST_BYTES` / :data:`MAX_LIST_LINES`. With ``gpus`` given, the job is the list's first ``gpus``
ranks (``mpirun -np N`` with a hostfile); more than the list holds is refused.

Where the given order ends up: ranks order the hosts (NCCL orders nodes by rank); inside a host the ring order is
the ``intra_order`` parameter's business (:func:`sim.fabric.collectives.host_groups`), ``gpu`` by default as NCCL's
topology search does it, and :func:`order_note` says when that differs from the list.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.core.errors import UsageError
from sim.fabric.names import gpu_name, host_names, parse_gpu_name
from sim.core.units import IDX

MAX_LIST_BYTES = 4 * 1024 * 1024  # a host or GPU list's size: a GPU list of 131,072 inventory names is ~4 MB
MAX_LIST_LINES = 1 << 20          # lines of a list (sim.core.params.MAX_GPUS: one GPU per line at most)


class ListError(UsageError):
    """A host or GPU list that is refused: ``source`` (file or field), ``line`` (1-based, 0: the whole list)."""

    def __init__(self, source: str, line: int, reason: str):
        self.source, self.line, self.reason = source, line, reason
        super().__init__(f"{source}, line {line}: {reason}" if line else f"{source}: {reason}")


NO_ENTRY = "holds no entry (blank lines and # comments only)"


@dataclass
class HostIndex:
    """What a list is read against: the cluster's name, its host names (host index order) and, per GPU (GPU index
    order), its host, slot and whether a job can use it."""

    cluster: str
    names: list[str]
    gpu_host: np.ndarray
    gpu_slot: np.ndarray
    gpu_usable: np.ndarray

    def __post_init__(self):
        self.gpu_host = np.asarray(self.gpu_host, dtype=IDX)
        self.gpu_slot = np.asarray(self.gpu_slot, dtype=IDX)
        self.gpu_usable = np.asarray(self.gpu_usable, dtype=bool)
        self.by_name = {n: i for i, n in enumerate(self.names)}
        prefix = self.cluster + "."
        self.by_name.update({n[len(prefix):]: i for i, n in enumerate(self.names) if n.startswith(prefix)})
        # GPUs of each host in slot order: host_gpus[host_start[h] + k] is slot-order GPU k of host h.
        order = np.lexsort((self.gpu_slot, self.gpu_host))
        self.host_gpus = order.astype(IDX)
        counts = np.bincount(self.gpu_host, minlength=len(self.names))
        self.host_count = counts.astype(IDX)
        self.host_start = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(IDX)

    @classmethod
    def of_topology(cls, topo) -> "HostIndex":
        lay = topo.layout
        return cls(lay.spec.name, host_names(lay), topo.gpu_host, lay.gpu_slot, topo.gpu_usable)

    def host(self, name: str) -> int | None:
        return self.by_name.get(name)

    def example(self) -> str:
        return self.names[0] if self.names else "?"


def _lines(text, source: str) -> list[tuple[int, str]]:
    """``(line number, entry)`` of the non-blank lines of ``text`` with comments removed; size limits checked."""
    if not isinstance(text, str):
        raise ListError(source, 0, "must be text, one entry per line")
    if len(text) > MAX_LIST_BYTES:
        raise ListError(source, 0, f"is {len(text):,} characters, more than the limit of {MAX_LIST_BYTES:,} "
                                   f"(sim.fabric.hostlist.MAX_LIST_BYTES)")
    raw = text.splitlines()
    if len(raw) > MAX_LIST_LINES:
        raise ListError(source, 0, f"has {len(raw):,} lines, more than the limit of {MAX_LIST_LINES:,} "
                                   f"(sim.fabric.hostlist.MAX_LIST_LINES)")
    out = [(i + 1, line.split("#", 1)[0].strip()) for i, line in enumerate(raw)]
    out = [(i, e) for i, e in out if e]
    if not out:
        raise ListError(source, 0, NO_ENTRY)
    return out


def _unknown_host(idx: HostIndex, name: str) -> str:
    return f"unknown host {name!r}: {idx.cluster} has no such host (names look like {idx.example()!r})"


def _check_usable(idx: HostIndex, source: str, line: int, gpu: int, what: str) -> None:
    if not idx.gpu_usable[gpu]:
        raise ListError(source, line, f"{what} is not usable (the GPU, its NIC, its NIC cable or its leaf switch is "
                                      f"not active)")


def _slots(source: str, line: int, text: str) -> int:
    if not text.isdigit() or len(text) > 9 or int(text) < 1:
        raise ListError(source, line, f"slots must be a whole number of at least 1, got {text!r}")
    return int(text)


def parse_hostfile(text: str, idx: HostIndex, source: str = "hostfile") -> np.ndarray:
    """The rank -> GPU map of a host list (see the module docstring): hosts in line order, each host's first
    ``slots`` GPUs (default all) in slot order."""
    parts, seen = [], {}
    for line, entry in _lines(text, source):
        words = entry.split()
        name, slots = words[0], None
        if ":" in name:
            name, _, n = name.partition(":")
            slots = _slots(source, line, n)
        for word in words[1:]:
            key, eq, value = word.partition("=")
            if key not in ("slots", "max_slots", "max-slots") or not eq:
                raise ListError(source, line, f"{word!r} is not understood (a line is 'host', 'host slots=N' or "
                                              f"'host:N')")
            if key == "slots":
                if slots is not None:
                    raise ListError(source, line, "gives the slots twice")
                slots = _slots(source, line, value)
        h = idx.host(name)
        if h is None:
            raise ListError(source, line, _unknown_host(idx, name))
        if h in seen:
            raise ListError(source, line, f"host {name!r} is listed twice (first on line {seen[h]}): each GPU "
                                          f"takes one rank")
        seen[h] = line
        have = int(idx.host_count[h])
        n = have if slots is None else slots
        if n > have:
            raise ListError(source, line, f"asks for {n} slots but host {name!r} has {have} GPUs")
        gpus = idx.host_gpus[idx.host_start[h]:idx.host_start[h] + n]
        bad = gpus[~idx.gpu_usable[gpus]]
        if bad.size:
            _check_usable(idx, source, line, int(bad[0]), f"GPU slot {int(idx.gpu_slot[bad[0]])} of host {name!r}")
        parts.append(gpus)
    return np.concatenate(parts).astype(IDX)


def _gpu_of(idx: HostIndex, source: str, line: int, entry: str) -> int:
    """The GPU index of one GPU-list entry: a global id, ``host:slot`` or ``<host>.gpu<slot>``."""
    if entry.isdigit():
        g = int(entry) if len(entry) <= 12 else -1
        if not 0 <= g < len(idx.gpu_host):
            raise ListError(source, line, f"GPU {entry} is not one of the cluster's GPUs 0..{len(idx.gpu_host) - 1}")
        return g
    if ":" in entry:
        name, _, slot = entry.rpartition(":")
    else:
        parsed = parse_gpu_name(entry)
        if parsed is None:
            raise ListError(source, line, f"{entry!r} is not a GPU: give a GPU id, 'host:slot' or "
                                          f"'{gpu_name(idx.example(), 0)}'")
        name, slot = parsed
    h = idx.host(name)
    if h is None:
        raise ListError(source, line, _unknown_host(idx, name))
    have = int(idx.host_count[h])
    if not slot.isdigit() or len(slot) > 9 or int(slot) >= have:
        raise ListError(source, line, f"host {name!r} has GPU slots 0..{have - 1}, not {slot!r}")
    return int(idx.host_gpus[idx.host_start[h] + int(slot)])


def parse_gpu_list(text: str, idx: HostIndex, source: str = "gpu list") -> np.ndarray:
    """The rank -> GPU map of a GPU list: rank ``r`` on the GPU of entry ``r``, the order kept exactly."""
    entries = _lines(text, source)
    gpus = np.array([_gpu_of(idx, source, line, e) for line, e in entries], dtype=IDX)
    first = {}
    for (line, entry), g in zip(entries, gpus.tolist()):
        if g in first:
            raise ListError(source, line, f"{entry!r} is GPU {g}, already given on line {first[g]}")
        first[g] = line
        if not idx.gpu_usable[g]:
            _check_usable(idx, source, line, g, f"GPU {entry!r}")
    return gpus


def given_placement(idx: HostIndex, hosts: str | None, gpu_list: str | None, gpus: int | None,
                    sources: tuple[str, str] = ("hosts", "gpu_list")) -> np.ndarray | None:
    """The rank -> GPU map of the job from the ``hosts`` or ``gpu_list`` text (None when neither is given), cut to
    its first ``gpus`` ranks when ``gpus`` is given; ``sources`` name the two in errors (a field or a file)."""
    if hosts is not None and hosts.strip():
        source, ranks = sources[0], parse_hostfile(hosts, idx, sources[0])
    elif gpu_list is not None and gpu_list.strip():
        source, ranks = sources[1], parse_gpu_list(gpu_list, idx, sources[1])
    else:
        return None
    if gpus is not None:
        if gpus > ranks.size:
            raise ListError(source, 0, f"gives {ranks.size:,} ranks, fewer than the {gpus:,} GPUs asked")
        ranks = ranks[:gpus]
    if ranks.size < 2:
        raise ListError(source, 0, f"gives {ranks.size} rank: a collective needs at least 2")
    return ranks


def order_note(idx: HostIndex, ranks: np.ndarray, intra_order: str) -> str | None:
    """What happens to the list's order inside hosts, when it matters: None if every host's ranks are already in
    GPU slot order or ``intra_order`` is ``rank``; else a sentence saying the ring follows GPU order there."""
    if intra_order == "rank":
        return None
    ranks = np.asarray(ranks, dtype=IDX)
    host, slot = idx.gpu_host[ranks], idx.gpu_slot[ranks]
    order = np.argsort(host, kind="stable")
    h, s = host[order], slot[order]
    same = h[1:] == h[:-1]
    out_of_order = np.unique(h[1:][same & (s[1:] < s[:-1])])
    if not out_of_order.size:
        return None
    return (f"the list's rank order differs from GPU order inside {out_of_order.size:,} host(s); the rings follow "
            f"GPU order there, as NCCL's topology search does (intra_order gpu); intra_order rank keeps the list's "
            f"order (as an NCCL_GRAPH_FILE would)")


def placement_of(topo, params: dict, sources: tuple[str, str] = ("hosts", "gpu_list")) -> np.ndarray | None:
    """The given rank -> GPU map of validated collective ``params`` on ``topo`` (None unless ``placement`` is
    ``given``); ``sources`` name the host and GPU lists in errors (fields, or the files they came from)."""
    if params.get("placement") != "given":
        return None
    return given_placement(HostIndex.of_topology(topo), params.get("hosts"), params.get("gpu_list"),
                           params.get("gpus"), sources)
