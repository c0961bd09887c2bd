"""Schemathesis generates requests from the OpenAPI schema for every operation (reads and writes, with a token
holding every inventory permission) against a built demo cluster: no response may be a server error or break the
schema it documents. (Driven directly: schemathesis' pytest plugin does not run under pytest 9.)"""
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

pytestmark = pytest.mark.django_db
EXAMPLES_PER_OPERATION = 4


@pytest.fixture(autouse=True)
def keep_the_test_connection():
    """Requests go to the WSGI app directly, not through Django's test client, so do as the client does: keep
    Django from closing the test's transaction connection at the end of each request."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


def test_no_server_error_and_responses_match_the_schema(demo, writer):
    schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())
    headers = {"Authorization": f"Token {writer.token}"}
    failures, operations = [], 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def run(case):
            case.call_and_validate(headers=headers, checks=[not_a_server_error, response_schema_conformance])

        try:
            run()
        except (Exception, BaseExceptionGroup) as e:  # collect every operation's failure, report them all
            failures.append(f"{operation.label}: {str(e).strip()[:600]}")
    assert operations > 150
    assert not failures, "\n\n".join(failures)
