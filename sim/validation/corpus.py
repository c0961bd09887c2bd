"""The public validation corpus: ``sim/validation/corpus/<source-id>.toml``, one file per public source.

Each file is a calibration measurements file (docs/calibration.md: one parser, one schema) whose provenance is
required: the ``[source]`` table (id, title, url, date) and, per entry, the preset it runs on (``cluster``), where
in the source the figure is (``where``) and the hardware as the source states it (``hardware``). Files are read as
data only (``tomllib``, through :func:`sim.calibrate.measurements.read_measurements`); a malformed one is refused
naming its file and field. ``excused.toml`` beside the files lists the observations allowed beyond the per-
observation threshold, each with the mechanism the model leaves out.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from sim.calibrate.measurements import read_measurements_file
from sim.core.errors import ParamError, UsageError

CORPUS_DIR = Path(__file__).parent / "corpus"
EXCUSED_FILE = "excused.toml"


@dataclass
class Corpus:
    """The sources (id -> the ``[source]`` table), the entries (each with its ``source`` table and ``id``,
    ``<source id>/<name>``) and the excused observations (observation id -> the missing mechanism)."""

    directory: Path
    sources: dict = field(default_factory=dict)
    entries: list = field(default_factory=list)
    excused: dict = field(default_factory=dict)

    def kinds(self) -> list[str]:
        return list(dict.fromkeys(e.kind for e in self.entries))


def load_corpus(directory: Path | str | None = None, kinds: list[str] | None = None) -> Corpus:
    """Every ``*.toml`` of ``directory`` (default :data:`CORPUS_DIR`) but ``excused.toml``, in name order, its
    entries kept where ``kinds`` is None or holds their kind. UsageError for a missing or empty directory, a
    ParamError naming ``<file>: entry[i].field`` for a malformed entry."""
    directory = Path(directory) if directory is not None else CORPUS_DIR
    if not directory.is_dir():
        raise UsageError(f"corpus: {directory} is not a directory")
    files = sorted(p for p in directory.glob("*.toml") if p.name != EXCUSED_FILE)
    if not files:
        raise UsageError(f"corpus: {directory} holds no *.toml file")
    corpus = Corpus(directory)
    for path in files:
        source, entries = read_source_file(path)
        if source["id"] in corpus.sources:
            raise ParamError(f"corpus/{path.name}: source.id", f"{source['id']!r} is also the id of another file's source")
        corpus.sources[source["id"]] = source
        for e in entries:
            if kinds is None or e.kind in kinds:
                corpus.entries.append(e)
    corpus.excused = read_excused(directory / EXCUSED_FILE)
    return corpus


def read_source_file(path: Path) -> tuple[dict, list]:
    """One corpus file: its ``[source]`` table and its entries, provenance required; errors name the file."""
    measurements = read_measurements_file(path, require_provenance=True, origin=f"corpus/{path.name}")
    source = measurements.source
    if source["id"] != path.stem:
        raise ParamError(f"corpus/{path.name}: source.id", f"{source['id']!r} must equal the file's name without .toml "
                                                    f"({path.stem!r})")
    return source, measurements.entries


def read_excused(path: Path) -> dict[str, str]:
    """``excused.toml``: ``[[excused]]`` tables of ``id`` (``<source>/<entry name>``) and ``mechanism`` (what the
    model leaves out that makes it miss); ``{}`` when the file is absent."""
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ParamError(path.name, f"is not TOML: {e}") from None
    out = {}
    for i, row in enumerate(data.get("excused", [])):
        for key in ("id", "mechanism"):
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise ParamError(f"{path.name}: excused[{i}].{key}", "is required: a non-empty string")
        out[row["id"]] = row["mechanism"]
    return out
