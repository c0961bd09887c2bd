"""Benchmark: live push through a real daphne server and the real channels_redis layer.

    .venv/bin/python bench/bench_live.py [--clients 20] [--seconds 5]

Uses REDIS_URL when set (else starts the embedded Redis on a free port) and a throw-away SQLite database with the
demo-256 cluster (the server only forwards frames, so their size does not depend on the cluster in the DB; the
frames carry every backend link of meta-roce-24k: 56,256 links, and 24,576 GPU states). Prints:
  1. the size of one all-links frame (budget 64 KB), Uint8-quantized, and Float16 for comparison;
  2. frames per second delivered to each of N WebSocket clients at the default tick (budget >= 4 each), and the
     most the stack delivers with the throttle bypassed (force=True);
  3. the time from a run's first publish to its first frame at the clients (budget < 1 s).
Clients are a minimal asyncio WebSocket client (RFC 6455, no extra package).
"""
import argparse
import asyncio
import base64
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from twin.redis_server import EmbeddedRedis, free_port  # noqa: E402  (needs ROOT on the path)

LINKS, GPUS = 56_256, 24_576


def wait_port(port, proc, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port} after {timeout} s")


# -- a minimal WebSocket client ---------------------------------------------------------------------------------

class WS:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, port, path):
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**22)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                      f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"handshake refused: {head[:200]!r}")
        return cls(reader, writer)

    def _send(self, opcode, payload=b""):
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n))
        self.writer.write(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    async def recv(self):
        """(opcode, payload) of the next message: 1 text, 2 binary, 8 close."""
        buf, first = bytearray(), None
        while True:
            b0, b1 = await self.reader.readexactly(2)
            op, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", await self.reader.readexactly(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", await self.reader.readexactly(8))[0]
            if b1 & 0x80:
                await self.reader.readexactly(4)
            data = await self.reader.readexactly(n)
            if op == 9:
                self._send(10, data)
                continue
            if op in (8, 10):
                if op == 8:
                    return 8, data
                continue
            if op:
                first = op
            buf += data
            if b0 & 0x80:
                return first, bytes(buf)

    async def close(self):
        try:
            self._send(8, struct.pack(">H", 1000))
            await self.writer.drain()
        except ConnectionError:
            pass
        self.writer.close()


class Client:
    """Connects, reads the JSON metadata, then records (recv time, frame header) for every binary frame."""

    def __init__(self, port, path):
        self.port, self.path, self.got, self.meta = port, path, [], None

    async def start(self):
        self.ws = await WS.connect(self.port, self.path)
        op, data = await self.ws.recv()
        assert op == 1, "the first message is not the JSON metadata"
        import json
        self.meta = json.loads(data)
        self.task = asyncio.create_task(self.loop())

    async def loop(self):
        from twin.live import frames
        while True:
            op, data = await self.ws.recv()
            if op == 8:
                return
            assert op == 2, "text after the metadata"
            now = time.time() * 1000.0
            f = frames.decode(data)
            self.got.append((now, f.seq, f.run_id, f.final, len(data)))

    async def stop(self):
        self.task.cancel()
        await self.ws.close()


# -- the benchmark ----------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench_live_"))
    procs, redis = [], None
    try:
        env = dict(os.environ)
        if not env.get("REDIS_URL"):
            redis = EmbeddedRedis(free_port(), directory=tmp).start()
            env["REDIS_URL"] = redis.url
        env["DATABASE_URL"] = f"sqlite:///{tmp / 'bench.sqlite3'}"
        env["DJANGO_SETTINGS_MODULE"] = "twin.settings"
        os.environ.update({k: env[k] for k in ("REDIS_URL", "DATABASE_URL", "DJANGO_SETTINGS_MODULE")})

        import django
        django.setup()
        import io

        import numpy as np
        from django.conf import settings
        from django.core.management import call_command

        from twin.inventory.models import Cluster
        from twin.live import frames
        from twin.live.publish import RunPublisher

        # 1. frame size
        rng = np.random.default_rng(0)
        util = rng.random(LINKS, dtype=np.float32)
        gpu = rng.integers(0, 5, GPUS, dtype=np.uint8)
        t = time.perf_counter()
        links_only = frames.encode(frames.Frame(sections=frames.build_sections(link_util=util)))
        enc_ms = (time.perf_counter() - t) * 1000
        both = frames.encode(frames.Frame(sections=frames.build_sections(link_util=util, gpu_state=gpu)))
        f16 = frames.encode(frames.Frame(sections=frames.build_sections(link_util=util.astype(np.float16))))
        print(f"frame, all {LINKS:,} backend links of meta-roce-24k, Uint8: {len(links_only):,} bytes "
              f"({len(links_only) / 1024:.1f} KiB; budget 64 KiB) {'OK' if len(links_only) <= 65536 else 'OVER'}; "
              f"encoded in {enc_ms:.1f} ms")
        print(f"  with {GPUS:,} GPU states too: {len(both):,} bytes; Float16 links instead: {len(f16):,} bytes")

        call_command("migrate", verbosity=0)
        call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())
        cluster = Cluster.objects.get(name="demo-256")

        port = free_port()
        daphne = shutil.which("daphne", path=str(ROOT / ".venv" / "bin")) or "daphne"
        procs.append(subprocess.Popen([daphne, "-b", "127.0.0.1", "-p", str(port), "twin.asgi:application"],
                                      cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=open(tmp / "daphne.log", "w")))
        wait_port(port, procs[-1])
        run_ids = iter(range(9_000_000, 10_000_000))

        def new_run():
            return SimpleNamespace(id=next(run_ids), cluster_id=cluster.id, status="running", progress=0.0)

        async def bench():
            loop = asyncio.get_running_loop()
            clients = [Client(port, f"/ws/clusters/{cluster.name}/?index=0") for _ in range(args.clients)]
            await asyncio.gather(*(c.start() for c in clients))

            def reset():
                for c in clients:
                    c.got.clear()

            async def drain(run_id, timeout=5.0):
                end = time.monotonic() + timeout
                while time.monotonic() < end:
                    if all(any(g[2] == run_id and g[3] for g in c.got) for c in clients):
                        return
                    await asyncio.sleep(0.01)

            # 3. first publish -> first frame at the clients (a fresh run each time)
            lat = []
            for _ in range(10):
                reset()
                run = new_run()
                pub = RunPublisher(run)
                t0 = time.time() * 1000.0
                await loop.run_in_executor(None, lambda: pub.progress(0.0, link_util=util, gpu_state=gpu))
                await loop.run_in_executor(None, pub.finished)
                await drain(run.id)
                lat += [min(g[0] for g in c.got if g[2] == run.id) - t0 for c in clients]
                await asyncio.sleep(0.05)

            # 2a. the default tick, a worker calling progress every 10 ms with full arrays
            def worker(run, seconds, force):
                pub = RunPublisher(run)
                end = time.monotonic() + seconds
                i = 0
                while time.monotonic() < end:
                    pub.progress(min(99.0, i / 10), link_util=util, gpu_state=gpu, force=force)
                    i += 1
                    if not force:
                        time.sleep(0.01)
                run.progress, run.status = 100.0, "succeeded"
                pub.finished()
                return pub.sent

            results = {}
            for label, force in (("tick", False), ("force", True)):
                reset()
                run = new_run()
                t0 = time.monotonic()
                sent = await loop.run_in_executor(None, worker, run, args.seconds, force)
                await drain(run.id, 10.0)
                wall = time.monotonic() - t0
                per = []
                gaps = 0
                for c in clients:
                    seqs = [g[1] for g in c.got if g[2] == run.id and not g[3]]
                    per.append(len(seqs) / args.seconds)
                    gaps += sum(1 for a, b in zip(seqs, seqs[1:]) if b != a + 1)
                results[label] = (sent, per, gaps, wall)
            await asyncio.gather(*(c.stop() for c in clients))
            return lat, results

        lat, results = asyncio.run(bench())
        n = args.clients
        sent, per, gaps, _ = results["tick"]
        print(f"delivery at the default tick ({settings.TWIN_LIVE_TICK_HZ:g} Hz), {n} clients, {args.seconds:g} s, "
              f"{len(both) / 1024:.0f} KiB frames (links + GPUs): min {min(per):.2f} / median {statistics.median(per):.2f} "
              f"frames/s per client (budget >= 4) {'OK' if min(per) >= 3.95 else 'UNDER'}; {gaps} gaps; "
              f"{sent} frames published")
        sent, per, gaps, wall = results["force"]
        print(f"headroom, throttle bypassed (force=True): {sent} frames published in {args.seconds:g} s "
              f"({sent / args.seconds:.1f}/s); per client min {min(per):.1f} / median {statistics.median(per):.1f} "
              f"frames/s received, {gaps} gaps (dropped over channel capacity), "
              f"{sum(per) * args.seconds * len(both) / wall / 2**20:.1f} MiB/s out of daphne")
        lat.sort()
        print(f"first publish -> first frame at a client ({n} clients x 10 runs): median {statistics.median(lat):.1f} ms, "
              f"p95 {lat[int(len(lat) * 0.95) - 1]:.1f} ms, max {lat[-1]:.1f} ms (budget < 1000 ms) "
              f"{'OK' if lat[-1] < 1000 else 'OVER'}")
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        if redis is not None:
            redis.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
