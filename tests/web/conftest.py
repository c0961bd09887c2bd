"""Fixtures of the page tests: clusters built through the build_cluster command, as a user builds them."""
import io

import pytest
from django.core.management import call_command

from tests.module_db import demo_cluster, demo_of_the_module  # noqa: F401 (a fixture)
from twin.inventory import models as m


def build(name="demo-256", *args):
    call_command("build_cluster", name, "--no-progress", *args, stdout=io.StringIO())
    return m.Cluster.objects.get(name=name)


@pytest.fixture
def demo(demo_of_the_module, db):
    return demo_cluster(demo_of_the_module)
