"""Fixtures of the page tests: clusters built through the build_cluster command, as a user builds them."""
import io

import pytest
from django.core.management import call_command

from twin.inventory import models as m


def build(name="demo-256", *args):
    call_command("build_cluster", name, "--no-progress", *args, stdout=io.StringIO())
    return m.Cluster.objects.get(name=name)


@pytest.fixture
def demo(db):
    return build()
