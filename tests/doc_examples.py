"""The examples of README.md and docs/*.md, read from the Markdown as written (issue 40, item 1: a documented path is
a tested path). tests/test_doc_examples.py runs them; a new example is tested without anyone listing it.

Every fenced block says what it is by its info string (the words after the opening fence), and the harness does
what that says:

=============  =====================================================================================================
``sh``          commands, one per line (``\\`` continues a line, ``#`` starts a comment). Every command is checked
                by its own program's parser (``python -m sim``, ``manage.py``, a ``bench/`` script, ``scripts/``,
                ``curl``, ``tar``...) on every run of the suite; the block runs whole, as written, in a scratch
                folder with the test services, under ``-m slow`` (CI's "documented examples" step).
``sh twin``     commands against a running twin (``curl`` to :data:`DOCS_TWIN_URL`, ``$TOKEN``): run, as written, against
                the end-to-end tests' twin (tests/e2e/test_doc_examples_twin.py), its address and a token put in.
``sh long``     like ``sh``, but minutes to an hour long (a 600k-GPU preset, the validation's cross-validated
                check, full-size figures): checked by the parsers on every run, run whole under ``-m long``.
``sh setup``    deployment steps that need a machine of their own (Docker, a remote Redis, a database server
                to create); every command is checked by its parser, ``docker compose`` by ``docker-compose config``.
``toml KIND``   a file of KIND (:data:`TOML_KINDS`: a calibration measurements file, a jobs file, a fragment of a
                cluster spec): read by the same parser the product uses, which must take it.
``json``        parsed as JSON (a message as the twin sends it).
``python``      run in a fresh interpreter with Django set up (an example of the Python API).
``text``        output, a usage line or a schema as shown: not run (the commands that make it are ``sh`` blocks).
=============  =====================================================================================================

A block without an info string is refused by the tests: each block must say which of these it is.

A block runs in a scratch folder that looks like the checkout (its entries linked), holding the files the examples
name (:data:`FILES`: ``jobs.toml`` is the jobs file of docs/jobs.md, ``measurements.toml`` the measurements of
docs/calibration.md, ``my-cluster.toml`` a spec); ``DIR`` stands for a folder to write to.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
LANGUAGES = {"sh", "toml", "json", "python", "text"}
SH_MODES = {"", "twin", "long", "setup"}
# toml KIND -> what reads it (module, function taking the text); the product's own parsers
TOML_KINDS = {"calibration": ("sim.calibrate.measurements", "parse_measurements"),
              "jobs": ("sim.jobs.scheduler", "parse_jobs"),
              "spec-fragment": ("tests.doc_examples", "parse_spec_fragment")}
# the address the docs show a twin at (scripts/run's default); the harness puts the test twin's in its place. The
# one line of the tests that names it (tests/test_no_fixed_ports.py lets this declaration alone through: no test
# binds it)
DOCS_TWIN_URL = "http://127.0.0.1:8000"
# a placeholder of the docs -> what the harness puts in its place
PLACEHOLDERS = {"DIR": "out"}
# the files the examples name, as the harness writes them into the scratch folder: name -> (the TOML kind of the
# docs' example whose text it is, or a preset whose spec it is)
FILES = {"jobs.toml": ("toml", "jobs"), "measurements.toml": ("toml", "calibration"),
         "my-cluster.toml": ("preset", "dgx-h100-superpod")}
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Example:
    """One fenced block: where it is (file relative to the repository, first line), its language, the words after
    it, and its text."""

    path: str
    line: int
    language: str
    words: tuple[str, ...]
    text: str

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def mode(self) -> str:
        return self.words[0] if self.words else ""


def examples() -> list[Example]:
    """Every fenced block of README.md and docs/*.md, in file and line order."""
    out = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            info = m.group(1).split()
            out.append(Example(str(doc.relative_to(ROOT)), text.count("\n", 0, m.start()) + 1,
                               info[0] if info else "", tuple(info[1:]), m.group(2)))
    return out


def of(language: str, *modes: str) -> list[Example]:
    """The examples of one language (and, for ``sh``, of the given modes)."""
    return [e for e in examples() if e.language == language and (not modes or e.mode in modes)]


def commands(example: Example) -> list[list[str]]:
    """The commands of a ``sh`` block, each as its words (continuation lines joined, comments dropped, quotes
    read as the shell reads them)."""
    joined = re.sub(r"\\\n", " ", example.text)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            out.append(words)
    return out


def program(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """A command's leading ``NAME=value`` settings and the rest (the program and its arguments)."""
    env = {}
    i = 0
    while i < len(words) and re.match(r"^[A-Z_][A-Z0-9_]*=", words[i]):
        name, _, value = words[i].partition("=")
        env[name] = value
        i += 1
    return env, words[i:]


def parse_spec_fragment(text: str):
    """A fragment of a cluster spec (a table or two of it, as docs show them) merged into the 24k preset's spec and
    read by the spec parser: the fragment's keys must be the spec's and its values accepted."""
    import tomllib

    from sim.fabric.spec import PRESETS_DIR, parse_spec

    data = tomllib.loads((PRESETS_DIR / "meta-roce-24k.toml").read_text(encoding="utf-8"))
    for table, values in tomllib.loads(text).items():
        data.setdefault(table, {})
        if isinstance(values, dict):
            data[table] = {**data[table], **values}
        else:
            data[table] = values
    return parse_spec(data)
