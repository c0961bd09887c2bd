"""Schemathesis sends requests generated from the OpenAPI schema to every operation, with a token of a user holding
every permission of every app of ours, on the test database (thrown away after the test), and applies every check
schemathesis has (the set `st run --checks all` enables): no server error, status codes, content types, headers and
bodies as documented, invalid data refused, valid data accepted, authentication enforced... (Driven directly over
the WSGI app: schemathesis' pytest plugin does not run under pytest 9.)

Three kinds of cases per operation, as `st run` makes them: schemathesis' coverage cases (boundary values, missing
and wrong-type parameters, undeclared methods; a deterministic sample of them), and Hypothesis-generated valid
(positive) and invalid (negative) requests."""
import collections
import itertools
import logging
import os
import re

import pytest
import schemathesis
from django.apps import apps
from django.contrib.auth.models import Permission, User
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.generation import GenerationMode

from twin.api.models import ApiToken

pytestmark = pytest.mark.django_db
COVERAGE_CASES_PER_OPERATION = 6
EXAMPLES_PER_MODE = 1  # positive, then negative
# Our apps' permissions, and the schedules' (django_celery_beat backs /api/schedules/).
# A regular expression to run only some operations while fixing them, e.g. SCHEMATHESIS_OPERATIONS='/api/runs/'.
ONLY = os.environ.get("SCHEMATHESIS_OPERATIONS", "")
APPS = tuple(c.label for c in apps.get_app_configs() if c.name.startswith("twin.")) + ("django_celery_beat",)

# A valid request may still be refused for what no schema can say: a reference to a row that does not exist, a name
# already taken, items of different clusters. Such 400s are counted apart ("refused by the data"); any other
# refusal of valid data fails (the schema must then describe the constraint: bounds, patterns, enums).
BY_THE_DATA = re.compile(r"object does not exist|no such object|already exists|must make a unique set|belongs to "
                         r"another cluster|does not exist|^no [a-z ]+ (with id )?[0-9]+$", re.I)


# A cluster's spec is described to its top level (twin/api/inventory/serializers.py SpecField); its tables' own rules
# (required fields, catalog models, port counts of each tier: sim.fabric.spec.parse_spec) are the server's. Refusals
# naming a field inside those tables are counted apart too ("refused by the spec's rules").
SPEC_TABLE_FIELD = re.compile(r"^(layout|backend|frontend|storage\[\d+\])\.[a-z_.\[\]0-9]+: ")


def refused_by_the_spec_rules(response) -> bool:
    try:
        body = response.json()
    except ValueError:
        return False
    return (response.status_code == 400 and isinstance(body, dict) and set(body) == {"spec"}
            and all(SPEC_TABLE_FIELD.search(m) for m in messages(body)))


def messages(body):
    """The leaf messages of an error body (a dict of lists, a list of dicts for bulk calls)."""
    if isinstance(body, dict):
        return [m for v in body.values() for m in messages(v)]
    if isinstance(body, list):
        return [m for v in body for m in messages(v)]
    return [str(body)]


def refused_by_the_data(response) -> bool:
    try:
        found = messages(response.json())
    except ValueError:
        return False
    return response.status_code == 400 and bool(found) and all(BY_THE_DATA.search(m) for m in found)


def all_checks():
    load_all_checks()
    return CHECKS.get_all()


@pytest.fixture(autouse=True)
def keep_the_test_connection():
    """Requests go to the WSGI app directly, not through Django's test client, so do as the client does: keep
    Django from closing the test's transaction connection at the end of each request."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture(autouse=True)
def quiet_request_log():
    """Thousands of 4xx lines otherwise; the failures below carry what matters."""
    log = logging.getLogger("django.request")
    level, log.level = log.level, logging.CRITICAL
    yield
    log.level = level


@pytest.fixture
def everything_token(db):
    user = User.objects.create_user("everything")
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label__in=APPS))
    return ApiToken.issue(user)[1]


def test_every_check_on_every_operation(demo, everything_token):
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application())
    logging.getLogger("django.request").setLevel(logging.CRITICAL)  # django.setup() above configured logging anew
    headers = {"Authorization": f"Token {everything_token}"}
    checks = all_checks()
    failures, cases, operations = collections.Counter(), collections.Counter(), 0
    by_the_data, by_the_spec = collections.Counter(), collections.Counter()
    reports = []

    def call(case, operation):
        cases[operation.label] += 1
        response = case.call(headers=headers)
        try:
            case.validate_response(response, checks, headers=headers, transport_kwargs={"headers": headers})
        except (Exception, BaseExceptionGroup) as e:
            errors = e.exceptions if isinstance(e, BaseExceptionGroup) else [e]
            for error in errors:
                name = type(error).__name__
                if name == "RejectedPositiveData" and refused_by_the_data(response):
                    by_the_data[operation.label] += 1
                    continue
                if name == "RejectedPositiveData" and refused_by_the_spec_rules(response):
                    by_the_spec[operation.label] += 1
                    continue
                failures[name] += 1
                message = " | ".join(line for line in str(error).splitlines() if line.strip())
                reports.append(f"{operation.label} [{name}] {case.method} {case.formatted_path} "
                               f"query={case.query} body={str(case.body)[:120]}: {message[:300]} "
                               f"-> {response.status_code} {response.text[:300]}")

    for result in schema.get_all_operations():
        operation = result.ok()
        if not re.search(ONLY, operation.label):
            continue
        operations += 1
        config = schema.config.generation_for(operation=operation)
        coverage = schema.iter_coverage_cases(operation, generation_modes=list(GenerationMode),
                                              generation_config=config)
        for case in itertools.islice(coverage, COVERAGE_CASES_PER_OPERATION):
            call(case, operation)
        for mode in GenerationMode:
            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(max_examples=EXAMPLES_PER_MODE, deadline=None, derandomize=True, database=None,
                      suppress_health_check=list(HealthCheck), phases=["generate"])
            def run(case):
                call(case, operation)
            try:
                run()
            except Unsatisfiable:  # nothing to make invalid (no parameter, no body)
                pass
    total = sum(cases.values())
    print(f"\nschemathesis: {operations} operations, {total} cases, {len(checks)} checks "
          f"({', '.join(c.__name__ for c in checks)}); valid requests refused by the data: "
          f"{sum(by_the_data.values())}, by a spec's rules: {sum(by_the_spec.values())}; "
          f"failures by check: {dict(failures) or 'none'}")
    assert operations > 150 or ONLY
    if reports:
        pytest.fail("\n".join(reports), pytrace=False)
