"""Settings read from the environment, with safe local defaults, and one-line errors for bad values.

Every reader raises SettingError naming the variable and the reason; ``manage.py`` and the launcher print it as
one line (``twin: DATABASE_URL: ...``) instead of a traceback.
"""
from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path
from urllib.parse import urlparse

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("TWIN_VAR_DIR", BASE_DIR / "var"))


def project_version() -> str:
    """The version pyproject.toml declares (the repository's one place for it)."""
    import tomllib
    try:
        return tomllib.loads((BASE_DIR / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"
EMBEDDED_REDIS_PORT = 6390       # the embedded Redis's port unless TWIN_EMBEDDED_REDIS_PORT says another
DEFAULT_DATABASE_URL = f"sqlite:///{VAR_DIR / 'twin.sqlite3'}"


class SettingError(Exception):
    """A setting with a value the twin cannot use. ``str()`` is the one line to print."""

    def __init__(self, name: str, reason: str):
        self.name, self.reason = name, reason
        super().__init__(f"{name}: {reason}")


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise SettingError(name, f"{raw!r} is not a boolean (use true/false, yes/no, 1/0)")


def env_int(name: str, default: int, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise SettingError(name, f"{raw!r} is not a whole number") from None
    if minimum is not None and value < minimum:
        raise SettingError(name, f"{value} is below {minimum}")
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (case-insensitive), else a SettingError naming them."""
    value = (os.environ.get(name) or default).strip().lower()
    if value not in choices:
        raise SettingError(name, f"{value!r} is not one of {', '.join(choices)}")
    return value


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_packages(name: str) -> tuple[str, ...]:
    """Python packages named in ``name``, comma-separated, each one that exists (found without importing it)."""
    import importlib.util
    import re

    found = []
    for package in env_list(name, ""):
        if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", package):
            raise SettingError(name, f"{package[:80]!r} is not a Python package name")
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        if spec is None or spec.submodule_search_locations is None:
            raise SettingError(name, f"no Python package {package!r} on the path")
        found.append(package)
    return tuple(found)


def private_dir(path: Path) -> Path:
    """``path`` as a directory only its owner can enter (the twin's state: database, keys, tokens, Redis)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` if absent, readable and writable by its owner only; an existing file loses group and other
    permissions. The SQLite database holds API token hashes and session keys: on a machine shared with other users
    nobody else may read it (SQLite gives its -wal and -shm files the database file's permissions)."""
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)
    return path


def secret_key() -> str:
    """SECRET_KEY from the environment; else a random key kept in var/secret_key (never in the repo)."""
    key = os.environ.get("SECRET_KEY")
    if key:
        if len(key) < 32:
            raise SettingError("SECRET_KEY", "is shorter than 32 characters")
        return key
    path = VAR_DIR / "secret_key"
    if not path.exists():
        private_dir(VAR_DIR)
        private_file(path).write_text(secrets.token_urlsafe(50))
    return path.read_text().strip()


def database() -> dict:
    """DATABASES['default'] from DATABASE_URL: sqlite:///path or postgres://user@host:port/name."""
    import dj_database_url

    url = os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL
    scheme = urlparse(url).scheme
    if scheme not in ("sqlite", "postgres", "postgresql", "pgsql"):
        raise SettingError("DATABASE_URL", f"scheme {scheme or '(none)'!r} is not supported (use sqlite:/// or postgres://)")
    try:
        config = dj_database_url.parse(url, conn_max_age=0)
    except Exception as e:  # dj_database_url raises bare ValueErrors with long texts
        raise SettingError("DATABASE_URL", f"cannot be parsed: {e}") from None
    if config["ENGINE"].endswith("sqlite3"):
        if config["NAME"] in ("", ":memory:"):
            raise SettingError("DATABASE_URL", "needs a file path (sqlite:////absolute/path.sqlite3)")
        db = Path(config["NAME"])
        if db.parent == VAR_DIR:
            private_dir(VAR_DIR)
        else:
            db.parent.mkdir(parents=True, exist_ok=True)
        private_file(db)
        # WAL lets the web process read while a worker writes; a generous timeout rides out bulk builds.
        config["OPTIONS"] = {"timeout": 60, "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                             "transaction_mode": "IMMEDIATE"}
    else:
        if not config.get("NAME"):
            raise SettingError("DATABASE_URL", "names no database (postgres://user@host:5432/DBNAME)")
        config["OPTIONS"] = {"connect_timeout": 5}
    test_name = os.environ.get("TWIN_TEST_DATABASE_NAME") or None
    if test_name is None and config["ENGINE"].endswith("sqlite3"):
        # A file, not Django's in-memory default: Celery workers started by the tests must see the same database.
        # One per test process, so that concurrent test sessions do not clobber each other's database.
        test_name = str(VAR_DIR / f"test-{os.getpid()}.sqlite3")
    config["TEST"] = {"NAME": test_name}
    return config


def embedded_redis_port() -> int:
    """The port of the embedded Redis the launcher starts when REDIS_URL is unset: TWIN_EMBEDDED_REDIS_PORT, else
    :data:`EMBEDDED_REDIS_PORT` (a test gives it a free port, so that it never needs a fixed one)."""
    port = env_int("TWIN_EMBEDDED_REDIS_PORT", EMBEDDED_REDIS_PORT, 1)
    if port > 65535:
        raise SettingError("TWIN_EMBEDDED_REDIS_PORT", f"{port} is not between 1 and 65535")
    return port


def redis_url() -> str:
    url = os.environ.get("REDIS_URL") or f"redis://127.0.0.1:{embedded_redis_port()}/0"
    parsed = urlparse(url)
    if parsed.scheme not in ("redis", "rediss", "unix"):
        raise SettingError("REDIS_URL", f"scheme {parsed.scheme or '(none)'!r} is not supported (use redis://host:port/db)")
    try:
        parsed.port
    except ValueError as e:
        raise SettingError("REDIS_URL", f"has a bad port: {e}") from None
    return url


def check_redis(url: str, timeout: float = 3.0) -> None:
    """Raise SettingError when the Redis at ``url`` does not answer PING."""
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout).ping()
    except (redis.RedisError, OSError) as e:
        raise SettingError("REDIS_URL", f"cannot reach Redis at {url} ({e})") from None


def check_database() -> None:
    """Raise SettingError when the configured database cannot be reached (the settings are enough: the apps need
    not be loaded)."""
    from django.db import connection
    from django.db.utils import Error

    try:
        connection.ensure_connection()
    except Error as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SettingError("DATABASE_URL", f"cannot connect ({first})") from None


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        return s.connect_ex((host, port)) != 0
