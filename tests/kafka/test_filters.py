"""The bridge's event filter (seqgate/connectors/publish/filters.py) and its options on every
bridge command.

* bucket allow-list, key-prefix include and exclude lists on the decoded key, literal;
* only events are filtered: dead letters and ignored messages are kept;
* `--bucket`, `--include-prefix`, `--exclude-prefix` (repeatable or comma lists; SEQGATE_*
  variables with comma lists; YAML lists) on `bridge file|sqs|kafka`; a `*` is refused;
* `bridge file` counts what was filtered in its summary. Filtered events are never
  produced, which is what lets these tests run without a broker: with every event filtered
  there is nothing for Kafka to acknowledge.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.parsers.results import Ignored, ParseResult
from seqgate.connectors.publish.filters import BridgeTally, EventFilter, FilterError
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.records import ObjectEvent
from seqgate.streams.cli import cli
from seqgate.streams.devtools.samples import s3_notification, s3_record, s3_test_event, to_bytes


def event(bucket: str = "example-input", key: str = "incoming/a.txt") -> ObjectEvent:
    return ObjectEvent(
        id=f"{bucket}/{key}",
        source="s3",
        bucket=bucket,
        key=key,
        kind="created",
        event_name="ObjectCreated:Put",
        position="1",
        version_id=None,
        size=None,
        etag=None,
        event_time=None,
        origin="test",
    )


# ---- the filter ----------------------------------------------------------------------------------


def test_no_setting_admits_everything() -> None:
    selector = EventFilter.build()
    assert not selector.active
    assert selector.admits(event(bucket="any", key="thing"))


def test_the_bucket_allow_list_is_exact() -> None:
    selector = EventFilter.build(buckets=["example-input", "other"])
    assert selector.admits(event(bucket="example-input"))
    assert selector.admits(event(bucket="other"))
    assert not selector.admits(event(bucket="example-input-2"))
    assert not selector.admits(event(bucket="Example-Input"))


def test_include_prefixes_select_keys_by_literal_start() -> None:
    selector = EventFilter.build(include_prefixes=["incoming/", "uploads/raw "])
    assert selector.admits(event(key="incoming/a.txt"))
    assert selector.admits(event(key="uploads/raw report.csv"))
    assert not selector.admits(event(key="uploads/raw"))  # shorter than the prefix
    assert not selector.admits(event(key="Incoming/a.txt"))  # no case folding
    assert not selector.admits(event(key="outgoing/incoming/a.txt"))


def test_exclude_prefixes_win_over_include_prefixes() -> None:
    # Seed 000: generated output under the trigger prefix must not trigger again.
    selector = EventFilter.build(
        include_prefixes=["incoming/"], exclude_prefixes=["incoming/generated/"]
    )
    assert selector.admits(event(key="incoming/a.txt"))
    assert not selector.admits(event(key="incoming/generated/a.txt"))
    assert not selector.admits(event(key="elsewhere/a.txt"))


def test_prefixes_apply_to_the_decoded_key() -> None:
    raw = to_bytes(s3_notification(s3_record(key="incoming%2FJune+report.csv")))
    parsed = normalize(raw, "test")
    assert EventFilter.build(include_prefixes=["incoming/June "]).apply(parsed)[1] == 0
    assert EventFilter.build(include_prefixes=["incoming%2F"]).apply(parsed)[1] == 1


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"include_prefixes": ["incoming/*"]}, "not wildcards"),
        ({"exclude_prefixes": ["*.tmp"]}, "not wildcards"),
        ({"buckets": ["logs-*"]}, "not wildcards"),
        ({"buckets": ["a/b"]}, "never contains '/'"),
        ({"include_prefixes": [""]}, "empty include prefix"),
    ],
)
def test_settings_that_cannot_mean_what_they_say_are_refused(
    settings: dict[str, list[str]], expected: str
) -> None:
    with pytest.raises(FilterError, match=expected):
        EventFilter.build(**settings)


def test_apply_drops_only_events_and_counts_them() -> None:
    result = ParseResult.of(
        event(key="incoming/a"),
        event(key="other/b"),
        Ignored("s3_test_event", "test"),
        event(key="other/c"),
    )
    result = ParseResult(
        (*result.items, *ParseResult.rejected(RejectReason.MISSING_FIELD, "x").items)
    )
    kept, filtered = EventFilter.build(include_prefixes=["incoming/"]).apply(result)
    assert filtered == 2
    assert [e.key for e in kept.events] == ["incoming/a"]
    assert len(kept.ignored) == 1 and len(kept.rejections) == 1


def test_the_tally_conserves_records() -> None:
    tally = BridgeTally()
    raw = to_bytes(
        s3_notification(
            s3_record(key="incoming%2Fa"),
            s3_record(key="other%2Fb"),
            s3_record(key="incoming%2Fc", event_version="3.0"),
        )
    )
    parsed = normalize(raw, "test")
    kept, filtered = EventFilter.build(include_prefixes=["incoming/"]).apply(parsed)
    tally.add(kept, filtered)
    assert tally.as_dict() == {
        "messages": 1,
        "published": 1,
        "filtered": 1,
        "ignored": 0,
        "rejected": 1,
    }
    counts = tally.as_dict()
    assert counts["published"] + counts["filtered"] + counts["rejected"] == len(parsed)


# ---- the options ---------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    import os

    for name in list(os.environ):
        if name.startswith("SEQGATE_") or name == "KAFKA_BOOTSTRAP_SERVERS":
            monkeypatch.delenv(name)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def invoke(args: list[str], env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, args, env=env, catch_exceptions=False)


@pytest.fixture
def notifications(tmp_path: Path) -> Path:
    path = tmp_path / "n.jsonl"
    lines = [
        s3_notification(s3_record(bucket="in", key="incoming%2Fa")),
        s3_notification(s3_record(bucket="in", key="incoming%2Fgenerated%2Fb")),
        s3_notification(s3_record(bucket="in", key="other%2Fc")),
        s3_notification(s3_record(bucket="out", key="incoming%2Fd")),
        s3_test_event(),
    ]
    path.write_bytes(b"\n".join(to_bytes(line) for line in lines))
    return path


UNREACHABLE = ["--bootstrap-servers", "127.0.0.1:1", "--delivery-timeout-ms", "1000"]


@pytest.fixture
def broker(kafka_bootstrap: str) -> list[str]:
    """A real broker: the bridge checks that Kafka answers before it reads its input."""
    return ["--bootstrap-servers", kafka_bootstrap, "--delivery-timeout-ms", "1000"]


def summary(result: Result) -> dict[str, int]:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    parsed: dict[str, int] = json.loads(result.stdout)
    return parsed


@pytest.mark.kafka
def test_bridge_file_counts_filtered_events(notifications: Path, broker: list[str]) -> None:
    # Everything filtered or ignored: nothing is produced.
    result = invoke(["bridge", "file", str(notifications), *broker, "--bucket", "nope,none"])
    assert summary(result) == {
        "messages": 5,
        "published": 0,
        "ignored": 1,
        "rejected": 0,
        "filtered": 4,
    }


@pytest.mark.kafka
def test_repeated_flags_and_comma_lists_combine(notifications: Path, broker: list[str]) -> None:
    args = ["bridge", "file", str(notifications), *broker]
    args += ["--include-prefix", "incoming/generated/", "--include-prefix", "other/,x/"]
    args += ["--exclude-prefix", "incoming/generated/,other/"]
    assert summary(invoke(args))["filtered"] == 4


@pytest.mark.kafka
def test_variables_give_comma_lists_and_keep_spaces_inside_names(
    tmp_path: Path, broker: list[str]
) -> None:
    path = tmp_path / "spaces.jsonl"
    path.write_bytes(to_bytes(s3_notification(s3_record(key="June+report%2Fa"))))
    env = {"SEQGATE_EXCLUDE_PREFIXES": "June report/,other/", "SEQGATE_BUCKETS": "example-input"}
    result = invoke(["bridge", "file", str(path), *broker], env=env)
    assert summary(result)["filtered"] == 1


@pytest.mark.kafka
def test_a_config_file_may_list_prefixes(
    tmp_path: Path, notifications: Path, broker: list[str]
) -> None:
    config = tmp_path / "seqgate.yaml"
    config.write_text("exclude-prefix:\n  - incoming/\n  - other/\nbucket: [in, out]\n")
    result = invoke(["--config", str(config), "bridge", "file", str(notifications), *broker])
    assert summary(result)["filtered"] == 4


@pytest.mark.parametrize("command", ["file", "sqs", "kafka"])
@pytest.mark.parametrize("flag", ["--bucket", "--include-prefix", "--exclude-prefix"])
def test_a_wildcard_is_one_error_line_on_every_bridge(command: str, flag: str) -> None:
    required = {
        "file": ["/dev/null"],
        "sqs": ["--queue-url", "http://127.0.0.1:1/123456789012/q"],
        "kafka": ["--from", "raw"],
    }[command]
    result = invoke(["bridge", command, *required, *UNREACHABLE[:2], flag, "incoming/*"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and "not wildcards" in result.stderr
    assert len(result.stderr.splitlines()) == 1
