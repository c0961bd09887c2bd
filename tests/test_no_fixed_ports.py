"""No test binds a fixed port, so the suite runs beside a twin serving on 8000 (or its embedded Redis on 6390) and
beside another session of itself: servers in tests take ``twin.redis_server.free_port()`` (or port 0). A guard over
the tests' source, for the ways a fixed port gets in: a literal bind, a literal ``--port``/``TWIN_PORT``, the
launcher's default ports by name."""
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
FIXED = {
    "a bind to a literal port": re.compile(r"\.bind\(\(\s*['\"][^'\"]*['\"]\s*,\s*[1-9]\d*\s*\)"),
    "a literal --port": re.compile(r"['\"]--port['\"]\s*,\s*['\"]?[1-9]\d*"),
    "a literal TWIN_PORT": re.compile(r"TWIN_PORT['\"]?\s*[=:,]\s*['\"]?[1-9]\d*"),
    "the embedded Redis's default port": re.compile(r"\bEMBEDDED_REDIS_PORT\b"),
    "the web's default address": re.compile(r"(127\.0\.0\.1|localhost):8000\b"),
}


# the docs' address, declared once for the harness that runs the docs' examples (it substitutes the test twin's)
DOCS_ADDRESS_DECLARATION = "DOCS_TWIN_URL = "


def test_no_test_binds_a_fixed_port():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if path == Path(__file__).resolve():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for what, pattern in FIXED.items():
                if pattern.search(line) and not line.startswith(DOCS_ADDRESS_DECLARATION):
                    found.append(f"{path.relative_to(TESTS.parent)}:{number}: {what}: {line.strip()}")
    assert not found, "use twin.redis_server.free_port() (or port 0):\n" + "\n".join(found)


def test_the_launcher_is_run_on_a_free_port_by_the_settings_tests():
    """tests/test_settings_errors.py runs the launcher without --port: its run() gives it a free TWIN_PORT."""
    text = (TESTS / "test_settings_errors.py").read_text(encoding="utf-8")
    assert "TWIN_PORT=str(free_port())" in text
