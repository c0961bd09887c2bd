"""A bad setting is reported as one line naming the variable, never as a traceback."""
import os
import socket
import subprocess
import sys

import pytest

from twin import env
from twin.redis_server import free_port

ROOT = env.BASE_DIR


def run(args, tmp_path, **overrides):
    """Given the environment plus overrides, when the command runs, then return (exit code, stderr lines)."""
    child_env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DEBUG", "SECRET_KEY")}
    # the launcher serves on a free port (never the default 8000, which another twin may hold)
    child_env.update(TWIN_VAR_DIR=str(tmp_path / "var"), DATABASE_URL=f"sqlite:///{tmp_path / 'twin.sqlite3'}",
                     TWIN_PORT=str(free_port()))
    child_env.update(overrides)
    result = subprocess.run([sys.executable, *args], cwd=ROOT, env=child_env, capture_output=True, text=True,
                            timeout=90)
    return result.returncode, result.stderr.strip().splitlines()


def assert_one_line_naming(code, lines, name):
    assert code != 0
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"twin: {name}: "), lines
    assert "Traceback" not in lines[0]


@pytest.mark.parametrize("name, value", [
    ("DATABASE_URL", "mysql://x"),
    ("DATABASE_URL", "sqlite://"),
    ("REDIS_URL", "http://x"),
    ("REDIS_URL", "redis://127.0.0.1:notaport/0"),
    ("DEBUG", "maybe"),
    ("SECRET_KEY", "too-short"),
    ("TWIN_WARM_STRUCTURES", "maybe"),
    ("TWIN_LIVE_RETRY_MAX_MS", "100"),                       # under its minimum, 500 ms
    ("TWIN_EXTRA_CAPABILITIES", "no_such_package"),
    ("TWIN_EXTRA_CAPABILITIES", "twin.capabilities, rm -rf"),
])
def test_manage_py_reports_a_bad_value_in_one_line(tmp_path, name, value):
    # given a bad value / when manage.py check runs
    code, lines = run(["manage.py", "check"], tmp_path, **{name: value})
    # then one line names the variable
    assert_one_line_naming(code, lines, name)


def test_manage_py_reports_an_unreachable_database_in_one_line(tmp_path):
    code, lines = run(["manage.py", "migrate", "--noinput"], tmp_path,
                      DATABASE_URL="postgres://postgres@127.0.0.1:1/twin")
    assert_one_line_naming(code, lines, "DATABASE_URL")


@pytest.mark.parametrize("name, value", [
    ("DATABASE_URL", "mysql://x"),
    ("DATABASE_URL", "postgres://postgres@127.0.0.1:1/twin"),
    ("REDIS_URL", "http://x"),
    ("REDIS_URL", "redis://127.0.0.1:1/0"),
    ("DEBUG", "maybe"),
    ("TWIN_PORT", "eighty"),
    ("TWIN_EXTRA_CAPABILITIES", "twin.no_such_capability"),
])
def test_launcher_reports_a_bad_setting_in_one_line_before_starting_anything(tmp_path, name, value):
    code, lines = run(["-m", "twin.launcher", "--no-build"], tmp_path, **{name: value})
    assert code == 2
    assert_one_line_naming(code, lines, name)


def test_launcher_reports_a_bad_embedded_redis_port_in_one_line(tmp_path):
    # REDIS_URL unset: the launcher would start its embedded Redis on TWIN_EMBEDDED_REDIS_PORT
    code, lines = run(["-m", "twin.launcher", "--no-build"], tmp_path, REDIS_URL="", TWIN_EMBEDDED_REDIS_PORT="70000")
    assert code == 2
    assert_one_line_naming(code, lines, "TWIN_EMBEDDED_REDIS_PORT")


def test_launcher_refuses_a_port_that_is_taken(tmp_path):
    # given something listening on the port the twin should serve on
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # when the launcher starts there / then it says so in one line, before starting anything
        code, lines = run(["-m", "twin.launcher", "--no-build", "--port", str(port)], tmp_path)
    assert_one_line_naming(code, lines, "TWIN_PORT")


# manage.py's commands one after the other in one process (each Django start costs seconds of CPU).
MIGRATE_AND_ENSURE_ADMIN = ("import sys, manage\n"
                            "for sys.argv in (['manage.py', 'migrate', '--noinput'], ['manage.py', 'ensure_admin']):\n"
                            "    manage.main()\n")


def test_what_the_twin_writes_is_its_owners_alone(tmp_path):
    # given a fresh state folder under a permissive umask / when the twin migrates and creates its admin
    var = tmp_path / "var"
    child_env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SECRET_KEY", "TWIN_ADMIN_PASSWORD")}
    child_env.update(TWIN_VAR_DIR=str(var))
    result = subprocess.run([sys.executable, "-c", MIGRATE_AND_ENSURE_ADMIN], cwd=ROOT, env=child_env,
                            capture_output=True, text=True, timeout=120, preexec_fn=lambda: os.umask(0o022))
    assert result.returncode == 0, result.stderr
    assert "created superuser 'admin'" in result.stdout, result.stdout
    # then the folder, the database (API tokens, sessions), the secret key and the admin password are not readable
    # by anyone else on the machine
    written = [var, var / "twin.sqlite3", var / "secret_key", var / "admin-password"]
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in written}
    assert all(p.stat().st_mode & 0o077 == 0 for p in written), modes
