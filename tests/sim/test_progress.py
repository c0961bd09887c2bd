"""Progress is the share of the work actually done (:mod:`sim.core.progress`): the fractions a collective and a figure
report never decrease, start at 0, end at 1 and move inside a phase (routing, then the solver's rounds or events)."""
import doctest

import pytest

import sim.core.progress
from sim.fabric.figures import make_figure
from sim.fabric.params import FIGURE
from sim.core.maxmin import solve_max_min
from sim.core.flowcore import simulate_flows
from sim.fabric.netsim import run_collective
from sim.fabric.placement import place
from sim.core.progress import Bar, fractions_only, weighted
from sim.fabric.topology import load_topology


@pytest.fixture(scope="module")
def demo():
    return load_topology("demo-256")[1]


class Recorder:
    def __init__(self):
        self.fractions, self.messages = [], []

    def __call__(self, fraction, message=""):
        self.fractions.append(fraction)
        if message:
            self.messages.append(message)

    def check(self):
        f = self.fractions
        assert f[0] == 0.0 and f[-1] == pytest.approx(1.0), f
        assert all(b >= a for a, b in zip(f, f[1:])), f          # never decreasing
        assert all(0.0 <= x <= 1.0 + 1e-12 for x in f)
        return sorted({x for x in f if 0.0 < x < 1.0})


def test_doctests():
    assert doctest.testmod(sim.core.progress).failed == 0


def test_a_single_phase_ring_reports_routing_and_solver_rounds(demo):
    # given a ring AllGather on demo-256 (one phase: all steps have the same flows)
    seen = Recorder()
    result = run_collective(demo, place(demo, 64, "random", 0), "allgather", [1 << 30], progress=seen)
    # then the fractions move inside that one phase: routed at half of it, then with the solver's rounds
    assert len(result.phases) == 1
    inside = seen.check()
    assert len(inside) > 1 and 0.5 in inside
    assert any("routed" in m for m in seen.messages)


def test_event_driven_phases_report_each_event(demo):
    seen = Recorder()
    result = run_collective(demo, place(demo, 64, "random", 0), "alltoall", [1 << 26], progress=seen)
    inside = seen.check()
    assert len(inside) > 5                                        # more events than phases
    assert result.phases[0].phase.mode == "event"


def test_phases_weigh_by_their_flows(demo):
    # a tree AllReduce has several phases; the first ends where its flows' share of all flows says
    seen = Recorder()
    result = run_collective(demo, place(demo, 64, "topology", 0), "allreduce", [1 << 30], algorithm="tree",
                            progress=seen)
    seen.check()
    flows = [p.flows.n_flows for p in result.phases]
    if len(flows) > 1:
        assert pytest.approx(flows[0] / sum(flows)) in seen.fractions


def test_solver_and_events_count_fixed_flows():
    seen = Recorder()
    solve_max_min([0, 3, 4, 5, 6], [0, 1, 2, 0, 1, 2], [1.0, 2.0, 3.0], progress=seen)    # parking lot, 2 rounds
    assert seen.fractions == [0.5, 1.0]
    seen = Recorder()
    simulate_flows([0, 1, 2], [0, 0], [1.0], [1.0, 3.0], progress=seen)
    assert seen.fractions == [0.5, 1.0]


def test_a_figure_reports_its_runs_and_ends_at_one(tmp_path):
    seen = Recorder()
    make_figure("allgather-scale", tmp_path, FIGURE.validate({"jobs": [32], "seeds": 1, "background": False}),
                quick=True, progress=seen)
    inside = seen.check()
    assert len(inside) > 10                                       # runs, and routing/solving inside each run
    assert any(m.startswith("figure allgather-scale: wrote 4 files") for m in seen.messages)


def test_helpers_split_and_quiet_the_callback():
    seen = Recorder()
    first, second = weighted(seen, [1, 3])
    fractions_only(first)(1.0, "not shown")
    second(0.5, "shown")
    assert seen.fractions == [0.25, 0.625] and seen.messages == ["shown"]


def test_bar_prints_a_line_per_message_off_a_terminal(capsys):
    bar = Bar()
    bar(0.0, "start")
    bar(0.5)
    bar(1.0, "done")
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and err[0].endswith("0.0 %  start") and err[1].endswith("100.0 %  done")
