"""The team set-up's settings (docker-compose.yml) pass Django's deployment checks, and HTTPS behaves behind the proxy.

The environment is read from docker-compose.yml itself (the ``x-twin`` block every service shares), so the test
follows the file instead of repeating it.
"""
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from twin import env

ROOT = env.BASE_DIR
TEST_SECRET = "test-only-" + "k3y" * 20
_VAR = re.compile(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}")


def compose_environment(**given) -> dict:
    """The web container's environment as docker compose would fill it in, with ``given`` as the user's .env."""
    doc = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    values = {"SECRET_KEY": TEST_SECRET, **given}

    def fill(m):
        name, op, default = m.groups()
        if name in values:
            return values[name]
        if op == ":?":
            pytest.fail(f"docker-compose.yml requires {name}: give it in the test")
        return default or ""
    return {k: _VAR.sub(fill, str(v)) for k, v in doc["x-twin"]["environment"].items()}


def run(args, tmp_path, environment, **kw):
    child = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS")}
    child.update(environment, TWIN_VAR_DIR=str(tmp_path / "var"))
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=child, capture_output=True, text=True, timeout=120,
                          **kw)


def test_check_deploy_is_clean_under_the_compose_settings(tmp_path):
    result = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], tmp_path, compose_environment())
    assert result.returncode == 0, result.stderr + result.stdout
    assert "System check identified no issues" in result.stdout


# One process migrates and asks (each Django start costs seconds of CPU).
PROBE = """
import json, django
django.setup()
from django.core.management import call_command
call_command("migrate", interactive=False, verbosity=0)
from django.test import Client
c = Client()
out = {}
for name, path, extra in [("plain", "/", {}), ("health", "/healthz", {}),
                          ("proxied", "/healthz", {"HTTP_X_FORWARDED_PROTO": "https"})]:
    r = c.get(path, HTTP_HOST="twin.example.com", **extra)
    out[name] = {"status": r.status_code, "location": r.get("Location"),
                 "hsts": r.get("Strict-Transport-Security")}
print(json.dumps(out))
"""


def test_behind_the_proxy_plain_http_is_redirected_and_https_gets_hsts(tmp_path):
    # given the compose settings for the site twin.example.com
    environment = {**compose_environment(TWIN_SITE="twin.example.com"), "DJANGO_SETTINGS_MODULE": "twin.settings",
                   "DATABASE_URL": f"sqlite:///{tmp_path / 'twin.sqlite3'}"}
    # when it is migrated and a page is asked over plain HTTP, the health check from inside, and a page through the
    # TLS proxy
    result = run(["-c", PROBE], tmp_path, environment)
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout.strip().splitlines()[-1])
    # then plain HTTP goes to HTTPS, the health check is answered as it is, and HTTPS carries HSTS
    assert got["plain"]["status"] == 301 and got["plain"]["location"] == "https://twin.example.com/", got
    assert got["health"]["status"] == 200, got
    assert got["proxied"]["status"] == 200 and "max-age=31536000" in (got["proxied"]["hsts"] or ""), got
