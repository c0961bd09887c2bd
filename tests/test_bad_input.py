"""Bad input, table-driven: every row is refused with a clear error naming the field (HTTP 4xx with a JSON body,
CLI and spec files exit 2 with one line), never a server error or a traceback, and nothing is written (the rows of
the models it could touch, and the change log, are counted before and after).

REST rows cover the inventory, the topology, the live snapshots and links, and authentication; the CLI rows are
tests/sim/test_cli.py's REFUSED table, run here by its own test; the spec-file rows build bad spec files with
``manage.py build_cluster``. The runs API's rows are in tests/runs/test_bad_input_runs.py.
"""
from __future__ import annotations

import io
import json

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from tests.sim.test_cli import REFUSED as CLI_REFUSED
from tests.sim.test_cli import test_refused_input_ends_with_exit_2_and_one_line as check_cli_row
from twin.api.models import ApiToken
from twin.inventory import models as m

BIG = str(10**30)
DEEP = "[" * 100_000
WRITES = (m.GPU, m.Link, m.Host, m.ObjectChange, ApiToken)


def counts() -> dict:
    return {model.__name__: model.objects.count() for model in WRITES}


@pytest.fixture
def demo(db):
    call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())
    return m.Cluster.objects.get(name="demo-256")


@pytest.fixture
def clients(db):
    writer = User.objects.create_user("writer")
    writer.user_permissions.add(*Permission.objects.filter(content_type__app_label="inventory"))
    by_token = APIClient()
    by_token.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(writer)[1]}")
    reader = APIClient()
    reader.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(User.objects.create_user('reader'))[1]}")
    bad_token = APIClient()
    bad_token.credentials(HTTP_AUTHORIZATION="Token twin_000000000000.not-a-token")
    return {"writer": by_token, "reader": reader, "anon": APIClient(), "bad token": bad_token}


def first_link(demo):
    return m.Link.objects.filter(cluster=demo).order_by("id").first().id


def first_gpu(demo):
    return m.GPU.objects.filter(cluster=demo).order_by("id").first().id


# (id, client, method, path (a function of the demo cluster when callable), body, status, what the answer names)
REST = [
    # inventory: bodies
    ("deep json", "writer", "post", "/api/inventory/gpus/", DEEP, 400, "TWIN_API_MAX_JSON_DEPTH"),
    ("deep json, bulk", "writer", "patch", "/api/inventory/links/", DEEP, 400, "nested"),
    ("body too big", "writer", "post", "/api/inventory/gpus/", "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1),
     413, "DATA_UPLOAD_MAX_MEMORY_SIZE"),
    ("not json", "writer", "post", "/api/inventory/gpus/", "{not json", 400, "JSON parse error"),
    ("bad status", "writer", "patch", lambda d: f"/api/inventory/links/{first_link(d)}/", {"status": "banana"},
     400, "status"),
    ("bulk, one bad", "writer", "patch", "/api/inventory/links/",
     lambda d: [{"id": first_link(d), "status": "failed"}, {"id": first_link(d) + 1, "status": "banana"}],
     400, "status"),
    ("bulk, id past 2**63", "writer", "patch", "/api/inventory/links/", [{"id": 10**30, "status": "failed"}],
     400, "id"),
    ("foreign key past 2**63", "writer", "patch", lambda d: f"/api/inventory/gpus/{first_gpu(d)}/",
     {"host": 10**30}, 400, "host"),
    # inventory: query parameters
    ("filter id past 2**63", "anon", "get", f"/api/inventory/gpus/?id={BIG}", None, 400, "id"),
    ("filter id__in past 2**63", "anon", "get", f"/api/inventory/links/?switch_id=1,{BIG}", None, 400, "switch_id"),
    ("filter with a NUL", "anon", "get", "/api/inventory/gpus/?name=a%00b", None, 400, "name"),
    ("changes cluster past 2**63", "anon", "get", f"/api/inventory/changes/?cluster={BIG}", None, 400, "cluster"),
    ("changes user past 2**63", "anon", "get", f"/api/inventory/changes/?user={BIG}", None, 400, "user"),
    ("runs id__in past 2**63", "anon", "get", f"/api/runs/?id__in={BIG}", None, 400, "id__in"),
    ("limit garbage", "anon", "get", "/api/inventory/gpus/?limit=abc", None, 400, "limit"),
    ("limit negative", "anon", "get", "/api/inventory/gpus/?limit=-1", None, 400, "limit"),
    ("offset past 2**63", "anon", "get", f"/api/inventory/gpus/?offset={BIG}", None, 400, "offset"),
    ("offset garbage", "anon", "get", "/api/inventory/gpus/?offset=1e3", None, 400, "offset"),
    ("offset signs", "anon", "get", "/api/inventory/gpus/?offset=-+5", None, 400, "offset"),
    ("limit of 5,000 digits", "anon", "get", "/api/inventory/gpus/?limit=" + "9" * 5000, None, 400, "limit"),
    ("filter of 5,000 digits", "anon", "get", "/api/inventory/gpus/?id=" + "9" * 5000, None, 400, "id"),
    ("cursor garbage", "anon", "get", "/api/inventory/gpus/?cursor=garbage", None, 400, "cursor"),
    ("cursor limit garbage", "anon", "get", "/api/inventory/gpus/?pagination=cursor&limit=x", None, 400, "limit"),
    ("ordering unknown", "anon", "get", "/api/inventory/gpus/?ordering=-nosuch", None, 400, "ordering"),
    ("runs ordering unknown", "anon", "get", "/api/runs/?ordering=zzz", None, 400, "ordering"),
    # topology
    ("paths src past 2**63", "anon", "get", f"/api/topology/paths/?src_gpu={BIG}&dst_gpu=1", None, 400, "src_gpu"),
    ("paths dst garbage", "anon", "get", "/api/topology/paths/?src_gpu=1&dst_gpu=abc", None, 400, "dst_gpu"),
    # live
    ("snapshot of no run", "anon", "get", f"/api/live/runs/{BIG}/snapshot/", None, 404, "no run"),
    ("links of no cluster", "anon", "get", "/api/live/clusters/nope/links/", None, 404, "no cluster"),
    # auth
    ("bad token", "bad token", "get", "/api/inventory/gpus/", None, 401, "Invalid token"),
    ("write without permission", "reader", "patch", lambda d: f"/api/inventory/links/{first_link(d)}/",
     {"status": "failed"}, 403, "permission"),
    ("write anonymously", "anon", "post", "/api/inventory/gpus/", {"name": "x"}, 401, "credentials"),
]


@pytest.mark.parametrize("row", REST, ids=[r[0] for r in REST])
def test_rest_refusals_name_the_field_and_write_nothing(demo, clients, row):
    _id, who, method, path, body, status, named = row
    path = path(demo) if callable(path) else path
    body = body(demo) if callable(body) else body
    before = counts()
    kwargs = {}
    if body is not None:
        kwargs = {"data": body if isinstance(body, str) else json.dumps(body), "content_type": "application/json"}
    resp = getattr(clients[who], method)(path, **kwargs)
    assert resp.status_code == status, resp.content[:300]
    assert resp["Content-Type"].startswith("application/json")
    assert named in json.dumps(resp.json()), resp.json()
    assert counts() == before


def test_non_api_pages_keep_html_for_a_body_too_big(db, client):
    resp = client.post("/accounts/login/", {"username": "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)})
    assert resp.status_code == 400 and resp["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("argv, message", CLI_REFUSED,
                         ids=[" ".join(getattr(a, "__name__", a) for a in argv[:4]) for argv, _ in CLI_REFUSED])
def test_cli_refusals(capsys, tmp_path, argv, message):
    """tests/sim/test_cli.py's REFUSED rows: exit 2, one line naming the field."""
    check_cli_row(capsys, tmp_path, argv, message)


SPEC = (settings.BASE_DIR / "sim" / "presets" / "demo-256.toml").read_text()
SPEC_FILES = [
    ("zones 0", SPEC.replace("zones = 2", "zones = 0"), "layout.zones"),
    ("uplinks banana", SPEC.replace("uplinks = 16", 'uplinks = "banana"'), "backend.leaf.uplinks"),
    ("unknown gpu", SPEC.replace('gpu = "h100-sxm-80gb"', 'gpu = "no-such-gpu"'), "layout.gpu"),
    ("not toml", "name = [", "spec"),
    ("nested too deeply", "a = " + "[" * 5000 + "]" * 5000, "spec"),
]


@pytest.mark.parametrize("text, field", [r[1:] for r in SPEC_FILES], ids=[r[0] for r in SPEC_FILES])
def test_spec_file_refusals_exit_2_name_the_field_and_write_nothing(db, tmp_path, text, field):
    path = tmp_path / "bad.toml"
    path.write_text(text.replace('name = "demo-256"', 'name = "bad-spec"'))
    before = {"clusters": m.Cluster.objects.count(), **counts()}
    with pytest.raises(CommandError) as refused:
        call_command("build_cluster", str(path), "--no-progress", stdout=io.StringIO())
    assert refused.value.returncode == 2 and field in str(refused.value) and "\n" not in str(refused.value)
    assert {"clusters": m.Cluster.objects.count(), **counts()} == before
