"""Benchmark: the browser UI's budgets, measured in headless Chromium (Debian's chromium driven by Playwright).

    .venv/bin/python bench/bench_ui.py [--database-url URL] [--loads 5] [--gpus 4096] [--seeds 400]

Starts its own daphne and Celery worker (tests/processes.py) against a database holding meta-roce-24k: by default
var/bench-ui.sqlite3, migrated and built the first time and kept, or --database-url (built there when absent).
Uses REDIS_URL when set, else starts the embedded Redis on a free port. Prints, for meta-roce-24k (24,576 GPUs,
56,256 backend links):
  1. first paint of the fabric and GPU-grid pages (window.twin.firstPaintMs: navigation start to the main view
     drawn with data), cold (the first load after the server started) and warm (median and max of --loads), each
     load in a fresh browser context (no browser cache, as a first visit), with the bytes of page data fetched
     (JSON and live snapshot, as sent: compressed where the server compresses); budget 2 s;
  2. live frame application (window.twin.frameApplyMs: state update and redraw per frame) on the fabric page and
     the GPU grid (coloured by job, and by utilization), each open on its own while a real collective run on
     meta-roce-24k publishes its frames (all 56,256 link utilizations and 24,576 GPU states in each):
     median, p95 and max, budget 50 ms; then the three open side by side during one more run (no budget: it shows
     what sharing two CPUs among three renderers costs);
  3. the Storage page (every storage server of meta-roce-24k: 3,790 in the grid, 18,798 frontend links in the
     heatmaps) after a real checkpoint of 16,384 GPUs x 4 GiB to tectonic: its first paint, cold and warm, budget
     1 s; the checkpoint's live frame size (the run stream's snapshot: every section the run published, so the
     largest frame), budget 64 KB; and the checkpoint's wall time on the worker.
``--storage-only`` measures 3 alone. ``--cluster NAME --paint-only`` measures 1 alone on another cluster (built from
the preset of that name when the database lacks it), with each page's default view and its zoom into the first zone
(?zone=) and building (?building=0, where the spec has buildings): for a cluster above 65,536 GPUs
(twin.web.gpu_data.OVERVIEW_ABOVE_GPUS) the default is the zone overview; budget 3 s, cold and warm (issue 17:
roadmap-600k). Cold is the first load after the server started: it reads the large cluster's structures from the
web processes' structure cache on disk (TWIN_STRUCTURE_CACHE_DIR) when an earlier process kept them there; point
that variable at an empty directory to measure the first visit after a build. Build a 600k cluster once into a
file of your own and reuse it:
    DATABASE_URL=sqlite:////tmp/r600k.sqlite3 .venv/bin/python manage.py migrate
    DATABASE_URL=sqlite:////tmp/r600k.sqlite3 .venv/bin/python manage.py build_cluster roadmap-600k
    .venv/bin/python bench/bench_ui.py --database-url sqlite:////tmp/r600k.sqlite3 --cluster roadmap-600k --paint-only
The servers, the worker's simulation and Chromium share this machine's CPUs, as they do for a user of scripts/run.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.browser import CHROMIUM, READY, PageProbe, launch  # noqa: E402

CLUSTER = "meta-roce-24k"
PAGES = {"fabric": f"/clusters/{CLUSTER}/fabric/", "GPU grid": f"/clusters/{CLUSTER}/gpus/"}
STORAGE_PAGE = {"storage": f"/clusters/{CLUSTER}/storage/"}
PAINT_BUDGET_MS, FRAME_BUDGET_MS = 2000.0, 50.0
SCALE_PAINT_BUDGET_MS = 3000.0          # issue 17: the GPU and fabric pages of roadmap-600k
STORAGE_PAINT_BUDGET_MS, STORAGE_FRAME_BUDGET = 1000.0, 64 * 1024
CHECKPOINT = {"gpus": 16384, "bytes_per_gpu": "4G", "store": "tectonic", "mode": "async"}
READY_TIMEOUT_MS = 60_000


def prepare_database(name=CLUSTER):
    """Migrate and build the cluster where absent (idempotent: a kept database is ready at once)."""
    from django.core.management import call_command

    from sim.fabric.spec import load_spec
    from twin.inventory.builder import build_cluster
    from twin.inventory.models import Cluster

    call_command("migrate", verbosity=0)
    if name != CLUSTER and Cluster.objects.filter(name=name).exists():
        return Cluster.objects.get(name=name)
    t = time.perf_counter()
    result = build_cluster(load_spec(name))
    if result.created:
        print(f"built {name} ({result.rows:,} rows) in {time.perf_counter() - t:.1f} s")
    return result.cluster


def cpu_seconds() -> float:
    """User+sys CPU seconds of this process and its waited-for children."""
    import resource
    return sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


class Browser:
    """Headless Chromium; every load in a fresh context, its problems (console errors, failed requests) reported."""

    def __init__(self, base_url: str):
        from playwright.sync_api import sync_playwright

        self.base_url = base_url
        self.pw = sync_playwright().start()
        try:
            self.browser = launch(self.pw)
        except BaseException:
            self.pw.stop()
            raise
        self.version = self.browser.version
        self.problems = []

    def open(self, path: str):
        """A fresh context on ``path``, once the page is drawn with data: (context, page, probe)."""
        context = self.browser.new_context(base_url=self.base_url, viewport={"width": 1440, "height": 900})
        page = context.new_page()
        probe = PageProbe(page)
        page.goto(path)
        page.wait_for_selector(READY, state="attached", timeout=READY_TIMEOUT_MS)
        return context, page, probe

    def first_paint(self, path: str, settle: bool = False) -> tuple[float, int]:
        """(firstPaintMs, bytes of the page data fetched) of one load of ``path``; ``settle``: wait for the page's
        requests after the paint to end before the next load (the Storage page loads its last checkpoint's
        timeline and arrays after its first paint: left running, they would be served during the next load)."""
        context, page, probe = self.open(path)
        ms = page.evaluate("window.twin.firstPaintMs")
        if settle:
            page.wait_for_load_state("networkidle")
        data = page.evaluate("performance.getEntriesByType('resource').filter(r => /\\.json|snapshot/.test(r.name))"
                             ".reduce((n, r) => n + r.encodedBodySize, 0)")
        self.problems += probe.problems
        context.close()
        return ms, data

    def close(self):
        self.browser.close()
        self.pw.stop()


def first_paints(browser, daphne, loads: int, pages=PAGES, settle: bool = False) -> dict:
    """Per page: (cold ms, warm median ms, warm max ms, page data bytes); cold on a server started just before."""
    out = {}
    for name, path in pages.items():
        daphne.stop()
        daphne.start()
        cold, size = browser.first_paint(path, settle)
        warm = [browser.first_paint(path, settle)[0] for _ in range(loads)]
        out[name] = (cold, statistics.median(warm), max(warm), size)
    return out


VIEWS = (("fabric", "fabric", None), ("GPU grid, job", "GPU grid", "job"),
         ("GPU grid, utilization", "GPU grid", "utilization"))


def run_collective(cluster, gpus: int, seeds: int):
    """A real collective run on the cluster, to its end; returns (the run, its wall time in s)."""
    from tests.processes import wait_for
    from twin.runs.actions import create_run
    from twin.runs.models import SimulationRun

    run = create_run("collective", {"gpus": gpus, "seeds": seeds, "placement": "random", "routing": "ecmp"}, cluster)
    t0 = time.monotonic()
    wait_for(lambda: not SimulationRun.objects.filter(pk=run.pk, status__in=("queued", "running")).exists(),
             timeout=900, interval=0.25, what=f"run #{run.pk} to finish")
    wall = time.monotonic() - t0
    run.refresh_from_db()
    time.sleep(1.0)                     # the final frame on its way to the pages
    return run, wall


def run_checkpoint(cluster):
    """A real checkpoint run (CHECKPOINT) on the cluster, to its end: (the run, its wall time in s, the bytes of its
    stream's snapshot frame)."""
    from tests.processes import wait_for
    from twin.live import store
    from twin.runs.actions import create_run
    from twin.runs.models import SimulationRun

    run = create_run("checkpoint", dict(CHECKPOINT), cluster)
    t0 = time.monotonic()
    wait_for(lambda: not SimulationRun.objects.filter(pk=run.pk, status__in=("queued", "running")).exists(),
             timeout=900, interval=0.25, what=f"run #{run.pk} to finish")
    wall = time.monotonic() - t0
    run.refresh_from_db()
    time.sleep(1.0)
    last = store.load_last(store.run_stream(run.pk))
    return run, wall, len(last[1]) if last else 0


def print_storage(paint: dict, run, wall: float, frame_bytes: int) -> None:
    s = run.summary or {}
    print(f"\nStorage page after checkpoint #{run.pk} ({CHECKPOINT['gpus']:,} GPUs x {CHECKPOINT['bytes_per_gpu']}, "
          f"{CHECKPOINT['store']}, {CHECKPOINT['mode']}): {run.status} in {wall:.1f} s on the worker, blocked "
          f"{s.get('blocked_seconds', 0):.2f} s, durable {s.get('durable_seconds', 0):.2f} s (simulated)")
    print(f"  first paint (budget {STORAGE_PAINT_BUDGET_MS / 1000:g} s)")
    for name, (cold, warm, worst, size) in paint.items():
        ok = max(cold, worst) <= STORAGE_PAINT_BUDGET_MS
        print(f"  {name:<10} cold {cold:>6.0f} ms, warm median {warm:>6.0f} ms, max {worst:>6.0f} ms, "
              f"{size / 1024:>6.0f} KiB of page data  {'OK' if ok else 'OVER'}")
    print(f"  live frame (the run's snapshot: every section) {frame_bytes:,} bytes (budget {STORAGE_FRAME_BUDGET:,})  "
          f"{'OK' if 0 < frame_bytes <= STORAGE_FRAME_BUDGET else 'OVER'}")


def live_frames(browser, cluster, gpus: int, seeds: int, views) -> tuple[dict, object, float]:
    """The frameApplyMs of each view (the GPU grid coloured by job, the default, and by NIC-link utilization, which
    maps every frame's link utilization onto the GPUs) while one collective run publishes its frames, the ``views``
    open side by side. Returns (frames by view, the run, its wall time in s)."""
    opened = {}
    for name, page_name, mode in views:
        context, page, probe = browser.open(PAGES[page_name])
        if mode:
            page.select_option("select#gpu-color-mode", mode)
        page.wait_for_selector('#live-status[data-state="live"]', state="attached")
        page.evaluate("window.twin.frameApplyMs.length = 0")
        opened[name] = (context, page, probe)
    run, wall = run_collective(cluster, gpus, seeds)
    frames = {}
    for name, (context, page, probe) in opened.items():
        frames[name] = page.evaluate("window.twin.frameApplyMs")
        browser.problems += probe.problems
        context.close()
    return frames, run, wall


def scale_pages(cluster) -> dict:
    """The GPU and fabric pages of ``cluster`` in their default view, zoomed into its first compute zone, and into
    its first building when its spec groups zones into buildings."""
    from sim.fabric.spec import parse_spec
    from twin.inventory.models import GPU, Zone

    zone = Zone.objects.filter(cluster=cluster, racks__hosts__isnull=False).order_by("id").first().name
    gpus = GPU.objects.filter(cluster=cluster).count()
    base = f"/clusters/{cluster.name}"
    pages = {"fabric": f"{base}/fabric/", "GPU page": f"{base}/gpus/",
             "fabric, 1 zone": f"{base}/fabric/?zone={zone}", "GPU page, 1 zone": f"{base}/gpus/?zone={zone}"}
    if parse_spec(cluster.spec).layout.buildings > 1:
        pages.update({"fabric, 1 building": f"{base}/fabric/?building=0",
                      "GPU page, 1 building": f"{base}/gpus/?building=0"})
    return {**pages, "_gpus": gpus, "_zone": zone}


def structure_cache_files() -> int:
    """Files in the web processes' structure cache (twin/inventory/structure_cache.py) now."""
    from django.conf import settings
    return len(list(Path(settings.TWIN_STRUCTURE_CACHE_DIR).rglob("*.pickle")))


def print_scale_paint(cluster, paint: dict, gpus: int, zone: str, cache_files: int) -> None:
    print(f"\nfirst paint, navigation start -> main view drawn with data, {cluster.name} ({gpus:,} GPUs; zoom: {zone}) "
          f"(budget {SCALE_PAINT_BUDGET_MS / 1000:g} s, cold and warm)")
    print(f"  cold: the first load after the server started; the structure cache on disk held {cache_files} files "
          f"before the first (0: the first visit after a build)")
    print(f"  {'page':<21} {'cold':>9} {'warm median':>12} {'warm max':>10} {'data fetched':>13}  verdict")
    for name, (cold, warm, worst, size) in paint.items():
        print(f"  {name:<21} {cold:>6.0f} ms {warm:>9.0f} ms {worst:>7.0f} ms {size / 1024:>9.0f} KiB  "
              f"{'OK' if max(cold, worst) <= SCALE_PAINT_BUDGET_MS else 'OVER'}")


def print_frames(frames: dict, verdicts: bool) -> None:
    print(f"  {'page':<22} {'frames':>6} {'median':>9} {'p95':>9} {'max':>9} {'(frame)':>8}  verdict")
    for name, ms in frames.items():
        if not ms:
            print(f"  {name:<22} {0:>6}  no frame applied  FAILED")
            continue
        verdict = ("OK" if max(ms) <= FRAME_BUDGET_MS else "OVER") if verdicts else "-"
        print(f"  {name:<22} {len(ms):>6} {statistics.median(ms):>6.1f} ms {percentile(ms, 0.95):>6.1f} ms "
              f"{max(ms):>6.1f} ms {'#' + str(ms.index(max(ms)) + 1):>8}  {verdict}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", help="a database to use (default: var/bench-ui.sqlite3, kept between runs)")
    ap.add_argument("--loads", type=int, default=5, help="warm loads per page (the median is reported)")
    ap.add_argument("--gpus", type=int, default=4096, help="GPUs of the collective run that publishes the frames")
    ap.add_argument("--seeds", type=int, default=400,
                    help="hash seeds of that run: one progress report with all link and GPU states each "
                         "(the default lasts 10-20 s here: 40+ frames at the 4 Hz tick)")
    ap.add_argument("--storage-only", action="store_true", help="only the Storage page and the checkpoint frames")
    ap.add_argument("--cluster", default=CLUSTER, help="the cluster of --paint-only (default %(default)s)")
    ap.add_argument("--paint-only", action="store_true",
                    help="only the first paint of the GPU and fabric pages of --cluster, default view and one zone")
    args = ap.parse_args()
    if not CHROMIUM.exists():
        raise SystemExit(f"{CHROMIUM} is missing (Debian: apt-get install chromium)")

    tmp = Path(tempfile.mkdtemp(prefix="bench_ui_"))
    redis, servers, browser = None, [], None
    try:
        if not os.environ.get("REDIS_URL"):
            from twin.redis_server import EmbeddedRedis, free_port
            redis = EmbeddedRedis(free_port(), directory=tmp).start()
            os.environ["REDIS_URL"] = redis.url
        os.environ["DATABASE_URL"] = args.database_url or f"sqlite:///{ROOT / 'var' / 'bench-ui.sqlite3'}"
        os.environ["DJANGO_SETTINGS_MODULE"] = "twin.settings"
        queue = os.environ["TWIN_CELERY_QUEUE"] = f"bench-ui-{uuid.uuid4().hex[:8]}"
        # Playwright runs an event loop in this thread, where the ORM would refuse to run; this is a benchmark's
        # own process (tests/processes.py starts the servers without it).
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

        import django
        django.setup()
        from django.db import connection

        from tests.processes import Daphne, Workers

        cluster = prepare_database(args.cluster if args.paint_only else CLUSTER)
        if args.paint_only:
            cache_files = structure_cache_files()       # before the server starts (it warms them at once)
            daphne = Daphne(tmp, queue)
            servers.append(daphne)
            daphne.start()
            browser = Browser(daphne.url)
            pages = scale_pages(cluster)
            gpus, zone = pages.pop("_gpus"), pages.pop("_zone")
            t0, cpu0, load0 = time.monotonic(), cpu_seconds(), os.getloadavg()
            paint = first_paints(browser, daphne, args.loads, pages)
            print(f"UI benchmark: headless Chromium {browser.version}, {os.cpu_count()} CPUs, {connection.vendor}")
            print_scale_paint(cluster, paint, gpus, zone, cache_files)
            print(f"\n{time.monotonic() - t0:.0f} s wall, {cpu_seconds() - cpu0:.0f} s CPU (user+sys of this script "
                  f"and its finished children: the servers'; not Chromium's, still running); load average "
                  f"{load0[0]:.2f} before, {os.getloadavg()[0]:.2f} after")
            if browser.problems:
                print("\npage problems seen:\n  " + "\n  ".join(browser.problems))
            return
        workers = Workers(tmp, n=1, queue=queue)
        daphne = Daphne(tmp, queue)
        servers += [daphne, workers]
        workers.ensure()
        browser = Browser(daphne.url)
        ckpt, ckpt_wall, ckpt_frame = run_checkpoint(cluster)
        storage_paint = first_paints(browser, daphne, args.loads, STORAGE_PAGE, settle=True)
        if args.storage_only:
            print(f"UI benchmark: {CLUSTER}, headless Chromium {browser.version}, {os.cpu_count()} CPUs, "
                  f"{connection.vendor}")
            print_storage(storage_paint, ckpt, ckpt_wall, ckpt_frame)
            if browser.problems:
                print("\npage problems seen:\n  " + "\n  ".join(browser.problems))
            return
        paint = first_paints(browser, daphne, args.loads)
        alone = {}
        for view in VIEWS:                  # one page open, as a user looks at it
            got, run, wall = live_frames(browser, cluster, args.gpus, args.seeds, [view])
            alone.update(got)
        together, _, _ = live_frames(browser, cluster, args.gpus, args.seeds, VIEWS)

        print(f"UI benchmark: {CLUSTER} (24,576 GPUs, 56,256 backend links), headless Chromium {browser.version}, "
              f"{os.cpu_count()} CPUs, {connection.vendor}")
        print(f"\nfirst paint, navigation start -> main view drawn with data (budget {PAINT_BUDGET_MS / 1000:g} s)")
        print(f"  {'page':<10} {'cold':>9} {'warm median':>12} {'warm max':>10} {'data fetched':>13}  verdict")
        for name, (cold, warm, worst, size) in paint.items():
            ok = max(cold, worst) <= PAINT_BUDGET_MS
            print(f"  {name:<10} {cold:>6.0f} ms {warm:>9.0f} ms {worst:>7.0f} ms {size / 1024:>9.0f} KiB  "
                  f"{'OK' if ok else 'OVER'}")
        print(f"\nlive frame applied to the page (budget {FRAME_BUDGET_MS:g} ms), one page open during a run like "
              f"#{run.pk}: collective, {args.gpus:,} GPUs, {args.seeds} seeds, {run.status} in {wall:.0f} s")
        print_frames(alone, verdicts=True)
        print("\nthe three views open at once (three renderers, the worker and daphne on the same CPUs; no budget)")
        print_frames(together, verdicts=False)
        print_storage(storage_paint, ckpt, ckpt_wall, ckpt_frame)
        if browser.problems:
            print("\npage problems seen:\n  " + "\n  ".join(browser.problems))
    finally:
        if browser is not None:
            browser.close()
        for s in servers:
            s.stop()
        if redis is not None:
            redis.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
