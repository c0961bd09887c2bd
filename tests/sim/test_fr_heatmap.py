"""The analyzer's heatmap (sim/debug/analyze.py): its columns show where each rank stopped, also when the ranks ahead
went on for far more records than the heatmap has columns."""
from sim.debug.analyze import HEATMAP_AFTER_STOP, HEATMAP_COLUMNS, analyze
from tests.sim.test_fr_analyze import entry, write


def test_the_heatmap_shows_the_earliest_stop_not_only_the_last_records(tmp_path):
    # given rank 2 that stopped after record 99 and its group (ranks 0, 1, 3) that went on to record 299
    for r in range(4):
        n = 100 if r == 2 else 300
        es = [entry(i, i + 1) for i in range(n)]
        if r == 1:
            es[-1] = entry(n - 1, n, state="started")
        write(tmp_path, r, es)
    h = analyze(tmp_path)["heatmap"]
    # then the columns end HEATMAP_AFTER_STOP records past rank 2's last one
    assert h["record_ids"] == list(range(99 + HEATMAP_AFTER_STOP - HEATMAP_COLUMNS + 1, 99 + HEATMAP_AFTER_STOP + 1))
    at = h["record_ids"].index(99)
    # and rank 2's row is completed up to its stop and absent after it; the others' rows completed throughout
    assert h["state"][2][:at + 1] == [3] * (at + 1) and h["state"][2][at + 1:] == [0] * HEATMAP_AFTER_STOP
    assert all(h["state"][r] == [3] * HEATMAP_COLUMNS for r in (0, 1, 3))
    assert h["last_started"][2] == 99 and h["last_started"][0] == 299


def test_a_short_trace_keeps_every_record(tmp_path):
    for r in range(4):
        write(tmp_path, r, [entry(i, i + 1) for i in range(3)])
    assert analyze(tmp_path)["heatmap"]["record_ids"] == [0, 1, 2]
