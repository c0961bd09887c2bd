"""Live push fixtures: the real ASGI app, the real channels_redis layer on REDIS_URL, a demo cluster, runs."""
import io
import itertools
import uuid
from types import SimpleNamespace

import pytest
import redis
from channels.layers import channel_layers
from django.core.management import call_command
from rest_framework.authtoken.models import Token

from twin.inventory.models import Cluster
from twin.live import meta, store

_fake_run_ids = itertools.count(10_000_000 + uuid.uuid4().int % 1_000_000)


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
    """A run on the demo cluster: a SimulationRun row when twin.runs is installed, else a duck-typed stand-in
    (the publisher only needs id, cluster_id, status and progress)."""
    def make(**fields):
        model = meta.run_model()
        if model is not None:
            kind = fields.pop("kind", None) or model._meta.get_field("kind").choices[0][0]
            return model.objects.create(cluster=demo, kind=kind, params=fields.pop("params", {}), **fields)
        return SimpleNamespace(id=next(_fake_run_ids), cluster_id=demo.id, status="running", progress=0.0,
                               **fields)
    return make


@pytest.fixture
def token(transactional_db):
    from django.contrib.auth.models import User

    return Token.objects.create(user=User.objects.create_user("viewer")).key
