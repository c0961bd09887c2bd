"""The section registry (twin/live/sections.py): ids and names are unique, each capability declares its own, a frame
with every section is byte for byte what the code before the registry wrote, and the browser's generic helpers read
every registered section as Frame.value does."""
import base64
import json
import math
from pathlib import Path

import numpy as np
import pytest

from tests.live.test_frames import run_node
from twin.live import frames, sections

FIXTURES = Path(__file__).with_name("fixtures")
# The ids frames carried before the registry (tests/live/fixtures/make_fixtures_before_registry.py)
IDS = {"link_util": 1, "gpu_state": 2, "server_write": 3, "server_read": 4, "host_progress": 5, "frontend_util": 6,
       "checkpoint_phase": 7, "gpu_job": 8, "job_stats": 9, "failure_state": 10, "failure_events": 11,
       "debug_progress": 12, "debug_stop": 13}
# Sections added since, with a value of each for the frames below (the fixture keeps the frame before the registry)
ADDED = {"gpu_power": 20, "rack_power": 21, "power_stats": 22, "validation_stats": 30}
ADDED_VALUES = {"gpu_power": np.array([0, 175, 250, 255], np.uint8),
                "rack_power": np.array([100, 200, 254, 255], np.uint8),
                "power_stats": [{"phase": "done", "step_s": 8.17, "cap_w": 500.0, "tdp_w": 700.0,
                                 "cluster_peak_mw": 26.7, "cluster_mean_mw": 22.0, "cluster_swing_mw": 9.0,
                                 "cluster_ramp_mw_per_s": 2918.0, "job_mean_mw": 13.0, "energy_per_token_j": 6.3,
                                 "rack_budget_kw": 30.0, "racks_over_budget": 3}],
                "validation_stats": [{"phase": "done", "count": 180, "median": 0.08, "p90": 0.2, "max": 0.34,
                                      "median_before": 0.3, "cv_median": 0.09, "passed": 1}]}
OWNERS = {"link_util": "twin.live.sections", "gpu_state": "twin.live.sections", "server_write": "storage",
          "server_read": "storage", "host_progress": "storage", "frontend_util": "storage",
          "checkpoint_phase": "storage", "gpu_job": "jobs", "job_stats": "jobs", "failure_state": "failures",
          "failure_events": "failures", "debug_progress": "debug", "debug_stop": "debug", "gpu_power": "power",
          "rack_power": "power", "power_stats": "power", "validation_stats": "validation"}


def fixture():
    doc = json.loads((FIXTURES / "frame_every_section.json").read_text())
    return doc["header"], doc["sections"]


def test_every_section_keeps_its_id_and_is_declared_by_its_owner():
    got = {s.name: s.id for s in sections.sections()}
    assert {n: got[n] for n in IDS} == IDS and {n: got[n] for n in ADDED} == ADDED
    assert set(got) == set(IDS) | set(ADDED)
    for name, owner in OWNERS.items():
        declared = sections.by_name(name).owner
        assert declared == owner or declared == f"twin.capabilities.{owner}.live", (name, declared)


@pytest.fixture
def registry(monkeypatch):
    """A registry of its own holding what is registered, so a test's sections do not stay."""
    mine = sections.Registry(loaded=True)
    for s in sections.sections():
        mine.register(s)
    monkeypatch.setattr(sections, "_registry", mine)
    return mine


@pytest.mark.parametrize("sid, name, clash", [(3, "my_rates", "server_write"), (77, "job_stats", "job_stats")],
                         ids=["same id", "same name"])
def test_a_section_with_a_taken_id_or_name_is_refused_naming_both_owners(registry, sid, name, clash):
    with pytest.raises(ValueError) as e:
        sections.register(sections.Section(sid, name, "uint8"))
    text = str(e.value)
    assert name in text and clash in text and "tests.live.test_sections" in text
    assert sections.by_name(clash).owner in text
    assert name not in registry.by_name or registry.by_name[name].name == clash


def test_a_new_section_is_generic_everywhere(registry):
    # given a capability's section declared in a test: rows with a code table, indexed by nothing
    sections.register(sections.Section(77, "my_rows", "float32", "rows", fields=("a", "kind"),
                                       codes={"kind": {0: "x", 1: "y"}}, max_rows=2))
    # then a progress keyword of its name encodes it, the tables carry it, Frame.value reads it
    raw = frames.encode(frames.Frame(sections=frames.build_sections(my_rows=[{"a": 1, "kind": "x"},
                                                                             {"a": 2, "kind": "y"},
                                                                             {"a": 3, "kind": 0}])))
    assert frames.decode(raw).value("my_rows") == [{"a": 2.0, "kind": "y"}, {"a": 3.0, "kind": "x"}]
    assert frames.tables()["section_specs"]["my_rows"]["codes"] == {"kind": {"0": "x", "1": "y"}}
    assert frames.tables()["sections"]["77"] == "my_rows"


def test_an_unknown_section_name_is_a_clear_error():
    with pytest.raises(KeyError, match="no live section named 'link_utilisation'.*link_util"):
        frames.build_sections(link_utilisation=np.zeros(3))


def test_invalid_declarations_are_refused():
    with pytest.raises(ValueError, match="dtype"):
        sections.Section(90, "x", "int64")
    with pytest.raises(ValueError, match="1..255"):
        sections.Section(256, "x")
    with pytest.raises(ValueError, match="scale"):
        sections.Section(90, "x", "uint8", "util")


def test_a_frame_with_every_section_is_byte_identical_to_the_one_before_the_registry():
    """The fixture was encoded by the code at the start of the branch (its build_sections put the sections in the
    order the JSON lists them); the registry's generic encoders write the same bytes. Since then one field was
    appended to debug_progress (``packing``, issue 25: its 4 bytes re-encoded into the fixture)."""
    header, values = fixture()
    assert set(values) == set(IDS) and set(IDS) | set(ADDED) == {s.name for s in sections.sections()}
    raw = frames.encode(frames.Frame(**header, sections=frames.build_sections(**values)))
    assert raw == (FIXTURES / "frame_every_section.bin").read_bytes()
    # and the float16 form of link_util, the accepted alternative
    f16 = frames.build_sections(link_util=np.asarray(values["link_util"], np.float16))
    assert frames.encode(frames.Frame(**header, sections=f16)) == \
        (FIXTURES / "frame_link_util_float16.bin").read_bytes()


def test_frame_value_decodes_by_codec():
    _, values = fixture()
    f = frames.decode((FIXTURES / "frame_every_section.bin").read_bytes())
    assert f.value("checkpoint_phase") == "uploading"
    assert f.value("failure_state")[0]["state"] == "degraded" and f.value("failure_state")[0]["seeds"] == 8
    events = f.value("failure_events")
    assert len(events) == 1024 and events[-1]["item"] == values["failure_events"][-1]["item"]
    assert events[-1]["category"] == values["failure_events"][-1]["category"]
    assert f.value("job_stats")[1]["step_time_s"] is None and f.value("job_stats")[1]["phase"] == "queued"
    assert f.value("link_util").dtype == np.float32 and f.value("link_util").max() == 1.0
    assert f.value("gpu_state").tolist() == values["gpu_state"]
    assert f.value("debug_progress") == [{"stage": "dumping", "simulating": 1.0, "dumping": pytest.approx(0.4),
                                          "analyzing": 0.0, "ranks": 16, "packing": 0.0}]
    assert frames.Frame().value("link_util") is None


def _plain(v):
    """Frame.value's result as JSON would carry it (NaN as None, arrays as lists)."""
    if isinstance(v, np.ndarray):
        return [None if isinstance(x, float) and math.isnan(x) else x for x in v.astype(float).tolist()]
    return v


def test_the_browser_reads_every_registered_section_as_frame_value_does(tmp_path):
    """One frame of every registered section, decoded by frames.js's generic helpers (by codec, from the specs in
    the tables alone) and by Frame.value in Python: the same values."""
    header, values = fixture()
    raw = frames.encode(frames.Frame(**header, sections=frames.build_sections(**values, **ADDED_VALUES)))
    f = frames.decode(raw)
    specs = {s.name: s.codec for s in sections.sections()}
    out = run_node(tmp_path, (
        f"frames.useProtocol({json.dumps(frames.tables())});\n"
        f"const f = frames.decodeFrame(bytes({json.dumps(base64.b64encode(raw).decode())}));\n"
        "const out = {};\n"
        "for (const [name, data] of Object.entries(f.sections)) {\n"
        "  const codec = frames.sectionSpec(name).codec;\n"
        "  out[name] = codec === 'rows' ? frames.sectionRows(name, data)\n"
        "    : codec === 'code' ? frames.sectionCodeName(name, data) : Array.from(data);\n"
        "}\n"
        "const codes = frames.sectionCodes('checkpoint_phase');\n"
        "console.log(JSON.stringify({ out, phases: Object.fromEntries(codes.byCode), byName: codes.byName,\n"
        "  scale: frames.sectionConstants('link_util').scale, none: frames.sectionSpec('nothing'),\n"
        "  first: frames.sectionRow('job_stats', f.sections.job_stats) }));\n"))
    assert set(out["out"]) == set(specs)
    for name, codec in specs.items():
        want, got = _plain(f.value(name)), out["out"][name]
        if codec == "rows":
            assert len(got) == len(want), name
            for g, w in zip(got, want):
                assert g.keys() == w.keys(), name
                for k in w:
                    assert g[k] == w[k] if w[k] is None or isinstance(w[k], str) else \
                        g[k] == pytest.approx(w[k], rel=1e-6), (name, k)
        elif codec == "code":
            assert got == want, name
        else:
            assert got == pytest.approx(want, rel=1e-6, abs=1e-7), name
    phases = sections.by_name("checkpoint_phase").code_tables()["value"]
    assert out["phases"] == {str(k): v for k, v in phases.items()}
    assert out["byName"] == {v: k for k, v in phases.items()}
    assert out["scale"] == sections.LINK_UTIL_SCALE and out["none"] is None
    assert out["first"]["job"] == 7 and out["first"]["phase"] == "simulating"
