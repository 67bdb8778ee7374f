"""Registry mode: the Confluent wire format through a schema registry (seqgate.schemas.framing,
seqgate.runtime.schema_registry, the --schema-registry-* options), against
confluent-kafka's in-memory registry (``mock://``) and its own Avro deserializer."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import (
    MockSchemaRegistryClient,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.schema_registry_client import (
    ConfigCompatibilityLevel,
    ServerConfig,
)
from confluent_kafka.serialization import MessageField, SerializationContext
from fastavro import schemaless_writer
from fastavro.schema import parse_schema

from seqgate.cli import cli
from seqgate.runtime.errors import SchemaRegistryUnreachable, UsageError
from seqgate.runtime.schema_registry import ConfluentSchemaRegistry, RegistrySettings, connect
from seqgate.schemas.avro_codec import AvroCodec
from seqgate.schemas.avro_schemas import schema_fingerprint, standalone_schema_json
from seqgate.schemas.codec import DECISION_RECORD, OBJECT_EVENT, OUTBOX_RECORD, REJECTED_RECORD
from seqgate.schemas.confluent import confluent_frame
from seqgate.schemas.errors import CodecError
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.schemas.records import DecisionRecord, ObjectEvent, OutboxRecord, RejectedRecord
from seqgate.schemas.wire import SINGLE_OBJECT_MAGIC
from tests.support.kafka_helpers import closed_port
from tests.support.paths import REPO

EVENT = ObjectEvent(
    id="s3:0055AED6DCD90281E5:created:s3://my-bucket/photos/2024/cat.jpg",
    source="s3",
    bucket="my-bucket",
    key="photos/2024/cät +%20.jpg",
    kind="created",
    event_name="ObjectCreated:Put",
    position="0055AED6DCD90281E5",
    version_id="096fKKXTRTtl3on89fVO.nfljtsv6qko",
    size=2**40,
    etag="d41d8cd98f00b204e9800998ecf8427e",
    event_time="2024-05-01T12:00:00.000Z",
    origin="sqs:my-queue",
)
EVENT_NULLS = ObjectEvent(
    id="b2:evt-1",
    source="b2",
    bucket="b",
    key="k",
    kind="removed",
    event_name="b2:ObjectDeleted",
    position=None,
    version_id=None,
    size=None,
    etag=None,
    event_time=None,
    origin="http:/hooks/b2",
)
OUTBOX = OutboxRecord(EVENT, "0055AED6DCD90281E4", 2, 2**33)
OUTBOX_NULLS = OutboxRecord(EVENT_NULLS, None, 0, 0)
REJECTED = RejectedRecord(b"\x00\xff\xc3\x01 not json", "file:x.json:3", "malformed", "oops", 4)
REJECTED_NULLS = RejectedRecord(b"", "kafka:in:0:7", "undecodable_event", "bad magic", None)
DECISION = DecisionRecord(1, 42, "s3://b/k", "e-1", "0A", "created", "accepted", None, None)
DECISION_NULLS = DecisionRecord(0, 0, "s3://b/k", None, None, None, "rejected", "malformed", "09")

# (codec, records): every record type seqgate writes through a registry.
CASES: list[tuple[AvroCodec[Any], list[Any]]] = [
    (OBJECT_EVENT, [EVENT, EVENT_NULLS]),
    (OUTBOX_RECORD, [OUTBOX, OUTBOX_NULLS]),
    (REJECTED_RECORD, [REJECTED, REJECTED_NULLS]),
    (DECISION_RECORD, [DECISION, DECISION_NULLS]),
]
CASE_IDS = [codec.schema_name for codec, _ in CASES]

_counter = iter(range(1_000_000))


def new_client(cls: Callable[[dict[str, Any]], Any] = SchemaRegistryClient.new_client) -> Any:
    """A fresh in-memory registry (its own schemas: mock clients keep them per instance)."""
    return cls({"url": f"mock://test-framing-{os.getpid()}-{next(_counter)}"})


def registry_framing(client: Any, strategy: str = "topic") -> Framing:
    return connect(RegistrySettings("mock://x", subject_name_strategy=strategy), client)


def subject_id(client: Any, subject: str) -> int:
    return int(client.get_latest_version(subject).schema_id)


def to_dict(record: Any) -> dict[str, Any]:
    result: dict[str, Any] = record.to_dict()
    return result


# -- the wire format, byte for byte ------------------------------------------------------------


@pytest.mark.parametrize(("codec", "records"), CASES, ids=CASE_IDS)
def test_confluent_frame_is_zero_big_endian_registered_id_and_the_avro_body(
    codec: AvroCodec[Any], records: list[Any]
) -> None:
    client = new_client()
    framing = registry_framing(client)
    # Other subjects registered first, so that the id is not 1 and the topic's own.
    for other, _ in CASES:
        framing.header(other, f"other.{other.schema_name}")
    write = framing.writer(codec, "topic.t")
    schema_id = subject_id(client, "topic.t-value")
    assert schema_id > 1
    for record in records:
        data = write(record)
        assert data[0] == 0x00
        assert data[1:5] == schema_id.to_bytes(4, "big")
        assert data[5:] == codec.encode_body(record)
        single = codec.encode(record)
        assert single[:2] == SINGLE_OBJECT_MAGIC
        assert single[10:] == data[5:]  # the same Avro bytes in either framing
        assert framing.decode(codec, data) == record
    assert framing.header(codec, "topic.t") == bytes([0]) + schema_id.to_bytes(4, "big")
    assert framing.name == "confluent"
    assert SINGLE_OBJECT.name == "single-object"
    assert SINGLE_OBJECT.writer(codec, "topic.t")(records[0]) == codec.encode(records[0])


@pytest.mark.parametrize(("codec", "records"), CASES, ids=CASE_IDS)
def test_registered_schema_has_the_codecs_canonical_form(
    codec: AvroCodec[Any], records: list[Any]
) -> None:
    client = new_client()
    registry_framing(client).header(codec, "t")
    registered = client.get_latest_version("t-value").schema
    assert registered.schema_type == "AVRO"
    parsed = parse_schema(json.loads(registered.schema_str), {})  # self-contained
    assert schema_fingerprint(parsed) == codec.fingerprint
    assert codec.schema_json is not None
    assert registered.schema_str == codec.schema_json
    if codec is OUTBOX_RECORD:
        event_type = json.loads(registered.schema_str)["fields"][0]["type"]
        assert isinstance(event_type, dict), event_type  # inlined, not a name
        assert event_type["name"] == "ObjectEvent"
        assert event_type["namespace"] == "io.seqgate"
        assert len(event_type["fields"]) == 12


# -- reading --------------------------------------------------------------------------------


def test_decode_reads_both_encodings_in_one_framing() -> None:
    client = new_client()
    framing = registry_framing(client)
    confluent = framing.writer(OBJECT_EVENT, "t")(EVENT)
    single = OBJECT_EVENT.encode(EVENT_NULLS)
    assert [framing.decode(OBJECT_EVENT, data) for data in (single, confluent, single)] == [
        EVENT_NULLS,
        EVENT,
        EVENT_NULLS,
    ]
    # A reader with its own Framing on the same registry learns the id from the registry.
    reader = registry_framing(client)
    assert reader.decode(OBJECT_EVENT, confluent) == EVENT
    assert reader.decode(OBJECT_EVENT, single) == EVENT_NULLS


def test_single_object_framing_refuses_a_confluent_frame_naming_the_option() -> None:
    data = registry_framing(new_client()).writer(OBJECT_EVENT, "t")(EVENT)
    with pytest.raises(CodecError, match="--schema-registry-url"):
        SINGLE_OBJECT.decode(OBJECT_EVENT, data)
    with pytest.raises(CodecError, match="--schema-registry-url"):  # and again, remembered
        Framing().decode(OBJECT_EVENT, data)
    assert SINGLE_OBJECT.decode(OBJECT_EVENT, OBJECT_EVENT.encode(EVENT)) == EVENT


def test_unknown_schema_id_is_refused() -> None:
    client = new_client()
    framing = registry_framing(client)
    framing.header(OBJECT_EVENT, "t")
    data = confluent_frame(4242, OBJECT_EVENT.encode_body(EVENT))
    for _ in range(2):  # the second time from the framing's memory
        with pytest.raises(CodecError, match="schema id 4242 is not in the schema registry"):
            framing.decode(OBJECT_EVENT, data)


def test_schema_id_of_another_record_type_is_refused() -> None:
    client = new_client()
    framing = registry_framing(client)
    event_bytes = framing.writer(OBJECT_EVENT, "t")(EVENT)
    with pytest.raises(CodecError, match=r"io\.seqgate\.OutboxRecord") as raised:
        framing.decode(OUTBOX_RECORD, event_bytes)
    assert "io.seqgate.ObjectEvent" in str(raised.value)
    # Also for a reader that did not write it (the id comes from the registry).
    with pytest.raises(CodecError):
        registry_framing(client).decode(REJECTED_RECORD, event_bytes)
    assert framing.decode(OBJECT_EVENT, event_bytes) == EVENT


@pytest.mark.parametrize("cut", [1, 3, 4])
def test_truncated_header_is_refused(cut: int) -> None:
    framing = registry_framing(new_client())
    data = framing.writer(OBJECT_EVENT, "t")(EVENT)
    with pytest.raises(CodecError, match="truncated"):
        framing.decode(OBJECT_EVENT, data[:cut])


def test_truncated_body_is_refused() -> None:
    framing = registry_framing(new_client())
    data = framing.writer(OUTBOX_RECORD, "t")(OUTBOX)
    with pytest.raises(CodecError):
        framing.decode(OUTBOX_RECORD, data[:-3])
    with pytest.raises(CodecError):
        framing.decode(OUTBOX_RECORD, data[:5])
    with pytest.raises(CodecError, match="trailing"):
        framing.decode(OUTBOX_RECORD, data + b"\x00")


# -- evolution ------------------------------------------------------------------------------


def older_event_schema_json() -> str:
    """ObjectEvent without its optional field event_time (default null): a version
    the current one reads under BACKWARD compatibility. (schemas/history holds only
    0.1.0, which differs from the current schema in docs alone.)"""
    document = json.loads(standalone_schema_json("object_event.avsc"))
    document["fields"] = [f for f in document["fields"] if f["name"] != "event_time"]
    return json.dumps(document)


def older_body(event: ObjectEvent, schema_json: str) -> bytes:
    fields = event.to_dict()
    del fields["event_time"]
    out = BytesIO()
    schemaless_writer(out, parse_schema(json.loads(schema_json), {}), fields)
    return out.getvalue()


def test_a_frame_of_an_older_registered_version_resolves_with_defaults() -> None:
    client = new_client()
    old_json = older_event_schema_json()
    old_id = client.register_schema("t-value", Schema(old_json, "AVRO"))
    framing = registry_framing(client)
    new_bytes = framing.writer(OBJECT_EVENT, "t")(EVENT)
    assert int.from_bytes(new_bytes[1:5], "big") != old_id
    old_bytes = confluent_frame(old_id, older_body(EVENT, old_json))
    decoded = framing.decode(OBJECT_EVENT, old_bytes)
    assert decoded == ObjectEvent(**{**EVENT.to_dict(), "event_time": None})
    assert framing.decode(OBJECT_EVENT, new_bytes) == EVENT
    # Its body is not the current one's: never copied into an outbox record as it is.
    assert framing.current_body(OBJECT_EVENT, old_bytes) is None
    assert framing.current_body(OBJECT_EVENT, new_bytes) == new_bytes[5:]


# -- outbox records copy the event's body --------------------------------------------------


def test_outbox_writer_copies_or_encodes_the_event_body() -> None:
    client = new_client()
    old_json = older_event_schema_json()
    old_id = client.register_schema("in-value", Schema(old_json, "AVRO"))
    framing = registry_framing(client)
    header = framing.header(OUTBOX_RECORD, "out")
    assert header == bytes([0]) + subject_id(client, "out-value").to_bytes(4, "big")
    write = framing.outbox_writer("out")
    for event in (EVENT, EVENT_NULLS):
        outbox = OutboxRecord(event, "00FF", 1, 99)
        expected = header + OUTBOX_RECORD.encode_body(outbox)
        old_event = ObjectEvent(**{**event.to_dict(), "event_time": None})
        old_outbox = OutboxRecord(old_event, "00FF", 1, 99)
        old_body = older_body(event, old_json)
        old_fingerprint = schema_fingerprint(parse_schema(json.loads(old_json), {}))
        inputs = {
            "single-object": (OBJECT_EVENT.encode(event), outbox, expected),
            "confluent": (framing.writer(OBJECT_EVENT, "in")(event), outbox, expected),
            "older confluent": (
                confluent_frame(old_id, old_body),
                old_outbox,
                header + OUTBOX_RECORD.encode_body(old_outbox),
            ),
            "older single-object": (
                SINGLE_OBJECT_MAGIC + old_fingerprint + old_body,
                old_outbox,
                header + OUTBOX_RECORD.encode_body(old_outbox),
            ),
        }
        for what, (event_bytes, record, wanted) in inputs.items():
            written = write(record, event_bytes)
            assert written == wanted, what
            assert framing.decode(OUTBOX_RECORD, written) == record, what


# -- subjects, compatibility ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "subject"),
    [
        ("topic", "orders.events-value"),
        ("record", "io.seqgate.ObjectEvent"),
        ("topic-record", "orders.events-io.seqgate.ObjectEvent"),
    ],
)
def test_subject_name_strategies(strategy: str, subject: str) -> None:
    client = new_client()
    framing = registry_framing(client, strategy)
    data = framing.writer(OBJECT_EVENT, "orders.events")(EVENT)
    assert client.get_subjects() == [subject]
    assert data[1:5] == subject_id(client, subject).to_bytes(4, "big")
    assert registry_framing(client, strategy).decode(OBJECT_EVENT, data) == EVENT


class RecordingClient(MockSchemaRegistryClient):
    """The in-memory registry, recording what compatibility seqgate sets (a no-op there)."""

    def __init__(self, conf: dict[str, Any]) -> None:
        super().__init__(conf)
        self.configs: list[tuple[str | None, ServerConfig]] = []

    def set_config(
        self,
        subject_name: str | None = None,
        config: ServerConfig | None = None,
        **kwargs: Any,
    ) -> ServerConfig:
        assert config is not None
        self.configs.append((subject_name, config))
        result: ServerConfig = super().set_config(subject_name, config, **kwargs)
        return result


def test_the_mock_client_is_what_new_client_makes() -> None:
    assert type(new_client()) is MockSchemaRegistryClient


def test_compatibility_backward_is_set_for_a_new_subject_only() -> None:
    client = new_client(RecordingClient)
    framing = registry_framing(client)
    framing.header(OBJECT_EVENT, "new")
    assert [(subject, config.compatibility) for subject, config in client.configs] == [
        ("new-value", ConfigCompatibilityLevel.BACKWARD)
    ]
    # Set before the first version is registered (the order matters on a real registry).
    assert client.get_versions("new-value") == [1]

    # A subject with a version keeps its level: operators' choice.
    client.configs.clear()
    client.register_schema("existing-value", Schema(older_event_schema_json(), "AVRO"))
    framing.header(OBJECT_EVENT, "existing")
    assert client.configs == []
    assert len(client.get_versions("existing-value")) == 2
    # Nor set again by a later process for the subject it created.
    registry_framing(client).header(OBJECT_EVENT, "new")
    assert client.configs == []


def test_compatibility_is_set_before_registering() -> None:
    calls: list[str] = []

    class Ordered(RecordingClient):
        def set_config(
            self,
            subject_name: str | None = None,
            config: ServerConfig | None = None,
            **kwargs: Any,
        ) -> ServerConfig:
            calls.append(f"set_config {subject_name}")
            return super().set_config(subject_name, config, **kwargs)

        def register_schema(
            self, subject_name: str, schema: Schema, normalize_schemas: bool = False
        ) -> int:
            calls.append(f"register_schema {subject_name}")
            result: int = super().register_schema(subject_name, schema, normalize_schemas)
            return result

    registry_framing(new_client(Ordered)).header(DECISION_RECORD, "audit")
    assert calls == ["set_config audit-value", "register_schema audit-value"]


# -- interoperability: confluent-kafka's own deserializer -------------------------------------


@pytest.mark.parametrize(("codec", "records"), CASES, ids=CASE_IDS)
def test_confluents_avro_deserializer_reads_what_seqgate_writes(
    codec: AvroCodec[Any], records: list[Any]
) -> None:
    client = new_client()
    write = registry_framing(client).writer(codec, "interop")
    deserialize = AvroDeserializer(client)
    context = SerializationContext("interop", MessageField.VALUE)
    for record in records:
        data = write(record)
        theirs = deserialize(data, context)
        ours = to_dict(registry_framing(client).decode(codec, data))
        assert ours == to_dict(record)
        assert isinstance(theirs, dict)
        assert list(theirs) == list(ours)  # the same fields, in schema order
        for name, value in ours.items():
            assert theirs[name] == value, name
            assert type(theirs[name]) is type(value), name
    if codec is REJECTED_RECORD:
        assert deserialize(write(REJECTED), context)["raw"] == REJECTED.raw
        assert deserialize(write(REJECTED_NULLS), context)["record_index"] is None


# -- settings and options --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"url": "registry:8081"}, "--schema-registry-url"),
        ({"url": "ftp://registry:8081"}, "--schema-registry-url"),
        ({"url": "http://r:8081", "auth": "user-without-colon"}, "--schema-registry-auth"),
        ({"url": "http://r:8081", "properties": {"url": "http://x"}}, "--schema-registry-url"),
        (
            {"url": "http://r:8081", "properties": {"basic.auth.user.info": "u:p"}},
            "--schema-registry-auth",
        ),
        (
            {"url": "http://r:8081", "properties": {"basic.auth.credentials.source": "URL"}},
            "--schema-registry-auth",
        ),
        ({"url": "http://r:8081", "subject_name_strategy": "Topic"}, "--subject-name-strategy"),
    ],
)
def test_registry_settings_are_checked(kwargs: dict[str, Any], named: str) -> None:
    with pytest.raises(UsageError, match=named):
        RegistrySettings(**kwargs)


def test_secrets_are_masked() -> None:
    settings = RegistrySettings(
        "https://registry:8081",
        auth="alice:s3cr3t:pw",
        properties={"ssl.key.password": "keypw", "ssl.ca.location": "/ca.pem"},
    )
    assert set(settings.secrets()) == {"alice:s3cr3t:pw", "s3cr3t:pw", "keypw"}
    described = settings.describe()
    assert described == {
        "url": "https://registry:8081",
        "auth": "alice:***",
        "properties": {"ssl.ca.location": "/ca.pem", "ssl.key.password": "***"},
        "subject_name_strategy": "topic",
    }
    text = json.dumps(described)
    assert "s3cr3t" not in text
    assert "keypw" not in text
    assert RegistrySettings("http://r").secrets() == []
    assert RegistrySettings("http://r").describe()["auth"] is None


@pytest.fixture
def clean_cli(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No SEQGATE_* variables; pytest's log handlers back after the CLI replaced them."""
    for name in list(os.environ):
        if name.startswith("SEQGATE_") or name == "KAFKA_BOOTSTRAP_SERVERS":
            monkeypatch.delenv(name)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


@pytest.mark.usefixtures("clean_cli")
def test_print_config_shows_the_registry_with_the_password_masked() -> None:
    # Nothing listens on the bootstrap address: --print-config contacts neither Kafka
    # nor the registry. (A secret client property is not given here: the only one the
    # client knows, ssl.key.password, needs real certificate files; its masking is
    # test_secrets_are_masked's.)
    args = [
        "worker",
        "--print-config",
        "--schema-registry-url",
        "mock://print-config",
        "--schema-registry-auth",
        "u:pa55word",
        "--schema-registry-property",
        "timeout=5",
        "--subject-name-strategy",
        "topic-record",
        "--bootstrap-servers",
        f"127.0.0.1:{closed_port()}",
    ]
    result = CliRunner().invoke(cli, args, prog_name="seqgate")
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    assert json.loads(result.stdout)["schema_registry"] == {
        "url": "mock://print-config",
        "auth": "u:***",
        "properties": {"timeout": "5"},
        "subject_name_strategy": "topic-record",
    }
    assert "pa55word" not in result.stdout + result.stderr

    without = CliRunner().invoke(cli, args[:2] + args[-2:], prog_name="seqgate")
    assert without.exit_code == 0, (without.stdout, without.stderr)
    assert json.loads(without.stdout)["schema_registry"] is None


@pytest.mark.usefixtures("clean_cli")
@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--schema-registry-url", "registry:8081"], "--schema-registry-url"),
        (["--schema-registry-url", "mock://x", "--schema-registry-auth", "u"], "USER:PASSWORD"),
        (
            ["--schema-registry-url", "mock://x", "--schema-registry-property", "url=http://y"],
            "--schema-registry-url",
        ),
        (
            ["--schema-registry-url", "mock://x", "--schema-registry-property", "timeout"],
            "NAME=VALUE",
        ),
    ],
)
def test_bad_registry_options_exit_2_with_one_error_line(options: list[str], named: str) -> None:
    args = ["worker", "--print-config", *options, "--bootstrap-servers", "127.0.0.1:9"]
    result = CliRunner().invoke(cli, args, prog_name="seqgate")
    assert result.exit_code == 2, (result.stdout, result.stderr, result.exception)
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and named in lines[0], lines[0]


# -- an unreachable registry -------------------------------------------------------------------


def test_an_unreachable_registry_is_reported_naming_the_url() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    registry = ConfluentSchemaRegistry(RegistrySettings(url, properties={"timeout": "2"}))
    framing = Framing(registry)
    with pytest.raises(SchemaRegistryUnreachable) as raised:
        framing.header(OBJECT_EVENT, "t")
    assert url in str(raised.value)
    assert "--schema-registry-url" in str(raised.value)
    assert raised.value.exit_code == 3
    # Reading an unknown id is not "absent from the registry" when it did not answer.
    with pytest.raises(SchemaRegistryUnreachable):
        framing.decode(OBJECT_EVENT, confluent_frame(7, OBJECT_EVENT.encode_body(EVENT)))


def test_numeric_client_properties_given_as_text_are_accepted() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    settings = RegistrySettings(url, properties={"timeout": "2", "max.retries": "0"})
    registry = ConfluentSchemaRegistry(settings)
    with pytest.raises(SchemaRegistryUnreachable, match=url):
        registry.schema_id("t", OBJECT_EVENT.schema_name, str(OBJECT_EVENT.schema_json))


def test_a_missing_ca_file_is_one_error_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing-ca.pem"
    environment = {
        name: value
        for name, value in os.environ.items()
        if not (name.startswith("SEQGATE_") or name == "KAFKA_BOOTSTRAP_SERVERS")
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "seqgate.cli",
            "worker",
            "--print-config",
            "--schema-registry-url",
            "https://registry:8081",
            "--schema-registry-property",
            f"ssl.ca.location={missing}",
            "--bootstrap-servers",
            "127.0.0.1:9",
        ],
        capture_output=True,
        text=True,
        env=environment,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert done.returncode == 2, done.stderr
