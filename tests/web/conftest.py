"""Fixtures of the page tests: clusters built through the build_cluster command, as a user builds them
(tests/module_db.py)."""
import pytest

from tests.module_db import demo_cluster, demo_of_the_module  # noqa: F401 (a fixture)


@pytest.fixture
def demo(demo_of_the_module, db):
    return demo_cluster(demo_of_the_module)
