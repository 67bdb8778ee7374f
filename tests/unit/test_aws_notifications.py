"""S3 notification set-up decisions (pure) and the positionless-producer option; no AWS."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from click.testing import CliRunner
from seqgate_devtools.samples import (
    s3_notification,
    s3_record,
    sns_notification,
    to_bytes,
    to_text,
)

from seqgate.cli import cli
from seqgate.connectors.aws.notification_rules import (
    Destination,
    DestinationKind,
    Rule,
    check_output_prefixes,
    check_region,
    destination_policy,
    events_overlap,
    literal_filter,
    merge_eventbridge,
    merge_rule,
    new_rule,
    parse_destination,
    rules_of,
    rules_overlap,
    select_events,
)
from seqgate.connectors.errors import NotificationSetupError
from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.parsers.s3.native import S3ParseOptions, parse_s3_records
from seqgate.schemas.reasons import RejectReason

QUEUE = "arn:aws:sqs:eu-west-1:111122223333:s3-events"
OTHER_QUEUE = "arn:aws:sqs:eu-west-1:111122223333:other"
TOPIC = "arn:aws:sns:eu-west-1:111122223333:s3-topic"
CREATED = frozenset({"s3:ObjectCreated:*"})
ALLOW = S3ParseOptions(allow_missing_sequencer=True)


def refusal(option: str, call: Any, *args: Any) -> str:
    with pytest.raises(NotificationSetupError) as caught:
        call(*args)
    assert caught.value.option == option
    assert str(caught.value).startswith(f"{option}: ")
    return str(caught.value)


# ---- destinations --------------------------------------------------------------------------------


def test_destinations_are_queues_topics_or_eventbridge() -> None:
    assert parse_destination(QUEUE) == Destination(
        DestinationKind.QUEUE, QUEUE, "aws", "eu-west-1", "111122223333"
    )
    assert parse_destination(TOPIC).kind is DestinationKind.TOPIC
    assert parse_destination("EventBridge").kind is DestinationKind.EVENTBRIDGE
    assert "not an SQS queue ARN" in refusal("--destination", parse_destination, "s3-events")


def test_a_fifo_queue_is_refused_pointing_at_eventbridge() -> None:
    message = refusal("--destination", parse_destination, QUEUE + ".fifo")
    assert "FIFO" in message and "--destination eventbridge" in message


def test_the_destination_must_be_in_the_buckets_region() -> None:
    check_region(parse_destination(QUEUE), "eu-west-1")
    message = refusal("--destination", check_region, parse_destination(QUEUE), "us-east-1")
    assert "create the destination in us-east-1" in message


# ---- events --------------------------------------------------------------------------------------


def test_the_default_is_the_whole_created_family() -> None:
    assert select_events([]) == CREATED


def test_only_put_is_refused_naming_the_family() -> None:
    message = refusal("--events", select_events, ["s3:ObjectCreated:Put"])
    assert "'s3:ObjectCreated:*'" in message and "multipart" in message


def test_every_created_member_spelled_out_is_the_family() -> None:
    members = [
        "s3:ObjectCreated:Put",
        "s3:ObjectCreated:Post",
        "s3:ObjectCreated:Copy",
        "s3:ObjectCreated:CompleteMultipartUpload",
    ]
    assert select_events(members) == frozenset(members)


def test_other_families_and_unknown_names() -> None:
    assert select_events(["s3:ObjectRemoved:*", "s3:ObjectCreated:*"]) == {
        "s3:ObjectRemoved:*",
        "s3:ObjectCreated:*",
    }
    assert "not an S3 event type" in refusal("--events", select_events, ["ObjectCreated:*"])


@pytest.mark.parametrize(
    ("first", "second", "overlap"),
    [
        ({"s3:ObjectCreated:*"}, {"s3:ObjectCreated:Put"}, True),
        ({"s3:ObjectCreated:Copy"}, {"s3:ObjectCreated:*"}, True),
        ({"s3:ObjectCreated:*"}, {"s3:ObjectCreated:*"}, True),
        ({"s3:ObjectCreated:Put"}, {"s3:ObjectCreated:Post"}, False),
        ({"s3:ObjectCreated:*"}, {"s3:ObjectRemoved:*"}, False),
        ({"s3:ObjectRemoved:Delete"}, {"s3:ObjectRemoved:*", "s3:ObjectTagging:*"}, True),
    ],
)
def test_event_sets_overlap_through_family_wildcards(
    first: set[str], second: set[str], overlap: bool
) -> None:
    assert events_overlap(first, second) is overlap
    assert events_overlap(second, first) is overlap


# ---- overlap -------------------------------------------------------------------------------------


def rule(
    prefix: str = "", suffix: str = "", events: frozenset[str] = CREATED, arn: str = QUEUE
) -> Rule:
    return Rule("QueueConfigurations", arn, events, prefix, suffix)


@pytest.mark.parametrize(
    ("first", "second", "overlap"),
    [
        (rule("incoming/"), rule("incoming/"), True),
        (rule("incoming/"), rule("incoming/2026/"), True),  # one prefix starts the other
        (rule(""), rule("incoming/"), True),  # the empty prefix is everyone's prefix
        (rule("incoming/"), rule("other/"), False),
        (rule("incoming/", ".csv"), rule("incoming/", ".json"), False),  # unrelated suffixes
        (rule("incoming/", ".csv"), rule("incoming/", "report.csv"), True),
        (rule("incoming/", ".csv"), rule("incoming/"), True),  # the empty suffix too
        (rule("a/"), rule("a/", events=frozenset({"s3:ObjectRemoved:*"})), False),
        (rule("a/"), rule("a/", arn=OTHER_QUEUE), True),  # destinations do not matter
    ],
)
def test_rules_overlap_as_s3_checks_it(first: Rule, second: Rule, overlap: bool) -> None:
    assert rules_overlap(first, second) is overlap
    assert rules_overlap(second, first) is overlap


# ---- literal filters and the loop ----------------------------------------------------------------


def test_wildcard_filters_are_refused_with_the_literal_to_write() -> None:
    assert literal_filter("incoming/", "--prefix") == "incoming/"
    assert literal_filter(None, "--suffix") == ""
    assert "write 'incoming/'" in refusal("--prefix", literal_filter, "incoming/*", "--prefix")
    assert "write '.csv'" in refusal("--suffix", literal_filter, "*.csv", "--suffix")
    assert "leave --prefix out" in refusal("--prefix", literal_filter, "*", "--prefix")


@pytest.mark.parametrize(
    ("prefix", "output"),
    [
        ("incoming/", "incoming/processed/"),  # output under the trigger
        ("incoming/2026/", "incoming/"),  # trigger under the output
        ("incoming/", "incoming/"),
        ("", "processed/"),  # no prefix: the whole bucket triggers
        ("incoming/", ""),
    ],
)
def test_an_output_prefix_the_rule_matches_is_a_loop(prefix: str, output: str) -> None:
    message = refusal(
        "--output-prefix",
        check_output_prefixes,
        parse_destination(QUEUE),
        CREATED,
        prefix,
        ["elsewhere/", output],
    )
    assert "without end" in message


def test_outputs_outside_the_trigger_or_rules_without_creations_are_fine() -> None:
    queue = parse_destination(QUEUE)
    check_output_prefixes(queue, CREATED, "incoming/", ["processed/", "out/incoming/"])
    removed = frozenset({"s3:ObjectRemoved:*"})
    check_output_prefixes(queue, removed, "incoming/", ["incoming/processed/"])


def test_eventbridge_matches_every_output_prefix() -> None:
    eventbridge = parse_destination("eventbridge")
    message = refusal(
        "--output-prefix", check_output_prefixes, eventbridge, CREATED, "", ["processed/"]
    )
    assert "--exclude-prefix processed/" in message


# ---- merging -------------------------------------------------------------------------------------

# As GetBucketNotificationConfiguration answers: capitalized filter names, metadata.
CURRENT: dict[str, Any] = {
    "ResponseMetadata": {"HTTPStatusCode": 200},
    "QueueConfigurations": [
        {
            "Id": "reports",
            "QueueArn": OTHER_QUEUE,
            "Events": ["s3:ObjectCreated:*"],
            "Filter": {"Key": {"FilterRules": [{"Name": "Prefix", "Value": "other/"}]}},
        }
    ],
    "TopicConfigurations": [
        {"Id": "deletions", "TopicArn": TOPIC, "Events": ["s3:ObjectRemoved:*"]}
    ],
    "LambdaFunctionConfigurations": [
        {
            "Id": "thumbnails",
            "LambdaFunctionArn": "arn:aws:lambda:eu-west-1:111122223333:function:thumbs",
            "Events": ["s3:ObjectCreated:Put"],
            "Filter": {"Key": {"FilterRules": [{"Name": "Suffix", "Value": ".jpg"}]}},
        }
    ],
    "EventBridgeConfiguration": {},
}


def test_merging_keeps_every_unrelated_rule_verbatim() -> None:
    before = copy.deepcopy(CURRENT)
    added = new_rule(parse_destination(QUEUE), CREATED, "incoming/", ".csv")
    result = merge_rule(CURRENT, added)
    assert before == CURRENT  # the input is not modified
    assert result.changed
    expected = {name: value for name, value in before.items() if name != "ResponseMetadata"}
    expected["QueueConfigurations"] = [*before["QueueConfigurations"], added.document()]
    assert result.configuration == expected
    assert added.document() == {
        "Id": added.rule_id,
        "QueueArn": QUEUE,
        "Events": ["s3:ObjectCreated:*"],
        "Filter": {
            "Key": {
                "FilterRules": [
                    {"Name": "prefix", "Value": "incoming/"},
                    {"Name": "suffix", "Value": ".csv"},
                ]
            }
        },
    }
    assert rules_of(result.configuration)[1].same_as(added)


def test_the_default_id_is_stable_and_says_seqgate() -> None:
    first = new_rule(parse_destination(QUEUE), CREATED, "incoming/")
    again = new_rule(parse_destination(QUEUE), CREATED, "incoming/")
    assert first.rule_id == again.rule_id and (first.rule_id or "").startswith("seqgate-")
    assert new_rule(parse_destination(QUEUE), CREATED, "x/", rule_id="mine").rule_id == "mine"


def test_an_identical_rule_is_already_configured_whatever_its_id() -> None:
    same = new_rule(parse_destination(OTHER_QUEUE), CREATED, "other/", rule_id="another-id")
    result = merge_rule(CURRENT, same)
    assert not result.changed
    assert result.note.startswith("already configured: rule 'reports'")


@pytest.mark.parametrize(
    ("prefix", "suffix"), [("other/", ""), ("other/2026/", ""), ("", ""), ("photos/", ".jpg")]
)
def test_an_overlapping_rule_is_refused_naming_the_existing_one(prefix: str, suffix: str) -> None:
    overlapping = new_rule(parse_destination(QUEUE), CREATED, prefix, suffix)
    message = refusal("--prefix/--suffix/--events", merge_rule, CURRENT, overlapping)
    assert "overlaps the existing rule" in message


def test_a_taken_id_is_refused() -> None:
    clashing = new_rule(parse_destination(QUEUE), CREATED, "incoming/", ".csv", rule_id="reports")
    assert "choose another --id" in refusal("--id", merge_rule, CURRENT, clashing)


def test_eventbridge_is_added_as_an_empty_object_keeping_the_rules() -> None:
    without = {name: value for name, value in CURRENT.items() if name != "EventBridgeConfiguration"}
    result = merge_eventbridge(without)
    assert result.changed and result.configuration["EventBridgeConfiguration"] == {}
    assert rules_of(result.configuration) == rules_of(CURRENT)
    assert not merge_eventbridge(CURRENT).changed


def test_merging_into_an_empty_configuration() -> None:
    added = new_rule(parse_destination(TOPIC), CREATED)
    result = merge_rule({"ResponseMetadata": {}}, added)
    assert result.configuration == {"TopicConfigurations": [added.document()]}
    assert "Filter" not in added.document()


# ---- the queue policy ----------------------------------------------------------------------------


def test_the_queue_policy_lets_only_this_bucket_of_this_account_send() -> None:
    policy = destination_policy(parse_destination(QUEUE), "uploads", "111122223333")
    (statement,) = policy["Statement"]
    assert statement["Principal"] == {"Service": "s3.amazonaws.com"}
    assert statement["Action"] == "SQS:SendMessage"
    assert statement["Resource"] == QUEUE
    assert statement["Condition"] == {
        "ArnLike": {"aws:SourceArn": "arn:aws:s3:::uploads"},
        "StringEquals": {"aws:SourceAccount": "111122223333"},
    }
    topic = destination_policy(parse_destination(TOPIC), "uploads", "111122223333")
    assert topic["Statement"][0]["Action"] == "SNS:Publish"


def test_the_policy_needs_an_account_id_and_a_queue_or_topic() -> None:
    queue = parse_destination(QUEUE)
    assert "12 digits" in refusal("--account-id", destination_policy, queue, "b", "1234")
    eventbridge = parse_destination("eventbridge")
    refusal("--destination", destination_policy, eventbridge, "b", "111122223333")


# ---- the commands, before any AWS call -----------------------------------------------------------


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, ["aws", *args])


# An endpoint nobody listens on: these refusals must come before any request.
NOWHERE = ("--endpoint-url", "http://127.0.0.1:1")


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--prefix", "incoming/*"], "error: --prefix: 'incoming/*'"),
        (["--suffix", "*.csv"], "error: --suffix: '*.csv'"),
        (["--prefix", "in/", "--output-prefix", "in/out/"], "error: --output-prefix: "),
        (["--events", "s3:ObjectCreated:Put"], "error: --events: "),
    ],
)
def test_refusals_are_one_line_exit_2(options: list[str], expected: str) -> None:
    result = invoke(
        "configure-notifications", "--bucket", "uploads", "--destination", QUEUE, *options, *NOWHERE
    )
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(expected), result.output


def test_eventbridge_takes_no_filters() -> None:
    result = invoke(
        "configure-notifications",
        "--bucket",
        "b",
        "--destination",
        "eventbridge",
        "--prefix",
        "a/",
        *NOWHERE,
    )
    assert result.exit_code == 2 and "EventBridge rule's pattern" in result.output


def test_queue_policy_prints_the_policy_document() -> None:
    result = invoke(
        "queue-policy",
        "--bucket",
        "uploads",
        "--destination",
        QUEUE,
        "--account-id",
        "111122223333",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == destination_policy(
        parse_destination(QUEUE), "uploads", "111122223333"
    )


# ---- positionless producers ----------------------------------------------------------------------


def positionless(**members: Any) -> dict[str, Any]:
    return s3_notification(s3_record(sequencer=None, **members))


def test_a_created_record_without_sequencer_is_rejected_by_default() -> None:
    (rejection,) = parse_s3_records(positionless(), "t").rejections
    assert rejection.reason is RejectReason.INVALID_SEQUENCER
    assert "--allow-missing-sequencer" in rejection.message


def test_the_option_accepts_it_without_position_and_with_a_stable_id() -> None:
    (event,) = parse_s3_records(positionless(), "sqs:a", ALLOW).events
    (again,) = parse_s3_records(positionless(), "sqs:b", ALLOW).events
    assert event.position is None and event.kind == "created"
    assert event.id == again.id and event.id.startswith("s3-")
    other_write = parse_s3_records(positionless(etag="0" * 32), "t", ALLOW).events[0]
    assert other_write.id != event.id


def test_the_option_reaches_records_inside_envelopes() -> None:
    body = to_bytes(sns_notification(to_text(positionless())))
    assert normalize(body, "t").rejections[0].reason is RejectReason.INVALID_SEQUENCER
    assert normalize(body, "t", ALLOW).events[0].position is None


def test_the_option_changes_nothing_for_records_with_a_sequencer() -> None:
    document = s3_notification(s3_record(sequencer="0A"))
    assert parse_s3_records(document, "t", ALLOW) == parse_s3_records(document, "t")
    bad = s3_notification(s3_record(sequencer="zz"))
    assert parse_s3_records(bad, "t", ALLOW).rejections[0].reason is RejectReason.INVALID_SEQUENCER
