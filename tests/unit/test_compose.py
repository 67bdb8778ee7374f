"""`docker-compose.yml` and the `Dockerfile` agree with the CLI they run (docs/design.md §6, §7).

No Docker engine runs here, so the files are checked statically: against the compose-spec
JSON schema (vendored by check-jsonschema, read as a file: no network), and against the click
tree of `seqgate.cli.cli`: every `SEQGATE_*` variable a service sets is one an option
reads, every seqgate service's `command` is a real command path whose required inputs are
given, the long-running services restart on failure and publish the ports their settings
open, the dispatcher applies the workers' outbox to the PostgreSQL service, and the image is
a multi-stage, non-root one whose entrypoint is the `seqgate` console script.
"""

from __future__ import annotations

import copy
import importlib.metadata
import json
import re
import tomllib
from typing import Any
from urllib.parse import urlsplit

import click
import jsonschema

from tests.support.cli_tree import cli_envvars, envvars_of
from tests.support.compose import command_of, environment_of, load_compose, resolve
from tests.support.paths import REPO

DOCKERFILE = REPO / "Dockerfile"
# Found through the distribution's files: importing check_jsonschema needs a newer click than
# faust-streaming allows, and only its copy of the schema is wanted here.
COMPOSE_SCHEMA = "check_jsonschema/builtin_schemas/vendor/compose-spec.json"
LONG_RUNNING = ("worker", "bridge", "bridge-http", "dispatch")
ONE_SHOT = ("topics",)


# ---- the checks ----------------------------------------------------------------------------------


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


def schema_errors(compose: dict[str, Any]) -> list[str]:
    """What the compose-spec schema finds wrong with `compose` (anchors already merged)."""
    path = importlib.metadata.distribution("check-jsonschema").locate_file(COMPOSE_SCHEMA)
    schema = json.loads(path.read_text())  # type: ignore[union-attr]
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(compose)
    ]


def restart_problems(compose: dict[str, Any]) -> list[str]:
    """Long-running services restart on failure (their exit 1 asks for it); one-shots never."""
    services = compose["services"]
    problems = [
        f"{name}: restart {services[name].get('restart')!r}, not on-failure"
        for name in LONG_RUNNING
        if services[name].get("restart") != "on-failure"
    ]
    problems += [
        f"{name}: restart {services[name].get('restart')!r}, not 'no'"
        for name in ONE_SHOT
        if services[name].get("restart", "no") != "no"
    ]
    return problems


def published(service: dict[str, Any]) -> set[int]:
    """The container ports a service publishes (short syntax `[HOST:]PUBLISHED:TARGET`)."""
    ports = set()
    for entry in service.get("ports") or []:
        if isinstance(entry, dict):
            ports.add(int(entry["target"]))
        else:
            ports.add(int(str(entry).split("/")[0].rsplit(":", 1)[-1]))
    return ports


def port_problems(compose: dict[str, Any]) -> list[str]:
    """The worker's metrics and the HTTP bridge listen on every interface, on a published
    port, and their healthchecks ask that port."""
    problems = []
    for name, host, port in (
        ("worker", "SEQGATE_METRICS_HOST", "SEQGATE_METRICS_PORT"),
        ("bridge-http", "SEQGATE_HTTP_HOST", "SEQGATE_HTTP_PORT"),
    ):
        service = compose["services"][name]
        env = environment_of(service)
        if env.get(host) != "0.0.0.0":
            problems.append(f"{name}: {host} is {env.get(host)!r}, unreachable from outside")
        if not env.get(port, "").isdigit() or int(env[port]) not in published(service):
            problems.append(f"{name}: {port}={env.get(port)!r} is not a published port")
        check = " ".join((service.get("healthcheck") or {}).get("test") or [])
        if f"127.0.0.1:{env.get(port)}/healthz" not in check:
            problems.append(f"{name}: the healthcheck does not ask /healthz on {port}")
    return problems


def dispatch_problems(compose: dict[str, Any]) -> list[str]:
    """The dispatcher reads the workers' outbox into the compose file's PostgreSQL."""
    services = compose["services"]
    env = environment_of(services["dispatch"])
    destination = env.get("SEQGATE_DESTINATION", "")
    url = urlsplit(destination)
    problems = []
    if url.scheme not in ("postgresql", "postgres") or url.hostname != "postgres":
        problems.append(f"dispatch: destination {destination!r} is not the postgres service")
    postgres = environment_of(services["postgres"])
    if (url.username, url.password, url.path.lstrip("/")) != (
        postgres.get("POSTGRES_USER"),
        postgres.get("POSTGRES_PASSWORD"),
        postgres.get("POSTGRES_DB"),
    ):
        problems.append("dispatch: the destination's user, password or database is not postgres's")
    if (services["dispatch"].get("depends_on") or {}).get("postgres") != {
        "condition": "service_healthy"
    }:
        problems.append("dispatch: does not wait for postgres to be healthy")
    worker = environment_of(services["worker"])
    for variable in ("SEQGATE_ORDERING", "SEQGATE_ORDERED_SOURCES"):
        if env.get(variable) != worker.get(variable):
            problems.append(f"dispatch: {variable} differs from the worker's")
    return problems


# ---- tests ---------------------------------------------------------------------------------------


def test_compose_parses_and_has_the_pipeline_services() -> None:
    services = load_compose()["services"]
    assert {"kafka", "postgres", "topics", "worker", "bridge", "bridge-http", "dispatch"} <= set(
        services
    )
    assert set(seqgate_services(load_compose())) == {*ONE_SHOT, *LONG_RUNNING}


def test_compose_is_valid_by_the_compose_spec_schema() -> None:
    assert schema_errors(load_compose()) == []
    broken = copy.deepcopy(load_compose())
    broken["services"]["worker"]["restart_policy"] = "always"  # not a service key
    broken["services"]["dispatch"]["ports"] = "9100"  # a list is required
    errors = schema_errors(broken)
    assert any(e.startswith("services/worker:") and "'restart_policy'" in e for e in errors)
    assert any(e.startswith("services/dispatch/ports:") for e in errors), errors


def test_long_running_services_restart_on_failure_and_topic_creation_runs_once() -> None:
    compose = load_compose()
    assert restart_problems(compose) == []
    assert compose["services"]["worker"]["depends_on"]["topics"] == {
        "condition": "service_completed_successfully"
    }
    del compose["services"]["dispatch"]["restart"]
    compose["services"]["topics"]["restart"] = "on-failure"
    assert restart_problems(compose) == [
        "dispatch: restart None, not on-failure",
        "topics: restart 'on-failure', not 'no'",
    ]


def test_metrics_and_http_ports_are_published_and_health_checked() -> None:
    compose = load_compose()
    assert port_problems(compose) == []
    compose["services"]["worker"]["ports"] = ["9101:9101"]
    del compose["services"]["bridge-http"]["environment"]["SEQGATE_HTTP_HOST"]
    assert port_problems(compose) == [
        "worker: SEQGATE_METRICS_PORT='9100' is not a published port",
        "bridge-http: SEQGATE_HTTP_HOST is None, unreachable from outside",
    ]


def test_dispatch_applies_the_outbox_to_the_postgres_service() -> None:
    compose = load_compose()
    assert dispatch_problems(compose) == []
    assert command_of(compose["services"]["dispatch"]) == ["dispatch"]
    services = compose["services"]
    services["dispatch"]["environment"]["SEQGATE_DESTINATION"] = "sqlite:///objects.db"
    services["dispatch"]["environment"]["SEQGATE_ORDERING"] = "numeric"
    assert dispatch_problems(compose) == [
        "dispatch: destination 'sqlite:///objects.db' is not the postgres service",
        "dispatch: the destination's user, password or database is not postgres's",
        "dispatch: SEQGATE_ORDERING differs from the worker's",
    ]


def test_seqgate_services_run_as_the_image_user_on_a_read_only_root() -> None:
    for name, service in seqgate_services(load_compose()).items():
        assert service.get("user") == "10001:10001", name
        assert service.get("read_only") is True, name


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


def dockerfile_stages() -> list[list[str]]:
    """The Dockerfile's instructions (continuations joined), one list per FROM."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    stages: list[list[str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        stages[-1].append(line)
    return stages


def test_the_image_is_multi_stage_slim_and_not_root() -> None:
    stages = dockerfile_stages()
    assert len(stages) >= 2
    final = stages[-1]
    assert final[0] == "FROM python:3.11-slim"
    assert any(re.fullmatch(r"COPY --from=\w+ /opt/seqgate /opt/seqgate", i) for i in final)
    users = [i.split()[1] for i in final if i.upper().startswith("USER ")]
    assert users == ["10001:10001"]
    run = " ".join(i for i in final if i.upper().startswith("RUN "))
    assert "--uid 10001" in run and "--gid 10001" in run
    assert "-o 10001 -g 10001" in run and "/var/lib/seqgate/state" in run
    # No package installs (compilers, headers) in what ships; pip runs in the first stage.
    assert not re.search(r"apt-get|apk |pip install|gcc|build-essential", run), run
    assert 'VOLUME ["/var/lib/seqgate"]' in final


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
    assert scripts["seqgate"] == "seqgate.cli:main"


def test_the_image_builds_from_the_product_alone() -> None:
    """What the build stage copies and installs: seqgate's own sources and its compiled
    core, never the development tools (devtools/), whose wheel would bring the bench, the
    peers and the development broker into the image."""
    copied = [
        line.split()[1:-1]
        for stage in dockerfile_stages()
        for line in stage
        if line.upper().startswith("COPY ") and "--from=" not in line
    ]
    sources = sorted(source for sources in copied for source in sources)
    assert sources == ["README.md", "core", "pyproject.toml", "seqgate"], sources
    installs = " ".join(line for stage in dockerfile_stages() for line in stage if "pip" in line)
    assert "devtools" not in installs
