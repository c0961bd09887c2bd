"""The debug rehearsal's live sections (debug_progress, debug_stop): round trip in Python, the codes a lag maps to,
and the browser's decoder reading them with the server's tables only."""
import base64
import json

import numpy as np

from tests.live.test_frames import run_node
from twin.capabilities.debug import live as debug_live
from twin.live import frames, sections


def _debug_frame():
    row = debug_live.debug_progress("packing", simulating=1.0, dumping=1.0, analyzing=0.5, packing=0.375, ranks=16384)
    lag = np.array([0, 3, np.nan, 400, 1, 0], dtype=np.float64)
    culprit = np.array([False, True, False, False, False, False])
    stop = debug_live.debug_stop(lag, culprit)
    return row, stop, frames.Frame(type=frames.FRAME_RUN, seq=3, run_id=9, progress=45.0, status="running",
                                   sections=frames.build_sections(debug_progress=row, debug_stop=stop))


def test_debug_stop_codes_lag_culprit_and_ranks_outside_the_job():
    # given per GPU lags (NaN: not in the job), one of them a culprit
    _, stop, _ = _debug_frame()
    # then lags are kept (clipped at DEBUG_LAG_MAX), the culprit and the GPUs outside the job have their own codes
    assert stop.tolist() == [0, debug_live.DEBUG_CULPRIT, debug_live.DEBUG_NOT_IN_JOB, debug_live.DEBUG_LAG_MAX, 1, 0]
    assert debug_live.DEBUG_LAG_MAX < debug_live.DEBUG_CULPRIT < debug_live.DEBUG_NOT_IN_JOB <= 255
    in_job = np.array([True, True, True, False])
    assert debug_live.debug_stop([1, 2, 3, 4], in_job=in_job).tolist() == [1, 2, 3, debug_live.DEBUG_NOT_IN_JOB]


def test_debug_sections_round_trip():
    row, stop, frame = _debug_frame()
    back = frames.decode(frames.encode(frame))
    assert back.value("debug_progress") == [{"stage": "packing", "simulating": 1.0, "dumping": 1.0,
                                             "analyzing": 0.5, "ranks": 16384, "packing": 0.375}]
    assert back.value("debug_stop").dtype == np.uint8 and back.value("debug_stop").tolist() == stop.tolist()
    assert (sections.by_name("debug_progress").id, sections.by_name("debug_stop").id) == (12, 13)
    assert sections.by_name("debug_stop").owner == "twin.capabilities.debug.live"


def test_the_browser_decoder_reads_debug_sections(tmp_path):
    """frames.js decodes both sections and names the stage with the server's tables (renumbered here, so a code
    typed into the browser would show)."""
    tables = frames.tables()
    spec = tables["section_specs"]["debug_progress"]
    spec["codes"]["stage"] = {str(int(k) + 7): v for k, v in spec["codes"]["stage"].items()}
    row, stop, _ = _debug_frame()
    wire = frames.build_sections(debug_progress=row)[12]
    wire[0] += 7
    frame = frames.Frame(seq=3, sections={12: wire, **frames.build_sections(debug_stop=stop)})
    raw = frames.encode(frame)
    out = run_node(tmp_path, (
        f"frames.useProtocol({json.dumps(tables)});\n"
        f"const f = frames.decodeFrame(bytes({json.dumps(base64.b64encode(raw).decode())}));\n"
        "console.log(JSON.stringify({stop: Array.from(f.sections.debug_stop), "
        "row: frames.sectionRow('debug_progress', f.sections.debug_progress), "
        "culprit: frames.sectionConstants('debug_stop').culprit}));\n"))
    assert out["stop"] == stop.tolist() and out["culprit"] == debug_live.DEBUG_CULPRIT
    assert out["row"] == {"stage": "packing", "simulating": 1, "dumping": 1, "analyzing": 0.5, "ranks": 16384,
                          "packing": 0.375}
