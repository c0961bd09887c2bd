"""Every example of README.md and docs/ runs in the tests as written (issue 40, item 1): found in the Markdown by
tests/doc_examples.py (its docstring has the rules), so a new example is tested without anyone listing it.

On every run of the suite: each block says what it is, each command is taken by its own program's parser, each
TOML file by the product's parser of its kind, each JSON message parses, each Python example runs. Under ``-m slow``
(CI's "documented examples" step): every ``sh`` block runs whole in a scratch folder, exit status 0."""
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from urllib.parse import urlsplit

import pytest

from sim.fabric.spec import PRESETS_DIR
from tests.doc_examples import (DOCS_TWIN_URL, FILES, LANGUAGES, PLACEHOLDERS, ROOT, SH_MODES, TOML_KINDS, commands, examples, of,
                                program)

# programs a command may start, besides the project's own (python -m sim, manage.py, bench/, scripts/): what the
# harness checks of them in the fast pass is that they are what the docs say (a shell built-in or a system tool)
SYSTEM_PROGRAMS = {"echo", "tar", "createdb", "dropdb", "curl", "docker", "docker-compose", "cat", "ls", "mkdir", "cd"}
PYTHONS = {"python", "python3", ".venv/bin/python"}


def ids(items):
    return [e.id for e in items]


@pytest.mark.parametrize("example", examples(), ids=ids(examples()))
def test_every_block_says_what_it_is(example):
    assert example.language in LANGUAGES, (
        f"{example.id}: a fenced block needs an info string, one of {sorted(LANGUAGES)} "
        f"(tests/doc_examples.py: what the harness does with each); this one has {example.language!r}")
    if example.language == "sh":
        assert example.mode in SH_MODES, f"{example.id}: sh blocks are sh, sh twin, sh long or sh setup"
    if example.language == "toml":
        assert example.mode in TOML_KINDS, f"{example.id}: say which file it is: toml {' | '.join(TOML_KINDS)}"


def sh_commands():
    return [(e, words) for e in of("sh") for words in commands(e)]


def placeholders(words: list[str]) -> list[str]:
    """The words with the docs' placeholders (DIR, <id>) as the harness fills them in for a parse."""
    return [PLACEHOLDERS.get(w, w).replace("<id>", "1") for w in words]


def parse_sim(args: list[str]) -> None:
    from sim.cli import build_parser
    parser, argv, _ = build_parser(args)
    parser.parse_args(argv)


def parse_manage(args: list[str]) -> None:
    import django
    from django.core.management import get_commands, load_command_class
    django.setup()
    name, rest = args[0], args[1:]
    assert name in get_commands(), f"manage.py has no command {name!r}"
    load_command_class(get_commands()[name], name).create_parser("manage.py", name).parse_args(rest)


def options_in_source(path, args: list[str]) -> None:
    """A script's options (``--name``) each appear in its source: a cheap check that a documented option exists."""
    assert path.is_file(), f"{path.relative_to(ROOT)} does not exist"
    source = path.read_text(encoding="utf-8")
    for a in args:
        if a.startswith("--"):
            assert f'"{a.split("=")[0]}"' in source, f"{path.relative_to(ROOT)} takes no option {a}"


def check_url(args: list[str]) -> None:
    """A curl command's address is one of the twin's routes."""
    from django.urls import Resolver404, resolve
    import django
    django.setup()
    for a in args:
        if a.startswith(DOCS_TWIN_URL + "/"):
            path = urlsplit(a).path
            try:
                resolve(path)
            except Resolver404:
                pytest.fail(f"curl {a}: {path} is not a route of the twin")


@pytest.mark.parametrize("example,words", sh_commands(), ids=[f"{e.id}:{w[0] if w else ''}"
                                                              for e, w in sh_commands()])
def test_every_command_is_taken_by_its_program(example, words):
    env, cmd = program(placeholders(words))
    head, args = cmd[0], cmd[1:]
    try:
        if head in PYTHONS and args[:2] == ["-m", "sim"]:
            parse_sim(args[2:])
        elif head in PYTHONS and args[:1] == ["manage.py"]:
            parse_manage(args[1:])
        elif head in PYTHONS and args and args[0].startswith("bench/"):
            options_in_source(ROOT / args[0], args[1:])
        elif head in PYTHONS and args[:2] == ["-m", "torch.distributed.flight_recorder.fr_trace"]:
            pass                                        # PyTorch's own tool: run by the optional PyTorch check
        elif head in PYTHONS and args[:1] == ["-m"]:
            importlib.util.find_spec(args[1]) or pytest.fail(f"no module {args[1]}")
        elif head == "scripts/run":
            options_in_source(ROOT / "twin" / "launcher.py", args)
        elif head == "scripts/test":
            for a in args:
                if a.startswith("tests/"):
                    assert (ROOT / a.split("::")[0]).exists(), f"scripts/test {a}: no such test path"
        elif head.startswith(("scripts/", "bench/")):
            assert (ROOT / head).is_file(), f"{head} does not exist"
        elif head == "curl":
            check_url(args)
        else:
            assert head in SYSTEM_PROGRAMS, (f"{example.id}: the harness does not know the program {head!r}: "
                                             f"teach tests/test_doc_examples.py what checks it")
    except SystemExit as e:
        pytest.fail(f"{example.id}: {' '.join(words)}: refused by its parser (exit {e.code})")


@pytest.mark.parametrize("example", of("toml"), ids=ids(of("toml")))
def test_every_toml_file_is_read_by_its_parser(example):
    module, function = TOML_KINDS[example.mode]
    getattr(importlib.import_module(module), function)(example.text)


@pytest.mark.parametrize("example", of("json"), ids=ids(of("json")))
def test_every_json_message_parses(example):
    json.loads(example.text)


@pytest.mark.parametrize("example", of("python"), ids=ids(of("python")))
def test_every_python_example_runs(example):
    code = "import django\ndjango.setup()\n" + example.text
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DJANGO_SETTINGS_MODULE": "twin.settings"})
    assert done.returncode == 0, f"{example.id}:\n{done.stderr[-3000:]}"


# ------------------------------------------------------------------------------------------------ run whole (slow)
def scratch(folder):
    """A folder that looks like the checkout to a command (its top-level entries linked) and holds the files the
    examples name (FILES), where what a command writes (figures/, out/, .env) stays: the checkout is not touched."""
    for entry in ROOT.iterdir():
        if entry.name not in {".git", ".env", "figures", "var", "out"}:
            (folder / entry.name).symlink_to(entry)
    for name, (source, kind) in FILES.items():
        if source == "toml":
            (folder / name).write_text(of("toml", kind)[0].text)
        else:
            shutil.copy(PRESETS_DIR / f"{kind}.toml", folder / name)
    return folder


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def script(example) -> str:
    """A block as the shell runs it: its placeholders filled in; PyTorch's own commands left to the optional PyTorch
    check (tests/torch) where this interpreter has no PyTorch."""
    lines = []
    for line in re.sub(r"\\\n", " ", example.text).splitlines():
        if "-m torch." in line and not torch_available():
            line = ": # (PyTorch is not installed here: tests/torch runs fr_trace) " + line
        for word, value in PLACEHOLDERS.items():
            line = re.sub(rf"(?<![\w<-]){re.escape(word)}(?![\w>-])", value, line)
        lines.append(line)
    return "set -euo pipefail\n" + "\n".join(lines) + "\n"


def run_whole(example, tmp_path):
    """Run a block in a scratch folder, on a database and a var/ of its own (a SQLite file there, migrated first
    when the block uses manage.py: a new user's first steps), never the checkout's."""
    folder = scratch(tmp_path)
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}", "TWIN_VAR_DIR": str(folder / "var"),
           "DATABASE_URL": f"sqlite:///{folder / 'twin.sqlite3'}"}
    if "manage.py" in example.text:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=folder, env=env, check=True)
    done = subprocess.run(["bash", "-c", script(example)], cwd=folder, capture_output=True, text=True, env=env)
    assert done.returncode == 0, f"{example.id}: exit {done.returncode}\n{done.stderr[-4000:]}"


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("example", of("sh", ""), ids=ids(of("sh", "")))
def test_every_sh_block_runs_whole(example, tmp_path):
    run_whole(example, tmp_path)


@pytest.mark.long
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("example", of("sh", "long"), ids=ids(of("sh", "long")))
def test_every_long_sh_block_runs_whole(example, tmp_path):
    run_whole(example, tmp_path)
