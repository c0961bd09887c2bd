"""Pipeline schedules from their definitions (sim/jobs/pipeline.py): hand-worked tables, the physics every
simulated table obeys, the rules each definition imposes."""

import numpy as np
import pytest

from sim.core.errors import ParamError
from sim.jobs.pipeline import build, check_schedule, peak_in_flight, simulate
from sim.jobs.step import TIMELINE_COLUMNS, timeline


def test_1f1b_pp4_m8_takes_m_plus_pp_minus_1_slots():
    # 1F1B (PipeDream-flush), pp = 4, m = 8, F = 1, B = 2 on every stage. Stage s warms up with 3 - s forwards:
    #   stage 0: F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7
    #   stage 3: F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7
    # Stage 3 starts at 3 (F0 through stages 0..2) and then never waits: 3 + 8 x 3 = 27 at its end; its last B
    # runs back through stages 2, 1, 0 (2 each): 27 + 6 = 33 = (m + pp - 1)(F + B).
    s = build("1f1b", 4, 8)
    assert s.table()[0] == "F0.0 F1.0 F2.0 F3.0 B0.0 F4.0 B1.0 F5.0 B2.0 F6.0 B3.0 F7.0 B4.0 B5.0 B6.0 B7.0"
    assert s.table()[3] == "F0.0 B0.0 F1.0 B1.0 F2.0 B2.0 F3.0 B3.0 F4.0 B4.0 F5.0 B5.0 F6.0 B6.0 F7.0 B7.0"
    r = simulate(s, 1.0, 2.0)
    assert r.makespan == 33.0
    assert r.bubble == 33.0 - 24.0 == (4 - 1) * (1 + 2)
    assert r.busy.tolist() == [24.0] * 4 and r.idle.tolist() == [9.0] * 4
    # the first stage holds pp micro-batches at its peak, stage s holds pp - s
    assert r.peak_in_flight.tolist() == [4, 3, 2, 1]


def test_1f1b_with_unequal_stages_and_asynchronous_sends():
    # pp = 2, m = 2; stage 0: F = 1, B = 2; stage 1: F = 2, B = 4.  Orders: stage 0 F0 F1 B0 B1, stage 1 F0 B0 F1 B1.
    #   stage 0: F0 0-1, F1 1-2, (waits) B0 7-9, (waits) B1 13-15
    #   stage 1: F0 1-3, B0 3-7, F1 7-9, B1 9-13
    # makespan 15; busy 6 and 12; bubble = 15 - 12 = 3.
    s = build("1f1b", 2, 2)
    r = simulate(s, [[1.0], [2.0]], [[2.0], [4.0]])
    assert r.makespan == 15.0 and r.busy.tolist() == [6.0, 12.0] and r.bubble == 3.0
    assert r.start[0].tolist() == [0, 1, 7, 13] and r.end[1].tolist() == [3, 7, 9, 13]
    # a send of 0.5 s delays the receiver, never the sender: stage 0 still runs F1 at 1-2
    #   stage 1: F0 1.5-3.5, B0 3.5-7.5, F1 7.5-9.5, B1 9.5-13.5; stage 0: B0 8-10, B1 14-16
    r = simulate(s, [[1.0], [2.0]], [[2.0], [4.0]], send=0.5)
    assert r.start[0].tolist() == [0, 1, 8, 14] and r.makespan == 16.0


def test_interleaved_pp2_v2_m4_halves_the_bubble():
    # Megatron's interleaved 1F1B, pp = 2, v = 2 chunks per stage, m = 4 in rounds of pp = 2; per chunk f = 1,
    # b = 2. Forward order (the schedule table): 0.0 1.0 0.1 1.1 2.0 3.0 2.1 3.1 (micro-batch.chunk); backwards
    # the same rounds, chunks reversed. Warm-up 2 (pp - s - 1) + (v - 1) pp: 4 forwards on stage 0, 2 on stage 1.
    #   stage 0: F0.0 0-1  F1.0 1-2  F0.1 2-3  F1.1 3-4  F2.0 4-5  B0.1 6-8  F3.0 8-9  B1.1 9-11  F2.1 11-12
    #            B0.0 12-14  F3.1 14-15  B1.0 15-17  B2.1 18-20  B3.1 21-23  B2.0 23-25  B3.0 25-27
    #   stage 1: F0.0 1-2  F1.0 2-3  F0.1 3-4  B0.1 4-6  F1.1 6-7  B1.1 7-9  F2.0 9-10  B0.0 10-12  F3.0 12-13
    #            B1.0 13-15  F2.1 15-16  B2.1 16-18  F3.1 18-19  B3.1 19-21  B2.0 21-23  B3.0 23-25
    # makespan 27 = 24 of work + 3: (pp - 1)/v of a whole stage's F + B (6), half of 1F1B's.
    s = build("interleaved", 2, 4, 2)
    assert s.table()[0] == "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0"
    assert s.table()[1] == "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0"
    r = simulate(s, 1.0, 2.0)
    assert r.start[0].tolist() == [0, 1, 2, 3, 4, 6, 8, 9, 11, 12, 14, 15, 18, 21, 23, 25]
    assert r.end[1].tolist() == [2, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16, 18, 19, 21, 23, 25]
    assert r.makespan == 27.0 and r.bubble == 3.0
    # stage 0 holds 5 chunks at its peak (after F2.0): 2.5 whole-stage micro-batches = pp (1 + (pp - 1)/(pp v))
    assert r.peak_in_flight.tolist() == [5, 3]


def test_zb_h1_pp4_m8_fills_the_drain_with_weight_passes():
    # ZB-H1, pp = 4, m = 8, F = B = W = 1. Stage s: 1F1B's warm-up, s F-B pairs deferring their W, F B W triples,
    # B W pairs, the s deferred W:
    #   stage 0: F0 F1 F2 F3 B0 W0 F4 B1 W1 ... F7 B4 W4 B5 W5 B6 W6 B7 W7
    #   stage 3: F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 ... F7 B7 W4 W5 W6 W7
    # bubble (pp - 1)(F + B - W) = 3 (Qi et al.): makespan 24 + 3 = 27, against 1F1B's 33 with B + W = 2.
    s = build("zb-h1", 4, 8)
    t = s.table()
    assert t[0].startswith("F0.0 F1.0 F2.0 F3.0 B0.0 W0.0 F4.0 B1.0 W1.0") and t[0].endswith("B7.0 W7.0")
    assert t[3].startswith("F0.0 B0.0 F1.0 B1.0 F2.0 B2.0 F3.0 B3.0 W0.0 F4.0") and t[3].endswith("W5.0 W6.0 W7.0")
    r = simulate(s, 1.0, 1.0, 1.0)
    assert r.makespan == 27.0 and r.bubble == 3.0
    assert simulate(build("1f1b", 4, 8), 1.0, 2.0).makespan == 33.0
    # activations held until W (it needs the layer inputs): never more than 1F1B's first stage, pp
    assert r.peak_in_flight.max() == 4 == peak_in_flight(build("1f1b", 4, 8)).max()


@pytest.mark.parametrize("name, pp, m, v, g", [("1f1b", 8, 16, 1, None), ("zb-h1", 8, 16, 1, None),
                                               ("interleaved", 4, 12, 3, None), ("interleaved", 4, 10, 2, 5),
                                               ("interleaved", 8, 16, 4, 8), ("interleaved", 4, 14, 2, 5)])
def test_every_simulated_table_obeys_the_physics(name, pp, m, v, g):
    rng = np.random.default_rng(7)
    s = build(name, pp, m, v, g)
    kinds = 3 if name == "zb-h1" else 2
    for ops in s.ops:                                    # every (kind, micro-batch, chunk) exactly once
        assert len(ops) == kinds * m * v
        assert len({tuple(o) for o in ops.tolist()}) == len(ops)
    f, b, w = (rng.uniform(0.5, 2.0, (pp, v)) for _ in range(3))
    r = simulate(s, f, b, w, send=0.1)
    assert np.all(r.makespan >= r.busy - 1e-12) and r.bubble >= 0
    assert np.allclose(r.busy + r.idle, r.makespan)
    for st, en in zip(r.start, r.end):                   # one operation at a time on a stage
        assert np.all(st[1:] >= en[:-1] - 1e-12)
    # a send never lowers the makespan
    assert simulate(s, f, b, w).makespan <= r.makespan + 1e-12
    # the slot table a page draws holds every operation once, in its stage's order, with the simulated times
    t = timeline(s, r)
    assert t.shape == (sum(len(o) for o in s.ops), len(TIMELINE_COLUMNS))
    assert np.isclose(t[:, 5].max(), r.makespan) and np.all(t[:, 5] - t[:, 4] > 0)
    for st in range(pp):
        rows = t[t[:, 0] == st]
        assert np.array_equal(rows[:, 1:4], s.ops[st]) and np.all(rows[1:, 4] >= rows[:-1, 5] - 1e-12)
        assert np.isclose((rows[:, 5] - rows[:, 4]).sum(), r.busy[st])


def test_the_definitions_refuse_what_they_cannot_run_naming_the_field():
    with pytest.raises(ParamError) as e:
        check_schedule("1f1b", 4, 8, 2, None)
    assert "virtual_stages" in e.value.errors
    with pytest.raises(ParamError) as e:
        check_schedule("interleaved", 4, 8, 2, 3)            # a round shorter than the pipeline
    assert "micro_batches_per_round" in e.value.errors
    with pytest.raises(ParamError) as e:
        check_schedule("interleaved", 4, 6, 2, 8)            # not even one round
    assert "batch_tokens" in e.value.errors
    with pytest.raises(ParamError) as e:
        check_schedule("interleaved", 4, 9, 2, 8)            # a last round of 1 < pp stalls
    assert "batch_tokens" in e.value.errors
    with pytest.raises(ParamError) as e:
        check_schedule("zb-h1", 4, 8, 1, 4)
    assert "micro_batches_per_round" in e.value.errors
    assert check_schedule("interleaved", 4, 12, 2, 8) == 8   # last round of 4 = pp runs


def test_the_largest_tables_run_every_operation_once():
    # 405B on 16 stages: m = 16 (16M tokens, DP 128) up to m = 128 in rounds of 32 with 4 chunks (16,384 ops); their
    # time is bench/bench_jobs.py's (docs/jobs.md "Budgets"), not a test's
    for name, m, v, g in (("1f1b", 16, 1, None), ("interleaved", 16, 4, None), ("zb-h1", 16, 1, None),
                          ("interleaved", 128, 4, 32)):
        s = build(name, 16, m, v, g)
        r = simulate(s, 1.0, 2.0, 1.0, send=0.01)
        per_op = 4.0 if name == "zb-h1" else 3.0                  # F + B (+ W) of one micro-batch-chunk
        assert np.allclose(r.busy, per_op * m * v) and r.makespan >= r.busy.max()
        assert sum(len(e) for e in r.end) == sum(len(o) for o in s.ops)
