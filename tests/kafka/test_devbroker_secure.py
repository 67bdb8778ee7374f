"""The development broker in SASL_SSL mode (SCRAM-SHA-512 over TLS), against real brokers."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from seqgate_devtools.broker import (
    BrokerHandle,
    broker_answers,
    ensure_kafka_jars,
    load_state,
    running_broker,
    stop_broker,
)
from seqgate_devtools.broker.bounce import kill_broker, restart_broker
from seqgate_devtools.broker.security import read_client_properties, write_unrelated_ca

from tests.support.paths import REPO
from tests.support.secure_helpers import SecuredKafka

BOOTSTRAP_RE = re.compile(r"^127\.0\.0\.1:\d+$")
# A client that cannot speak to the listener must give up quickly, not hang the suite.
REFUSED_TIMEOUT = 4.0

pytestmark = [pytest.mark.kafka, pytest.mark.own_broker, pytest.mark.timeout(180)]


def _create_topic(kafka: SecuredKafka, topic: str) -> None:
    admin = AdminClient(kafka.config())
    for future in admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=30).values():
        future.result(timeout=60)


def _read_committed(kafka: SecuredKafka, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer(
        kafka.config(
            {
                "group.id": f"{topic}-reader",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            }
        )
    )
    values: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + 30
        while len(values) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            value = msg.value()
            assert isinstance(value, bytes)
            values.append(value)
        # Anything beyond ``expected`` (e.g. an aborted record) would show up now.
        extra = consumer.poll(2.0)
        if extra is not None and not extra.error():
            values.append(extra.value() or b"")
    finally:
        consumer.close()
    return values


def _refused(config: dict[str, Any]) -> bool:
    admin = AdminClient({**config, "log_level": 0})
    started = time.monotonic()
    try:
        admin.list_topics(timeout=REFUSED_TIMEOUT)
    except KafkaException:
        assert time.monotonic() - started < REFUSED_TIMEOUT + 5
        return True
    return False


# --------------------------------------------------------------------------- secured clients


def test_properties_file_is_private_and_complete(secured_kafka: SecuredKafka) -> None:
    path = secured_kafka.properties_file
    assert path.is_absolute()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    settings = read_client_properties(path)
    assert settings == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": secured_kafka.username,
        "sasl.password": secured_kafka.password,
        "ssl.ca.location": str(secured_kafka.ca_file),
    }
    assert secured_kafka.ca_file.is_absolute()
    assert secured_kafka.ca_file.read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert len(secured_kafka.password) >= 16


def test_produce_and_read_committed_consume(secured_kafka: SecuredKafka, unique_name: str) -> None:
    topic = f"{unique_name}-plain"
    _create_topic(secured_kafka, topic)
    producer = Producer(secured_kafka.config({"enable.idempotence": True}))
    sent = [f"record-{i}".encode() for i in range(5)]
    for value in sent:
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    assert _read_committed(secured_kafka, topic, len(sent)) == sent


def test_transactions_over_sasl_ssl(secured_kafka: SecuredKafka, unique_name: str) -> None:
    topic = f"{unique_name}-txn"
    _create_topic(secured_kafka, topic)
    producer = Producer(
        secured_kafka.config(
            {"transactional.id": f"{unique_name}-tx", "transaction.timeout.ms": 60000}
        )
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"committed")
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, b"aborted")
    producer.flush(30)
    producer.abort_transaction(30)
    assert _read_committed(secured_kafka, topic, 1) == [b"committed"]


def test_plaintext_client_gets_nothing(secured_kafka: SecuredKafka) -> None:
    assert _refused({"bootstrap.servers": secured_kafka.bootstrap_servers})
    assert not broker_answers(secured_kafka.bootstrap_servers, timeout=2.0)


def test_wrong_password_and_wrong_ca_are_refused(
    secured_kafka: SecuredKafka, tmp_path: Path
) -> None:
    assert _refused(secured_kafka.config({"sasl.password": secured_kafka.password + "x"}))
    wrong_ca = write_unrelated_ca(tmp_path / "other-ca.pem")
    assert wrong_ca.read_bytes() != secured_kafka.ca_file.read_bytes()
    assert _refused(secured_kafka.config({"ssl.ca.location": str(wrong_ca)}))
    # The same client with the right settings does get through.
    assert not _refused(secured_kafka.config())
    assert broker_answers(
        secured_kafka.bootstrap_servers, timeout=10.0, properties=secured_kafka.properties_file
    )


# --------------------------------------------------------------------------- launcher and CLI


@pytest.fixture
def own_secured_broker(tmp_path: Path) -> Iterator[BrokerHandle]:
    """A SASL_SSL broker of this test alone (it gets killed)."""
    with running_broker(tmp_path / "broker", security="sasl_ssl") as handle:
        yield handle


def test_handle_and_state_record_security(own_secured_broker: BrokerHandle) -> None:
    handle = own_secured_broker
    assert handle.security == "sasl_ssl"
    assert handle.client_properties == handle.data_dir / "client.properties"
    assert handle.ca_file is not None and handle.ca_file.is_file()
    assert handle.state_file is not None
    recorded = json.loads(handle.state_file.read_text())
    assert recorded["security"] == "sasl_ssl"
    assert recorded["client_properties"] == str(handle.client_properties)
    assert recorded["ca_file"] == str(handle.ca_file)
    loaded = load_state(handle.state_file)
    assert loaded is not None
    assert (loaded.security, loaded.client_properties, loaded.ca_file) == (
        "sasl_ssl",
        handle.client_properties,
        handle.ca_file,
    )
    assert "SASL_SSL" in (handle.data_dir / "server.properties").read_text()


def test_restart_keeps_certificates_user_and_port(own_secured_broker: BrokerHandle) -> None:
    handle = own_secured_broker
    assert handle.client_properties is not None and handle.ca_file is not None
    properties_before = handle.client_properties.read_bytes()
    ca_before = handle.ca_file.read_bytes()
    kill_broker(handle)
    restarted = restart_broker(handle, timeout=90)
    try:
        assert restarted.bootstrap_servers == handle.bootstrap_servers
        assert restarted.pid != handle.pid
        assert (restarted.security, restarted.client_properties, restarted.ca_file) == (
            "sasl_ssl",
            handle.client_properties,
            handle.ca_file,
        )
        assert handle.client_properties.read_bytes() == properties_before
        assert handle.ca_file.read_bytes() == ca_before
        assert restarted.answers(timeout=10.0)
        assert not broker_answers(restarted.bootstrap_servers, timeout=2.0)
    finally:
        stop_broker(restarted)


def _alive(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def test_cli_up_status_down_sasl_ssl(tmp_path: Path) -> None:
    libs = ensure_kafka_jars()
    home = tmp_path / "home"
    home.mkdir()
    # Share the real jar cache: no second Maven run.
    (home / libs.parent.name).symlink_to(libs.parent, target_is_directory=True)
    data_dir = tmp_path / "secure-data"
    env = {k: v for k, v in os.environ.items() if k not in ("SEQGATE_HOME", "PYTHONPATH")}
    env["SEQGATE_HOME"] = str(home)
    env["PYTHONPATH"] = str(REPO)
    state_file = home / "broker" / "state.json"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "seqgate_devtools.cli.broker", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=150,
            check=False,
        )

    try:
        up = cli("up", "--security", "sasl_ssl", "--data-dir", str(data_dir))
        assert up.returncode == 0, up.stderr
        lines = up.stdout.splitlines()
        assert len(lines) == 2, up.stdout
        properties, bootstrap = Path(lines[0]), lines[1]
        assert properties == data_dir.absolute() / "client.properties"
        assert BOOTSTRAP_RE.match(bootstrap), up.stdout
        assert "starting Apache Kafka 4.1.1" in up.stderr
        assert read_client_properties(properties)["security.protocol"] == "SASL_SSL"
        recorded = json.loads(state_file.read_text())
        pid = recorded["pid"]
        assert recorded["security"] == "sasl_ssl"
        assert recorded["client_properties"] == str(properties)
        assert _alive(pid)
        assert broker_answers(bootstrap, timeout=10.0, properties=properties)

        status = cli("status")
        assert status.returncode == 0, status.stderr
        assert status.stdout.strip() == (
            f"{bootstrap} pid={pid} security=sasl_ssl properties={properties}"
        )

        again = cli("up", "--security", "sasl_ssl", "--data-dir", str(data_dir))
        assert again.returncode == 0, again.stderr
        assert again.stdout.splitlines() == lines
        assert "already running" in again.stderr

        other_mode = cli("up")
        assert other_mode.returncode == 2
        assert "security sasl_ssl is already running" in other_mode.stderr

        down = cli("down")
        assert down.returncode == 0, down.stderr
        assert down.stdout.strip() == f"stopped broker {bootstrap} (pid {pid})"
        assert not _alive(pid)
        assert not state_file.exists()
        assert cli("status").returncode == 1
    finally:
        stop_broker(state_file)  # no-op unless an assertion failed while it ran
