"""Binary frames: round trip, sizes (the 64 KB budget), quantization, malformed input."""
import numpy as np
import pytest

from twin.live import frames

META_ROCE_24K_BACKEND_LINKS = 56_256


def test_round_trip_keeps_header_and_sections():
    # given a frame with link utilization (Uint8) and GPU states
    util = np.linspace(0, 1, 1001, dtype=np.float32)
    states = (np.arange(257) % 5).astype(np.uint8)
    f = frames.Frame(type=frames.FRAME_CLUSTER, seq=42, run_id=7, cluster_id=3, progress=37.5, status="running",
                     sections=frames.build_sections(util, states), time_ms=1.7e12)
    # when it is encoded and decoded
    raw = frames.encode(f)
    g = frames.decode(raw)
    # then every field survives
    assert (g.type, g.seq, g.run_id, g.cluster_id, g.status, g.final) == (frames.FRAME_CLUSTER, 42, 7, 3, "running", False)
    assert g.progress == pytest.approx(37.5) and g.time_ms == 1.7e12
    assert np.array_equal(g.gpu_state, states)
    assert np.abs(g.link_util - util).max() <= 0.5 / 255 + 1e-6
    # and every section starts 4-byte aligned (typed-array views in the browser)
    assert len(raw) == 32 + 8 + 1004 + 8 + 260


def test_float16_section_and_final_flag():
    util = np.array([0.0, 0.25, 0.5, 1.0], dtype=np.float32)
    f = frames.Frame(final=True, status="succeeded", sections=frames.build_sections(util, link_dtype="float16"))
    g = frames.decode(frames.encode(f))
    assert g.final and g.status == "succeeded"
    assert g.sections[frames.SECTION_LINK_UTIL].dtype == np.float16
    assert np.array_equal(g.link_util, util)


def test_quantization_clamps_and_ignores_nan():
    q = frames.quantize_util([-1.0, 0.0, 0.5, 1.0, 2.0, np.nan])
    assert q.tolist() == [0, 0, 128, 255, 255, 0]


def test_all_links_frame_of_meta_roce_24k_fits_the_budget():
    # given every backend link of meta-roce-24k and every GPU
    util = np.random.default_rng(0).random(META_ROCE_24K_BACKEND_LINKS, dtype=np.float32)
    raw = frames.encode(frames.Frame(sections=frames.build_sections(util)))
    raw_gpus = frames.encode(frames.Frame(sections=frames.build_sections(util, np.zeros(24_576, np.uint8))))
    # then the links alone fit in 64 KB (Float16 would not), and with the GPU states too
    assert len(raw) == 32 + 8 + META_ROCE_24K_BACKEND_LINKS
    assert len(raw) <= 64 * 1024
    assert len(raw_gpus) <= 80 * 1024
    f16 = frames.encode(frames.Frame(sections=frames.build_sections(util, link_dtype="float16")))
    assert len(f16) > 64 * 1024


@pytest.mark.parametrize("bad, message", [
    (b"XX" + bytes(30), "magic"),
    (b"TW\x09" + bytes(29), "version"),
    (b"TW\x01", "shorter"),
], ids=["magic", "version", "short"])
def test_malformed_frames_are_refused(bad, message):
    with pytest.raises(frames.FrameError, match=message):
        frames.decode(bad)


def test_truncated_section_is_refused():
    raw = frames.encode(frames.Frame(sections=frames.build_sections(np.ones(100))))
    with pytest.raises(frames.FrameError, match="truncated"):
        frames.decode(raw[:-10])


def test_the_browser_decoder_reads_python_frames(tmp_path):
    """frontend/js/frames.js (DataView) decodes what frames.encode writes; skipped where Node is absent."""
    import base64
    import json
    import shutil
    import subprocess
    from pathlib import Path

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    js = Path(__file__).resolve().parents[2] / "frontend" / "js" / "frames.js"
    util = np.array([0.0, 0.5, 1.0], np.float32)
    raw = frames.encode(frames.Frame(type=frames.FRAME_CLUSTER, seq=9, run_id=4, cluster_id=2, progress=12.5,
                                     status="failed", final=True, time_ms=123.0,
                                     sections={**frames.build_sections(util, np.array([1, 2, 3, 4, 5], np.uint8)),
                                               7: np.array([0.25, -2.0], np.float16)}))
    script = tmp_path / "check.mjs"
    script.write_text(
        f"import {{ decodeFrame }} from {json.dumps(js.as_uri())};\n"
        f"const b = Buffer.from({json.dumps(base64.b64encode(raw).decode())}, 'base64');\n"
        "const f = decodeFrame(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));\n"
        "for (const k in f.sections) f.sections[k] = Array.from(f.sections[k]);\n"
        "console.log(JSON.stringify(f));\n")
    out = json.loads(subprocess.run([node, str(script)], capture_output=True, text=True, check=True).stdout)
    assert {k: out[k] for k in ("type", "seq", "runId", "clusterId", "progress", "status", "final", "timeMs")} == {
        "type": "cluster", "seq": 9, "runId": 4, "clusterId": 2, "progress": 12.5, "status": "failed", "final": True,
        "timeMs": 123.0}
    assert np.allclose(out["sections"]["link_util"], [0, 128 / 255, 1])
    assert out["sections"]["gpu_state"] == [1, 2, 3, 4, 5]
    assert out["sections"]["7"] == [0.25, -2.0]
