"""The layout's rules, checked on every run of the suite (docs/architecture.md): imports point down the layers and
make no cycle (import-linter's contracts in .importlinter, function-level imports included), no module imports
another's private names, no engine module is long, and the command line imports only the chosen command's package."""
import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ("sim", "twin", "tests")
MAX_ENGINE_LINES = 520            # "about 500": one concept per module


def python_files(*roots):
    for root in roots:
        for path in sorted((ROOT / root).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def test_the_import_contracts_hold():
    # given the contracts of .importlinter (layers, capabilities, no cycles between a package's modules)
    lint = Path(sys.executable).with_name("lint-imports")
    # when import-linter reads every import of sim and twin
    r = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    # then every contract is kept
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "broken" not in r.stdout.lower().split("contracts:")[-1] or " 0 broken" in r.stdout


def test_no_module_imports_another_modules_private_names():
    found = []
    for path in python_files(*PROJECT):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PROJECT:
                found += [f"{path.relative_to(ROOT)}:{node.lineno}: from {node.module} import {a.name}"
                          for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    assert not found, "\n".join(found)


def test_engine_modules_stay_short():
    long = {str(p.relative_to(ROOT)): n for p in python_files("sim")
            if (n := len(p.read_text().splitlines())) > MAX_ENGINE_LINES}
    assert not long, long


def test_the_command_line_imports_only_the_chosen_commands_package():
    # when a process parses `python -m sim collective --help`
    code = ("import sys; from sim import cli\n"
            "try: cli.main(['collective', '--help'])\n"
            "except SystemExit: pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('sim.')))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    loaded = set(ast.literal_eval(r.stdout.strip().splitlines()[-1]))
    # then no other capability's modules were imported (their package's __init__ only, for the command table)
    others = {m for m in loaded if m.split(".")[1] in ("storage", "jobs", "failures", "debug", "power") and m.count(".") > 1}
    assert not others, sorted(others)
    assert "sim.fabric.cli" in loaded


def test_every_import_statement_names_a_module_and_name_that_exist():
    # function-level imports run only when their function does: a moved name would fail there, late (a capability
    # package among the tests registers as it is imported: it checks its own imports in a process of its own)
    import importlib
    import importlib.util
    missing = []
    test_capabilities = {p.parent for p in (ROOT / "tests").rglob("live.py")}
    for path in python_files("sim", "twin", "tests", "bench"):
        if path.parent in test_capabilities:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0
                    and (node.module or "").split(".")[0] in PROJECT):
                continue
            try:
                module = importlib.import_module(node.module)
            except ImportError as e:
                missing.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.module}: {e}")
                continue
            for alias in node.names:
                if alias.name != "*" and not hasattr(module, alias.name) \
                        and importlib.util.find_spec(f"{node.module}.{alias.name}") is None:
                    missing.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {node.module} import {alias.name}")
    assert not missing, "\n".join(missing)
