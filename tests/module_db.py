"""Rows built once for a test module and shared by its tests (the page and API tests' demo-256).

:func:`shared_rows` builds them in a transaction left open until the module's last test, then rolled back. Each
test's own transaction (pytest-django's, as for any ``db`` test) is a savepoint inside it: what a test writes is
rolled back at its end as before, and the next test finds the shared rows as they were built. Every test of the
module after the first that asks for them sees them, asking or not: a module shares them (``SHARED_DEMO = True``)
only where that is fine for all of its tests, and never with transactional tests (``transactional_db`` flushes
every table; refused here). :func:`demo_of_the_module` and :func:`demo_cluster` are the API's, the pages' and the
runs' ``demo`` fixtures."""
import io

import pytest


def transactional_test(item) -> bool:
    marker = item.get_closest_marker("django_db")
    return bool(marker and (marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences"))
                or {"transactional_db", "live_server", "django_db_reset_sequences"} & set(item.fixturenames))


def shared_rows(request, django_db_blocker, build):
    """The body of a module-scoped fixture (``yield from shared_rows(...)``): ``build()`` run once, in a
    transaction its module's tests run inside; yields what it returns."""
    from django.db import transaction

    transactional = [item.name for item in request.session.items
                     if getattr(item, "module", None) is request.module and transactional_test(item)]
    assert not transactional, f"rows shared by a module with transactional tests: {transactional}"
    request.getfixturevalue("django_db_setup")
    with django_db_blocker.unblock():
        module = transaction.atomic()
        module.__enter__()
        try:
            value = build()
        except BaseException:
            transaction.set_rollback(True)
            module.__exit__(None, None, None)
            raise
    try:
        yield value
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            module.__exit__(None, None, None)


def build(name="demo-256", *args):
    """A cluster built through the build_cluster command, as a user builds it (``args``: the command's options)."""
    from django.core.management import call_command

    from twin.inventory.models import Cluster
    call_command("build_cluster", name, "--no-progress", *args, stdout=io.StringIO())
    return Cluster.objects.get(name=name)


@pytest.fixture(scope="module")
def demo_of_the_module(request, django_db_blocker):
    """True in a module that sets ``SHARED_DEMO = True``: demo-256 built once for it (:func:`shared_rows`).
    Elsewhere False: each test builds its own."""
    if not getattr(request.module, "SHARED_DEMO", False):
        yield False
        return
    for _ in shared_rows(request, django_db_blocker, build):
        yield True


def demo_cluster(shared: bool):
    """The body of a ``demo`` fixture: the module's demo-256, or one built for the test."""
    from twin.inventory.models import Cluster
    return Cluster.objects.get(name="demo-256") if shared else build()
