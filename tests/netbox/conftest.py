"""A real NetBox for the session (tests/netbox/env.py): skipped, saying why, where Python 3.12 or PostgreSQL is
missing, and unless TWIN_NETBOX_TESTS=1. The first run on a machine installs NetBox and migrates its template
database (minutes); the first run after a change to the code that writes clusters into NetBox exports them into a
seeded template (tests/netbox/seeds.py: minutes of NetBox's per-object writes); other runs clone the seed (seconds)
and start from re-exports."""
import os

import pytest

from tests.netbox import env, seeds


@pytest.fixture(scope="session")
def netbox_server():
    if os.environ.get("TWIN_NETBOX_TESTS") != "1":
        pytest.skip("NetBox round trip is opt-in (TWIN_NETBOX_TESTS=1): it needs Python 3.12 and NetBox's cache "
                    "(installed and seeded once: ~15 minutes on a new machine; docs/netbox.md, CI)")
    try:
        env.find_python()
        template = env.seeded("tests", seeds.SPECS, seeds.export_all)
        server = env.serve(f"netbox_test_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}", template=template)
    except env.Unavailable as e:
        pytest.skip(f"no NetBox for the tests: {e}")
    yield server
    server.stop()
