"""The per-rank programs of a rehearsal: the ordered collectives one training step issues on a pipeline stage.

Why a module: what a rank records (its flight recorder entries, their sizes and the compute between them) is a
model of its own, built from the job model (:mod:`sim.jobs.job`, :mod:`sim.jobs.models`) and used by the timing
(:mod:`sim.debug.timing`), the dump writer (:mod:`sim.debug.writer`) and the fault checks
(:func:`sim.debug.recorder.check_debug`). Every rank runs its stage's 1F1B program of one step
(:func:`stage_program`): per micro-batch the TP (and CP) collectives of each layer forward and backward, the PP
sends and receives between neighbouring stages, and per step the FSDP all-gathers and reduce-scatters of each
layer (DP). The P2P order is Megatron's 1F1B one (``send_forward_recv_backward``: the forward's send, then the
backward's receive; ``send_backward_recv_forward``: the next forward's receive, then the backward's send), so the
two stages of a pair issue their sends and receives to each other in the same order: each P2P entry's counterpart
is at the same position of the other's (:mod:`sim.debug.writer` records them on a two-rank group per pair).
"""
from __future__ import annotations

from dataclasses import dataclass

from sim.core.errors import UsageError
from sim.jobs.step import message_sizes
from sim.jobs.models import stage_layers

DIM_NAMES = ("tp", "cp", "pp", "dp")
OPS = ("all_gather", "reduce_scatter", "all_reduce", "send", "recv")
KIND_OP = {"allgather": "all_gather", "reducescatter": "reduce_scatter", "allreduce": "all_reduce"}


@dataclass
class Op:
    """One flight recorder entry of a stage's program: ``dim`` index in DIM_NAMES, ``op`` in OPS, ``numel_in`` /
    ``numel_out`` per rank, element bytes, compute before it (s), duration key, p2p peer offset (+1/-1), the key
    matching a send with its receive."""

    dim: int
    op: int
    numel_in: int
    numel_out: int
    elem: int
    compute: float
    size: float                       # bytes for the duration model
    kind: str                         # sim.jobs.job collective kind
    peer: int = 0
    key: tuple = ()


def stage_program(model, p: dict, stage: int, ct: dict) -> list[Op]:
    """The ordered entries of one step on pipeline stage ``stage`` under 1F1B (warm-up forwards, one forward one
    backward, cool-down backwards); see the module docstring."""
    tp, cp, pp, dp = p["tp"], p["cp"], p["pp"], p["dp"]
    m = p["micro_batches"]
    L = stage_layers(model.layers, pp, 1, p.get("balance_stages", False))[stage]
    sizes = message_sizes(model, p)
    per_layer = (4 + 2 * int(p["recompute_on"]))
    slot = ct["per_stage"][stage]
    fwd_c, bwd_c = slot / 3.0, 2 * slot / 3.0
    if p["recompute_on"]:
        fwd_c, bwd_c = slot / 4.0, 3 * slot / 4.0

    def coll(dim, kind, size, elem, compute, n):
        op = KIND_OP[kind]
        numel = max(1, int(size // elem))
        per_rank = max(1, numel // n)
        i, o = {"all_gather": (per_rank, per_rank * n), "reduce_scatter": (per_rank * n, per_rank),
                "all_reduce": (numel, numel)}[op]
        return Op(dim, OPS.index(op), i, o, elem, compute, float(size), kind)

    def layer_ops(forward: bool) -> list[Op]:
        out = []
        c_total = fwd_c if forward else bwd_c
        n_ops = L * ((per_layer // 2 if forward else per_layer - per_layer // 2) + (1 if cp > 1 else 0)) if tp > 1 \
            else L * (1 if cp > 1 else 0)
        gap = c_total / max(n_ops, 1)
        for _ in range(L):
            if cp > 1:
                what = sizes["cp"][0] if forward else sizes["cp"][1]
                out.append(coll(1, what[3], what[1], 2, gap, cp))
            if tp > 1:
                k = per_layer // 2 if forward else per_layer - per_layer // 2
                act = sizes["tp"][0][1]
                for j in range(k):
                    out.append(coll(0, "allgather" if j % 2 == 0 else "reducescatter", act, 2, gap, tp))
        rest = 0.0 if out else c_total
        return out, rest

    def p2p(kind, key, peer):
        act = sizes["pp"][0][1] if pp > 1 else 0.0
        n = max(1, int(act // 2))
        return Op(2, OPS.index(kind), n, n, 2, 0.0, float(act), "send", peer=peer, key=key)

    def forward(i):
        ops = [p2p("recv", ("f", i), -1)] if stage > 0 else []
        body, rest = layer_ops(True)
        ops += body
        if stage < pp - 1:
            ops.append(p2p("send", ("f", i), +1))
            ops[-1].compute = rest
        elif body == [] and rest:
            pass
        return ops, rest

    def backward(i):
        ops = [p2p("recv", ("b", i), +1)] if stage < pp - 1 else []
        body, rest = layer_ops(False)
        ops += body
        if stage > 0:
            ops.append(p2p("send", ("b", i), -1))
            ops[-1].compute = rest
        return ops, rest

    prog: list[Op] = []
    carry = 0.0
    if dp > 1:                                        # FSDP: each layer's weights gathered once per step
        w = sizes["dp"][0]
        for _ in range(L):
            prog.append(coll(3, w[3], w[1] / L, 2, 0.0, dp))
    warm = min(pp - stage - 1, m)
    order = [("F", i) for i in range(warm)]
    for i in range(m - warm):
        order += [("F", warm + i), ("B", i)]
    order += [("B", i) for i in range(m - warm, m)]
    for what, i in order:
        ops, rest = forward(i) if what == "F" else backward(i)
        if ops:
            ops[0].compute += carry
            carry = 0.0
            if not any(o.op == OPS.index("send") for o in ops[-1:]):
                carry = rest
        else:
            carry += rest
        if what == "F" and ops and ops[0].op == OPS.index("recv") and prog and prog[-1].op == OPS.index("send") \
                and prog[-1].peer == -1:
            # Megatron's send_backward_recv_forward: the next forward's receive is issued before the backward's
            # send to the same previous stage, so both stages of a pair issue their P2P in the same order
            recv, send = ops[0], prog[-1]
            recv.compute, send.compute = recv.compute + send.compute, 0.0
            prog[-1], ops = recv, [send] + ops[1:]
        prog += ops
    if dp > 1:                                        # gradients reduce-scattered per layer after the backward
        g = sizes["dp"][-1]
        for j in range(L):
            prog.append(coll(3, g[3], g[1] / L, 4 if "FP32" in g[0] else 2, carry if j == 0 else 0.0, dp))
        carry = 0.0
    if not prog:
        raise UsageError("the job has no collectives (tp, cp, pp and dp are all 1): nothing to record")
    return prog
