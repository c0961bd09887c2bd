"""REST probe (issue 24): good, malformed and hostile requests to every endpoint of a live twin's OpenAPI schema, as
four identities (anonymous, a reader without permissions, two writers with every permission: ``owner`` and
``other``), plus the issue's named probes. Prints the figures; ``--json FILE`` writes them. Always exits 0.

    # a throwaway twin of a checkout (fresh SQLite, free port, demo-256), probed, then stopped:
    REDIS_URL=redis://127.0.0.1:6379/7 .venv/bin/python bench/probe_api.py --start [--checkout DIR] [--json out.json]
    # a running twin: tokens given, or made with manage.py of the same checkout and database (--setup)
    .venv/bin/python bench/probe_api.py --url http://127.0.0.1:8000 --setup
    .venv/bin/python bench/probe_api.py --url URL --reader-token T --owner-token T --other-token T

Safe to run: every write that may succeed goes to the probe's own objects (a scratch cluster built from demo-256's
spec under the name ``probe-scratch``, catalog rows, scenarios, schedules and runs it creates); any run it starts is
cancelled and deleted at once; its objects are deleted at the end. Writes to anything else are made only with
identities that must be refused, or with ids that do not exist. The lockout probe (ten wrong tokens from this
address) runs last, as it may lock this address out for TWIN_LOGIN_FAILURES_WINDOW seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
import probe_twin  # noqa: E402  (bench/ on the path)

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = "probe-scratch"
MISSING_ID = 999_999_999
IDENTITIES = ("anon", "reader", "owner", "other")
WRITE = ("POST", "PUT", "PATCH", "DELETE")
BAD_IDS = ("abc", "-1", "1.5", "99999999999999999999999", "%00", "1;DROP")
DEEP = 20_000


def deep_json(n: int = DEEP) -> str:
    return "[" * n + "]" * n


def deep_obj(n: int = DEEP) -> str:
    return '{"a":' * n + "1" + "}" * n


class Probe:
    def __init__(self, url: str, tokens: dict, timeout: float = 60.0):
        self.url, self.tokens, self.timeout = url.rstrip("/"), tokens, timeout
        self.http = requests.Session()
        self.cases: list[dict] = []
        self.named: list[dict] = []
        self.own_runs: set[int] = set()
        self.cleanup: list[str] = []          # detail paths of our own objects, deleted last-created first

    # -- requests -------------------------------------------------------------------------------------------------
    def call(self, method, path, who="owner", body=None, raw=None, params=None, headers=None, token=None,
             record=True, tag="", write_kind=""):
        h = {"Accept": "application/json", **(headers or {})}
        tok = token if token is not None else self.tokens.get(who)
        if tok:
            h["Authorization"] = f"Token {tok}"
        data = None
        if raw is not None:
            data = raw.encode() if isinstance(raw, str) else raw
            h.setdefault("Content-Type", "application/json")
        elif body is not None:
            data = json.dumps(body)
            h["Content-Type"] = "application/json"
        try:
            r = self.http.request(method, self.url + path, data=data, params=params, headers=h, timeout=self.timeout,
                                  allow_redirects=False)
            status, text = r.status_code, r.text
        except requests.RequestException as e:
            status, text = 0, f"{type(e).__name__}: {e}"
        if record:
            self.cases.append({"method": method, "path": path, "who": who, "status": status, "tag": tag,
                               "write": write_kind, "params": params, "excerpt": text[:300]})
        if record and method == "POST" and status == 201:
            self._made(path, text)
        return status, text

    def _made(self, path, text):
        """Something a recorded request created: a run is dropped at once, anything else deleted at the end."""
        try:
            obj = json.loads(text)
        except ValueError:
            return
        if not isinstance(obj, dict) or "id" not in obj:
            return
        if "status" in obj and "kind" in obj and "scenario" in obj:
            self._drop_run(text)
        elif path.startswith(("/api/inventory/", "/api/runs/scenarios/", "/api/runs/schedules/")):
            base = path.split(".json")[0].rstrip("/")
            self.cleanup.append(f"{base}/{obj['id']}/")

    def _drop_run(self, text):
        """A run this probe started: cancel and delete it at once (whoever may)."""
        try:
            rid = json.loads(text)["id"]
        except (ValueError, KeyError, TypeError):
            return
        self.own_runs.add(rid)
        for who in ("owner", "other"):
            self.call("POST", f"/api/runs/{rid}/cancel/", who, record=False)
            if self.call("DELETE", f"/api/runs/{rid}/", who, record=False)[0] in (204, 404):
                break

    def get_json(self, path, who="owner", params=None):
        status, text = self.call("GET", path, who, params=params, record=False)
        try:
            return json.loads(text) if status == 200 else None
        except ValueError:
            return None

    def named_probe(self, name, refused, status, text, expect="refused"):
        self.named.append({"probe": name, "refused": bool(refused), "status": status, "excerpt": text[:160],
                           "expect": expect})

    # -- own objects ----------------------------------------------------------------------------------------------
    def first(self, path, **params):
        data = self.get_json(path, params={"limit": 1, **params})
        rows = data.get("results", data) if isinstance(data, dict) else data
        return rows[0] if rows else None

    def scratch_cluster(self):
        row = self.first("/api/inventory/clusters/", name=SCRATCH)
        return row if row and row.get("name") == SCRATCH else None

    def make_scenario(self, who="owner", name=None):
        st, text = self.call("POST", "/api/runs/scenarios/", who, record=False, body={
            "name": name or f"probe-{uuid.uuid4().hex[:8]}", "kind": "collective", "cluster": self.cluster_ref,
            "params": {"gpus": 8, "sizes": "1M"}})
        return json.loads(text)["id"] if st == 201 else None

    def make_schedule(self, scenario, who="owner"):
        st, text = self.call("POST", "/api/runs/schedules/", who, record=False, body={
            "name": f"probe-{uuid.uuid4().hex[:8]}", "scenario": scenario, "enabled": False,
            "interval": {"every": 1, "period": "days"}})
        return json.loads(text)["id"] if st == 201 else None

    def make_run(self, who="owner", kind="collective", params=None):
        """A small run, left alive (not cancelled): the caller probes it, then deletes it."""
        st, text = self.call("POST", "/api/runs/", who, record=False, body={
            "kind": kind, "cluster": self.cluster_name, "params": params or {"gpus": 8, "sizes": "1M"}})
        if st != 201:
            return None
        rid = json.loads(text)["id"]
        self.own_runs.add(rid)
        return rid

    def clone_catalog_row(self, segment):
        """A new catalog row (gpu-models, ...) copied from the first one under a new name: ours to edit and delete."""
        row = self.first(f"/api/inventory/{segment}/")
        if not row or "name" not in row:
            return None
        body = {k: v for k, v in row.items() if k not in ("id", "url", "created", "updated")}
        body["name"] = f"probe-{uuid.uuid4().hex[:8]}"
        if "slug" in body:
            body["slug"] = body["name"]
        st, text = self.call("POST", f"/api/inventory/{segment}/", "owner", body=body, record=False)
        if st != 201:
            return None
        oid = json.loads(text)["id"]
        self.cleanup.append(f"/api/inventory/{segment}/{oid}/")
        return oid


def in_scratch(row: dict, sid: int) -> bool:
    """Whether an inventory row belongs to the scratch cluster (by its cluster or its name)."""
    c = row.get("cluster")
    return (isinstance(c, dict) and c.get("id") == sid) or c == sid or \
        str(row.get("display") or row.get("name") or "").startswith(SCRATCH + ".")


def schema_ops(probe):
    schema = probe.get_json("/api/schema/", params={"format": "json"})
    if schema is None:
        raise SystemExit("no schema at /api/schema/?format=json")
    return schema


def request_schema(schema, op):
    content = (op.get("requestBody") or {}).get("content", {}).get("application/json", {})
    ref = (content.get("schema") or {}).get("$ref")
    comp = schema["components"]["schemas"].get(ref.rsplit("/", 1)[-1]) if ref else None
    return comp or {}


def bad_values(prop):
    """(label, value) pairs of wrong type and out of range for one schema property."""
    t = prop.get("type")
    out = []
    if t == "integer":
        out += [("string", "abc"), ("float", 1.5), ("huge", 10 ** 30), ("negative", -10 ** 30)]
        if "maximum" in prop:
            out.append(("over-max", prop["maximum"] + 1))
        if "minimum" in prop:
            out.append(("under-min", prop["minimum"] - 1))
    elif t == "number":
        out += [("string", "NaN"), ("huge", 1e308), ("object", {"a": 1})]
        if "maximum" in prop:
            out.append(("over-max", prop["maximum"] * 10 + 1))
    elif t == "boolean":
        out += [("string", "maybe"), ("list", [1])]
    elif t == "array":
        out += [("string", "x"), ("deep", [[[[["x"]]]]])]
    elif t == "object":
        out += [("string", "x"), ("list", [1, 2])]
    else:
        out += [("object", {"a": [1]}), ("long", "x" * 100_000), ("nul", "a\x00b")]
    return out


GENERIC_BAD_RAW = [("bad-json", "{bad"), ("list", "[]"), ("null", "null"), ("string", '"x"'),
                   ("deep-list", deep_json()), ("deep-object", deep_obj()), ("huge-number", "1" + "0" * 5000),
                   ("inf-number", '{"id": 1e999999}')]
LIST_BAD_PARAMS = [("limit", "abc"), ("limit", "-1"), ("limit", str(10 ** 30)), ("offset", "-5"), ("offset", "x"),
                   ("cursor", "garbage!"), ("pagination", "bogus"), ("brief", "maybe"), ("brief", "2"),
                   ("ordering", "no_such_field"), ("id", "abc"), ("format", "xml")]


def corpus(probe: Probe, schema: dict, ids: dict):
    """Every path x method x identity: the good request and the malformed ones."""
    for path, ops in schema["paths"].items():
        segment = path.rstrip("/")
        detail = "{" in path
        fill = path
        for key, value in ids.get(path, {}).items():
            fill = fill.replace("{" + key + "}", str(value))
        for tmpl in ("{id}", "{run_id}", "{name}"):
            fill = fill.replace(tmpl, str(MISSING_ID) if tmpl != "{name}" else "no-such-cluster")
        for who in IDENTITIES:
            probe.call("OPTIONS", fill, who, tag="options")
        for method in [m.upper() for m in ops if m in ("get", "post", "put", "patch", "delete")]:
            op = ops[method.lower()]
            req = request_schema(schema, op)
            good = ids.get((path, method))          # a good body for our own object, when we have one
            for who in IDENTITIES:
                if method == "GET":
                    probe.call("GET", fill, who, tag="good")
                    continue
                if who in ("anon", "reader"):
                    probe.call(method, fill, who, body=good if good is not None else {}, tag="unauthorized",
                               write_kind="unauthorized")
            if method == "GET":
                params = {p["name"]: p for p in op.get("parameters", []) if p.get("in") == "query"}
                if not detail or any(k in params for k in ("limit", "cursor")):
                    for name, value in LIST_BAD_PARAMS:
                        probe.call("GET", fill, "owner", params={name: value}, tag=f"query {name}={value[:20]}")
                for name, p in params.items():
                    sch = p.get("schema", {})
                    for label, value in bad_values(sch.get("items", sch) if sch.get("type") == "array" else sch)[:2]:
                        if isinstance(value, (dict, list)) or (isinstance(value, str) and len(value) > 1000):
                            value = json.dumps(value)[:1000]
                        probe.call("GET", fill, "anon", params={name: str(value)}, tag=f"filter {name} {label}")
            if detail:
                base = segment.rsplit("/", 1)[0] if segment.endswith("}") else segment
                # format suffixes on detail and custom-action paths; non-numeric ids
                probe.call(method if method != "DELETE" else "GET", fill.rstrip("/") + ".json", "owner",
                           body=good if method in ("PUT", "PATCH", "POST") else None, tag="format-suffix")
                if method == "GET":
                    for bad in BAD_IDS:
                        for tmpl in ("{id}", "{run_id}"):
                            if tmpl in path:
                                probe.call("GET", path.replace(tmpl, bad).replace("{name}", "demo-256"), "anon",
                                           tag=f"bad-id {bad}")
            else:
                probe.call("GET", segment + ".json", "anon", tag="format-suffix")
            if method in ("POST", "PATCH") and good is not None:
                probe.call(method, fill, "owner", body=good, tag="good")
            if method in ("POST", "PUT", "PATCH") and (good is not None or not detail and method == "POST"):
                target = fill
                for label, raw in GENERIC_BAD_RAW:
                    probe.call(method, target, "owner", raw=raw, tag=f"raw {label}")
                probe.call(method, target, "owner", raw="a=1", headers={"Content-Type": "text/plain"},
                           tag="content-type")
                base_body = good if isinstance(good, dict) else {}
                probe.call(method, target, "owner", body={**base_body, "zzz_unknown_field": 1}, tag="unknown field")
                for name, prop in req.get("properties", {}).items():
                    if prop.get("readOnly"):
                        continue
                    for label, value in bad_values(prop):
                        probe.call(method, target, "owner", body={**base_body, name: value}, tag=f"{name} {label}")
            if method in ("PUT", "PATCH", "DELETE") and not detail:      # bulk writes: malformed lists only
                for label, body in (("not-list", {"id": MISSING_ID}), ("bad-id", [{"id": "x"}]),
                                    ("missing", [{"id": MISSING_ID}]), ("no-id", [{}]), ("nested", [[[]]])):
                    probe.call(method, fill, "owner", body=body, tag=f"bulk {label}")


def run_params_corpus(probe: Probe, schema: dict):
    """Each run kind's every parameter with wrong types and out-of-range values (any run made is dropped)."""
    comps = schema["components"]["schemas"]
    kinds = comps.get("RunKindEnum", {}).get("enum", [])
    for kind in kinds:
        comp = comps.get(f"{''.join(w.title() for w in kind.split('_'))}ParamsRequest")
        if kind == "fabric_health":
            comp = comps.get("FabricHealthParamsRequest")
        if not comp:
            probe.call("POST", "/api/runs/", "owner", body={"kind": kind, "cluster": probe.cluster_name,
                                                             "params": {"zzz": 1}}, tag=f"{kind} unknown param")
            continue
        for name, prop in comp.get("properties", {}).items():
            for label, value in bad_values(prop):
                probe.call("POST", "/api/runs/", "owner", tag=f"{kind}.{name} {label}",
                           body={"kind": kind, "cluster": probe.cluster_name, "params": {name: value}})


def cross_user(probe: Probe):
    """The other writer against the owner's runs, scenarios and schedules (each on a fresh object)."""
    def one(name, method, path, body=None):
        st, text = probe.call(method, path, "other", body=body, tag=name, write_kind="cross-user")
        return st, text

    rid = probe.make_run()
    if rid:
        st, text = one("cancel other's run", "POST", f"/api/runs/{rid}/cancel/")
        probe.named_probe("other user cancels a run", not 200 <= st < 300, st, text)
        st, text = one("delete other's run", "DELETE", f"/api/runs/{rid}/")
        probe.named_probe("other user deletes a run", not 200 <= st < 300, st, text)
        probe._drop_run(json.dumps({"id": rid}))
    else:
        probe.named_probe("other user cancels/deletes a run", False, 0, "could not make a run", expect="n/a")
    sc = probe.make_scenario()
    if sc:
        one("patch other's scenario", "PATCH", f"/api/runs/scenarios/{sc}/", {"description": "probe: not yours"})
        # allowed by design: anyone who may start runs may start one of a scenario they can read; the run is theirs
        st, text = probe.call("POST", f"/api/runs/scenarios/{sc}/run/", "other", tag="run other's scenario (own run)")
        if 200 <= st < 300:
            probe._drop_run(text)
        sch = probe.make_schedule(sc)
        if sch:
            one("patch other's schedule", "PATCH", f"/api/runs/schedules/{sch}/", {"enabled": False})
            st, text = one("delete other's schedule", "DELETE", f"/api/runs/schedules/{sch}/")
            probe.named_probe("other user deletes a schedule", not 200 <= st < 300, st, text)
            probe.call("DELETE", f"/api/runs/schedules/{sch}/", "owner", record=False)
        st, text = one("delete other's scenario", "DELETE", f"/api/runs/scenarios/{sc}/")
        probe.named_probe("other user deletes a scenario", not 200 <= st < 300, st, text)
        probe.call("DELETE", f"/api/runs/scenarios/{sc}/", "owner", record=False)


def named_probes(probe: Probe, big: dict):
    sc = probe.make_scenario()
    ok = lambda st: 400 <= st < 500  # noqa: E731
    for label, sched in (("crontab 30 February", {"crontab": {"minute": "0", "hour": "0", "day_of_month": "30",
                                                              "month_of_year": "2"}}),
                         ("crontab with `second`", {"crontab": {"second": "*/5", "minute": "0", "hour": "*"}}),
                         ("interval over a year", {"interval": {"every": 400, "period": "days"}})):
        st, text = probe.call("POST", "/api/runs/schedules/", "owner", tag=label,
                              body={"name": f"probe-{uuid.uuid4().hex[:8]}", "scenario": sc, "enabled": False,
                                    **sched})
        if st == 201:
            probe.cleanup.append(f"/api/runs/schedules/{json.loads(text)['id']}/")
        probe.named_probe(label, ok(st), st, text)
    if sc:
        probe.cleanup.append(f"/api/runs/scenarios/{sc}/")

    def run(label, kind, params, cluster=None):
        st, text = probe.call("POST", "/api/runs/", "owner", tag=label,
                              body={"kind": kind, "cluster": cluster or probe.cluster_name, "params": params})
        probe.named_probe(label, ok(st), st, text)

    run("nested `jobs` text (jobs kind)", "jobs", {"jobs": deep_json(50_000)})
    run("nested `jobs` text (schedule kind)", "schedule", {"jobs": deep_json(50_000)})
    run("failures sweep over the timelines cap (256 x 100 seeds)", "sweep",
        {"kind": "failures", "params": {"model": "llama3-8b", "gpus": 256, "seeds": 100, "days": 1},
         "sweep": {"seed": list(range(256))}})
    run(f"debug {big['ranks']} ranks x 100,000 entries on {big['name']}", "debug",
        {"gpus": big["ranks"], "entries": 100_000}, cluster=big["name"])
    run("schedule of 100,000 arrivals", "schedule", {"arrivals": 100_000})
    run("debug inject op out of range", "debug", {"gpus": 16, "inject": "hang:rank=1,op=999999999"})
    run("debug inject repeated key", "debug", {"gpus": 16, "inject": "hang:rank=1,rank=2"})


def delete_scratch_cluster(probe: Probe):
    """The throwaway cluster, with a run, a scenario and a schedule on it, deleted by its writer."""
    cluster = probe.scratch_cluster()
    if cluster is None:
        probe.named_probe("cluster delete with runs", False, 0, f"no {SCRATCH} cluster (use --setup)", expect="n/a")
        return
    rid = probe.make_run()
    if rid:
        for _ in range(60):         # let it finish: a run in progress is another question
            data = probe.get_json(f"/api/runs/{rid}/")
            if not data or data.get("status") in ("succeeded", "failed", "cancelled"):
                break
            time.sleep(1)
    sc = probe.make_scenario()
    st, text = probe.call("DELETE", f"/api/inventory/clusters/{cluster['id']}/", "owner", tag="cluster delete with runs")
    probe.named_probe("cluster delete with runs (204 or a clear 4xx, no IntegrityError)",
                      st == 204 or (400 <= st < 500 and "FOREIGN KEY" not in text and "Integrity" not in text),
                      st, text, expect="handled")


def lockout(probe: Probe):
    for i in range(10):
        probe.call("GET", "/api/runs/", "anon", token=f"wrong-{uuid.uuid4().hex}", tag="wrong token")
    st, text = probe.call("GET", "/api/runs/", "reader", tag="valid token after ten wrong ones")
    probe.named_probe("ten wrong tokens, then a valid token from the same address", st == 200, st, text,
                      expect="valid token accepted")


def summarize(probe: Probe) -> dict:
    cls = Counter(("error" if c["status"] == 0 else f"{c['status'] // 100}xx") for c in probe.cases)
    fivexx = [c for c in probe.cases if c["status"] >= 500 or c["status"] == 0]
    unauth = [c for c in probe.cases if c["write"] == "unauthorized"]
    cross = [c for c in probe.cases if c["write"] == "cross-user"]
    return {
        "cases": len(probe.cases), "by_class": dict(sorted(cls.items())),
        "server_errors": [{k: c[k] for k in ("method", "path", "who", "status", "tag", "params")} for c in fivexx],
        "server_error_signatures": sorted(Counter(f"{c['method']} {c['path']} ({c['who']}) [{c['tag']}]"
                                                  for c in fivexx)),
        "unauthorized_writes": len(unauth),
        "unauthorized_refused": sum(1 for c in unauth if not 200 <= c["status"] < 300),
        "cross_user_writes": len(cross),
        "cross_user_refused": sum(1 for c in cross if not 200 <= c["status"] < 300),
        "cross_user_accepted": [f"{c['method']} {c['path']} [{c['tag']}] -> {c['status']}" for c in cross
                                if 200 <= c["status"] < 300],
        "named": probe.named,
    }


def print_figures(f: dict, out=sys.stdout):
    p = lambda *a: print(*a, file=out)  # noqa: E731
    p(f"cases: {f['cases']}")
    p("responses: " + ", ".join(f"{k} {v}" for k, v in f["by_class"].items()))
    p(f"5xx (or no answer): {len(f['server_errors'])}")
    for s in f["server_error_signatures"]:
        p(f"  {s}")
    p(f"unauthorized writes refused: {f['unauthorized_refused']}/{f['unauthorized_writes']}")
    p(f"cross-user writes refused: {f['cross_user_refused']}/{f['cross_user_writes']}")
    for s in f["cross_user_accepted"]:
        p(f"  accepted: {s}")
    p("named probes:")
    for n in f["named"]:
        verdict = {"refused": ("refused", "ACCEPTED"), "handled": ("handled", "NOT HANDLED"),
                   "valid token accepted": ("valid token accepted", "VALID TOKEN REFUSED"),
                   "n/a": ("n/a", "n/a")}[n["expect"]][0 if n["refused"] else 1]
        p(f"  {n['probe']}: {verdict} ({n['status']}) {n['excerpt'][:110]!r}")


def setup_identities(manage, tag):
    """Three users and their tokens through manage.py create_api_token (a reader, two writers)."""
    tok = lambda *a: manage("create_api_token", *a).strip().splitlines()[-1]  # noqa: E731
    return {"reader": tok(f"probe-reader-{tag}", "--create"),
            "owner": tok(f"probe-owner-{tag}", "--create", "--write"),
            "other": tok(f"probe-other-{tag}", "--create", "--write")}


def build_scratch(manage, checkout: Path, tmp: Path):
    spec = (checkout / "sim/presets/demo-256.toml").read_text()
    spec = spec.replace('name = "demo-256"', f'name = "{SCRATCH}"', 1)
    path = tmp / f"{SCRATCH}.toml"
    path.write_text(spec)
    manage("build_cluster", "--no-progress", str(path))


def run_probe(url, tokens, out_json=None):
    t0 = time.monotonic()
    probe = Probe(url, tokens)
    schema = schema_ops(probe)
    scratch = probe.scratch_cluster()
    default = probe.first("/api/inventory/clusters/")
    probe.cluster_name = (scratch or default)["name"]
    probe.cluster_ref = {"id": (scratch or default)["id"], "url": (scratch or default).get("url", "")}
    clusters = (probe.get_json("/api/inventory/clusters/", params={"limit": 100}) or {}).get("results", [])
    # the biggest cluster for the debug probe: 16,384 ranks, or as many GPUs as it has
    sizes = []
    for c in clusters:
        s = probe.get_json(f"/api/inventory/clusters/{c['id']}/summary/") or {}
        sizes.append((int(s.get("gpus") or s.get("gpu_count") or 0), c["name"]))
    gpus, big_name = max(sizes) if sizes else (256, probe.cluster_name)
    big = {"name": big_name, "ranks": min(16384, gpus) if gpus else 256}    # unknown size: demo-256's

    ids: dict = {}
    if scratch:
        sid = scratch["id"]
        ids["/api/inventory/clusters/{id}/"] = {"id": sid}
        ids[("/api/inventory/clusters/{id}/", "PATCH")] = {"description": "probe"}
        ids["/api/inventory/clusters/{id}/summary/"] = {"id": sid}
        for path in schema["paths"]:
            if path.startswith("/api/inventory/") and path.endswith("{id}/") and "clusters" not in path:
                seg = path.split("/")[3]
                if seg.endswith("-models") or seg == "host-platforms":
                    oid = probe.clone_catalog_row(seg)
                    row = {"id": oid} if oid else None
                else:
                    row = probe.first(f"/api/inventory/{seg}/", cluster_id=sid)
                    if row is not None and not in_scratch(row, sid):
                        row = None          # not provably ours: probe it with a missing id instead
                if row and "id" in row:
                    ids[path] = {"id": row["id"]}
                    ids[(path, "PATCH")] = {}
                    for sub in schema["paths"]:
                        if sub.startswith(path) and sub != path:
                            ids[sub] = {"id": row["id"]}
    sc = probe.make_scenario()
    if sc:
        probe.cleanup.append(f"/api/runs/scenarios/{sc}/")
        ids["/api/runs/scenarios/{id}/"] = ids["/api/runs/scenarios/{id}/trend/"] = {"id": sc}
        ids["/api/runs/scenarios/{id}/run/"] = {"id": sc}
        ids[("/api/runs/scenarios/{id}/", "PATCH")] = {"description": "probe"}
        sch = probe.make_schedule(sc)
        if sch:
            probe.cleanup.insert(0, f"/api/runs/schedules/{sch}/")
            ids["/api/runs/schedules/{id}/"] = {"id": sch}
            ids[("/api/runs/schedules/{id}/", "PATCH")] = {"enabled": False}
    rid = probe.make_run()
    if rid:
        for sub in ("/api/runs/{id}/", "/api/runs/{id}/cancel/", "/api/runs/{id}/dumps/", "/api/runs/{id}/results/"):
            ids[sub] = {"id": rid}
        ids["/api/live/runs/{run_id}/snapshot/"] = {"run_id": rid}
        ids[("/api/runs/{id}/cancel/", "POST")] = {}
    ids[("/api/runs/", "POST")] = {"kind": "collective", "cluster": probe.cluster_name,
                                   "params": {"gpus": 8, "sizes": "1M"}}
    for path in ("/api/live/clusters/{name}/links/", "/api/live/clusters/{name}/snapshot/"):
        ids[path] = {"name": probe.cluster_name}

    corpus(probe, schema, ids)
    run_params_corpus(probe, schema)
    cross_user(probe)
    named_probes(probe, big)
    for rid in sorted(probe.own_runs):
        probe.call("POST", f"/api/runs/{rid}/cancel/", "owner", record=False)
        probe.call("DELETE", f"/api/runs/{rid}/", "owner", record=False)
    for path in reversed(probe.cleanup):
        probe.call("DELETE", path, "owner", record=False)
    delete_scratch_cluster(probe)
    lockout(probe)
    figures = summarize(probe)
    figures |= {"url": url, "seconds": round(time.monotonic() - t0, 1),
                "debug_probe_cluster": big, "date": time.strftime("%Y-%m-%d %H:%M")}
    print_figures(figures)
    print(f"({figures['seconds']} s)")
    if out_json:
        Path(out_json).write_text(json.dumps(figures, indent=1))
    return figures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="base URL of a running twin")
    ap.add_argument("--start", action="store_true", help="start a throwaway twin of --checkout (bench/probe_twin.py)")
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the checkout to start or to run manage.py in")
    ap.add_argument("--setup", action="store_true",
                    help="make the users, tokens and the scratch cluster with manage.py of --checkout (the "
                         "environment must point at the twin's database)")
    for who in ("reader", "owner", "other"):
        ap.add_argument(f"--{who}-token")
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--redis-url", default=os.environ.get("REDIS_URL"))
    args = ap.parse_args()
    twin = None
    try:
        if args.start:
            if not args.redis_url:
                raise SystemExit("--start needs REDIS_URL (or --redis-url)")
            print(f"starting a throwaway twin of {args.checkout} ...", flush=True)
            twin = probe_twin.start(args.checkout, args.redis_url)
            url, manage, tmp = twin.url, twin.manage, twin.tmp
            print(f"twin at {url}", flush=True)
        else:
            url, tmp = args.url, Path(os.environ.get("TMPDIR", "/tmp"))
            if args.setup:
                import subprocess

                def manage(*a):
                    return subprocess.run([str(args.checkout / ".venv/bin/python"), "manage.py", *a],
                                          cwd=args.checkout, capture_output=True, text=True, check=True).stdout
        tag = uuid.uuid4().hex[:6]
        if args.start or args.setup:
            tokens = setup_identities(manage, tag)
            build_scratch(manage, args.checkout, tmp)
        else:
            tokens = {"reader": args.reader_token, "owner": args.owner_token, "other": args.other_token}
        run_probe(url, tokens, args.json)
    except Exception as e:     # the probe reports, it never fails the caller
        print(f"probe_api: stopped early: {type(e).__name__}: {e}", file=sys.stderr)
    finally:
        if twin is not None:
            probe_twin.stop(twin)
    return 0


if __name__ == "__main__":
    sys.exit(main())
