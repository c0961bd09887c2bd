"""The validation corpus against the engine as it was BEFORE issue 39: the "before" figure of the issue's closing note.

Each corpus observation (``sim/validation/corpus/*.toml``, read with ``tomllib`` as data only) is predicted by an OLD
checkout of the engine (``--engine DIR``, put first on ``sys.path`` so ``import sim`` is that engine), through the
old engine's own entry points, as a user would have run it then:

- ``collective``: ``sim.fabric.entry.run_collective(topo, COLLECTIVE.validate(params))``, the one size's row of the
  median seed: ``busbw_gbps`` = busbw / 1e9, ``algbw_gbps`` likewise, ``time_us`` = time x 1e6;
- ``nccl-tests``: the old measurements parser's entry (its log's rows), the same run, each row's time;
- ``job``: ``sim.jobs.entry.run_job``: ``step_time_s``, ``tokens_per_s``, ``tokens_per_s_per_gpu`` (tokens/s over the
  job's GPUs), ``tflops_per_gpu``, ``mfu`` (the old engine's own: over the dense peak of the GPU it simulated);
- ``checkpoint`` / ``restore``: ``sim.storage.entry.run_checkpoint`` (``restore`` set by the kind): ``blocked_s``,
  ``durable_s``, ``write_gbps`` / ``read_gbps`` = the checkpoint's bytes (sum over ranks) / durable seconds / 1e9;
- ``failures``: ``sim.failures.entry.run_failures``: ``interruptions`` = mean interruptions per day x days,
  ``effective_ratio``, ``mtbf_hours`` = 24 / interruptions per day;
- ``power``: ``sim.power.entry.run_power``: ``gpu_mean_w`` (the job's GPUs' mean over the step), ``gpu_peak_w``,
  ``cluster_peak_mw``, ``swing_mw`` (the cluster's swing within the step), ``energy_per_token_j`` (the job's GPUs and
  hosts), ``gpu_energy_per_token_j`` (its GPUs alone), ``node_mean_kw`` / ``node_peak_kw`` (the job's hosts with their
  GPUs: ``hosts`` of the old engine's ``to_dict()``).

These are the same readings the calibration's predictor makes (sim/calibrate/fit.py), so before and after compare
like with like.

Parameters the old engine does not know (a name its ParamSet lacks, or a choice value it lacks, e.g. algorithm nvls
or collnet_chain) are dropped: the entry runs with the old defaults for them and is flagged ``dropped``. An entry the
old engine refuses for any other reason is listed with the reason and left out of the summary.

Clusters: a preset the old engine has runs as is. A newer preset (its file looked up in the corpus checkout's
``sim/presets``, the script's checkout's, and any ``--presets DIR``) runs from its file when the old engine can load
it (``load_topology(spec=path)``: the hardware was expressible, only the preset is new). Otherwise (a GPU, NIC or
host platform the old catalog lacks) the entry runs on the old engine's closest preset that holds its GPUs, by
backend kind (InfiniBand: dgx-h100-superpod, then meta-ib-24k; Ethernet (RoCE, EFA): meta-roce-24k), the old
engine's only GPU being the H100, and is marked "hardware not expressible before". The summary is given over all
entries and over those expressible before.

Usage::

    .venv/bin/python bench/validation_baseline.py --engine /work/wt/baseline [--corpus DIR] [--presets DIR ...]
        [--kind KIND ...] [--json] [-q]

The summary's figures are absolute relative errors ``|predicted / measured - 1|`` (fractions): count, median, p90
(numpy's linear percentile), max, per kind and overall. It is a measurement script, not a test.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]          # the checkout this script lives in
DEFAULT_CORPUS = HERE / "sim" / "validation" / "corpus"
QUANTITIES = {
    "collective": ("busbw_gbps", "algbw_gbps", "time_us"),
    "nccl-tests": ("time_us",),
    "job": ("step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu"),
    "checkpoint": ("blocked_s", "durable_s", "write_gbps"),
    "restore": ("blocked_s", "durable_s", "read_gbps"),
    "failures": ("interruptions", "effective_ratio", "mtbf_hours"),
    "power": ("gpu_mean_w", "gpu_peak_w", "cluster_peak_mw", "swing_mw", "energy_per_token_j", "gpu_energy_per_token_j",
              "node_mean_kw", "node_peak_kw"),
}
UNITS = {"busbw_gbps": "GB/s", "algbw_gbps": "GB/s", "time_us": "us", "step_time_s": "s", "tokens_per_s": "tokens/s",
         "tokens_per_s_per_gpu": "tokens/s/GPU", "tflops_per_gpu": "TFLOP/s/GPU", "mfu": "share of peak",
         "blocked_s": "s", "durable_s": "s", "write_gbps": "GB/s", "read_gbps": "GB/s", "interruptions": "count",
         "effective_ratio": "share", "mtbf_hours": "h", "gpu_mean_w": "W", "gpu_peak_w": "W",
         "cluster_peak_mw": "MW", "swing_mw": "MW", "energy_per_token_j": "J",
         "gpu_energy_per_token_j": "J", "node_mean_kw": "kW", "node_peak_kw": "kW"}
# The old engine's stand-in presets by backend kind, first that holds the entry's GPUs (its only GPU: H100 SXM).
STAND_INS = {"infiniband": ("dgx-h100-superpod", "meta-ib-24k"), "roce": ("meta-roce-24k",)}
NOT_EXPRESSIBLE = "hardware not expressible before"


class Refused(Exception):
    """The old engine cannot run this entry (the reason is the message)."""


# --------------------------------------------------------------------------------------------- the old engine
def import_engine(engine: Path):
    """Import the old engine's modules from ``engine`` (first on sys.path); refuse if ``sim`` comes from elsewhere."""
    sys.path.insert(0, str(engine))
    import sim
    if Path(sim.__file__).resolve().parents[1] != engine:
        sys.exit(f"validation_baseline: 'import sim' gave {sim.__file__}, not the engine at {engine}")
    from sim.core import errors
    from sim.fabric import entry as fabric_entry, params as fabric_params, topology, spec
    mods = {"errors": errors, "fabric_entry": fabric_entry, "COLLECTIVE": fabric_params.COLLECTIVE,
            "load_topology": topology.load_topology, "preset_names": spec.preset_names}
    for key, module, attr in (("run_job", "sim.jobs.entry", "run_job"), ("JOB", "sim.jobs.params", "JOB"),
                              ("run_checkpoint", "sim.storage.entry", "run_checkpoint"),
                              ("CHECKPOINT", "sim.storage.params", "CHECKPOINT"),
                              ("run_failures", "sim.failures.entry", "run_failures"),
                              ("FAILURES", "sim.failures.params", "FAILURES"),
                              ("run_power", "sim.power.entry", "run_power"), ("POWER", "sim.power.params", "POWER"),
                              ("read_entry", "sim.calibrate.measurements", "read_entry")):
        try:
            mods[key] = getattr(__import__(module, fromlist=[attr]), attr)
        except (ImportError, AttributeError):
            mods[key] = None                             # that capability did not exist then: its entries refused
    return mods


class OldEngine:
    """The old engine's entry points, its presets and a cache of the topologies built."""

    def __init__(self, engine: Path, preset_dirs: list[Path]):
        self.m = import_engine(engine)
        self.presets = set(self.m["preset_names"]())
        self.preset_dirs = preset_dirs
        self._topos: dict = {}

    # ---- clusters
    def topology(self, preset: str | None = None, spec: Path | None = None):
        key = (preset, str(spec) if spec else None)
        if key not in self._topos:
            try:
                self._topos[key] = self.m["load_topology"](preset, str(spec) if spec else None)[1]
            except Exception as e:                      # noqa: BLE001 - the reason is what is reported
                self._topos[key] = e
        got = self._topos[key]
        if isinstance(got, Exception):
            raise Refused(f"cannot load {'spec ' + str(spec) if spec else 'preset ' + str(preset)}: {_reason(got)}")
        return got

    def new_preset_file(self, name: str) -> Path | None:
        for d in self.preset_dirs:
            p = d / f"{name}.toml"
            if p.is_file():
                return p
        return None

    def candidates(self, name: str, gpus_needed: int):
        """The topologies an entry of preset ``name`` may run on, in order, each with how it was chosen (``ran_on``,
        ``expressible``, ``gpu``, ``how``): the old preset itself, or the new preset's file loaded by the old engine
        (one candidate: a user ran it there); else the stand-ins of its backend kind that hold its GPUs (the next
        is tried when the old engine refuses the run on one, e.g. a stand-in without the storage the run needs)."""
        if not isinstance(name, str) or not name:
            raise Refused("entry names no cluster preset")
        if name in self.presets:
            topo = self.topology(preset=name)
            yield topo, {"ran_on": name, "expressible": True, "gpu": _gpu_of(topo), "how": "old preset"}
            return
        path = self.new_preset_file(name)
        spec = _read_toml(path) if path else {}
        gpu = (spec.get("layout") or {}).get("gpu") or _guess_gpu(name)
        kind = (spec.get("backend") or {}).get("kind") or _guess_kind(name)
        load_error = "its preset file was not found (give --presets DIR)"
        if path is not None:
            try:
                topo = self.topology(spec=path)
            except Refused as e:
                load_error = str(e)
            else:
                yield topo, {"ran_on": f"{name} (new preset file, loaded by the old engine)", "expressible": True,
                             "gpu": gpu, "how": "new preset file"}
                return
        kind = "infiniband" if str(kind).lower() in ("infiniband", "ib") else "roce"
        held = False
        for stand_in in STAND_INS[kind]:
            if stand_in not in self.presets:
                continue
            topo = self.topology(preset=stand_in)
            if int(topo.gpu_usable.sum()) >= gpus_needed:
                held = True
                yield topo, {"ran_on": stand_in, "expressible": False, "gpu": gpu,
                             "how": f"{NOT_EXPRESSIBLE}: {name} ({gpu}, {kind}) run on the old {stand_in} "
                                    f"(H100); {load_error}"}
        if not held:
            raise Refused(f"{NOT_EXPRESSIBLE}, and no old {kind} preset holds {gpus_needed:,} GPUs")

    # ---- parameters
    def old_values(self, params_set, params: dict, where: str) -> tuple[dict, list[str]]:
        """``params`` validated by the old ``params_set``, with what it does not know dropped (names, and choice
        values it lacks): ``(values, dropped)``; Refused with the reason for anything else it refuses."""
        kept, dropped = {}, []
        for k, v in params.items():
            p = params_set.by_name.get(k)
            if p is None:
                dropped.append(f"{k}={v}")
                continue
            if p.type == "choice":
                try:
                    p.parse(v)
                except self.m["errors"].ParamError:
                    dropped.append(f"{k}={v}")
                    continue
            kept[k] = v
        return self.validate(params_set, kept, where), dropped

    def validate(self, params_set, values: dict, where: str) -> dict:
        try:
            return params_set.validate(values)
        except self.m["errors"].ParamError as e:
            raise Refused(f"old {params_set.name} parameters refused: {_reason(e)}") from None

    # ---- runs: kind -> {quantity: predicted}
    def predict(self, kind: str, item: dict, params: dict, topo) -> tuple[dict, list[str]]:
        if kind == "collective":
            values, dropped = self.old_values(self.m["COLLECTIVE"], {"hottest": 0, **params}, "params")
            run = self._call(self.m["fabric_entry"].run_collective, topo, values)
            rows = run.seeded.median.result.rows
            row = rows[0]
            return {"busbw_gbps": row.busbw / 1e9, "algbw_gbps": row.algbw / 1e9, "time_us": row.time * 1e6}, dropped
        if kind == "nccl-tests":
            return self._nccl(item, params, topo)
        if kind == "job":
            _need(self.m, "run_job", "JOB")
            values, dropped = self.old_values(self.m["JOB"], {"hottest": 0, **params}, "params")
            r = self._call(self.m["run_job"], topo, values).result
            return {"step_time_s": r.step_time, "tokens_per_s": r.tokens_per_s,
                    "tokens_per_s_per_gpu": r.tokens_per_s / r.gpus.size, "tflops_per_gpu": r.tflops_per_gpu,
                    "mfu": r.mfu}, dropped
        if kind in ("checkpoint", "restore"):
            _need(self.m, "run_checkpoint", "CHECKPOINT")
            values, dropped = self.old_values(self.m["CHECKPOINT"], {**params, "restore": kind == "restore"},
                                              "params")
            r = self._call(self.m["run_checkpoint"], topo, values).result
            rate = r.bytes / r.durable_seconds / 1e9 if r.durable_seconds > 0 else math.inf
            return {"blocked_s": r.blocked_seconds, "durable_s": r.durable_seconds, "write_gbps": rate,
                    "read_gbps": rate}, dropped
        if kind == "failures":
            _need(self.m, "run_failures", "FAILURES")
            values, dropped = self.old_values(self.m["FAILURES"], params, "params")
            s = self._call(self.m["run_failures"], topo, values).doc["summary"]
            per_day = s["interruptions_per_day"]["mean"]
            return {"interruptions": per_day * values["days"], "effective_ratio": s["effective_ratio"]["mean"],
                    "mtbf_hours": 24.0 / per_day if per_day > 0 else math.inf}, dropped
        if kind == "power":
            _need(self.m, "run_power", "POWER")
            values, dropped = self.old_values(self.m["POWER"], params, "params")
            r = self._call(self.m["run_power"], topo, values).result
            case = r.case
            sp, draw = case.draw.sp, case.draw
            figures = case.figures(int(case.job.params["batch_tokens"]))
            n = float(draw.stage_n.sum())
            hosts = r.to_dict().get("hosts", {})
            return {"gpu_mean_w": float(draw.stage_n @ sp.energy) / (n * sp.step_s),
                    "gpu_peak_w": float(sp.watts[draw.stage_n > 0].max()),
                    "cluster_peak_mw": figures["cluster_peak_mw"], "swing_mw": figures["cluster_swing_mw"],
                    "energy_per_token_j": figures["energy_per_token_j"],
                    "gpu_energy_per_token_j": figures.get("gpu_energy_per_token_j", math.nan),
                    "node_mean_kw": hosts.get("mean_kw", math.nan),
                    "node_peak_kw": hosts.get("peak_kw", math.nan)}, dropped
        raise Refused(f"kind {kind!r} has no entry point in the old engine")

    def _nccl(self, item: dict, params: dict, topo) -> tuple[dict, list[str]]:
        """An nccl-tests entry through the old measurements parser (its log's rows), then one collective run."""
        _need(self.m, "read_entry")
        kept, dropped = {}, []
        for k, v in params.items():
            p = self.m["COLLECTIVE"].by_name.get(k)
            ok = p is not None
            if ok and p.type == "choice":
                try:
                    p.parse(v)
                except self.m["errors"].ParamError:
                    ok = False
            if ok:
                kept[k] = v
            else:
                dropped.append(f"{k}={v}")
        old_item = {k: v for k, v in item.items() if k in ("kind", "name", "log", "hosts", "gpu_list", "column")}
        old_item["params"] = kept
        try:
            e = self.m["read_entry"](old_item, 0)
        except self.m["errors"].ParamError as err:
            raise Refused(f"old nccl-tests entry refused: {_reason(err)}") from None
        values = dict(e.values)
        source = "hosts" if values.get("hosts") else "gpu_list"
        run = self._call(lambda t, v: self.m["fabric_entry"].run_collective(t, v, source=source), topo, values)
        times = {r.size: r.time for r in run.seeded.median.result.rows}
        return {f"time_us {o.size}": (o.measured * 1e6, times[o.size] * 1e6) for o in e.observations}, dropped

    def _call(self, fn, topo, values):
        try:
            return fn(topo, values)
        except (self.m["errors"].ParamError, self.m["errors"].UsageError, ValueError) as e:
            raise Refused(f"old engine refused the run: {_reason(e)}") from None
        except Exception as e:                           # noqa: BLE001 - an old engine's failure is a finding
            raise Refused(f"old engine failed: {type(e).__name__}: {_reason(e)}") from None


def _gpu_of(topo) -> str:
    try:
        return str(topo.layout.spec.layout.gpu)
    except AttributeError:
        return "unknown"


def _need(m: dict, *keys: str) -> None:
    missing = [k for k in keys if m.get(k) is None]
    if missing:
        raise Refused(f"the old engine has no {', '.join(missing)}")


def _reason(e: Exception) -> str:
    errs = getattr(e, "errors", None)
    if isinstance(errs, dict) and errs:
        return "; ".join(f"{k}: {' '.join(map(str, v)) if isinstance(v, (list, tuple)) else v}"
                         for k, v in errs.items())[:400]
    return (str(e) or type(e).__name__)[:400]


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def _guess_gpu(name: str) -> str:
    n = name.lower()
    for key, slug in (("a100", "a100"), ("p4d", "a100"), ("p4de", "a100"), ("h200", "h200"), ("h800", "h800"),
                      ("h100", "h100"), ("p5", "h100")):
        if key in n:
            return slug
    return "unknown"


def _guess_kind(name: str) -> str:
    n = name.lower()
    return "roce" if any(k in n for k in ("roce", "aws", "efa", "p4d", "p5", "ethernet")) else "infiniband"


# ------------------------------------------------------------------------------------------------ the corpus
def read_corpus(corpus: Path, kinds: set[str] | None):
    """``(source id, source table, entry index, entry table)`` of every corpus file, file names sorted."""
    out = []
    for path in sorted(corpus.glob("*.toml")):
        try:
            doc = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            out.append((path.stem, {}, -1, {"_error": f"{path.name}: not readable TOML: {e}"}))
            continue
        source = doc.get("source") if isinstance(doc.get("source"), dict) else {}
        sid = str(source.get("id") or path.stem)
        for i, item in enumerate(doc.get("entry") or []):
            if not isinstance(item, dict):
                out.append((sid, source, i, {"_error": f"{path.name} entry[{i}]: not a table"}))
            elif kinds is None or item.get("kind") in kinds:
                out.append((sid, source, i, item))
    return out


def gpus_needed(kind: str, params: dict) -> int:
    """GPUs an entry asks for (the stand-in preset must hold them)."""
    g = params.get("gpus")
    if isinstance(g, int) and not isinstance(g, bool):
        return g
    if kind == "job":
        prod = 1
        for k in ("tp", "cp", "pp", "dp"):
            v = params.get(k, 8 if k == "tp" else 1)
            prod *= v if isinstance(v, int) and not isinstance(v, bool) else 1
        return prod
    return 0


def run_all(engine: OldEngine, corpus: Path, kinds: set[str] | None, say) -> dict:
    observations, refused = [], []
    items = read_corpus(corpus, kinds)
    for k, (sid, source, i, item) in enumerate(items):
        if "_error" in item:
            refused.append({"id": f"{sid}/entry[{i}]", "kind": None, "reason": item["_error"], "observations": 0})
            continue
        kind = item.get("kind")
        name = str(item.get("name") or f"entry[{i}]")
        eid = f"{sid}/{name}"
        params = item.get("params") if isinstance(item.get("params"), dict) else {}
        measured = {q: item[q] for q in QUANTITIES.get(kind, ()) if q in item and kind != "nccl-tests"}
        n_obs = len(measured) if kind != "nccl-tests" else 1
        t = time.perf_counter()
        try:
            if kind not in QUANTITIES:
                raise Refused(f"unknown kind {kind!r}")
            if kind != "nccl-tests" and not measured:
                raise Refused(f"no measured quantity ({', '.join(QUANTITIES[kind])})")
            first = None
            for topo, how in engine.candidates(item.get("cluster"), gpus_needed(kind, params)):
                try:
                    predicted, dropped = engine.predict(kind, item, params, topo)
                    break
                except Refused as e:
                    first = first or e
                except Exception as e:                   # noqa: BLE001 - e.g. a value of a type the old parser chokes on
                    first = first or Refused(f"old engine failed: {type(e).__name__}: {_reason(e)}")
            else:
                raise first or Refused("no cluster to run on")
        except Refused as e:
            refused.append({"id": eid, "kind": kind, "cluster": item.get("cluster"), "reason": str(e),
                            "observations": n_obs})
            say(f"[{k + 1}/{len(items)}] {eid}: REFUSED {e}")
            continue
        if kind == "nccl-tests":                         # label -> (measured, predicted), one per log row
            pairs = [(label, "time_us", m, v) for label, (m, v) in predicted.items()]
        else:
            pairs = [(q, q, float(measured[q]), predicted[q]) for q in measured]
        for label, q, meas, pred in pairs:
            if meas is None or not isinstance(meas, (int, float)) or meas <= 0:
                continue
            pred = float(pred)
            err = pred / float(meas) - 1.0 if math.isfinite(pred) else math.inf
            observations.append({
                "id": eid if len(pairs) == 1 else f"{eid}:{label}", "source": sid, "kind": kind, "quantity": q,
                "unit": UNITS[q], "measured": float(meas), "predicted": pred, "error": err,
                "cluster": item.get("cluster"), "ran_on": how["ran_on"], "gpu": how["gpu"],
                "expressible": how["expressible"], "how": how["how"], "dropped": dropped,
                "url": source.get("url"), "where": item.get("where")})
        say(f"[{k + 1}/{len(items)}] {eid}: {time.perf_counter() - t:.2f} s")
    return {"observations": observations, "refused": refused}


# ---------------------------------------------------------------------------------------------------- summary
def summarize(errors) -> dict:
    import numpy as np
    e = np.abs(np.asarray(list(errors), dtype=float))
    if e.size == 0:
        return {"count": 0, "median": None, "p90": None, "max": None}
    return {"count": int(e.size), "median": float(np.median(e)), "p90": float(np.percentile(e, 90)),
            "max": float(e.max())}


def summary_of(rows: list[dict]) -> dict:
    kinds: dict = {}
    for r in rows:
        kinds.setdefault(r["kind"], []).append(r["error"])
    return {"overall": summarize(r["error"] for r in rows), "kinds": {k: summarize(v) for k, v in kinds.items()}}


def report(result: dict, meta: dict) -> dict:
    obs = result["observations"]
    expressible = [o for o in obs if o["expressible"]]
    by_kind_refused: dict = {}
    for r in result["refused"]:
        by_kind_refused[r["kind"]] = by_kind_refused.get(r["kind"], 0) + r["observations"]
    return {**meta,
            "all": summary_of(obs),
            "expressible_before": summary_of(expressible),
            "counts": {"observations": len(obs), "expressible_before": len(expressible),
                       "not_expressible_before": len(obs) - len(expressible),
                       "run_with_old_defaults": sum(1 for o in obs if o["dropped"]),
                       "refused_entries": len(result["refused"]),
                       "refused_observations": sum(r["observations"] for r in result["refused"]),
                       "refused_observations_by_kind": by_kind_refused},
            "observations": obs, "refused": result["refused"]}


def _pct(x) -> str:
    return "-" if x is None else ("inf" if not math.isfinite(x) else f"{100 * x:.1f} %")


def _num(x: float) -> str:
    return f"{x:.4g}" if math.isfinite(x) else "inf"


def print_text(doc: dict) -> None:
    print(f"# corpus {doc['corpus']} predicted by the OLD engine at {doc['engine']} ({doc['engine_commit']})")
    print("# flags: X = hardware not expressible before (run on a stand-in H100 preset); "
          "D = parameters dropped (old defaults)")
    w = max([len(o["id"]) for o in doc["observations"]] + [10])
    print(f"{'id':<{w}}  {'quantity':<20} {'measured':>10} {'predicted':>10} {'error':>9}  flags  ran on")
    for o in doc["observations"]:
        flags = ("X" if not o["expressible"] else "") + ("D" if o["dropped"] else "")
        print(f"{o['id']:<{w}}  {o['quantity']:<20} {_num(o['measured']):>10} {_num(o['predicted']):>10} "
              f"{_pct(o['error']) if o['error'] < 0 else '+' + _pct(o['error']):>9}  {flags:<5}  {o['ran_on']}"
              + (f"  [dropped: {', '.join(o['dropped'])}]" if o["dropped"] else ""))
    if doc["refused"]:
        print(f"\n# refused by the old engine ({len(doc['refused'])} entries, "
              f"{doc['counts']['refused_observations']} observations, left out of the summary):")
        for r in doc["refused"]:
            print(f"  {r['id']} ({r['kind']}, {r.get('cluster')}): {r['reason']}")
    for title, key in (("all entries", "all"), ("only entries expressible before", "expressible_before")):
        s = doc[key]
        print(f"\n# summary, {title}: |predicted / measured - 1|")
        print(f"  {'kind':<12} {'count':>6} {'median':>9} {'p90':>9} {'max':>9}")
        for kind, v in list(s["kinds"].items()) + [("overall", s["overall"])]:
            print(f"  {kind:<12} {v['count']:>6} {_pct(v['median']):>9} {_pct(v['p90']):>9} {_pct(v['max']):>9}")
    c = doc["counts"]
    print(f"\n# {c['observations']} observations ({c['expressible_before']} expressible before, "
          f"{c['not_expressible_before']} not), {c['run_with_old_defaults']} run with old defaults for parameters "
          f"the old engine lacks; {c['refused_entries']} entries ({c['refused_observations']} observations) refused")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--engine", required=True, type=Path, help="a checkout of the old engine (its sim/ is imported)")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help=f"corpus folder (default {DEFAULT_CORPUS})")
    ap.add_argument("--presets", type=Path, action="append", default=[],
                    help="more folders to look for newer presets' files in (after the corpus checkout's and this "
                         "checkout's sim/presets)")
    ap.add_argument("--kind", action="append", default=None, help="only entries of this kind (repeatable)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    args = ap.parse_args(argv)
    engine_dir, corpus = args.engine.resolve(), args.corpus.resolve()
    if not (engine_dir / "sim" / "__init__.py").is_file():
        print(f"validation_baseline: --engine {engine_dir}: has no sim/ package", file=sys.stderr)
        return 2
    if not corpus.is_dir():
        print(f"validation_baseline: --corpus {corpus}: is not a folder", file=sys.stderr)
        return 2
    dirs = []
    if corpus.parent.name == "validation" and corpus.parent.parent.name == "sim":
        dirs.append(corpus.parents[1] / "presets")
    dirs += [HERE / "sim" / "presets", *[p.resolve() for p in args.presets]]
    t0 = time.perf_counter()
    engine = OldEngine(engine_dir, [d for d in dict.fromkeys(dirs) if d.is_dir()])
    say = (lambda m: None) if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    result = run_all(engine, corpus, set(args.kind) if args.kind else None, say)
    commit = _git_head(engine_dir)
    doc = report(result, {"engine": str(engine_dir), "engine_commit": commit, "corpus": str(corpus),
                          "seconds": round(time.perf_counter() - t0, 1)})
    if args.json:
        print(json.dumps(_finite(doc), indent=1, default=str))
    else:
        print_text(doc)
    return 0


def _finite(x):
    """``x`` with non-finite floats as null (strict JSON)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def _git_head(path: Path) -> str:
    import subprocess
    try:
        return subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
