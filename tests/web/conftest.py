"""Fixtures of the page tests: clusters built through the build_cluster command, as a user builds them."""
import io

import pytest
from django.core.management import call_command

from tests.module_db import shared_rows
from twin.inventory import models as m


def build(name="demo-256", *args):
    call_command("build_cluster", name, "--no-progress", *args, stdout=io.StringIO())
    return m.Cluster.objects.get(name=name)


@pytest.fixture(scope="module")
def demo_of_the_module(request, django_db_blocker):
    """True in a module that sets ``SHARED_DEMO = True``: demo-256 built once for it (tests/module_db.py). Elsewhere
    False: each test builds its own."""
    if not getattr(request.module, "SHARED_DEMO", False):
        yield False
        return
    for _ in shared_rows(request, django_db_blocker, build):
        yield True


@pytest.fixture
def demo(demo_of_the_module, db):
    return m.Cluster.objects.get(name="demo-256") if demo_of_the_module else build()
