"""The measurements file (docs/calibration.md): one TOML file of ``[[entry]]`` tables or one JSON document
``{"entry": [...]}`` (or a JSON list of entries), read as data only (``tomllib``/``json``: nothing is evaluated or
imported). Each entry is a run kind, its parameters (validated by that kind's :class:`sim.core.params.ParamSet`) and
what was measured; :func:`read_measurements` turns the file into :class:`Entry` objects, each with its observations
(one quantity and its measured value each; an nccl-tests log gives one per data row). Refused input raises
:class:`sim.core.errors.ParamError` naming ``entry[i].field`` and the reason.

The same parser reads the public validation corpus (``sim/validation/corpus/<source-id>.toml``, CONTRACTS of issue
39): a file may carry a ``[source]`` table (where its figures were published) and each entry its own ``cluster`` (a
preset: the entry runs there instead of the run's cluster), ``where`` (table, figure or comment of the source),
``hardware`` (as the source states it) and ``note``. They are optional in a user's file; :func:`parse_measurements`
with ``require_provenance`` (the corpus) requires them, and with ``origin`` (the file's name) every error names the
file first (``corpus/foo.toml: entry[3].cluster: ...``).
"""
from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from sim.calibrate.nccltests import HALVES, LogError, NcclLog, is_log, parse_log, parse_logs
from sim.core.errors import ParamError, SpecError, UsageError
from sim.core.nesting import check_depth
from sim.core.units import parse_sizes
from sim.fabric.collectives import DTYPES
from sim.fabric.params import COLLECTIVE
from sim.fabric.spec import preset_names
from sim.failures.params import FAILURES
from sim.jobs.params import JOB
from sim.power.params import POWER
from sim.storage.params import CHECKPOINT

MAX_FILE_BYTES = 4 << 20          # a measurements file: at most 4 MiB
MAX_ENTRIES = 1000                # entries one file may hold
MAX_NAME = 100                    # characters of an entry's name

# kind -> its ParamSet, and the quantities an entry of it may give (what each is on the engine's result:
# sim.calibrate.fit.Predictor and docs/calibration.md).
KINDS = {"nccl-tests": COLLECTIVE, "collective": COLLECTIVE, "job": JOB, "checkpoint": CHECKPOINT,
         "restore": CHECKPOINT, "failures": FAILURES, "power": POWER}
MEASURED = {
    "job": ("step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu"),
    "checkpoint": ("blocked_s", "durable_s", "write_gbps"),
    "restore": ("blocked_s", "durable_s", "read_gbps"),
    "failures": ("interruptions", "effective_ratio", "mtbf_hours"),     # over params.days
    "collective": ("busbw_gbps", "algbw_gbps", "time_us"),               # at params.sizes, one size
    "power": ("gpu_mean_w", "gpu_peak_w", "cluster_peak_mw", "swing_mw", "energy_per_token_j",
              "gpu_energy_per_token_j", "node_mean_kw", "node_peak_kw"),           # node: a job's host, GPUs in
    "nccl-tests": ("time",),                                             # from the log: one per data row
}
ONE_OF = ("job", "collective")    # kinds whose quantities are one measurement seen differently: exactly one given
SHARES = ("effective_ratio", "mfu")                                  # shares of a whole: at most 1
ENTRY_KEYS = ("kind", "name", "params", "log", "hosts", "gpu_list", "column")
PROVENANCE = ("cluster", "where", "hardware", "note")               # per entry; all but note required in the corpus
PROVENANCE_REQUIRED = ("cluster", "where", "hardware")
MAX_TEXT = 2000                   # characters of a provenance text (where, hardware, note, a source's fields)
SOURCE_KEYS = ("id", "title", "url", "publisher", "date", "kind")
SOURCE_REQUIRED = ("id", "title", "url", "date")
SOURCE_KINDS = ("github-issue", "paper", "vendor-doc", "blog", "benchmark-table", "repo-readme")


@dataclass
class Observation:
    """One measured quantity of an entry: ``quantity`` (a :data:`MEASURED` name), ``measured`` (seconds, tokens/s,
    TFLOPs, a count or a ratio), ``label`` (what it is, for tables: e.g. ``time 64M``), ``size`` (nccl-tests rows:
    bytes)."""

    quantity: str
    measured: float
    label: str
    size: int | None = None


@dataclass
class Entry:
    """One entry: its index in the file, ``kind``, ``name``, ``values`` (its kind's validated parameters) and its
    observations; ``log``: the parsed nccl-tests log (``column``: the half its times come from)."""

    index: int
    kind: str
    name: str
    values: dict
    observations: list[Observation] = field(default_factory=list)
    log: NcclLog | None = None
    column: str = HALVES[0]
    cluster: str | None = None        # the preset the entry runs on (None: the run's cluster)
    provenance: dict = field(default_factory=dict)   # where, hardware, note (as given)
    source: dict | None = None        # the file's [source] table
    origin: str | None = None         # the file's name, for messages
    raw: bool = False                 # from a raw nccl-tests log (its errors name ``measurements`` and the line)

    @property
    def where(self) -> str:
        return f"entry[{self.index}]"

    @property
    def id(self) -> str:
        """``<source id>/<name>`` for an entry of a file with a source, else its name."""
        return f"{self.source['id']}/{self.name}" if self.source else self.name


@dataclass
class Measurements:
    """A parsed file: its ``source`` table (None when it has none), its entries, its ``origin`` (file name)."""

    entries: list[Entry]
    source: dict | None = None
    origin: str | None = None


def read_file(path: str) -> str:
    """The text of a measurements file; UsageError naming it when missing, too large or not UTF-8."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"measurements file {path}: is not a file")
    if p.stat().st_size > MAX_FILE_BYTES:
        raise UsageError(f"measurements file {path}: must be at most {MAX_FILE_BYTES:,} bytes, it has "
                         f"{p.stat().st_size:,}")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"measurements file {path}: is not UTF-8 text") from None


def read_measurements(text: str, hosts: str | None = None, column: str = HALVES[0]) -> list[Entry]:
    """The entries of a measurements file's ``text`` (TOML or JSON, or raw nccl-tests output: :func:`raw_entries`
    with ``hosts`` and ``column``), each checked; ParamError naming ``measurements`` (the file) or
    ``entry[i].field`` for the first entry refused."""
    return parse_measurements(text, hosts=hosts, column=column).entries


def read_values(values: dict) -> list[Entry]:
    """The entries of the calibration's parameters (:data:`sim.calibrate.params.CALIBRATE`: ``measurements``, and
    ``hosts`` and ``column`` for raw logs)."""
    return read_measurements(values["measurements"], values.get("hosts"), values.get("column") or HALVES[0])


def parse_measurements(text: str, *, require_provenance: bool = False, origin: str | None = None,
                       hosts: str | None = None, column: str = HALVES[0]) -> Measurements:
    """The file's ``[source]`` and entries (:func:`read_measurements`). ``require_provenance`` (the public corpus):
    ``[source]`` with id, title, url and date, and every entry's cluster, where and hardware, are required.
    ``origin``: the file's name, put before every error's field (``corpus/foo.toml: entry[3].cluster``).
    ``hosts``/``column``: what raw nccl-tests output does not say (:func:`raw_entries`); refused with a file of
    entries, which gives them per entry."""
    try:
        return _parse(text, require_provenance, origin, hosts, column)
    except ParamError as e:
        if origin is None:
            raise
        raise ParamError({f"{origin}: {k}": v for k, v in e.errors.items()}) from None


def read_measurements_file(path, *, require_provenance: bool = False, origin: str | None = None) -> Measurements:
    """:func:`parse_measurements` of a file (its text read by :func:`read_file`), errors named by ``origin``
    (default the path as given)."""
    return parse_measurements(read_file(str(path)), require_provenance=require_provenance,
                              origin=str(path) if origin is None else origin)


def _parse(text: str, require_provenance: bool, origin: str | None, hosts: str | None = None,
           column: str = HALVES[0]) -> Measurements:
    if not isinstance(text, str) or not text.strip():
        raise ParamError("measurements", "is empty: give [[entry]] tables (TOML), a JSON list of entries or raw "
                                         "nccl-tests output")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        raise ParamError("measurements", f"must be at most {MAX_FILE_BYTES:,} bytes")
    try:
        data = _decode(text)
    except ParamError:
        if not is_log(text) or require_provenance:
            raise
        return Measurements(raw_entries(text, hosts, column), None, origin)
    if not data and is_log(text) and not require_provenance:        # only comments: a log with no rows
        return Measurements(raw_entries(text, hosts, column), None, origin)
    if hosts is not None:
        raise ParamError("hosts", "is for raw nccl-tests output: a measurements file gives each nccl-tests entry's "
                                  "hosts (or gpu_list) in the entry")
    source = None
    if isinstance(data, dict):
        unknown = sorted(set(data) - {"entry", "source"})
        if unknown:
            raise ParamError("measurements", f"unknown top-level field {str(unknown[0])[:40]!r}: give [[entry]] "
                                             f"tables (and optionally a [source] table)")
        if "source" in data:
            source = _source(data["source"], require_provenance, origin)
        data = data.get("entry")
    if source is None and require_provenance:
        raise ParamError("source", f"is required here: a [source] table with {', '.join(SOURCE_REQUIRED)}")
    if not isinstance(data, list) or not data:
        raise ParamError("measurements", "has no entries: give [[entry]] tables (TOML) or a JSON list of entries")
    if len(data) > MAX_ENTRIES:
        raise ParamError("measurements", f"{len(data):,} entries, at most {MAX_ENTRIES:,}")
    entries, names = [], {}
    for i, item in enumerate(data):
        e = read_entry(item, i, require_provenance)
        if e.name in names:
            raise ParamError(f"{e.where}.name", f"{e.name!r} is already the name of entry[{names[e.name]}]")
        names[e.name] = i
        e.source, e.origin = source, origin
        entries.append(e)
    return Measurements(entries, source, origin)


def _text(value, where: str, *, required: bool = False) -> str | None:
    """A provenance field: text of 1 to MAX_TEXT characters (None when absent and not required)."""
    if value is None:
        if required:
            raise ParamError(where, "is required here (the corpus names where each figure comes from)")
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
        raise ParamError(where, f"must be text of 1 to {MAX_TEXT:,} characters")
    return value.strip()


def _source(table, require: bool, origin: str | None) -> dict:
    """The ``[source]`` table checked: known fields, text; ``date`` YYYY, YYYY-MM or YYYY-MM-DD; ``kind`` one of
    :data:`SOURCE_KINDS`; with ``require``, id/title/url/date present and ``id`` the file's name."""
    if not isinstance(table, dict):
        raise ParamError("source", f"must be a table ({', '.join(SOURCE_KEYS)})")
    for key in table:
        if key not in SOURCE_KEYS:
            raise ParamError(f"source.{str(key)[:40]}", f"unknown field (fields: {', '.join(SOURCE_KEYS)})")
    out = {}
    for key in SOURCE_KEYS:
        v = table.get(key)
        if hasattr(v, "isoformat"):               # TOML reads an unquoted date as a date
            v = v.isoformat()
        out[key] = _text(v, f"source.{key}", required=require and key in SOURCE_REQUIRED)
    d = out["date"]
    if d is not None and not _is_date(d):
        raise ParamError("source.date", f"must be YYYY, YYYY-MM or YYYY-MM-DD, got {d[:40]!r}")
    if out["kind"] is not None and out["kind"] not in SOURCE_KINDS:
        raise ParamError("source.kind", f"unknown kind {out['kind'][:40]!r}: choose one of {', '.join(SOURCE_KINDS)}")
    if out["url"] is not None and not out["url"].startswith(("https://", "http://")):
        raise ParamError("source.url", "must be an http(s) address (a paper's DOI or arXiv page, an issue...)")
    if require and origin is not None and out["id"] != Path(origin).stem:
        raise ParamError("source.id", f"{out['id'][:60]!r} must equal the file's name without .toml "
                                      f"({Path(origin).stem!r})")
    return out


def _is_date(text: str) -> bool:
    m = re.fullmatch(r"(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?", text)
    return bool(m) and (m.group(2) is None or 1 <= int(m.group(2)) <= 12) and (
        m.group(3) is None or 1 <= int(m.group(3)) <= 31)


def _decode(text: str):
    try:
        data = json.loads(text)
    except ValueError as json_error:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ParamError("measurements", f"neither JSON ({json_error}) nor TOML ({e})") from None
    except RecursionError:
        raise ParamError("measurements", "is nested too deeply to read") from None
    try:
        check_depth(data if isinstance(data, dict) else {"entry": data})
    except SpecError as e:
        raise ParamError("measurements", f"{e.reason} (field {e.field})") from None
    return data


def read_entry(item, i: int, require_provenance: bool = False) -> Entry:
    """Entry ``i`` of the file, checked (kind, name, provenance, parameters, measured values, the log)."""
    where = f"entry[{i}]"
    if not isinstance(item, dict):
        raise ParamError(where, "must be a table (object) with kind, params and what was measured")
    kind = item.get("kind")
    if kind not in KINDS:
        raise ParamError(f"{where}.kind", f"unknown kind {str(kind)[:40]!r}: choose one of {', '.join(KINDS)}")
    allowed = set(ENTRY_KEYS) | set(PROVENANCE) | set(MEASURED[kind]) - ({"time"} if kind == "nccl-tests" else set())
    if kind != "nccl-tests":
        allowed -= {"log", "hosts", "gpu_list", "column"}
    for key in item:
        if key not in allowed:
            raise ParamError(f"{where}.{str(key)[:40]}", f"unknown field of a {kind} entry (fields: "
                                                         f"{', '.join(sorted(allowed))})")
    name = item.get("name", f"{kind}-{i}")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        raise ParamError(f"{where}.name", f"must be text of 1 to {MAX_NAME} characters")
    cluster = _text(item.get("cluster"), f"{where}.cluster", required=require_provenance)
    if cluster is not None and cluster not in preset_names():
        raise ParamError(f"{where}.cluster", f"{cluster[:60]!r} is not a preset (presets: "
                                             f"{', '.join(preset_names())})")
    provenance = {k: _text(item.get(k), f"{where}.{k}", required=require_provenance and k in PROVENANCE_REQUIRED)
                  for k in PROVENANCE if k != "cluster"}
    params = item.get("params", {})
    if not isinstance(params, dict):
        raise ParamError(f"{where}.params", f"must be a table (object) of the {kind} kind's parameters")
    if kind == "nccl-tests":
        e = _nccl_entry(item, i, name, dict(params))
    else:
        e = _entry(item, i, kind, name, params)
    e.cluster, e.provenance = cluster, provenance
    return e


def _entry(item: dict, i: int, kind: str, name: str, params: dict) -> Entry:
    where = f"entry[{i}]"
    if kind in ("checkpoint", "restore"):
        if "restore" in params:
            raise ParamError(f"{where}.params.restore", f"is set by the kind ({kind}): leave it out")
        params = {**params, "restore": kind == "restore"}
    if kind in ("job", "collective"):
        params = {**params}
        params.setdefault("hottest", 0)
    values = _validate(KINDS[kind], params, where)
    size = None
    if kind == "collective":
        if values.get("hosts") or values.get("gpu_list"):
            raise ParamError(f"{where}.params.{'hosts' if values.get('hosts') else 'gpu_list'}",
                             "a collective entry is placed by params.placement on its cluster: leave the list out "
                             "(an nccl-tests entry takes one)")
        sizes = parse_sizes(values["sizes"])
        if len(sizes) != 1:
            raise ParamError(f"{where}.params.sizes", f"give exactly one size per collective entry, got "
                                                      f"{len(sizes)}")
        size = sizes[0]
    observations = []
    for q in MEASURED[kind]:
        if q in item:
            v = _measured(item[q], f"{where}.{q}")
            if q in SHARES and v > 1:
                raise ParamError(f"{where}.{q}", f"must be at most 1 (a share), got {v:g}")
            label = q if size is None else f"{q} {_size_text(size)}"
            observations.append(Observation(q, v, label, size))
    if not observations:
        raise ParamError(f"{where}.{MEASURED[kind][0]}", f"give what was measured: "
                                                         f"{' or '.join(MEASURED[kind])}")
    if kind in ONE_OF and len(observations) > 1:
        raise ParamError(f"{where}.{observations[1].quantity}", f"give one of {', '.join(MEASURED[kind])} (they "
                                                                f"are one measurement)")
    return Entry(i, kind, name, values, observations)


def _validate(params_set, params: dict, where: str) -> dict:
    try:
        return params_set.validate(params)
    except ParamError as e:
        raise ParamError({f"{where}.params.{k}": v for k, v in e.errors.items()}) from None


def _measured(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParamError(where, f"must be a number, got {str(value)[:40]!r}")
    v = float(value)
    if not v == v or v in (float("inf"), float("-inf")):
        raise ParamError(where, "must be a finite number")
    if v <= 0:
        raise ParamError(where, f"must be above 0, got {v:g}")
    return v


def raw_entries(text: str, hosts: str | None = None, column: str = HALVES[0]) -> list[Entry]:
    """One ``nccl-tests`` entry per log of raw nccl-tests output ``text`` (one or several logs as the binaries
    print them, :func:`sim.calibrate.nccltests.parse_logs`): its collective, type, sizes and ranks from the log,
    its times from ``column``; what the log does not say is asked for by name: ``hosts`` (the cluster's hosts it
    ran on, as mpirun takes them; given, every log runs on them, else each is placed by the collective's default
    placement), which a log without Rank lines, ``nThread x nGpus`` above 1 or a pasted ``mpirun -np N`` line
    needs. Errors name ``measurements`` and the line (``line 40: ...``), or ``hosts``."""
    if column not in HALVES:
        raise ParamError("column", f"must be one of {', '.join(HALVES)}")
    try:
        logs = parse_logs(text)
    except LogError as e:
        raise ParamError("measurements", str(e)) from None
    entries = []
    for k, log in enumerate(logs):
        if not log.n_ranks and hosts is None:
            raise ParamError("hosts", f"the log from line {log.first} does not say how many ranks ran (no Rank "
                                      f"lines, nThread {log.n_threads or 1} x nGpus {log.n_gpus or 1}, no mpirun "
                                      f"-np line): give the cluster's hosts it ran on")
        if log.collective is None:
            raise ParamError("measurements", f"line {log.first}: the log from this line does not name its binary: "
                                             f"paste it with the command line that ran it (e.g. ./build/"
                                             f"all_gather_perf -b 8M -e 1G -f 2 -g 8) or its '# Collective test "
                                             f"starting' line")
        item = {"kind": "nccl-tests", "column": column, **({"hosts": hosts} if hosts is not None else {})}
        name = f"{log.binary} line {log.first}"
        try:
            e = _nccl_entry(item, k, name, {}, log)
        except ParamError as err:
            out = {}
            for key, messages in err.errors.items():
                what = key.split(".", 1)[1] if "." in key else key
                field_name = "hosts" if what == "hosts" else "measurements"
                out.setdefault(field_name, []).extend(
                    f"the log from line {log.first}: {'' if what in ('log', 'hosts') else what + ': '}{m}"
                    for m in messages)
            raise ParamError(out) from None
        e.raw = True
        entries.append(e)
    return entries


def _nccl_entry(item: dict, i: int, name: str, params: dict, log: NcclLog | None = None) -> Entry:
    where = f"entry[{i}]"
    if log is None:
        if "log" not in item:
            raise ParamError(f"{where}.log", "give the output exactly as nccl-tests prints it")
        try:
            log = parse_log(item["log"])
        except LogError as e:
            raise ParamError(f"{where}.log", str(e)) from None
    column = item.get("column", HALVES[0])
    if column not in HALVES:
        raise ParamError(f"{where}.column", f"must be one of {', '.join(HALVES)}")
    for key in ("sizes", "hosts", "gpu_list", "type"):
        if key in params:
            raise ParamError(f"{where}.params.{key}", "comes from the log and the entry's hosts or gpu_list: "
                                                      "leave it out of params")
    given = params.get("collective")
    if log.collective is None and given is None:
        raise ParamError(f"{where}.params.collective", "the log does not name its binary (e.g. all_reduce_perf): "
                                                       "give the collective")
    if given is not None and log.collective is not None:
        try:
            same = COLLECTIVE.by_name["collective"].parse(given) == log.collective
        except ParamError as e:
            raise ParamError(f"{where}.params.collective", " ".join(e.errors["collective"])) from None
        if not same:
            raise ParamError(f"{where}.params.collective", f"{given!r} but the log is {log.collective}'s")
    params.setdefault("collective", log.collective)
    types = {r.type for r in log.rows}
    if len(types) != 1 or next(iter(types)) not in DTYPES:
        raise ParamError(f"{where}.log", f"type {sorted(types)[0]!r}: the twin models {', '.join(DTYPES)}, one per "
                                         f"log")
    params["type"] = next(iter(types))
    roots = {r.root for r in log.rows if r.root is not None and r.root >= 0}
    if len(roots) == 1 and "root" not in params:
        params["root"] = roots.pop()
    params["sizes"] = ",".join(str(s) for s in dict.fromkeys(r.size for r in log.rows))
    listed = [k for k in ("hosts", "gpu_list") if item.get(k) is not None]
    if len(listed) > 1:
        raise ParamError(f"{where}.gpu_list", "give hosts or gpu_list, not both")
    if listed:
        text = item[listed[0]]
        if not isinstance(text, str) or not text.strip():
            raise ParamError(f"{where}.{listed[0]}", "must be the list's text (one host or GPU per line)")
        params[listed[0]] = text
    elif "gpus" not in params:
        ranks = log.n_ranks
        if ranks < 2:
            raise ParamError(f"{where}.gpu_list", "the log lists fewer than 2 ranks: give the hosts or gpu_list it "
                                                  "ran on (or params.gpus)")
        params["gpus"] = ranks
    params.setdefault("hottest", 0)
    values = _validate(COLLECTIVE, params, where)
    observations = [Observation("time", r.time[column], f"time {_size_text(r.size)}", r.size) for r in log.rows]
    return Entry(i, "nccl-tests", name, values, observations, log, column)


def check_gpu(e: Entry, slug: str | None, cluster: str, gpu_name: str | None = None) -> None:
    """An nccl-tests entry whose log names its GPU (the Rank lines' device name) must have run on the GPU of the
    cluster it is predicted on (``slug``, the catalog's: ``topo.gpu_model``, or the inventory spec's
    ``layout.gpu``); ParamError naming ``measurements`` and the Rank line (raw logs) or ``entry[i].log``."""
    if e.log is None or e.log.gpu is None or slug is None or slug in e.log.gpu_slugs:
        return
    ran = (f"{e.log.gpu!r} ({', '.join(e.log.gpu_slugs)} in the catalog)" if e.log.gpu_slugs else
           f"{e.log.gpu!r} (no GPU of the catalog, sim/presets/catalog.toml)")
    raise ParamError("measurements" if e.raw else f"{e.where}.log",
                     f"line {e.log.gpu_line}: the log ran on {ran} but {cluster}'s GPUs are {slug}"
                     f"{f' ({gpu_name})' if gpu_name else ''}: give a log of that GPU, or calibrate a cluster of "
                     f"its GPU")


def _size_text(n: int) -> str:
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"
