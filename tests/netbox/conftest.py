"""A real NetBox for the session (tests/netbox/env.py): skipped, saying why, where Python 3.12 or PostgreSQL is
missing. The first run on a machine installs NetBox and migrates its template database (minutes); later runs clone
the template (seconds)."""
import os

import pytest

from tests.netbox import env


@pytest.fixture(scope="session")
def netbox_server():
    try:
        env.find_python()
        server = env.serve(f"netbox_test_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}")
    except env.Unavailable as e:
        pytest.skip(f"no NetBox for the tests: {e}")
    yield server
    server.stop()
