"""Shared fixtures. Tests read as given / when / then."""
import os
import tempfile
import uuid

import pytest
from channels.layers import channel_layers
from django.conf import settings as django_settings

from twin.celery import app as celery_app

# One test session is one process; under pytest-xdist (scripts/test -n) one per worker, side by side on one Redis.
# Everything a session keeps outside its test database (pytest-django names one per worker) takes a name of its own,
# set here before any test sends or publishes, and inherited by the servers and workers it starts (the environment).
SESSION = uuid.uuid4().hex[:10]
# Celery: this session's tasks go to a queue only its own workers read.
QUEUE = f"twin-tests-{SESSION}"
os.environ["TWIN_CELERY_QUEUE"] = django_settings.CELERY_TASK_DEFAULT_QUEUE = QUEUE
celery_app.conf.task_default_queue = QUEUE
# Live push (snapshots, and the channel layer's groups: run and cluster ids repeat from worker to worker) and rate
# limits of the servers this session starts.
LIVE_PREFIX = f"test:{SESSION}:live:"
os.environ["TWIN_LIVE_KEY_PREFIX"] = LIVE_PREFIX
os.environ["TWIN_THROTTLE_KEY_PREFIX"] = f"test:{SESSION}:throttle"


def live_settings(prefix: str) -> dict:
    """The settings of a live-push key prefix in this process: its snapshots and its channel layer's groups, as a
    server started with ``TWIN_LIVE_KEY_PREFIX=prefix`` derives them (twin/settings.py)."""
    layer = django_settings.CHANNEL_LAYERS["default"]
    return {"TWIN_LIVE_KEY_PREFIX": prefix,
            "CHANNEL_LAYERS": {"default": {**layer, "CONFIG": {**layer["CONFIG"], "prefix": prefix + "asgi"}}}}


for _name, _value in live_settings(LIVE_PREFIX).items():
    setattr(django_settings, _name, _value)
channel_layers.backends = {}    # none made before: the next one takes the session's prefix

# Run files (twin/runs/files.py) of this session only, for this process and the servers and workers it starts (they
# inherit the environment): run ids restart with every test database, the files under var/ would not.
RUN_FILES = tempfile.mkdtemp(prefix="twin-test-run-files-")
os.environ["TWIN_RUN_FILES_DIR"] = RUN_FILES
# Structures kept on disk (twin/inventory/structure_cache.py) of this session only: cluster ids repeat from test
# database to test database.
os.environ["TWIN_STRUCTURE_CACHE_DIR"] = tempfile.mkdtemp(prefix="twin-test-structure-cache-")
# No warming thread (twin/web/warm.py) in the servers the tests start, nor in this process (settings are loaded
# before this file, and test modules import twin.asgi).
os.environ["TWIN_WARM_STRUCTURES"] = "false"
django_settings.TWIN_WARM_STRUCTURES = False
django_settings.TWIN_KEPT_CACHE = ""  # kept values per process only: a test's rows may change without a logged write
# Passwords hashed cheaply in this process (tests/hashers.py); the servers the tests start keep the product's hashers.
django_settings.PASSWORD_HASHERS = ["tests.hashers.FewRoundsPBKDF2"]


# Test packages whose tests share servers started once per package (a daphne, a worker, a browser, clusters built and
# committed; tests/netbox: a real NetBox, opt-in): under pytest-xdist each package's tests all go to one worker
# (--dist loadgroup), which starts them once.
SERVED_PACKAGES = ("e2e", "example_capability", "netbox")


def served_package(nodeid: str) -> str | None:
    parts = nodeid.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" and parts[1] in SERVED_PACKAGES else None


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """--dist loadgroup with each served package one unit of work, every other test a unit of its own. Not by
    ``xdist_group`` markers: pytest-xdist 3.8 groups them by rewriting ``item._nodeid``, which pytest 9 no longer
    reads (a node's id is ``item._id``), so the markers were silently ignored: the e2e tests went one by one to
    either worker, and each worker started the servers, built the clusters and launched a browser of its own."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class ServedPackagesTogether(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return served_package(nodeid) or super()._split_scope(nodeid)

    return ServedPackagesTogether(config, log)


def pytest_collection_modifyitems(config, items):
    # A test marked slow (minutes) or long (up to an hour) runs only when asked for (-m slow, -m long): the suite
    # stays within its budget.
    for mark, what in (("slow", "minutes"), ("long", "up to an hour")):
        if mark not in (config.getoption("markexpr", "") or ""):
            skip = pytest.mark.skip(reason=f"{mark} ({what}): run with -m {mark}")
            for item in items:
                if mark in item.keywords:
                    item.add_marker(skip)
    if not config.pluginmanager.hasplugin("xdist"):
        return
    # The served packages first: each is minutes of one worker's time, which the other workers spend on the rest of
    # the tests meanwhile; handed out last, one of them would run on alone at the end. (The scheduler hands out its
    # largest units first too: --loadscope-reorder.)
    items.sort(key=lambda item: served_package(item.nodeid) is None)


@pytest.fixture(autouse=True, scope="session")
def session_redis_keys():
    """At the end of the session: its keys deleted from Redis (the live push's and rate limits' of the servers it
    started; its queue: unread tasks, bindings), which would otherwise stay for days under names no session reuses."""
    yield
    import redis

    from twin.live import store
    try:
        r = store.client()
        for pattern in (f"test:{SESSION}:*", f"*{QUEUE}*"):
            keys = list(r.scan_iter(match=pattern, count=1000))
            if keys:
                r.delete(*keys)
    except redis.ConnectionError:   # a session that never needed Redis (tests/sim alone), run without one
        pass


@pytest.fixture(autouse=True, scope="session")
def run_files_isolation():
    django_settings.TWIN_RUN_FILES_DIR = RUN_FILES
    django_settings.TWIN_STRUCTURE_CACHE_DIR = os.environ["TWIN_STRUCTURE_CACHE_DIR"]
    yield


@pytest.fixture(autouse=True)
def throttle_isolation(settings):
    """Rate limits and failed-login counts (Redis, cache "throttle") of this test only: Redis outlives the test
    database, and user ids and the test client's address repeat from test to test."""
    throttle = settings.TWIN_THROTTLE_CACHE
    settings.CACHES = {**settings.CACHES,
                       throttle: {**settings.CACHES[throttle], "KEY_PREFIX": f"test:throttle:{uuid.uuid4().hex}"}}
    yield


@pytest.fixture(autouse=True)
def kept_values_isolation():
    """No count, summary or fingerprint kept from another test (twin/inventory/kept.py, structure_cache.py): a
    test's writes are rolled back, which can leave the inventory's version as it was while ids repeat."""
    from twin.inventory.kept import clear_all
    from twin.inventory.structure_cache import forget
    clear_all()
    forget()
    yield



@pytest.fixture(scope="session", autouse=True)
def flush_by_delete_on_postgresql():
    """A transactional test ends with Django's flush of every table; on PostgreSQL that is one TRUNCATE of 40-odd
    tables, about a second each time (new files for every table), which made the PostgreSQL pass minutes slower. A
    DELETE of the few rows a test leaves costs milliseconds; Django's foreign keys there are DEFERRABLE INITIALLY
    DEFERRED, so the order of the tables does not matter within the flush's transaction. Sequences are not reset
    (unless a test asks for it), as TRUNCATE does not reset them either."""
    from django.db.backends.postgresql.operations import DatabaseOperations
    truncate = DatabaseOperations.sql_flush

    def delete(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or not tables:
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return ["SET CONSTRAINTS ALL DEFERRED",
                *(f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(t))}" for t in tables)]

    DatabaseOperations.sql_flush = delete
    yield
    DatabaseOperations.sql_flush = truncate
