"""`docker-compose.yml` and the `Dockerfile` agree with the CLI they run (docs/design.md §6, §7).

No Docker engine runs here, so the files are checked statically against the click tree
of `seqgate.streams.cli.cli`: every `SEQGATE_*` variable a service sets is one an option reads,
every seqgate service's `command` is a real command path whose required inputs are given,
and the image's entrypoint is the `seqgate` console script.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Iterator
from typing import Any

import click

from seqgate.streams.cli import cli
from tests.support.compose import command_of, environment_of, load_compose, resolve
from tests.support.paths import REPO

DOCKERFILE = REPO / "Dockerfile"


# ---- the checks ----------------------------------------------------------------------------------


def walk(
    command: click.Command, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name, child in command.commands.items():
            yield from walk(child, (*path, name))


def envvars_of(params: list[click.Parameter]) -> set[str]:
    names: set[str] = set()
    for param in params:
        if isinstance(param.envvar, str):
            names.add(param.envvar)
        elif param.envvar:
            names.update(param.envvar)
    return names


def cli_envvars(root: click.Command = cli) -> set[str]:
    """Every environment variable that some option of the tree reads (groups included)."""
    names: set[str] = set()
    for _, command in walk(root):
        names |= envvars_of(command.params)
    return names


def seqgate_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The services that run the project's image (built from the Dockerfile)."""
    services: dict[str, dict[str, Any]] = compose.get("services") or {}
    return {name: service for name, service in services.items() if "build" in service}


def unknown_seqgate_variables(compose: dict[str, Any], known: set[str]) -> list[str]:
    """`service: VARIABLE` for each SEQGATE_* variable that no option of the CLI reads."""
    return [
        f"{name}: {variable}"
        for name, service in (compose.get("services") or {}).items()
        for variable in environment_of(service)
        if variable.startswith("SEQGATE_") and variable not in known
    ]


def command_problems(compose: dict[str, Any]) -> list[str]:
    """What is wrong with each seqgate service's command, given its environment."""
    problems = []
    for name, service in seqgate_services(compose).items():
        args = command_of(service)
        chain, rest = resolve(args)
        if len(chain) == 1 or isinstance(chain[-1], click.Group):
            problems.append(f"{name}: {args} is not a command of seqgate")
            continue
        env = environment_of(service)
        # Variables the service sets must be read by its own command or the groups above it.
        readers = envvars_of([param for command in chain for param in command.params])
        for variable in env:
            if variable.startswith("SEQGATE_") and variable not in readers:
                problems.append(f"{name}: {variable} is not read by `{' '.join(args)}`")
        for param in chain[-1].params:
            if not param.required:
                continue
            if isinstance(param, click.Argument):
                if not [arg for arg in rest if not arg.startswith("-")]:
                    problems.append(f"{name}: argument {param.name} is not given")
            elif not (set(param.opts) & set(rest)) and not (envvars_of([param]) & set(env)):
                problems.append(f"{name}: required {param.opts[0]} is neither passed nor set")
    return problems


# ---- tests ---------------------------------------------------------------------------------------


def test_compose_parses_and_has_the_pipeline_services() -> None:
    services = load_compose()["services"]
    assert {"kafka", "topics", "worker", "bridge"} <= set(services)
    assert set(seqgate_services(load_compose())) >= {"topics", "worker", "bridge"}


def test_the_cli_envvar_collection_sees_group_and_command_options() -> None:
    names = cli_envvars()
    # the group's own options, a shared option, and the fallback of --bootstrap-servers
    assert {"SEQGATE_CONFIG", "SEQGATE_LOG_LEVEL", "SEQGATE_INPUT_TOPIC"} <= names
    assert {"SEQGATE_BOOTSTRAP_SERVERS", "KAFKA_BOOTSTRAP_SERVERS"} <= names


def test_every_seqgate_variable_of_compose_is_read_by_the_cli() -> None:
    compose = load_compose()
    assert unknown_seqgate_variables(compose, cli_envvars()) == []
    # The check is not vacuous: the services do set SEQGATE_* variables.
    assert any(
        name.startswith("SEQGATE_")
        for service in compose["services"].values()
        for name in environment_of(service)
    )


def test_a_made_up_variable_is_reported() -> None:
    compose = copy.deepcopy(load_compose())
    compose["services"]["worker"]["environment"]["SEQGATE_NOT_AN_OPTION"] = "1"
    assert unknown_seqgate_variables(compose, cli_envvars()) == ["worker: SEQGATE_NOT_AN_OPTION"]
    # the list form of `environment` is read as well
    compose["services"]["bridge"]["environment"] = ["SEQGATE_ALSO_MADE_UP=x"]
    assert "bridge: SEQGATE_ALSO_MADE_UP" in unknown_seqgate_variables(compose, cli_envvars())


def test_every_seqgate_service_runs_a_real_command_with_its_inputs() -> None:
    compose = load_compose()
    for name, service in seqgate_services(compose).items():
        chain, _ = resolve(command_of(service))
        assert len(chain) > 1 and not isinstance(chain[-1], click.Group), name
    assert command_problems(compose) == []


def test_command_problems_are_reported() -> None:
    compose = copy.deepcopy(load_compose())
    services = compose["services"]
    services["bridge"]["command"] = ["bridge", "nope"]
    services["topics"]["command"] = "topics"  # a group, not a command
    services["worker"]["environment"]["SEQGATE_PARTITIONS"] = "6"  # read by topics create only
    del services["worker"]["environment"]["SEQGATE_BOOTSTRAP_SERVERS"]
    problems = command_problems(compose)
    assert f"bridge: {['bridge', 'nope']} is not a command of seqgate" in problems
    assert f"topics: {['topics']} is not a command of seqgate" in problems
    assert "worker: SEQGATE_PARTITIONS is not read by `worker`" in problems
    assert "worker: required --bootstrap-servers is neither passed nor set" in problems


def test_the_worker_has_a_stable_instance_id() -> None:
    worker = load_compose()["services"]["worker"]
    instance = environment_of(worker).get("SEQGATE_INSTANCE_ID", "")
    assert instance.strip(), "SEQGATE_INSTANCE_ID must be set: transactional.id depends on it"
    assert "$" not in instance  # not a variable that could change between restarts


def test_the_dockerfile_entrypoint_is_the_seqgate_script() -> None:
    assert DOCKERFILE.is_file()
    entrypoints = [
        line.split(None, 1)[1]
        for line in DOCKERFILE.read_text().splitlines()
        if re.match(r"\s*ENTRYPOINT\s", line, re.IGNORECASE)
    ]
    assert len(entrypoints) == 1, entrypoints
    assert json.loads(entrypoints[-1]) == ["seqgate"]
    # ... and `seqgate` is this CLI.
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["seqgate"] == "seqgate.streams.cli:main"
