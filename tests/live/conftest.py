"""Live push fixtures: the real ASGI app, the real channels_redis layer on REDIS_URL, a demo cluster, runs."""
import io
import uuid

import pytest
import redis
from channels.layers import channel_layers
from django.core.management import call_command

from twin.api.models import ApiToken
from twin.inventory.models import Cluster
from twin.live import store
from twin.runs.models import SimulationRun


@pytest.fixture(autouse=True)
def live_isolation(settings):
    """Fresh Redis keys per test (ids repeat across test databases) and a fresh channel layer per test (the layer
    binds its connections to an event loop; each test runs its own loop)."""
    settings.TWIN_LIVE_KEY_PREFIX = f"test:live:{uuid.uuid4().hex}:"
    channel_layers.backends = {}
    yield
    try:
        r = store.client()
        keys = list(r.scan_iter(match=settings.TWIN_LIVE_KEY_PREFIX + "*", count=1000))
        if keys:
            r.delete(*keys)
    except redis.ConnectionError:   # a test that never touched Redis (frames), run without one
        pass
    channel_layers.backends = {}


@pytest.fixture
def demo(transactional_db):
    call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())
    return Cluster.objects.get(name="demo-256")


@pytest.fixture
def make_run(demo):
    """A SimulationRun on the demo cluster."""
    def make(**fields):
        kind = fields.pop("kind", None) or "collective"
        return SimulationRun.objects.create(cluster=demo, kind=kind, params=fields.pop("params", {}), **fields)
    return make


@pytest.fixture
def token(transactional_db):
    from django.contrib.auth.models import User

    return ApiToken.issue(User.objects.create_user("viewer"))[1]
