"""One parameter declaration (sim.core.params) behind the command line, the API and the form: the same parameters with
the same limits, refused in the same words. Given / when / then."""
import argparse

import pytest

from sim.cli import build_parser, main
from sim.fabric.params import COLLECTIVE, FABRIC_HEALTH, FIGURE, PRESET_FIGURE
from sim.fabric.routing import ROUTINGS
from twin.runs.calibration import CALIBRATION
from twin.runs.params import serializer_for, validate_params
from twin.web.views.experiments import param_fields

SETS = (COLLECTIVE, FABRIC_HEALTH, FIGURE, PRESET_FIGURE)
# The command line's own options, which are not simulation parameters: where the cluster comes from, what to print.
CLI_ONLY = {"help", "preset", "spec", "catalog", "json", "links", "flows", "quiet", "out", "quick", "name"}
# Text parameters the command line reads from a file: option dest -> parameter.
CLI_FILES = {"hostfile": "hosts", "gpus_file": "gpu_list"}
BOUNDED = [(ps, p) for ps in SETS for p in ps if p.max is not None]


def _over(p):
    if p.type == "text":
        return "x" * (int(p.max) + 1)
    return p.max + 1 if p.type in ("int", "int_list") else p.max * 2 + 1


def _max(p):
    return "x" * int(p.max) if p.type == "text" else p.max


def _value(p, v):
    return [v] if p.type == "int_list" else v


def _cli_options(command: str) -> dict[str, list[str]]:
    parser, _, _ = build_parser([command])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return {a.dest: a.option_strings for a in sub._actions}


@pytest.mark.parametrize("params", SETS, ids=[ps.name for ps in SETS])
def test_the_api_fields_and_the_form_fields_are_the_declaration(params):
    # the API's serializer of the kind has exactly the declared parameters, with their limits and defaults, and the
    # runs layer's one calibration parameter (twin/runs/calibration.py) after them
    fields = serializer_for(params.name)().fields
    assert list(fields) == [p.name for p in params] + [CALIBRATION.name]
    for p in params:
        f = fields[p.name]
        if p.type in ("int", "float"):
            assert (f.min_value, f.max_value) == (p.min, p.max), p.name
        if p.type == "choice":
            assert list(f.choices) == list(p.choices), p.name
        assert f.default == p.default and f.allow_null == p.nullable and f.help_text == p.help
    # and the form draws the same parameters, limits, choices and defaults
    form = {f["name"]: f for f in param_fields(params.name)}
    assert list(form) == [p.name for p in params] + [CALIBRATION.name]
    for p in params:
        assert (form[p.name]["type"], form[p.name]["default"]) == (p.type, p.default)
        assert (form[p.name].get("min"), form[p.name].get("max"), form[p.name].get("choices")) == \
            (p.min, p.max, list(p.choices) if p.choices else None)


@pytest.mark.parametrize("command, params", [("collective", (COLLECTIVE,)), ("figure", (FIGURE, PRESET_FIGURE))])
def test_the_cli_has_exactly_an_option_per_declared_parameter(command, params):
    """``figure`` serves the published figures (FIGURE) and a preset's page (PRESET_FIGURE): one option per name."""
    options = _cli_options(command)
    params = [p for ps in params for p in ps]
    declared = {p.name for p in params} - {"figure"}      # the figure's name is the positional argument
    assert {CLI_FILES.get(o, o) for o in options} - CLI_ONLY == declared
    for p in params:
        if p.name in declared and p.name not in CLI_FILES.values():
            assert p.option in options[p.name], f"{command}: no {p.option} for {p.name}"


@pytest.mark.django_db
@pytest.mark.parametrize("params, p", BOUNDED, ids=[f"{ps.name}.{p.name}" for ps, p in BOUNDED])
def test_the_api_refuses_max_plus_one_naming_the_field_and_accepts_max(runner, params, p):
    from twin.inventory.models import Cluster
    cluster = Cluster.objects.create(name="empty", title="no hardware", spec={})
    # when a run asks for one more than the declared maximum
    r = runner.post("/api/runs/", {"kind": params.name, "cluster": cluster.name,
                                   "params": {p.name: _value(p, _over(p))}}, format="json")
    # then it is a 400 naming the field, in the declaration's words
    assert r.status_code == 400, r.json()
    assert "must be at most" in str(r.json()["params"][p.name]), r.json()
    # and the maximum itself passes the declaration (a rule tying two parameters may still refuse it)
    try:
        assert validate_params(params.name, {p.name: _value(p, _max(p))})[p.name] == _value(p, _max(p))
    except Exception as e:  # noqa: BLE001
        assert p.name == "root" and "gpus" in str(e), e     # root must be below gpus


CLI_BOUNDED = [("collective", p) for p in COLLECTIVE if p.max is not None] + \
    [("figure", p) for p in FIGURE if p.max is not None]


@pytest.mark.parametrize("command, p", CLI_BOUNDED, ids=[f"{c}.{p.name}" for c, p in CLI_BOUNDED])
def test_the_cli_refuses_max_plus_one_with_exit_2_in_the_same_words(command, p, capsys, tmp_path):
    # when the command line is given one more than the declared maximum
    head = ["collective"] if command == "collective" else ["figure", "allgather-scale", "--out", str(tmp_path)]
    option, value, name = p.option, str(_over(p)), p.name
    file_option = {v: k for k, v in CLI_FILES.items()}.get(p.name)
    if file_option:                                    # a text the command line reads from a file: the file named
        option, value = "--" + file_option.replace("_", "-"), str(tmp_path / "list.txt")
        (tmp_path / "list.txt").write_text(_over(p))
        name = value
    try:
        code = main([*head, "--quiet", option, value])
    except SystemExit as e:
        code = e.code
    # then it exits 2 with the reason the API gives
    assert code == 2
    err = capsys.readouterr().err
    assert f"{name}: must be at most" in err, err


@pytest.mark.parametrize("routing", ROUTINGS)
def test_every_routing_is_a_parameter_of_the_collective_run_kind(routing):
    # the run kind takes each routing the engine has (centralized traffic engineering "te" included), as declared
    assert validate_params("collective", {"routing": routing})["routing"] == routing
    assert routing in serializer_for("collective")().fields["routing"].choices
