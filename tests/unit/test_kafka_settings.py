"""The user's Kafka client properties: the three sources, their precedence, the refused
properties, librdkafka's verdict and the masking of secrets (no broker needed)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from seqgate.runtime.errors import KafkaSettingsError
from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import (
    ClientProperty,
    build_settings,
    from_environment,
    is_secret,
    parse_flag,
    parse_properties,
)
from seqgate.runtime.logs import JsonFormatter, redact

# ---- the properties file -------------------------------------------------------------------


def test_a_properties_file_takes_every_java_form_and_names_each_line() -> None:
    text = "\n".join(
        [
            "# a comment",
            "! another comment",
            "",
            "security.protocol=SASL_SSL",
            "sasl.mechanism : PLAIN",
            "sasl.username   alice",
            "   client.id=indented",
            "sasl.password=first\\",
            "    second",
            "ssl.ca.location=/etc/ca\\u00e9.pem",
            "escaped\\=key=v\\tw",
        ]
    )
    parsed = parse_properties(text, "c.properties")
    assert parsed == [
        ClientProperty("security.protocol", "SASL_SSL", "c.properties:4"),
        ClientProperty("sasl.mechanism", "PLAIN", "c.properties:5"),
        ClientProperty("sasl.username", "alice", "c.properties:6"),
        ClientProperty("client.id", "indented", "c.properties:7"),
        ClientProperty("sasl.password", "firstsecond", "c.properties:8"),
        ClientProperty("ssl.ca.location", "/etc/caé.pem", "c.properties:10"),
        ClientProperty("escaped=key", "v\tw", "c.properties:11"),
    ]


def test_a_value_may_be_empty_and_keep_inner_spaces() -> None:
    assert parse_properties("client.id=\nsasl.username = a b ", "f") == [
        ClientProperty("client.id", "", "f:1"),
        ClientProperty("sasl.username", "a b ", "f:2"),
    ]


def test_a_malformed_unicode_escape_names_its_line() -> None:
    with pytest.raises(KafkaSettingsError, match=r"f:2: malformed \\u escape"):
        parse_properties("a=b\nclient.id=\\u12", "f")


def test_an_unreadable_file_is_one_line_naming_it(tmp_path: Path) -> None:
    with pytest.raises(
        KafkaSettingsError, match=r"--kafka-config .*missing\.properties: cannot read"
    ):
        build_settings("b:1", config_file=tmp_path / "missing.properties")


# ---- flags and variables -------------------------------------------------------------------


def test_a_flag_is_name_equals_value() -> None:
    assert parse_flag("sasl.mechanism=PLAIN") == ClientProperty("sasl.mechanism", "PLAIN", "-X")
    assert parse_flag("client.id=a=b").value == "a=b"
    for bad in ("sasl.mechanism", "=PLAIN"):
        with pytest.raises(KafkaSettingsError, match="expected NAME=VALUE"):
            parse_flag(bad)


def test_variables_map_to_dotted_names_and_seqgates_own_are_not_properties() -> None:
    environ = {
        "SEQGATE_KAFKA_SASL_MECHANISM": "PLAIN",
        "SEQGATE_KAFKA_CONFIG": "file.properties",
        "SEQGATE_KAFKA_TIMEOUT": "3",
        "SEQGATE_BOOTSTRAP_SERVERS": "b:1",
        "KAFKA_SASL_MECHANISM": "ignored",
    }
    assert from_environment(environ) == [
        ClientProperty("sasl.mechanism", "PLAIN", "SEQGATE_KAFKA_SASL_MECHANISM")
    ]


def test_flags_win_over_variables_which_win_over_the_file(tmp_path: Path) -> None:
    file = tmp_path / "client.properties"
    file.write_text("client.id=from-file\nlinger.ms=1\nsocket.timeout.ms=9000\n")
    settings = build_settings(
        "b:1",
        flags=["client.id=from-flag"],
        environ={"SEQGATE_KAFKA_CLIENT_ID": "from-env", "SEQGATE_KAFKA_LINGER_MS": "7"},
        config_file=file,
    )
    assert settings.properties == {
        "client.id": "from-flag",
        "linger.ms": "7",
        "socket.timeout.ms": "9000",
    }
    assert settings.origins == {
        "client.id": "-X",
        "linger.ms": "SEQGATE_KAFKA_LINGER_MS",
        "socket.timeout.ms": f"{file}:3",
    }


def test_the_environment_of_a_child_process_gives_the_same_settings() -> None:
    settings = build_settings(
        "b:1", flags=["client.id=c", "sasl.password=s3cret", "sasl.username=u"], timeout_s=4.5
    )
    child_env = settings.environment()
    again = build_settings(
        child_env["SEQGATE_BOOTSTRAP_SERVERS"],
        environ=child_env,
        timeout_s=float(child_env["SEQGATE_KAFKA_TIMEOUT"]),
    )
    assert (again.bootstrap_servers, again.properties, again.timeout_s) == (
        "b:1",
        settings.properties,
        4.5,
    )


# ---- what is refused -----------------------------------------------------------------------

OWNED = [
    "bootstrap.servers",
    "transactional.id",
    "enable.idempotence",
    "acks",
    "request.required.acks",
    "isolation.level",
    "enable.auto.commit",
    "enable.auto.offset.store",
    "auto.offset.reset",
    "group.id",
    "group.instance.id",
    "partitioner",
    "partition.assignment.strategy",
    "enable.partition.eof",
    "metadata.recovery.strategy",
    "transaction.timeout.ms",
    "session.timeout.ms",
]


@pytest.mark.parametrize("name", OWNED)
def test_a_property_seqgate_owns_is_refused_with_its_reason(name: str) -> None:
    with pytest.raises(KafkaSettingsError) as caught:
        build_settings("b:1", flags=[f"{name}=x"])
    message = str(caught.value)
    assert message.startswith(f"{name} (-X): seqgate sets this property itself; ")
    assert "\n" not in message


def test_a_refused_property_in_a_file_names_its_line(tmp_path: Path) -> None:
    file = tmp_path / "c.properties"
    file.write_text("client.id=x\n\nisolation.level=read_uncommitted\n")
    with pytest.raises(KafkaSettingsError, match=rf"isolation.level \({file}:3\)"):
        build_settings("b:1", config_file=file)


def test_an_unknown_property_names_where_it_came_from(tmp_path: Path) -> None:
    file = tmp_path / "c.properties"
    file.write_text("# cloud\nclient.id=x\nsasl.mechanisms.typo=PLAIN\n")
    with pytest.raises(KafkaSettingsError) as caught:
        build_settings("b:1", config_file=file)
    assert str(caught.value) == (
        f"sasl.mechanisms.typo=PLAIN ({file}:3): No such configuration property:"
        ' "sasl.mechanisms.typo"'
    )
    with pytest.raises(KafkaSettingsError, match=r"^foo=1 \(SEQGATE_KAFKA_FOO\): No such"):
        build_settings("b:1", environ={"SEQGATE_KAFKA_FOO": "1"})


def test_an_invalid_value_names_the_property_and_the_flag() -> None:
    with pytest.raises(KafkaSettingsError, match=r"^socket.timeout.ms=soon \(-X\): Invalid value"):
        build_settings("b:1", flags=["socket.timeout.ms=soon"])


def test_a_java_only_setting_says_what_librdkafka_takes_instead() -> None:
    with pytest.raises(
        KafkaSettingsError, match=r"librdkafka takes sasl\.username and sasl\.password"
    ):
        build_settings("b:1", flags=["sasl.jaas.config=org.apache...PlainLoginModule"])


def test_a_combination_librdkafka_refuses_names_the_culprit(tmp_path: Path) -> None:
    missing = tmp_path / "no-ca.pem"
    with pytest.raises(KafkaSettingsError) as caught:
        build_settings("b:1", flags=["security.protocol=SSL", f"ssl.ca.location={missing}"])
    assert str(caught.value).startswith(
        f"Kafka client properties: ssl.ca.location={missing} (-X): "
    )
    with pytest.raises(KafkaSettingsError, match=r"max.in.flight=10 \(-X\).*<= 5"):
        build_settings("b:1", flags=["max.in.flight=10"])


def test_a_tuning_property_wins_over_seqgates_own_setting() -> None:
    settings = build_settings("b:1", flags=["linger.ms=50", "client.id=ops"])
    config = client_config(settings, **{"linger.ms": 5, "group.id": "g"})
    assert config["linger.ms"] == "50" and config["client.id"] == "ops"
    assert config["group.id"] == "g" and config["bootstrap.servers"] == "b:1"


# ---- secrets --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "sasl.password",
        "ssl.key.password",
        "ssl.keystore.password",
        "sasl.oauthbearer.client.secret",
        "ssl.key.pem",
        "sasl.oauthbearer.config",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret(name)


@pytest.mark.parametrize("name", ["sasl.username", "ssl.ca.location", "ssl.certificate.pem"])
def test_names_that_are_not_secret(name: str) -> None:
    assert not is_secret(name)


def test_print_config_shows_secrets_as_stars() -> None:
    settings = build_settings(
        "b:1", flags=["sasl.username=alice", "sasl.password=hunter2-long", "client.id=c"]
    )
    shown = json.dumps(settings.describe())
    assert "hunter2-long" not in shown
    assert settings.describe()["properties"] == {
        "client.id": "c",
        "sasl.password": "***",
        "sasl.username": "alice",
    }


def test_an_error_never_shows_a_secret_value() -> None:
    with pytest.raises(KafkaSettingsError) as caught:
        build_settings(
            "b:1",
            flags=[
                "security.protocol=SSL",
                "ssl.key.password=topsecret!",
                "ssl.key.location=/nope/key",
                "ssl.certificate.location=/nope/cert",
            ],
        )
    assert "/nope/" in str(caught.value) and "topsecret!" not in str(caught.value)
    with pytest.raises(KafkaSettingsError) as caught:
        build_settings("b:1", flags=["sasl.password=topsecret!", "socket.timeout.ms=topsecret!"])
    assert "topsecret!" not in str(caught.value)


def test_a_log_line_never_shows_a_redacted_value() -> None:
    redact(['pa$$"word-in-logs'])
    record = logging.makeLogRecord(
        {"msg": 'connecting with pa$$"word-in-logs', "detail": 'x pa$$"word-in-logs y'}
    )
    line = JsonFormatter().format(record)
    assert "word-in-logs" not in line and line.count("***") == 2
