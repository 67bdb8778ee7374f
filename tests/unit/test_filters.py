"""The bridge's event filter (seqgate/connectors/publish/filters.py) and its options on every
bridge command.

* bucket allow-list, key-prefix include and exclude lists on the decoded key, literal;
* only events are filtered: rejected records and ignored messages are kept;
* `--bucket`, `--include-prefix`, `--exclude-prefix` (repeatable or comma lists; SEQGATE_*
  variables with comma lists; YAML lists) on `bridge file|sqs|kafka`; a `*` is refused;
* `bridge file` counts what was filtered in its summary. Filtered events are never
  produced, which is what lets these tests run without a broker: with every event filtered
  there is nothing for Kafka to acknowledge.
"""

from __future__ import annotations

import pytest
from seqgate_devtools.samples import s3_notification, s3_record, to_bytes

from seqgate.connectors.errors import FilterError
from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.parsers.results import Ignored, ParseResult
from seqgate.connectors.publish.filters import BridgeTally, EventFilter
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.records import ObjectEvent
from tests.support.filter_cli import clean_environment as clean_environment
from tests.support.filter_cli import invoke


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
    # Generated output under the trigger prefix must not trigger again
    # (docs/aws-setup.md, "The recursion loop").
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


UNREACHABLE = ["--bootstrap-servers", "127.0.0.1:1", "--delivery-timeout-ms", "1000"]


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
