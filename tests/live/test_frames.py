"""Binary frames: round trip, sizes (the 64 KB budget), quantization, malformed input; the browser decoder reads
them with the server's tables only."""
import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from twin.capabilities.debug import live as debug_live
from twin.capabilities.failures import live as failures_live
from twin.capabilities.storage import live as storage_live
from twin.live import frames, sections
from twin.live.meta import protocol_info

META_ROCE_24K_BACKEND_LINKS = 56_256


def test_round_trip_keeps_header_and_sections():
    # given a frame with link utilization (Uint8) and GPU states
    util = np.linspace(0, 1, 1001, dtype=np.float32)
    states = (np.arange(257) % 5).astype(np.uint8)
    f = frames.Frame(type=frames.FRAME_CLUSTER, seq=42, run_id=7, cluster_id=3, progress=37.5, status="running",
                     sections=frames.build_sections(link_util=util, gpu_state=states), time_ms=1.7e12)
    # when it is encoded and decoded
    raw = frames.encode(f)
    g = frames.decode(raw)
    # then every field survives
    assert (g.type, g.seq, g.run_id, g.cluster_id, g.status, g.final) == (frames.FRAME_CLUSTER, 42, 7, 3, "running", False)
    assert g.progress == pytest.approx(37.5) and g.time_ms == 1.7e12
    assert np.array_equal(g.value("gpu_state"), states)
    assert np.abs(g.value("link_util") - util).max() <= 0.5 / 255 + 1e-6
    # and every section starts 4-byte aligned (typed-array views in the browser)
    assert len(raw) == 32 + 8 + 1004 + 8 + 260


def test_float16_section_and_final_flag():
    util = np.array([0.0, 0.25, 0.5, 1.0], dtype=np.float32)
    f = frames.Frame(final=True, status="succeeded",
                     sections=frames.build_sections(link_util=util.astype(np.float16)))
    g = frames.decode(frames.encode(f))
    assert g.final and g.status == "succeeded"
    assert g.sections[sections.LINK_UTIL.id].dtype == np.float16
    assert np.array_equal(g.value("link_util"), util)


def test_quantization_clamps_and_ignores_nan():
    q = frames.quantize_util([-1.0, 0.0, 0.5, 1.0, 2.0, np.nan])
    assert q.tolist() == [0, 0, 128, 255, 255, 0]


def test_all_links_frame_of_meta_roce_24k_fits_the_budget():
    # given every backend link of meta-roce-24k and every GPU
    util = np.random.default_rng(0).random(META_ROCE_24K_BACKEND_LINKS, dtype=np.float32)
    raw = frames.encode(frames.Frame(sections=frames.build_sections(link_util=util)))
    raw_gpus = frames.encode(frames.Frame(sections=frames.build_sections(link_util=util,
                                                                         gpu_state=np.zeros(24_576, np.uint8))))
    # then the links alone fit in 64 KB (Float16 would not), and with the GPU states too
    assert len(raw) == 32 + 8 + META_ROCE_24K_BACKEND_LINKS
    assert len(raw) <= 64 * 1024
    assert len(raw_gpus) <= 80 * 1024
    f16 = frames.encode(frames.Frame(sections=frames.build_sections(link_util=util.astype(np.float16))))
    assert len(f16) > 64 * 1024


def test_storage_sections_round_trip():
    # given a checkpoint's state: server rates (GB/s), host progress, frontend utilization, the phase
    rates = np.array([0.0, 1.5, 12.25, 100.0], np.float32)
    progress = storage_live.quantize_progress([0.0, 0.5, 1.0, np.nan], in_job=[True, True, True, False])
    f = frames.Frame(sections=frames.build_sections(server_write=rates, server_read=rates[::-1],
                                                    host_progress=progress, frontend_util=[0.0, 0.5, 1.0],
                                                    checkpoint_phase=storage_live.PHASE_UPLOADING))
    g = frames.decode(frames.encode(f))
    # then each comes back: float16 rates exactly (these values are float16 numbers), progress on its scale
    assert np.array_equal(g.value("server_write"), rates)
    assert np.array_equal(g.value("server_read"), rates[::-1])
    assert g.value("host_progress").tolist() == [0, storage_live.PROGRESS_SCALE // 2, storage_live.PROGRESS_SCALE,
                                                 storage_live.HOST_NOT_IN_JOB]
    assert np.allclose(g.value("frontend_util"), [0, 128 / 255, 1])
    assert g.value("checkpoint_phase") == "uploading"
    # a phase goes by its name as well as by its code
    by_name = frames.build_sections(checkpoint_phase="uploading")
    assert by_name[storage_live.CHECKPOINT_PHASE.id].tolist() == [storage_live.PHASE_UPLOADING]


def test_a_checkpoint_frame_of_meta_roce_24k_s_full_storage_fits_the_budget():
    # given meta-roce-24k with every storage server (both stores), host and frontend link in one frame
    from sim.fabric.layout import FABRIC_FRONTEND, expand
    from sim.fabric.spec import load_spec
    lay = expand(load_spec("meta-roce-24k"))
    V, H = len(lay.server_rack), len(lay.host_rack)
    L = int(np.sum(lay.link_fabric == FABRIC_FRONTEND))
    rng = np.random.default_rng(0)
    raw = frames.encode(frames.Frame(sections=frames.build_sections(
        server_write=rng.random(V) * 12, server_read=rng.random(V) * 12,
        host_progress=storage_live.quantize_progress(rng.random(H)), frontend_util=rng.random(L),
        checkpoint_phase="staging")))
    # then it is within 64 KB: 2 B per server and direction, 1 B per host and per frontend link
    assert len(raw) == 32 + 5 * 8 + 2 * (2 * V) + H + L + (-L % 4) + 4
    assert len(raw) <= 64 * 1024


@pytest.mark.parametrize("bad, message", [
    (b"XX" + bytes(30), "magic"),
    (b"TW\x09" + bytes(29), "version"),
    (b"TW\x01", "shorter"),
], ids=["magic", "version", "short"])
def test_malformed_frames_are_refused(bad, message):
    with pytest.raises(frames.FrameError, match=message):
        frames.decode(bad)


def test_truncated_section_is_refused():
    raw = frames.encode(frames.Frame(sections=frames.build_sections(link_util=np.ones(100))))
    with pytest.raises(frames.FrameError, match="truncated"):
        frames.decode(raw[:-10])


FRAMES_JS = Path(__file__).resolve().parents[2] / "frontend" / "js" / "frames.js"
GPUS_JS = FRAMES_JS.with_name("gpus.js")


def run_node(tmp_path, body: str) -> dict:
    """Run an ES module importing frames.js under Node and parse the JSON it prints; skipped where Node is absent."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = tmp_path / "check.mjs"
    script.write_text(f"import * as frames from {json.dumps(FRAMES_JS.as_uri())};\n"
                      "const bytes = (b64) => { const b = Buffer.from(b64, 'base64');\n"
                      "  return b.buffer.slice(b.byteOffset, b.byteOffset + b.length); };\n" + body)
    return json.loads(subprocess.run([node, str(script)], capture_output=True, text=True, check=True).stdout)


def decode_in_node(tmp_path, raw: bytes, tables: dict) -> dict:
    """frames.js's decodeFrame on ``raw`` with the server's ``tables``, and the GPU state codes it takes from them."""
    return run_node(tmp_path, (
        f"frames.useProtocol({json.dumps(tables)});\n"
        f"const f = frames.decodeFrame(bytes({json.dumps(base64.b64encode(raw).decode())}));\n"
        "for (const k in f.sections) f.sections[k] = Array.from(f.sections[k]);\n"
        "console.log(JSON.stringify({ ...f, gpuState: frames.sectionCodes('gpu_state').byName }));\n"))


def test_the_browser_decoder_reads_python_frames(tmp_path):
    """frontend/js/frames.js (DataView) decodes what frames.encode writes, with the tables of protocol_info()."""
    util = np.array([0.0, 0.5, 1.0], np.float32)
    raw = frames.encode(frames.Frame(type=frames.FRAME_CLUSTER, seq=9, run_id=4, cluster_id=2, progress=12.5,
                                     status="failed", final=True, time_ms=123.0,
                                     sections={**frames.build_sections(link_util=util,
                                                                       gpu_state=np.array([1, 2, 3, 4, 5], np.uint8)),
                                               99: np.array([0.25, -2.0], np.float16)}))
    out = decode_in_node(tmp_path, raw, protocol_info())
    assert {k: out[k] for k in ("type", "seq", "runId", "clusterId", "progress", "status", "final", "timeMs")} == {
        "type": "cluster", "seq": 9, "runId": 4, "clusterId": 2, "progress": 12.5, "status": "failed", "final": True,
        "timeMs": 123.0}
    assert np.allclose(out["sections"]["link_util"], [0, 128 / 255, 1])
    assert out["sections"]["gpu_state"] == [1, 2, 3, 4, 5]
    assert out["sections"]["99"] == [0.25, -2.0]


def test_the_browser_decoder_reads_the_storage_sections(tmp_path):
    """frames.js decodes a checkpoint frame: frontend_util dequantized like link_util, rates as float16, progress
    and the phase as their codes, with the tables of protocol_info()."""
    raw = frames.encode(frames.Frame(sections=frames.build_sections(
        server_write=np.array([2.5, 0.0], np.float32), host_progress=storage_live.quantize_progress([1.0, np.nan]),
        frontend_util=[0.0, 1.0], checkpoint_phase="durable")))
    out = run_node(tmp_path, (
        f"frames.useProtocol({json.dumps(protocol_info())});\n"
        f"const f = frames.decodeFrame(bytes({json.dumps(base64.b64encode(raw).decode())}));\n"
        "const phase = frames.sectionCodeName('checkpoint_phase', f.sections.checkpoint_phase);\n"
        "for (const k in f.sections) f.sections[k] = Array.from(f.sections[k]);\n"
        "console.log(JSON.stringify({ sections: f.sections,\n"
        "  phase, notInJob: frames.sectionConstants('host_progress').not_in_job }));\n"))
    s = out["sections"]
    assert s["server_write"] == [2.5, 0.0] and s["frontend_util"] == [0.0, 1.0]
    assert s["host_progress"] == [storage_live.PROGRESS_SCALE, out["notInJob"]] and out["phase"] == "durable"


def test_the_browser_decoder_takes_every_code_from_the_server(tmp_path, monkeypatch):
    """Renumber every table of the format (magic, version, frame types, flags, dtypes, statuses) and every section
    (ids, GPU state codes, the util scale): frames.js decodes the frames Python then writes, given only the new
    tables. A code typed into frames.js would decode to the wrong name here."""
    u1, f2 = np.dtype("<u1"), np.dtype("<f2")
    renumbered = dict(
        MAGIC=b"QZ", VERSION=7, FRAME_RUN=5, FRAME_CLUSTER=3, FRAME_TYPES={5: "run", 3: "cluster"},
        FLAG_FINAL=8, FLAG_NAMES={8: "final"}, DTYPE_UINT8=6, DTYPE_FLOAT16=4, DTYPES={6: u1, 4: f2},
        DTYPE_NAMES={6: "uint8", 4: "float16"},
        STATUS_CODES={name: 10 + k for k, name in enumerate(reversed(list(frames.STATUS_CODES)))})
    for name, value in renumbered.items():
        assert hasattr(frames, name), name
        monkeypatch.setattr(frames, name, value)
    monkeypatch.setattr(frames, "STATUS_NAMES", {v: k for k, v in frames.STATUS_CODES.items()})
    registry = sections.Registry(loaded=True)
    monkeypatch.setattr(sections, "_registry", registry)
    sections.register(sections.Section(9, "link_util", "uint8", "util", constants={"scale": 200}, per="link"))
    sections.register(sections.Section(11, "gpu_state", "uint8", codes={"value": {3: "idle", 7: "in_job",
                                                                                  5: "unusable"}}, per="gpu"))
    sections.register(sections.Section(13, "frontend_util", "uint8", "util", constants={"scale": 200}))
    util = np.array([0.0, 0.5, 1.0], np.float32)
    raw = frames.encode(frames.Frame(type=frames.FRAME_CLUSTER, seq=3, run_id=8, status="cancelled", final=True,
                                     sections={**frames.build_sections(link_util=util,
                                                                       gpu_state=np.array([7, 3, 5], np.uint8),
                                                                       frontend_util=util),
                                               12: np.array([0.5], np.float16)}))
    assert frames.decode(raw).status == "cancelled"
    assert set(frames.tables()["section_specs"]) == {"link_util", "gpu_state", "frontend_util"}
    out = decode_in_node(tmp_path, raw, frames.tables())
    assert (out["type"], out["status"], out["final"]) == ("cluster", "cancelled", True)
    assert np.allclose(out["sections"]["link_util"], [0, 100 / 200, 1])
    assert np.allclose(out["sections"]["frontend_util"], [0, 100 / 200, 1])
    assert out["sections"]["gpu_state"] == [7, 3, 5] and out["sections"]["12"] == [0.5]
    assert out["gpuState"] == {"idle": 3, "in_job": 7, "unusable": 5}


def test_protocol_info_holds_every_table_of_the_frames():
    info = protocol_info()
    assert info["protocol"] == frames.VERSION and info["magic"] == frames.MAGIC.decode()
    assert info["frame_types"] == {str(k): v for k, v in frames.FRAME_TYPES.items()}
    assert info["flags"] == {str(frames.FLAG_FINAL): "final", str(frames.FLAG_SCOPED): "scoped"}
    assert info["sections"] == {str(s.id): s.name for s in sections.sections()}
    assert info["dtypes"] == {str(k): v for k, v in frames.DTYPE_NAMES.items()}
    assert info["dtype_sizes"] == {str(k): dt.itemsize for k, dt in frames.DTYPES.items()}
    assert info["status_codes"] == frames.STATUS_CODES
    assert info["close_reasons"] == {str(k): v for k, v in frames.CLOSE_REASONS.items()}
    assert info["final_closes"] == [frames.CLOSE_UNAUTHENTICATED, frames.CLOSE_NOT_FOUND]
    # the generic keys and the section specs, nothing named after a capability
    assert set(info) == {"protocol", "magic", "frame_types", "flags", "sections", "dtypes", "dtype_sizes",
                         "status_codes", "section_specs", "close_reasons", "final_closes", "tick_hz"}
    specs = info["section_specs"]
    assert specs["gpu_state"] == {"id": 2, "dtype": "uint8", "codec": "array", "fields": [], "per": "gpu",
                                  "codes": {"value": {str(k): v for k, v in sections.GPU_STATES.items()}},
                                  "constants": {}}
    assert specs["link_util"]["codec"] == "util" and specs["link_util"]["constants"] == {"scale": 255}
    assert [n for n, s in specs.items() if s["codec"] == "util"] == ["link_util", "frontend_util"]
    assert specs["checkpoint_phase"]["codes"]["value"] == {str(k): v for k, v in
                                                          storage_live.CHECKPOINT_PHASES.items()}
    assert specs["failure_state"]["codes"]["state"] == {str(k): v for k, v in failures_live.failure_states().items()}
    assert specs["failure_state"]["fields"] == list(failures_live.FAILURE_FIELDS)
    assert specs["failure_events"]["fields"] == list(failures_live.FAILURE_EVENT_FIELDS)
    assert specs["host_progress"]["constants"] == {"scale": storage_live.PROGRESS_SCALE,
                                                   "not_in_job": storage_live.HOST_NOT_IN_JOB}
    assert specs["debug_stop"]["constants"] == {"lag_max": debug_live.DEBUG_LAG_MAX,
                                                "culprit": debug_live.DEBUG_CULPRIT,
                                                "not_in_job": debug_live.DEBUG_NOT_IN_JOB}
    assert frames.dequantize_util(frames.quantize_util([1.0]))[0] == 1.0
    json.dumps(info)


def test_status_codes_are_the_run_statuses():
    """One declaration (twin/live/status.py): the frames' status byte and the runs' RunStatus read it."""
    from twin.runs.choices import RunStatus
    assert list(frames.STATUS_CODES) == ["unknown", *RunStatus.values]
    assert list(frames.STATUS_CODES.values()) == list(range(len(RunStatus.values) + 1))
    assert RunStatus.CANCELLED == "cancelled" and RunStatus.CANCELLED.label == "Cancelled"


# what typing a protocol code into the browser code looks like: a constant named after a table set to a number (the
# layout's byte sizes aside), an object keyed by numbers, an array of the status names, a state compared to a number
CODE_LITERALS = [
    re.compile(r"\b(?!\w*_BYTES\b)\w*(GPU|STATE|STATUS|SECTION|DTYPE|FRAME|FLAG)\w*\s*=\s*\d"),   # not sizes
    re.compile(r"[{,]\s*\d+\s*:"),
    re.compile(r'\[\s*"unknown"\s*,\s*"queued"'),
    re.compile(r"\b(gpu_state|st|s|state)\[?\w*\]?\s*[!=]==?\s*\d"),
]


@pytest.mark.parametrize("js", [FRAMES_JS, GPUS_JS], ids=lambda p: p.name)
def test_the_browser_types_no_protocol_table(js):
    """frames.js and gpus.js take the codes from the server's tables (protocol(), the section helpers): none is
    typed into them."""
    code = "\n".join(line for line in js.read_text().splitlines() if not line.lstrip().startswith(("//", "*")))
    found = [m.group(0) for rx in CODE_LITERALS for m in rx.finditer(code)]
    assert not found, f"{js.name} types protocol codes: {found}"
    assert any(use in code for use in ("protocol()", "useProtocol", "sectionCodes(", "sectionConstants("))


def test_frames_js_names_no_section():
    """frames.js is generic: no registered section's name (nor a capability's table) is written in it."""
    code = FRAMES_JS.read_text()
    named = [s.name for s in sections.sections() if re.search(rf"\b{s.name}\b", code)]
    assert not named, f"frames.js names sections {named}"
    for word in ("jobRows", "failureState", "failureEvents", "debugRow", "gpuState", "checkpoint", "progressScale"):
        assert word not in code, word


@pytest.mark.django_db
def test_every_page_embeds_the_protocol_tables(client):
    """The tables a page decodes snapshots with before any socket is open are protocol_info(), nothing else."""
    html = client.get("/accounts/login/").content.decode()
    m = re.search(r'<script id="live-protocol" type="application/json">(.*?)</script>', html, re.S)
    assert m, "no #live-protocol in the page"
    assert json.loads(m.group(1)) == json.loads(json.dumps(protocol_info()))


def _job_frame():
    rows = [{"job": 12, "phase": "simulating", "step_time_s": 6.5, "tokens_per_s": 2.5e6, "tflops_per_gpu": 400.0,
             "mfu": 0.4, "gpus": 3},
            {"job": 13, "phase": "queued", "gpus": 2}]
    gpu_job = np.array([0, 1, 1, 1, 2, 2, 0], np.uint16)
    return rows, gpu_job, frames.Frame(type=frames.FRAME_CLUSTER, seq=4, cluster_id=1,
                                       sections=frames.build_sections(gpu_job=gpu_job, job_stats=rows))


def test_job_sections_round_trip():
    """gpu_job (uint16 per GPU) and job_stats (float32 rows of JOB_FIELDS) come back as they went, NaN as None."""
    rows, gpu_job, frame = _job_frame()
    back = frames.decode(frames.encode(frame))
    assert back.value("gpu_job").dtype == np.dtype("<u2") and back.value("gpu_job").tolist() == gpu_job.tolist()
    got = back.value("job_stats")
    assert [r["job"] for r in got] == [12, 13] and [r["phase"] for r in got] == ["simulating", "queued"]
    assert got[0]["step_time_s"] == 6.5 and got[0]["tokens_per_s"] == 2.5e6 and abs(got[0]["mfu"] - 0.4) < 1e-7
    assert got[1]["step_time_s"] is None and got[1]["gpus"] == 2
    with pytest.raises(frames.FrameError):
        frames.encode(frames.Frame(sections={1: np.zeros(3, np.int64)}))


def test_the_browser_decoder_reads_job_sections(tmp_path):
    """frames.js reads the uint16 and float32 sections and names the job rows with the server's tables."""
    rows, gpu_job, frame = _job_frame()
    raw = frames.encode(frame)
    out = run_node(tmp_path, (
        f"const p = frames.useProtocol({json.dumps(frames.tables())});\n"
        f"const f = frames.decodeFrame(bytes({json.dumps(base64.b64encode(raw).decode())}), p);\n"
        "console.log(JSON.stringify({gpu: Array.from(f.sections.gpu_job),\n"
        "  rows: frames.sectionRows('job_stats', f.sections.job_stats)}));\n"))
    assert out["gpu"] == gpu_job.tolist()
    assert out["rows"][0]["job"] == 12 and out["rows"][0]["phase"] == "simulating"
    assert out["rows"][1]["phase"] == "queued" and out["rows"][1]["tflops_per_gpu"] is None


def _failure_frame():
    state = {"state": "restarting", "t_hours": 30.5, "hours": 1296.0, "productive_hours": 27.25,
             "effective_ratio": 27.25 / 30.5, "interruptions": 4, "lost_hours": 3.25, "seed": 17, "seeds_done": 3,
             "seeds": 10}
    events = [{"t_hours": 2.5, "category": "gpu", "item_kind": "gpu", "item": 24_575, "consequence": "crash",
               "lost_hours": 0.5},
              {"t_hours": 9.0, "category": "network", "item_kind": "link", "item": 56_255, "consequence": "degrade",
               "lost_hours": 0.0},
              {"t_hours": 12.0, "category": "software", "item_kind": "job", "item": -1, "consequence": "crash",
               "lost_hours": 0.25}]
    return state, events, frames.Frame(sections=frames.build_sections(failure_state=state, failure_events=events))


def test_failure_sections_round_trip_with_the_engine_s_code_tables():
    """failure_state (one float32 row) and failure_events (a row per failure) come back with their codes named by
    the engine's tables (sim.failures.timeline STATES and ITEM_KINDS, sim.failures.rates NAMES and CONSEQUENCES)."""
    from sim.failures import rates as failure_rates
    from sim.failures import timeline as failures
    from sim.failures.inject import ITEM_KINDS
    state, events, frame = _failure_frame()
    back = frames.decode(frames.encode(frame))
    got = back.value("failure_state")[0]
    assert got["state"] == "restarting" and got["seed"] == 17 and got["interruptions"] == 4
    assert got["effective_ratio"] == pytest.approx(state["effective_ratio"], rel=1e-6)
    assert [(e["category"], e["item_kind"], e["item"], e["consequence"]) for e in back.value("failure_events")] == \
        [(e["category"], e["item_kind"], e["item"], e["consequence"]) for e in events]
    assert failures_live.failure_states() == dict(enumerate(failures.STATES))
    assert list(failures_live.failure_categories().values()) == list(failure_rates.NAMES)
    assert list(failures_live.item_kinds().values()) == list(ITEM_KINDS)
    assert failures.WHILE_DOWN in failures_live.failure_consequences().values()
    # and a frame keeps the newest FAILURE_EVENTS_SENT failures (24 KB), whatever the timeline holds
    many = [{**events[0], "t_hours": float(k)} for k in range(failures_live.FAILURE_EVENTS_SENT + 500)]
    back = frames.decode(frames.encode(frames.Frame(sections=frames.build_sections(failure_events=many))))
    rows = back.value("failure_events")
    assert len(rows) == failures_live.FAILURE_EVENTS_SENT and rows[-1]["t_hours"] == many[-1]["t_hours"]


def test_the_browser_decoder_reads_failure_sections(tmp_path):
    """frames.js sectionRow / sectionRows name the codes with the server's tables only."""
    state, events, frame = _failure_frame()
    raw = frames.encode(frame)
    out = run_node(tmp_path, (
        f"const p = frames.useProtocol({json.dumps(frames.tables())});\n"
        f"const f = frames.decodeFrame(bytes({json.dumps(base64.b64encode(raw).decode())}), p);\n"
        "console.log(JSON.stringify({state: frames.sectionRow('failure_state', f.sections.failure_state),\n"
        "  events: frames.sectionRows('failure_events', f.sections.failure_events)}));\n"))
    assert out["state"]["state"] == "restarting" and out["state"]["seeds_done"] == 3
    assert out["state"]["t_hours"] == 30.5 and out["state"]["productive_hours"] == 27.25
    assert [(e["category"], e["item_kind"], e["item"], e["consequence"]) for e in out["events"]] == \
        [(e["category"], e["item_kind"], e["item"], e["consequence"]) for e in events]
