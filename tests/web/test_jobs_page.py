"""The Jobs page renders for a built cluster (its queue table, the placement canvas, the form's data from the job
kind's declaration) and says so for an unknown one; the GPU page offers the training-job colouring and where its
data is."""
import json
import re
from pathlib import Path

import numpy as np
import pytest

from twin.runs import job_actions, registry

FRONTEND = Path(__file__).resolve().parents[2] / "frontend"

pytestmark = pytest.mark.django_db


def page_info(html: str) -> dict:
    m = re.search(r'<script id="jobs-info" type="application/json">(.*?)</script>', html, re.S)
    assert m, "the page embeds its data as #jobs-info"
    return json.loads(m.group(1))


def test_the_jobs_page_renders_its_shell_and_data(client, demo):
    job = job_actions.create_job(cluster=demo, name="shown", model="llama3-8b", params={}, run=None)
    job_actions.place_job(job, np.arange(16))
    html = client.get("/clusters/demo-256/jobs/").content.decode()
    for hook in ('id="jobs-table"', 'id="job-form"', 'id="job-placement"', 'id="job-breakdown"',
                 'id="job-throughput"', 'id="whatif-table"', "js/jobs.js"):
        assert hook in html, hook
    info = page_info(html)
    assert info["cluster"] == {"id": demo.id, "name": "demo-256", "gpus": 256}
    assert "demo-256" in [c["name"] for c in info["clusters"]]
    if "job" in registry.kinds():                       # the engine's JOB declaration is there: the form's fields
        names = [f["name"] for f in info["form"]["fields"]]
        assert {"model", "tp", "cp", "pp", "dp", "placement", "routing"} <= set(names)
    else:
        assert info["form"] is None


def test_an_unknown_cluster_is_a_404_that_says_so(client, demo):
    response = client.get("/clusters/nope/jobs/")
    assert response.status_code == 404 and "no cluster named &#x27;nope&#x27;" in response.content.decode()


def test_the_gpu_page_colours_by_training_job(client, demo):
    html = client.get("/clusters/demo-256/gpus/").content.decode()
    # the colour mode is registered by the jobs capability's browser module, which every page embeds
    assert '"/static/js/capabilities/jobs.js"' in html and 'data-jobs-url="/clusters/demo-256/jobs/gpus.json"' in html
    assert 'registerColourMode("training"' in (FRONTEND / "js/capabilities/jobs.js").read_text()
