"""The whole pipeline through a SASL_SSL broker (SCRAM-SHA-512 over TLS), every command
given only `--kafka-config`; and each way a client can be refused by it (wrong password,
unknown user, wrong CA, plaintext on the TLS port) is one line naming the address and the
cause, exit code 3, well within `--kafka-timeout`. Every command is its own process."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from seqgate_devtools.broker.security import read_client_properties, write_unrelated_ca
from seqgate_devtools.samples import s3_notification, s3_record, to_bytes

from tests.support.environment import clean_env
from tests.support.paths import REPO
from tests.support.secure_helpers import SecuredKafka

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(600)]

OBJECTS = 12


def seqgate(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "seqgate.cli", *args],
        cwd=cwd,
        env=this_tree_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def this_tree_env() -> dict[str, str]:
    """No SEQGATE_* nor KAFKA_BOOTSTRAP_SERVERS; this tree's code, whatever the venv has."""
    return clean_env({"PYTHONPATH": str(REPO)})


def write_notifications(path: Path) -> int:
    """Three writes per object, delivered newest first and with a redelivery each:
    the worker accepts the newest write of every object and nothing else."""
    lines = []
    for obj in range(OBJECTS):
        key = f"secured%2Fobject-{obj}.csv"
        for sequencer in ("30", "10", "20", "30"):
            record = s3_record(key=key, sequencer=sequencer, version_id=f"v{sequencer}")
            lines.append(to_bytes(s3_notification(record)))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return len(lines)


@pytest.fixture
def kafka(secured_kafka: SecuredKafka) -> list[str]:
    return [
        "--bootstrap-servers",
        secured_kafka.bootstrap_servers,
        "--kafka-config",
        str(secured_kafka.properties_file),
    ]


@pytest.fixture
def pipeline(unique_name: str, kafka: list[str]) -> list[str]:
    """The options of the worker and `verify`."""
    return [
        *kafka,
        "--input-topic",
        f"{unique_name}.in",
        "--outbox-topic",
        f"{unique_name}.out",
        "--rejected-topic",
        f"{unique_name}.rejected",
        "--application-id",
        f"{unique_name}-app",
    ]


def committed_everything(secured_kafka: SecuredKafka, group: str, topic: str) -> bool:
    consumer = Consumer(secured_kafka.config({"group.id": group, "enable.auto.commit": False}))
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        partitions = [TopicPartition(topic, p) for p in metadata.topics[topic].partitions]
        committed = consumer.committed(partitions, timeout=10)
        for tp in committed:
            _low, high = consumer.get_watermark_offsets(tp, timeout=10)
            if high > 0 and tp.offset < high:
                return False
        return True
    finally:
        consumer.close()


@pytest.fixture
def worker_process(
    tmp_path: Path, pipeline: list[str], unique_name: str
) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "seqgate.cli",
            "worker",
            *pipeline,
            "--instance-id",
            "secured-w1",
            "--state-dir",
            str(tmp_path / "state"),
        ],
        cwd=tmp_path,
        env=this_tree_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def test_the_pipeline_runs_through_a_sasl_ssl_broker(
    tmp_path: Path,
    secured_kafka: SecuredKafka,
    kafka: list[str],
    pipeline: list[str],
    unique_name: str,
    worker_process: subprocess.Popen[str],
) -> None:
    inputs = ["--input-topic", f"{unique_name}.in", "--application-id", f"{unique_name}-app"]
    created = seqgate("topics", "create", *pipeline, "--partitions", "3", cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    assert created.stdout.count("\tcreated") == 4

    notifications = tmp_path / "notifications.jsonl"
    sent = write_notifications(notifications)
    published = seqgate(
        "bridge",
        "file",
        str(notifications),
        *kafka,
        "--events-topic",
        f"{unique_name}.in",
        "--rejected-topic",
        f"{unique_name}.rejected",
        cwd=tmp_path,
    )
    assert published.returncode == 0, published.stderr
    assert json.loads(published.stdout)["published"] == sent

    deadline = time.monotonic() + 120
    while not committed_everything(secured_kafka, f"{unique_name}-app", f"{unique_name}.in"):
        assert worker_process.poll() is None, worker_process.communicate()[1]
        assert time.monotonic() < deadline, "the worker did not commit every input in 120 s"
        time.sleep(0.5)
    worker_process.send_signal(signal.SIGTERM)
    _out, worker_err = worker_process.communicate(timeout=60)
    assert worker_process.returncode == 0, worker_err
    summary = json.loads(worker_err.strip().splitlines()[-1])
    assert (summary["accepted"], summary["duplicate"], summary["stale"]) == (
        OBJECTS,
        OBJECTS,
        2 * OBJECTS,
    )

    verified = seqgate("verify", *pipeline, "--json", cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    report = json.loads(verified.stdout)
    assert report["ok"] is True
    assert report["totals"]["found"] == report["totals"]["expected"] == OBJECTS

    status = seqgate("status", *kafka, *inputs, "--json", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    identity = "s3://example-input/secured/object-0.csv"
    watermark = seqgate("watermark", *kafka, *inputs, "--json", identity, cwd=tmp_path)
    assert watermark.returncode == 0, watermark.stderr
    assert json.loads(watermark.stdout)["identity"] == identity

    database = tmp_path / "objects.db"
    dispatched = seqgate(
        "dispatch",
        *kafka,
        "--outbox-topic",
        f"{unique_name}.out",
        "--group-id",
        f"{unique_name}-dispatch",
        "--destination",
        f"sqlite:///{database}",
        "--idle-exit-seconds",
        "2",
        cwd=tmp_path,
    )
    assert dispatched.returncode == 0, dispatched.stderr
    with sqlite3.connect(database) as db:
        tables = [row[0] for row in db.execute("select name from sqlite_master where type='table'")]
        assert tables, "the dispatcher created no table"
        (rows,) = db.execute(f"select count(*) from {tables[0]}").fetchone()
    assert rows == OBJECTS


# ---- refusals --------------------------------------------------------------------------------


def properties_with(secured_kafka: SecuredKafka, path: Path, **changes: str) -> Path:
    settings = read_client_properties(secured_kafka.properties_file)
    settings.update({name.replace("_", "."): value for name, value in changes.items()})
    path.write_text("".join(f"{name}={value}\n" for name, value in settings.items()))
    return path


def refused(args: list[str], cwd: Path, timeout_s: float = 15.0) -> tuple[str, float]:
    started = time.monotonic()
    done = seqgate("status", *args, "--kafka-timeout", str(timeout_s), cwd=cwd)
    took = time.monotonic() - started
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0], took


def test_a_wrong_password_is_an_authentication_failure(
    tmp_path: Path, secured_kafka: SecuredKafka
) -> None:
    props = properties_with(secured_kafka, tmp_path / "p", sasl_password="not-the-password")
    line, took = refused(
        ["--bootstrap-servers", secured_kafka.bootstrap_servers, "--kafka-config", str(props)],
        tmp_path,
    )
    assert line.startswith(f"error: Kafka at {secured_kafka.bootstrap_servers} refused the")
    assert "authentication failed" in line and "sasl.password" in line
    assert "not-the-password" not in line
    assert took < 15


def test_an_unknown_user_is_an_authentication_failure(
    tmp_path: Path, secured_kafka: SecuredKafka
) -> None:
    props = properties_with(secured_kafka, tmp_path / "p", sasl_username="nobody")
    line, took = refused(
        ["--bootstrap-servers", secured_kafka.bootstrap_servers, "--kafka-config", str(props)],
        tmp_path,
    )
    assert "authentication failed" in line and secured_kafka.bootstrap_servers in line
    assert secured_kafka.password not in line
    assert took < 15


def test_a_wrong_ca_is_a_tls_verification_failure(
    tmp_path: Path, secured_kafka: SecuredKafka
) -> None:
    other_ca = write_unrelated_ca(tmp_path / "other-ca.pem")
    props = properties_with(secured_kafka, tmp_path / "p", ssl_ca_location=str(other_ca))
    line, took = refused(
        ["--bootstrap-servers", secured_kafka.bootstrap_servers, "--kafka-config", str(props)],
        tmp_path,
    )
    assert "TLS verification of the broker's certificate failed" in line
    assert "ssl.ca.location" in line and secured_kafka.bootstrap_servers in line
    assert took < 15


def test_a_plaintext_client_on_the_tls_port_is_a_protocol_mismatch(
    tmp_path: Path, secured_kafka: SecuredKafka
) -> None:
    line, took = refused(["--bootstrap-servers", secured_kafka.bootstrap_servers], tmp_path)
    assert "protocol mismatch" in line and "security.protocol" in line
    assert secured_kafka.bootstrap_servers in line
    assert took < 15


def test_a_tls_client_on_a_plaintext_port_is_a_protocol_mismatch(
    tmp_path: Path, secured_kafka: SecuredKafka, kafka_bootstrap: str
) -> None:
    line, took = refused(
        [
            "--bootstrap-servers",
            kafka_bootstrap,
            "--kafka-config",
            str(secured_kafka.properties_file),
        ],
        tmp_path,
    )
    assert kafka_bootstrap in line
    assert "protocol mismatch" in line or "TLS handshake failed" in line
    assert took < 15
