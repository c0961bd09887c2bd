"""Process-group start-up of a 4D job at 1k to 32k+ ranks (docs/debugging.md, "Start-up model").

Terms, each from a named assumption (:data:`ASSUMPTIONS`, sources in docs/debugging.md):

* ``connect``: every rank opens a TCP connection to the one TCPStore server; the server accepts them one after
  the other (``accept_s`` each).
* ``barrier``: ``new_group`` ends with a store-based barrier (an ``add`` and a ``get`` per rank). Without local
  synchronization every rank of the world takes part in the barrier of *every* group (PyTorch requires every rank
  to call ``new_group`` for every group), so the store serves ``2 x world x groups`` requests; with
  ``use_local_synchronization`` only the members do: ``2 x world x dims``. One server thread serves them at the
  backend's rate.
* ``unique_id``: each NCCL communicator's root puts an ncclUniqueId in the store and the members get it
  (``world x dims`` requests); ncclCommSplit derives sub-communicators from the world's, with no store round.
* ``bootstrap``: ncclCommInitRank of a communicator of ``n`` ranks: a ring all-gather of the members' addresses
  over sockets (``n`` steps of ``bootstrap_step_s``) plus a fixed init (topology detection, connection setup,
  ``comm_init_s``). Communicators of one dimension initialize in parallel, dimensions one after the other; a split
  skips the ring (the parent's bootstrap is reused) but keeps the fixed part.
* Eager creation initializes every communicator at ``new_group`` (the world's too); lazy creation defers each to
  its first collective, inside the first step, where the dimensions' first collectives still come one after the
  other: lazy saves the world communicator when splitting is off (nobody uses it) but not the groups' own.
"""
from __future__ import annotations

import time

from sim.core.errors import ParamError
from sim.core.params import MAX_GPUS

MAX_STARTUP_SCALES = 16           # job sizes of one start-up table
DIMS = ("tp", "cp", "pp", "dp")

# name: (value, unit, what, source tag in docs/sources.md)
ASSUMPTIONS = {
    "store_ops_per_s_legacy": (4_000.0, "requests/s", "TCPStore server, legacy backend: one thread polling every "
                               "socket, cost growing with the connections it polls", "S34"),
    "store_ops_per_s_libuv": (50_000.0, "requests/s", "TCPStore server, libuv backend (PyTorch >= 2.4 default)",
                              "S34"),
    "accept_s_legacy": (1e-3, "s per connection", "legacy server accepting one connection", "S34"),
    "accept_s_libuv": (5e-5, "s per connection", "libuv server accepting one connection", "S34"),
    "bootstrap_step_s": (2e-4, "s per ring step", "NCCL bootstrap: one step of the ring all-gather of addresses "
                         "over TCP sockets", "S35"),
    "comm_init_s": (0.5, "s per communicator", "NCCL init besides the bootstrap ring: topology detection, "
                    "channel and proxy setup", "S35"),
}


def _a(name: str) -> float:
    return ASSUMPTIONS[name][0]


def parse_scales(text: str) -> list[int]:
    text = str(text).strip()
    try:
        if ":" in text:
            a, b = (int(x) for x in text.split(":"))
            if a < 1 or b < a:
                raise ValueError
            out = []
            while a <= b:
                out.append(a)
                a *= 2
        else:
            out = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise ParamError("gpus", f"must be A:B (doubling) or A,B,C with 1 <= A <= B, got {text!r}") from None
    if not out or out[0] < 1:
        raise ParamError("gpus", "needs at least one job size of 1 rank or more")
    if len(out) > MAX_STARTUP_SCALES:
        raise ParamError("gpus", f"at most {MAX_STARTUP_SCALES} job sizes, got {len(out)}")
    if out[-1] > MAX_GPUS:
        raise ParamError("gpus", f"must be at most {MAX_GPUS:,} ranks")
    return out


def check_startup(v: dict) -> None:
    """Rules of :data:`sim.debug.params.STARTUP` across fields (the sizes parse, each divisible by tp x cp x pp)."""
    inner = v["tp"] * v["cp"] * v["pp"]
    for n in parse_scales(v["gpus"]):
        if n % inner:
            raise ParamError("gpus", f"{n:,} ranks are not divisible by tp x cp x pp = {inner:,}")


def _terms(n: int, sizes: dict, store_rate: float, accept: float, creation: str, split: bool, local: bool) -> dict:
    dims = [d for d in DIMS if sizes[d] > 1]
    groups = {d: n // sizes[d] if sizes[d] > 1 else 0 for d in DIMS}
    n_groups = sum(groups.values())
    step, init = _a("bootstrap_step_s"), _a("comm_init_s")
    barrier_ops = 2 * n * (len(dims) if local else n_groups)
    uid_ops = 0 if split else n * len(dims)
    world_needed = split or creation == "eager"
    boot = (n * step + init) if world_needed else 0.0                     # the world communicator
    boot += sum((0.0 if split else sizes[d] * step) + init for d in dims)
    return {"connect": n * accept, "barrier": barrier_ops / store_rate, "unique_id": uid_ops / store_rate,
            "bootstrap": boot}, groups


def model(values: dict) -> dict:
    """The start-up time of every job size of ``values`` (validated by :data:`sim.debug.params.STARTUP`), term by
    term, the dominant term and what each optimization removes (schema: docs/debugging.md)."""
    t0 = time.perf_counter()
    v = values
    backend = v["store_backend"]
    rate = v["store_ops_per_s"] or _a(f"store_ops_per_s_{backend}")
    accept = _a(f"accept_s_{backend}")
    rows = []
    for n in parse_scales(v["gpus"]):
        sizes = {"tp": v["tp"], "cp": v["cp"], "pp": v["pp"], "dp": n // (v["tp"] * v["cp"] * v["pp"])}
        terms, groups = _terms(n, sizes, rate, accept, v["creation"], v["split"], v["local_sync"])
        total = sum(terms.values())
        # the published path, one change at a time from the legacy start-up to the chosen one
        steps = [("baseline: legacy store, global barriers, eager, no split",
                  dict(rate=_a("store_ops_per_s_legacy"), accept=_a("accept_s_legacy"), creation="eager",
                       split=False, local=False)),
                 ("+ use_local_synchronization", dict(local=True)),
                 ("+ libuv TCPStore", dict(rate=_a("store_ops_per_s_libuv"), accept=_a("accept_s_libuv"))),
                 ("+ ncclCommSplit", dict(split=True)),
                 ("+ lazy creation", dict(creation="lazy"))]
        cur, opts, prev = {}, [], None
        for name, change in steps:
            cur.update(change)
            t, _ = _terms(n, sizes, cur["rate"], cur["accept"], cur["creation"], cur["split"], cur["local"])
            s = sum(t.values())
            opts.append({"name": name, "total_s": s, "removes_s": 0.0 if prev is None else prev - s,
                         "dominant": max(t, key=t.get)})
            prev = s
        rows.append({"gpus": n, "dp": sizes["dp"], "groups": groups | {"total": sum(groups.values())},
                     "terms": terms, "total_s": total, "dominant": max(terms, key=terms.get),
                     "optimizations": opts})
    return {"layout": {k: v[k] for k in ("tp", "cp", "pp", "gpus_per_host")},
            "settings": {k: v[k] for k in ("store_backend", "creation", "split", "local_sync")},
            "store_ops_per_s": rate,
            "assumptions": {k: {"value": a[0], "unit": a[1], "what": a[2], "source": a[3]}
                            for k, a in ASSUMPTIONS.items()},
            "rows": rows, "seconds": round(time.perf_counter() - t0, 4)}


def format_model(d: dict) -> str:
    lay, st = d["layout"], d["settings"]
    lines = [f"# Process-group start-up, TP {lay['tp']} x CP {lay['cp']} x PP {lay['pp']} x DP; store "
             f"{st['store_backend']} ({d['store_ops_per_s']:,.0f} requests/s), creation {st['creation']}, split "
             f"{'on' if st['split'] else 'off'}, local sync {'on' if st['local_sync'] else 'off'}",
             "#   ranks  groups   connect(s)  barrier(s)  unique_id(s)  bootstrap(s)   total(s)  dominant"]
    for r in d["rows"]:
        t = r["terms"]
        lines.append(f"  {r['gpus']:7,d} {r['groups']['total']:7,d}  {t['connect']:10.2f}  {t['barrier']:10.2f}  "
                     f"{t['unique_id']:12.2f}  {t['bootstrap']:12.2f}  {r['total_s']:9.2f}  {r['dominant']}")
    lines.append("# What each change removes (cumulative, from the legacy start-up):")
    for r in d["rows"]:
        parts = "; ".join(f"{o['name']}: {o['total_s']:,.1f} s" + (f" (-{o['removes_s']:,.1f})" if o["removes_s"]
                                                                     else "") for o in r["optimizations"])
        lines.append(f"#  {r['gpus']:7,d}: {parts}")
    return "\n".join(lines)
