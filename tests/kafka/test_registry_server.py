"""The Confluent wire format against a real schema registry and the real broker.

The registry is Apicurio Registry (:mod:`tests.support.apicurio`) through its
Confluent-compatible API, a server nobody in this project wrote, started once for the
module with HTTP basic authentication, so that every command also proves it sends the
credentials of --schema-registry-auth. seqgate runs as an operator runs it, one process
per command:

* a pipeline: `bridge file` publishes S3 notifications, `worker` turns them into outbox
  records, then every input and outbox value is ``00`` + the big-endian id the registry
  lists for its ``<topic>-value`` subject, every subject seqgate created has
  compatibility BACKWARD, confluent-kafka's own AvroDeserializer decodes the outbox as
  seqgate does, `tail` shows the records as ``confluent`` with their schema id, and
  `verify` passes reading both topics through the registry;
* refusals in one ``error:`` line, no traceback: wrong credentials (exit 2, naming
  --schema-registry-auth), no registry at the URL (exit 3, naming the URL), a subject
  whose history seqgate's schema is not a BACKWARD-compatible successor of (exit 2,
  naming the subject).

Without Java 21+ (Apicurio needs it) the module skips, saying so; under CI it fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from seqgate_devtools.samples import s3_notification, s3_record, to_bytes

from seqgate.runtime.schema_registry import RegistrySettings, connect
from seqgate.schemas.codec import OBJECT_EVENT, OUTBOX_RECORD
from seqgate.schemas.framing import Framing
from seqgate.streams.worker.processor import WorkerConfig
from tests.support.apicurio import Registry, RegistryUnavailable, running_apicurio
from tests.support.environment import clean_env
from tests.support.kafka_helpers import closed_port, group_args, make_config, read_all, wait_for
from tests.support.paths import REPO
from tests.support.torture_helpers import GroupProbe, launched

pytestmark = pytest.mark.kafka

PARTITIONS = 2
INSTANCE = "w1"
KEYS = ["reports/a.csv", "reports/b.csv", "images/c.png"]
TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """Apicurio Registry with basic authentication, for the module."""
    password = uuid.uuid4().hex
    try:
        with running_apicurio(tmp_path_factory.mktemp("apicurio"), f"seqgate:{password}") as found:
            yield found
    except RegistryUnavailable as why:
        if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
            pytest.fail(f"no schema registry in CI: {why}", pytrace=False)
        pytest.skip(f"no schema registry: {why}")


def registry_args(registry: Registry) -> list[str]:
    assert registry.auth is not None
    return ["--schema-registry-url", registry.url, "--schema-registry-auth", registry.auth]


def seqgate(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "seqgate.cli", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=clean_env(),
        cwd=REPO,
        timeout=TIMEOUT_S,
        check=False,
    )


def bridge(config: WorkerConfig, source: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return seqgate(
        "bridge",
        "file",
        str(source),
        "--bootstrap-servers",
        config.kafka.bootstrap_servers,
        "--events-topic",
        config.input_topic,
        "--rejected-topic",
        config.rejected_topic,
        *args,
    )


def ok(done: subprocess.CompletedProcess[bytes]) -> str:
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    return done.stdout.decode()


def one_error_line(done: subprocess.CompletedProcess[bytes], code: int, *mentions: str) -> str:
    stderr = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    assert done.returncode == code, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    for text in mentions:
        assert text in lines[0], lines[0]
    return lines[0]


def notifications(folder: Path) -> Path:
    """A file of three S3 notifications, one object each, as JSON Lines."""
    lines = [
        to_bytes(s3_notification(s3_record(key=key, sequencer=f"{n + 1:x}")))
        for n, key in enumerate(KEYS)
    ]
    path = folder / "notifications.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@dataclass(frozen=True)
class Value:
    partition: int
    offset: int
    value: bytes


def values(config: WorkerConfig, topic: str) -> list[Value]:
    """The values of ``topic`` (none a tombstone), in partition and offset order."""
    found = []
    for record in read_all(config.kafka.bootstrap_servers, topic):
        assert record.value, (topic, record.partition, record.offset)
        found.append(Value(record.partition, record.offset, record.value))
    return found


def latest_id(registry: Registry, subject: str) -> int:
    status, latest = registry.request("GET", f"/subjects/{subject}/versions/latest")
    assert status == 200, (subject, status, latest)
    return int(latest["id"])


# ---- the pipeline --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    config: WorkerConfig
    registry: Registry


@pytest.fixture(scope="module")
def run(registry: Registry, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """`bridge file`, then `worker` until it has committed its whole input, through the registry."""
    tmp = tmp_path_factory.mktemp("registry-pipeline")
    name = f"t-registry-{uuid.uuid4().hex[:12]}"
    config = make_config(kafka_bootstrap, name, tmp, partitions=PARTITIONS, instance_id=INSTANCE)
    summary = json.loads(ok(bridge(config, notifications(tmp), *registry_args(registry))))
    assert summary["published"] == len(KEYS), summary

    probe = GroupProbe(kafka_bootstrap, config)
    try:
        with launched(kafka_bootstrap, config, tmp / "state", tmp / "logs") as launcher:
            worker = launcher.start(INSTANCE, extra_args=registry_args(registry))
            wait_for(
                lambda: not worker.alive() or probe.caught_up(),
                TIMEOUT_S,
                "the worker to commit its whole input",
            )
            assert worker.alive(), f"the worker exited: {worker.stderr()[-3000:]}"
            assert worker.stop() == 0, worker.stderr()[-3000:]
    finally:
        probe.close()
    return Run(config, registry)


def seqgate_framing(registry: Registry) -> Framing:
    """seqgate's own reader of both encodings, through the registry."""
    return connect(RegistrySettings(registry.url, registry.auth))


def test_values_carry_the_ids_the_registry_lists(run: Run) -> None:
    config, registry = run.config, run.registry
    for topic, count in [(config.input_topic, len(KEYS)), (config.outbox_topic, len(KEYS))]:
        schema_id = latest_id(registry, f"{topic}-value")
        header = b"\x00" + schema_id.to_bytes(4, "big")
        written = values(config, topic)
        assert len(written) == count, topic
        for record in written:
            assert record.value[:5] == header, (topic, record.value[:5].hex(), schema_id)


def test_seqgate_created_its_subjects_with_compatibility_backward(run: Run) -> None:
    config, registry = run.config, run.registry
    status, subjects = registry.request("GET", "/subjects")
    assert status == 200, subjects
    ours = sorted(s for s in subjects if s.startswith(config.input_topic))
    assert f"{config.input_topic}-value" in ours and f"{config.outbox_topic}-value" in ours, ours
    for subject in ours:
        status, config_of = registry.request("GET", f"/config/{subject}")
        assert status == 200, (subject, status, config_of)
        assert config_of.get("compatibilityLevel") == "BACKWARD", (subject, config_of)


def test_confluents_deserializer_reads_the_outbox_as_seqgate_does(run: Run) -> None:
    config, registry = run.config, run.registry
    deserializer = AvroDeserializer(SchemaRegistryClient(registry.client_config()))
    framing = seqgate_framing(registry)
    records = values(config, config.outbox_topic)
    assert len(records) == len(KEYS)
    for record in records:
        context = SerializationContext(config.outbox_topic, MessageField.VALUE)
        theirs: dict[str, Any] = deserializer(record.value, context)
        ours = framing.decode(OUTBOX_RECORD, record.value).to_dict()
        assert theirs.keys() == ours.keys()
        for field in ours:
            assert theirs[field] == ours[field], field
        assert theirs["event"]["key"] in KEYS
    decoded_inputs = [
        framing.decode(OBJECT_EVENT, record.value).key
        for record in values(config, config.input_topic)
    ]
    assert sorted(decoded_inputs) == sorted(KEYS)


def test_tail_shows_the_schema_id_and_the_decoded_value(run: Run) -> None:
    config, registry = run.config, run.registry
    schema_id = latest_id(registry, f"{config.outbox_topic}-value")
    framing = seqgate_framing(registry)
    expected = {
        (record.partition, record.offset): framing.decode(OUTBOX_RECORD, record.value).to_dict()
        for record in values(config, config.outbox_topic)
    }
    assert len(expected) == len(KEYS)
    shown = ok(
        seqgate(
            "tail",
            "--bootstrap-servers",
            config.kafka.bootstrap_servers,
            "--outbox-topic",
            config.outbox_topic,
            *registry_args(registry),
            "--from-beginning",
            config.outbox_topic,
        )
    )
    lines = [json.loads(line) for line in shown.splitlines()]
    assert len(lines) == len(expected), shown
    for line in lines:
        assert (line["encoding"], line["schema_id"], line["type"]) == (
            "confluent",
            schema_id,
            "outbox",
        ), line
        assert line["value"] == expected[(line["partition"], line["offset"])], line


def test_verify_passes_through_the_registry(run: Run) -> None:
    config, registry = run.config, run.registry
    assert len(values(config, config.outbox_topic)) == len(KEYS)
    command = [
        "verify",
        *group_args(config),
        "--outbox-topic",
        config.outbox_topic,
        "--rejected-topic",
        config.rejected_topic,
    ]
    ok(seqgate(*command, *registry_args(registry)))
    # It did read the Confluent frames: without the registry it cannot.
    without = seqgate(*command)
    stderr = without.stderr.decode("utf-8", "replace")
    assert without.returncode != 0 and "--schema-registry-url" in stderr + without.stdout.decode()


# ---- refusals ------------------------------------------------------------------------------------


@pytest.fixture
def topics(kafka_bootstrap: str, unique_name: str, tmp_path: Path) -> WorkerConfig:
    return make_config(kafka_bootstrap, unique_name, tmp_path, partitions=1)


def test_wrong_credentials_are_one_line_and_code_2(
    registry: Registry, topics: WorkerConfig, tmp_path: Path
) -> None:
    user = (registry.auth or "seqgate:").partition(":")[0]
    done = bridge(
        topics,
        notifications(tmp_path),
        "--schema-registry-url",
        registry.url,
        "--schema-registry-auth",
        f"{user}:not-the-password",
    )
    line = one_error_line(done, 2, "--schema-registry-auth", registry.url)
    assert "not-the-password" not in line
    assert read_all(topics.kafka.bootstrap_servers, topics.input_topic) == []


def test_no_registry_at_the_url_is_one_line_and_code_3(
    topics: WorkerConfig, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    done = bridge(topics, notifications(tmp_path), "--schema-registry-url", url)
    one_error_line(done, 3, url)
    assert read_all(topics.kafka.bootstrap_servers, topics.input_topic) == []


def test_an_incompatible_subject_is_one_line_and_code_2(
    registry: Registry, topics: WorkerConfig, tmp_path: Path
) -> None:
    subject = f"{topics.input_topic}-value"
    assert registry.request("PUT", f"/config/{subject}", {"compatibility": "BACKWARD"})[0] == 200
    unrelated = {
        "type": "record",
        "name": "ObjectEvent",
        "namespace": "io.seqgate",
        "fields": [{"name": "zzz", "type": "int"}],
    }
    status, answer = registry.request(
        "POST", f"/subjects/{subject}/versions", {"schema": json.dumps(unrelated)}
    )
    assert status == 200, answer
    # The registry itself refuses seqgate's ObjectEvent after it (else the test proves nothing).
    status, answer = registry.request(
        "POST",
        f"/compatibility/subjects/{subject}/versions/latest",
        {"schema": OBJECT_EVENT.schema_json},
    )
    assert status == 200 and answer == {"is_compatible": False}, (status, answer)

    done = bridge(topics, notifications(tmp_path), *registry_args(registry))
    one_error_line(done, 2, repr(subject), "not compatible")
    assert read_all(topics.kafka.bootstrap_servers, topics.input_topic) == []
    status, versions = registry.request("GET", f"/subjects/{subject}/versions")
    assert status == 200 and versions == [1], (status, versions)  # seqgate added nothing
