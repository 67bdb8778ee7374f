"""deploy/kubernetes and deploy/grafana: valid for Kubernetes (offline schemas), consistent
with the CLI (every SEQGATE_* variable is one its command reads) and with the product's facts."""

from __future__ import annotations

import copy
import os
import re
import socket
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import click
import kubernetes_validate
import pytest
import yaml

from seqgate.cli import cli
from seqgate.runtime.kafka_settings import ENV_PREFIX, RESERVED_VARIABLES
from seqgate.streams.worker.config import WorkerConfig
from tests.support import dashboard
from tests.support.paths import REPO

MANIFESTS = REPO / "deploy" / "kubernetes"
KUBERNETES_VERSION = "1.31"  # the oldest release the manifests must work on
RUN_BY_HAND = {"reset-job.yaml"}  # not in kustomization.yaml: a one-off Job
MEASURED_PEAK_RSS_MIB = 234  # docs/benchmark.md, worker at 1,000,000 identities
CLOSE_FLUSH_S = 5  # Worker._close: the producer's flush on a graceful stop
Resource = dict[str, Any]


def manifest_files() -> list[Path]:
    return sorted(p for p in MANIFESTS.glob("*.yaml") if p.name != "kustomization.yaml")


def resources() -> list[Resource]:
    return [
        document
        for path in manifest_files()
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if document is not None
    ]


def one(kind: str, name: str) -> Resource:
    found = [r for r in resources() if r["kind"] == kind and r["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


def no_network(*args: object, **kwargs: object) -> None:
    raise AssertionError("the validator tried to open a network connection")


def validate(resource: Resource) -> None:
    kubernetes_validate.validate(resource, KUBERNETES_VERSION, strict=True)


# ---- schema validation ---------------------------------------------------------------------------


def test_every_manifest_is_valid_for_kubernetes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", no_network)
    found = resources()
    assert {r["kind"] for r in found} >= {
        "StatefulSet",
        "Deployment",
        "Service",
        "ConfigMap",
        "Secret",
        "PodDisruptionBudget",
        "Job",
    }
    problems = []
    for resource in found:
        try:
            validate(resource)
        except kubernetes_validate.ValidationError as error:
            where = "/".join(str(part) for part in error.absolute_path)
            name = f"{resource['kind']}/{resource['metadata']['name']}"
            problems.append(f"{name}: {where}: {error.message}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("where", "change"),
    [
        ("a misspelled field", lambda spec: spec.update(terminationGracePeriodSecond=60)),
        ("a string for an integer", lambda spec: spec.update(terminationGracePeriodSeconds="60")),
        ("a required field left out", lambda spec: spec["containers"][0].pop("name")),
        (
            "a misspelled nested field",
            lambda spec: spec["containers"][0]["readinessProbe"].update(periodSecond=5),
        ),
        ("a list for a mapping", lambda spec: spec.update(securityContext=[])),
    ],
)
def test_the_validator_rejects_a_broken_manifest(where: str, change: Any) -> None:
    broken = copy.deepcopy(one("StatefulSet", "seqgate-worker"))
    change(broken["spec"]["template"]["spec"])
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(broken)


def test_the_validator_knows_no_invented_kind() -> None:
    with pytest.raises(kubernetes_validate.SchemaNotFoundError):
        validate({"apiVersion": "apps/v1", "kind": "StatefullSet", "metadata": {"name": "x"}})


def test_kustomization_lists_every_manifest_but_the_one_off_jobs() -> None:
    kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text(encoding="utf-8"))
    listed = set(kustomization["resources"])
    assert listed == {p.name for p in manifest_files()} - RUN_BY_HAND


# ---- every SEQGATE_* variable is one the CLI reads -----------------------------------------------


def pod_specs() -> Iterator[tuple[str, Resource]]:
    for resource in resources():
        if resource["kind"] in ("StatefulSet", "Deployment", "Job"):
            yield resource["metadata"]["name"], resource["spec"]["template"]["spec"]


def command_path(args: list[str]) -> list[click.Command]:
    """The click commands a container's args go through, the root group first."""
    path: list[click.Command] = [cli]
    for word in args:
        current = path[-1]
        if word.startswith("-") or not isinstance(current, click.Group):
            break
        subcommand = current.commands.get(word)
        assert subcommand is not None, f"seqgate has no command {word!r} ({args})"
        path.append(subcommand)
    assert not isinstance(path[-1], click.Group), f"{args} names a group, not a command"
    return path


def variables_read(path: list[click.Command]) -> set[str]:
    found: set[str] = set()
    for command in path:
        for param in command.params:
            envvar = getattr(param, "envvar", None)
            if isinstance(envvar, str):
                found.add(envvar)
            elif envvar:
                found.update(envvar)
    return found


def all_variables(command: click.Command) -> set[str]:
    found = variables_read([command])
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            found |= all_variables(sub)
    return found


def keys_of(kind: str, name: str) -> set[str]:
    resource = one(kind, name)
    return set(resource.get("data", {})) | set(resource.get("stringData", {}))


def variables_set(container: Resource) -> set[str]:
    names = {variable["name"] for variable in container.get("env", [])}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            names |= keys_of("ConfigMap", source["configMapRef"]["name"])
        else:
            names |= keys_of("Secret", source["secretRef"]["name"])
    for variable in container.get("env", []):
        ref = variable.get("valueFrom", {})
        for kind, key in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
            if key in ref:
                assert ref[key]["key"] in keys_of(kind, ref[key]["name"]), variable
    return names


def test_the_cli_walk_finds_the_variables() -> None:
    everything = all_variables(cli)
    assert {"SEQGATE_INSTANCE_ID", "SEQGATE_HTTP_PORT", "SEQGATE_LOG_LEVEL"} <= everything
    assert "SEQGATE_INSTANCE_ID" in variables_read(command_path(["worker"]))
    assert "SEQGATE_INSTANCE_ID" not in variables_read(command_path(["bridge", "http"]))


def test_every_seqgate_variable_is_read_by_its_command() -> None:
    checked = 0
    for workload, spec in pod_specs():
        for container in spec["containers"]:
            assert container["image"] == "seqgate:latest", workload
            read = variables_read(command_path(container["args"]))
            for name in sorted(variables_set(container)):
                assert name.startswith("SEQGATE_"), f"{workload}: {name} is not seqgate's"
                kafka_property = name.startswith(ENV_PREFIX) and name not in RESERVED_VARIABLES
                assert name in read or kafka_property, (
                    f"{workload}: `seqgate {' '.join(container['args'])}` does not read {name}"
                )
                checked += 1
    assert checked >= 20


def environment(container: Resource) -> dict[str, str]:
    """The container's variables with their values, as the kubelet would set them."""
    values: dict[str, str] = {}
    for source in container.get("envFrom", []):
        kind, ref = (
            ("ConfigMap", "configMapRef") if "configMapRef" in source else ("Secret", "secretRef")
        )
        resource = one(kind, source[ref]["name"])
        values.update(resource.get("data", {}) | resource.get("stringData", {}))
    for variable in container.get("env", []):
        ref = variable.get("valueFrom", {})
        if "fieldRef" in ref:
            values[variable["name"]] = "seqgate-worker-0"
        elif "configMapKeyRef" in ref:
            key = ref["configMapKeyRef"]
            values[variable["name"]] = one("ConfigMap", key["name"])["data"][key["key"]]
        else:
            values[variable["name"]] = variable["value"]
    return values


def test_every_value_is_accepted_by_its_option(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text(one("Secret", "seqgate-kafka-client")["stringData"]["client.properties"])
    for workload, spec in pod_specs():
        (container,) = spec["containers"]
        with monkeypatch.context() as patched:
            for name in [n for n in os.environ if n.startswith("SEQGATE_")]:
                patched.delenv(name)
            for name, value in environment(container).items():
                patched.setenv(name, str(value))
            patched.setenv("SEQGATE_KAFKA_CONFIG", str(properties))
            path = command_path(container["args"])
            args = container["args"]
            context = cli.make_context("seqgate", list(args))
            for depth, command in enumerate(path[1:]):
                context = command.make_context(args[depth], args[depth + 1 :], parent=context)
            for name in environment(container):
                option = [p for p in path[-1].params if getattr(p, "envvar", None) == name]
                if option and option[0].name is not None:
                    assert context.params[option[0].name] is not None, (workload, name)


# ---- the worker: facts of the product ------------------------------------------------------------


def worker() -> tuple[Resource, Resource, dict[str, str]]:
    statefulset = one("StatefulSet", "seqgate-worker")
    spec = statefulset["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    settings: dict[str, str] = {}
    for source in container["envFrom"]:
        settings.update(one("ConfigMap", source["configMapRef"]["name"])["data"])
    return statefulset, container, settings


def default_of(command: list[str], envvar: str) -> Any:
    for param in command_path(command)[-1].params:
        if getattr(param, "envvar", None) == envvar:
            return param.default
    raise AssertionError(envvar)


def test_the_instance_id_is_the_pod_name() -> None:
    statefulset, container, settings = worker()
    (variable,) = [v for v in container["env"] if v["name"] == "SEQGATE_INSTANCE_ID"]
    assert variable["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert "SEQGATE_INSTANCE_ID" not in settings  # one value for every pod would fence them
    assert (
        statefulset["spec"]["serviceName"] == one("Service", "seqgate-worker")["metadata"]["name"]
    )


def test_the_state_is_on_the_persistent_volume() -> None:
    statefulset, container, settings = worker()
    (claim,) = statefulset["spec"]["volumeClaimTemplates"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == claim["metadata"]["name"]]
    assert Path(settings["SEQGATE_STATE_DIR"]).is_relative_to(mount["mountPath"])
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]


def test_the_probes_are_the_workers_health_endpoints() -> None:
    _, container, settings = worker()
    (port,) = container["ports"]
    assert str(port["containerPort"]) == settings["SEQGATE_METRICS_PORT"]
    assert settings["SEQGATE_METRICS_HOST"] == "0.0.0.0"  # the kubelet probes the pod's address
    for probe, path in (
        ("livenessProbe", "/healthz"),
        ("readinessProbe", "/readyz"),
    ):
        assert container[probe]["httpGet"] == {"path": path, "port": port["name"]}
    service = one("Service", "seqgate-worker")
    assert service["spec"]["ports"][0]["targetPort"] == port["name"]


def test_the_grace_period_outlasts_a_final_commit() -> None:
    statefulset, _, settings = worker()
    (kafka_timeout_s,) = [f.default for f in fields(WorkerConfig) if f.name == "kafka_timeout_s"]
    commit_interval_s = int(settings["SEQGATE_COMMIT_INTERVAL_MS"]) / 1000
    grace = statefulset["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace >= commit_interval_s + kafka_timeout_s + CLOSE_FLUSH_S + 10
    assert int(settings["SEQGATE_COMMIT_INTERVAL_MS"]) == default_of(
        ["worker"], "SEQGATE_COMMIT_INTERVAL_MS"
    )


def mebibytes(quantity: str) -> float:
    number, unit = re.fullmatch(r"(\d+)(Mi|Gi)", quantity).groups()  # type: ignore[union-attr]
    return int(number) * (1024 if unit == "Gi" else 1)


def test_the_memory_request_covers_the_measured_peak() -> None:
    _, container, _ = worker()
    resources_ = container["resources"]
    assert mebibytes(resources_["requests"]["memory"]) >= MEASURED_PEAK_RSS_MIB
    assert mebibytes(resources_["limits"]["memory"]) >= 2 * MEASURED_PEAK_RSS_MIB


def test_every_pod_runs_as_the_images_user_without_privileges() -> None:
    for workload, spec in pod_specs():
        context = spec["securityContext"]
        assert context["runAsNonRoot"] is True, workload
        assert (context["runAsUser"], context["fsGroup"]) == (10001, 10001), workload
        for container in spec["containers"]:
            assert container["securityContext"]["readOnlyRootFilesystem"] is True, workload
            assert container["securityContext"]["allowPrivilegeEscalation"] is False, workload


def test_secrets_are_secrets_and_the_kafka_properties_a_mounted_file() -> None:
    for config_map in (r for r in resources() if r["kind"] == "ConfigMap"):
        for name in config_map["data"]:
            assert not re.search(r"TOKEN|SECRET|PASSWORD|DESTINATION", name), name
    kafka = one("ConfigMap", "seqgate-kafka")["data"]
    path = Path(kafka["SEQGATE_KAFKA_CONFIG"])
    assert path.name in keys_of("Secret", "seqgate-kafka-client")
    for workload, spec in pod_specs():
        secrets = {v["name"]: v["secret"]["secretName"] for v in spec["volumes"] if "secret" in v}
        (container,) = spec["containers"]
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        assert secrets[mounts[str(path.parent)]] == "seqgate-kafka-client", workload


def test_the_disruption_budget_covers_the_workers() -> None:
    statefulset, _, _ = worker()
    budget = one("PodDisruptionBudget", "seqgate-worker")
    assert budget["spec"]["selector"] == statefulset["spec"]["selector"]
    assert budget["spec"]["maxUnavailable"] == 1


# ---- the Grafana dashboard -----------------------------------------------------------------------


def test_metric_names_of_promql() -> None:
    names = dashboard.metric_names
    assert names(
        'histogram_quantile(0.99, sum by (le) (rate(seqgate_worker_commit_seconds_bucket{job="w",'
        ' le!="+Inf"}[$__rate_interval])))'
    ) == {"seqgate_worker_commit_seconds_bucket"}
    assert names("sum(rate(a_sum[5m])) / sum(rate(a_count[5m] offset 1h)) > bool 0") == {
        "a_sum",
        "a_count",
    }
    assert names("sum without (instance) (up) and on(job) b") == {"up", "b"}
    assert names("max(x) by (partition) * 1e3") == {"x"}


def test_the_dashboard_is_well_formed_for_grafana() -> None:
    board = dashboard.load()
    variables = {v["name"]: v for v in board["templating"]["list"]}
    sources = {f"${{{n}}}" for n, v in variables.items() if v["type"] == "datasource"}
    sources.add("${DS_PROMETHEUS}")
    panels = list(dashboard.panels(board))
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    assert board["uid"] and board["title"] and isinstance(board["schemaVersion"], int)
    graphs = [panel for panel in panels if panel["type"] != "row"]
    assert len(graphs) >= 10
    for panel in graphs:
        assert panel["datasource"]["type"] == "prometheus", panel["title"]
        assert panel["datasource"]["uid"] in sources, panel["title"]
        assert panel["targets"], panel["title"]
        refs = [target["refId"] for target in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["expr"].strip(), panel["title"]
            assert dashboard.metric_names(target["expr"]), target["expr"]
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and grid["h"] > 0, panel["title"]


def test_the_dashboard_shows_what_the_issue_asks_for() -> None:
    used = {
        name
        for expr in dashboard.expressions(dashboard.load())
        for name in dashboard.metric_names(expr)
    }
    assert used >= {
        "seqgate_worker_decisions_total",
        "seqgate_worker_rejected_total",
        "seqgate_worker_consumer_lag",
        "seqgate_worker_commit_seconds_bucket",
        "seqgate_worker_transaction_aborts_total",
        "seqgate_worker_restored_records_total",
        "seqgate_bridge_auth_failures_total",
        "seqgate_bridge_publish_failures_total",
    }


def test_the_instance_id_help_says_what_kubernetes_needs() -> None:
    (option,) = [p for p in command_path(["worker"])[-1].params if p.name == "instance_id"]
    assert isinstance(option, click.Option) and option.help is not None
    assert "Kubernetes Deployment" in option.help and "StatefulSet" in option.help
