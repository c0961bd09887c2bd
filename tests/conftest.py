"""Shared fixtures. Tests read as given / when / then."""
import os
import tempfile
import uuid

import pytest
from django.conf import settings as django_settings

# Run files (twin/runs/files.py) of this session only, for this process and the servers and workers it starts (they
# inherit the environment): run ids restart with every test database, the files under var/ would not.
RUN_FILES = tempfile.mkdtemp(prefix="twin-test-run-files-")
os.environ["TWIN_RUN_FILES_DIR"] = RUN_FILES


@pytest.fixture(autouse=True, scope="session")
def run_files_isolation():
    django_settings.TWIN_RUN_FILES_DIR = RUN_FILES
    yield


@pytest.fixture(autouse=True)
def throttle_isolation(settings):
    """Rate limits and failed-login counts (Redis, cache "throttle") of this test only: Redis outlives the test
    database, and user ids and the test client's address repeat from test to test."""
    throttle = settings.TWIN_THROTTLE_CACHE
    settings.CACHES = {**settings.CACHES,
                       throttle: {**settings.CACHES[throttle], "KEY_PREFIX": f"test:throttle:{uuid.uuid4().hex}"}}
    yield
