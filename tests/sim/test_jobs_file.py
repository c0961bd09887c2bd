"""The jobs file as the engine reads it (sim.jobs.queue.read_jobs through sim.jobs.params.SCHEDULE and JOBS, the
code the API and the command line share): every bad file is refused naming ``jobs`` or ``jobs[i].field`` and the
line its entry starts on; an empty file on the command line ends with one line naming the file (it ran 200
synthetic jobs before)."""
import json

import pytest

from sim.cli import main
from sim.core.errors import ParamError
from sim.jobs.params import JOBS, SCHEDULE

GOOD = {"model": "llama3-8b", "gpus": 8, "steps": 10}


def lines(*entries):
    return "[\n" + ",\n".join(json.dumps(e) for e in entries) + "\n]\n"


@pytest.mark.parametrize("text, field, words", [
    ("", "jobs", "empty"),
    (" \n\n\t\n", "jobs", "empty"),
    ("[]", "jobs", "non-empty list"),
    (lines(GOOD, {**GOOD, "model": "gpt-5"}), "jobs[1].model", "(line 3)"),
    (lines(GOOD, GOOD, {**GOOD, "gpus": "many"}), "jobs[2].gpus", "(line 4)"),
    (lines({**GOOD, "arrival_hours": -1}), "jobs[0].arrival_hours", "(line 2)"),
    (lines({**GOOD, "name": "x"}, GOOD, {**GOOD, "name": "x"}), "jobs[2].name", "already the name of jobs[0] (line 4)"),
    ("[[job]]\nname = 'a'\nmodel = 'llama3-8b'\ngpus = 8\nsteps = 1\n\n[[job]]\nmodel = 'llama3-8b'\ngpus = -8\n"
     "steps = 1\n", "jobs[1].gpus", "(line 7)"),
    ("[" * 5000 + "]" * 5000, "jobs", "nested too deeply"),
])
def test_a_bad_file_names_jobs_and_the_line(text, field, words):
    for params in (SCHEDULE, JOBS):
        with pytest.raises(ParamError) as e:
            params.validate({"jobs": text})
        assert field in e.value.errors and any(words in m for m in e.value.errors[field]), e.value.errors


def test_the_lines_of_a_long_file_are_counted_in_one_pass():
    entries = [{**GOOD, "name": f"j{i}"} for i in range(2_000)] + [{**GOOD, "tp": 3}]
    with pytest.raises(ParamError) as e:
        SCHEDULE.validate({"jobs": lines(*entries)})
    assert "(line 2002)" in e.value.errors["jobs[2000].gpus"][0]


@pytest.mark.parametrize("command", ["schedule", "jobs"])
@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_an_empty_jobs_file_on_the_command_line_is_exit_2_naming_the_file(capsys, tmp_path, command, text):
    path = tmp_path / "empty.json"
    path.write_text(text)
    code = main([command, "--preset", "demo-256", "--jobs", str(path), "-q"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.strip() == f"python -m sim {command}: error: jobs file {path}: is empty (no jobs; leave --jobs out " \
                          "for synthetic arrivals)"
