"""``python manage.py build_cluster <preset-or-spec-file>...``: build clusters from specs, with a progress bar."""
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from sim.core.errors import SpecError
from sim.fabric.layout import expand
from sim.fabric.spec import load_spec, preset_names
from twin.inventory import build_status
from twin.inventory.builder import build_cluster, total_rows

REPORT_EVERY_S = 0.5  # seconds between two reports of a build's progress to the overview page (build_status)


class Command(BaseCommand):
    help = ("Build clusters from presets (" + ", ".join(preset_names()) + ") or spec files. A cluster that exists "
            "is left as it is unless --replace; a build is atomic (an error leaves nothing behind).")

    def add_arguments(self, parser):
        parser.add_argument("specs", nargs="*", help="preset names or paths to spec files (.toml or .json)")
        parser.add_argument("--defaults", action="store_true",
                            help="build the default clusters (TWIN_DEFAULT_CLUSTERS) that are absent")
        parser.add_argument("--replace", action="store_true", help="delete and rebuild clusters that exist")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, specs, defaults, replace, no_progress, **options):
        names = list(specs) + (list(settings.TWIN_DEFAULT_CLUSTERS) if defaults else [])
        if not names:
            raise CommandError("name a preset or spec file, or use --defaults")
        try:
            loaded = [load_spec(name) for name in names]
        except SpecError as e:
            raise CommandError(f"spec refused: {e}", returncode=2) from None
        for spec in loaded:
            self._build(spec, replace, not no_progress)

    def _build(self, spec, replace, show_progress):
        start = time.perf_counter()
        bars = []  # made on the first rows written, so a cluster that exists shows no bar
        reported = [0.0]

        def progress(table, rows):
            if not bars:
                bars.append(tqdm(total=total_rows(expand(spec)), unit=" rows", unit_scale=True,
                                 disable=not show_progress, mininterval=0.5, dynamic_ncols=True))
            bars[0].set_description(f"{spec.name}: {table}", refresh=False)
            bars[0].update(rows)
            if time.monotonic() - reported[0] >= REPORT_EVERY_S:
                reported[0] = time.monotonic()
                build_status.report(spec.name, table, bars[0].n, bars[0].total)

        try:
            result = build_cluster(spec, replace=replace, progress=progress)
        finally:
            build_status.finished(spec.name)
            for bar in bars:
                bar.close()
        if not result.created:
            note = " (its stored spec differs from this one: use --replace to rebuild)" if result.spec_differs else ""
            self.stdout.write(f"{spec.name}: already built, nothing to do{note}")
            return
        if result.replaced is not None:
            gone = ", ".join(f"{n:,} {what}" for what, n in result.replaced.items()) or "nothing else"
            self.stdout.write(f"{spec.name}: replaced; deleted with the old cluster: {gone}")
        self.stdout.write(self.style.SUCCESS(
            f"{spec.name}: built {result.rows:,} rows ({spec.layout.gpus:,} GPUs) in {time.perf_counter() - start:.1f} s"))
