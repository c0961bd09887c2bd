"""Shared fixtures. Tests read as given / when / then."""
import uuid

import pytest


@pytest.fixture(autouse=True)
def throttle_isolation(settings):
    """Rate limits and failed-login counts (Redis, cache "throttle") of this test only: Redis outlives the test
    database, and user ids and the test client's address repeat from test to test."""
    throttle = settings.TWIN_THROTTLE_CACHE
    settings.CACHES = {**settings.CACHES,
                       throttle: {**settings.CACHES[throttle], "KEY_PREFIX": f"test:throttle:{uuid.uuid4().hex}"}}
    yield
