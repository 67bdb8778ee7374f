"""Amazon S3 notification configuration: the decisions, without any I/O.

``seqgate aws configure-notifications`` reads a bucket's configuration, asks
this module to merge one rule into it, and writes the result back
(:mod:`seqgate.connectors.aws.notification_setup` does the reading and writing). Everything that can
be decided from the documents alone lives here, as pure functions:

* :func:`parse_destination`: an SQS queue or SNS topic ARN, or ``eventbridge``
  (a FIFO queue is refused: S3 cannot deliver to one directly);
* :func:`select_events`: ``s3:ObjectCreated:*`` by default; part of the created
  family (only ``Put``) is refused: POST, copy and multipart would go unseen;
* :func:`literal_filter`: key filters are literal, a ``*`` is refused;
* :func:`check_output_prefixes`: derived objects written where the rule
  triggers would trigger the consumer again, without end;
* :func:`merge_rule` / :func:`merge_eventbridge`: every unrelated rule kept
  verbatim (PutBucketNotificationConfiguration replaces the whole
  configuration), an overlapping rule refused, an identical one reported;
* :func:`destination_policy`: the queue (or topic) policy that lets S3 send.

Overlap, as S3 checks it: two rules overlap when their event sets intersect
(a family wildcard such as ``s3:ObjectCreated:*`` covers each of its members)
and their prefixes are related (one starts with the other, the empty prefix
included) and their suffixes are related (one ends with the other).

Every refusal is a :class:`NotificationSetupError` naming the option and the fix.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from seqgate.connectors.errors import NotificationSetupError
from seqgate.connectors.parsers.s3.event_names import S3_EVENT_NAMES

__all__ = [
    "CREATED_FAMILY",
    "EVENTBRIDGE_SECTION",
    "SECTIONS",
    "Destination",
    "DestinationKind",
    "MergeResult",
    "Rule",
    "bucket_arn",
    "check_output_prefixes",
    "check_region",
    "destination_policy",
    "events_overlap",
    "literal_filter",
    "merge_eventbridge",
    "merge_rule",
    "new_rule",
    "parse_destination",
    "rules_of",
    "rules_overlap",
    "select_events",
]

CREATED_FAMILY: Final = "s3:ObjectCreated:*"
EVENTBRIDGE: Final = "eventbridge"
EVENTBRIDGE_SECTION: Final = "EventBridgeConfiguration"

# Section of the configuration -> the member holding the destination's ARN.
SECTIONS: Final[Mapping[str, str]] = {
    "QueueConfigurations": "QueueArn",
    "TopicConfigurations": "TopicArn",
    "LambdaFunctionConfigurations": "LambdaFunctionArn",
}

_KNOWN_EVENTS: Final = frozenset(f"s3:{name}" for name in S3_EVENT_NAMES)
_FAMILIES: Final = frozenset(f"s3:{name.split(':')[0]}:*" for name in S3_EVENT_NAMES if ":" in name)
_CREATED_MEMBERS: Final = frozenset(e for e in _KNOWN_EVENTS if e.startswith("s3:ObjectCreated:"))
_ARN: Final = re.compile(r"arn:(aws|aws-cn|aws-us-gov):(sqs|sns):([a-z0-9-]+):([0-9]{12}):(.+)")
_ACCOUNT_ID: Final = re.compile(r"[0-9]{12}")


# --------------------------------------------------------------------------- destinations


class DestinationKind(StrEnum):
    QUEUE = "QueueConfigurations"
    TOPIC = "TopicConfigurations"
    EVENTBRIDGE = EVENTBRIDGE_SECTION


@dataclass(frozen=True, slots=True)
class Destination:
    kind: DestinationKind
    arn: str | None = None  # None for EventBridge
    partition: str = "aws"
    region: str | None = None
    account: str | None = None


def parse_destination(text: str) -> Destination:
    """``--destination``: an SQS queue ARN, an SNS topic ARN, or ``eventbridge``."""
    if text.strip().lower() == EVENTBRIDGE:
        return Destination(DestinationKind.EVENTBRIDGE)
    match = _ARN.fullmatch(text.strip())
    if match is None:
        raise NotificationSetupError(
            "--destination",
            f"{text!r} is not an SQS queue ARN (arn:aws:sqs:REGION:ACCOUNT:NAME), an SNS"
            " topic ARN (arn:aws:sns:REGION:ACCOUNT:NAME) or 'eventbridge'",
        )
    partition, service, region, account, name = match.groups()
    if service == "sqs" and name.endswith(".fifo"):
        raise NotificationSetupError(
            "--destination",
            f"{name!r} is a FIFO queue: S3 cannot send notifications to one directly; use a"
            " standard queue, or --destination eventbridge with an EventBridge rule that"
            " targets the FIFO queue",
        )
    kind = DestinationKind.QUEUE if service == "sqs" else DestinationKind.TOPIC
    return Destination(kind, text.strip(), partition, region, account)


def check_region(destination: Destination, bucket_region: str) -> None:
    """S3 delivers directly only to an SQS queue or SNS topic in the bucket's Region."""
    if destination.region is not None and destination.region != bucket_region:
        raise NotificationSetupError(
            "--destination",
            f"{destination.arn} is in {destination.region} but the bucket is in"
            f" {bucket_region}: S3 sends only to a queue or topic in the bucket's Region;"
            f" create the destination in {bucket_region}",
        )


# --------------------------------------------------------------------------- events and filters


def select_events(values: Iterable[str]) -> frozenset[str]:
    """``--events``: known S3 event types; default the whole created family."""
    chosen = frozenset(value.strip() for value in values if value.strip())
    if not chosen:
        return frozenset({CREATED_FAMILY})
    for event in sorted(chosen):
        if event not in _KNOWN_EVENTS and event not in _FAMILIES:
            raise NotificationSetupError(
                "--events",
                f"{event!r} is not an S3 event type: write the full name such as"
                f" 's3:ObjectCreated:*' or 's3:ObjectRemoved:Delete'; known families:"
                f" {', '.join(sorted(_FAMILIES))}",
            )
    members = chosen & _CREATED_MEMBERS
    if CREATED_FAMILY not in chosen and members and members != _CREATED_MEMBERS:
        listed = ", ".join(sorted(members))
        raise NotificationSetupError(
            "--events",
            f"{listed} covers only part of the object-created family: uploads by"
            " POST, copy or multipart upload would never be notified; select"
            f" {CREATED_FAMILY!r} instead",
        )
    return chosen


def _covers(wildcard: str, event: str) -> bool:
    return wildcard.endswith(":*") and event.startswith(wildcard[:-1])


def events_overlap(first: Iterable[str], second: Iterable[str]) -> bool:
    """Whether an event type could match both sets (family wildcards included)."""
    second = list(second)
    return any(a == b or _covers(a, b) or _covers(b, a) for a in first for b in second)


def literal_filter(value: str | None, option: str) -> str:
    """A ``--prefix``/``--suffix`` value: literal text, so a ``*`` is refused."""
    if value is None:
        return ""
    if "*" not in value:
        return value
    literal = value.split("*")[0] if option == "--prefix" else value.rsplit("*", 1)[-1]
    fix = f"write {literal!r}" if literal else f"leave {option} out to match every key"
    raise NotificationSetupError(
        option,
        f"{value!r}: S3 key filters are literal text, not wildcards ('*' matches only a"
        f" '*' in a key name); {fix}",
    )


def _prefixes_related(a: str, b: str) -> bool:
    return a.startswith(b) or b.startswith(a)


def _suffixes_related(a: str, b: str) -> bool:
    return a.endswith(b) or b.endswith(a)


def check_output_prefixes(
    destination: Destination, events: frozenset[str], prefix: str, outputs: Iterable[str]
) -> None:
    """Refuse a rule that the consumer's own derived objects would trigger (a loop)."""
    for output in outputs:
        if destination.kind is DestinationKind.EVENTBRIDGE:
            raise NotificationSetupError(
                "--output-prefix",
                f"EventBridge receives every event of the bucket, so derived objects under"
                f" {output!r} would trigger the consumer again; exclude them in the"
                f" EventBridge rule's pattern and with `seqgate bridge --exclude-prefix"
                f" {output}`, then run this command without --output-prefix",
            )
        if not events_overlap(events, {CREATED_FAMILY}):
            continue  # writing derived objects creates objects; this rule ignores creations
        if output == "" or _prefixes_related(prefix, output):
            if prefix:
                where = f"--prefix {prefix!r}"
                fix = f"write derived objects outside {prefix!r} (e.g. 'processed/')"
            else:
                where = "no --prefix: the whole bucket"
                fix = "give the rule a --prefix that excludes them (e.g. 'incoming/')"
            raise NotificationSetupError(
                "--output-prefix",
                f"derived objects written under {output!r} would match this rule ({where}):"
                " each would notify the consumer, which writes another, without end (a"
                f" suffix filter does not prevent it); {fix}",
            )


# --------------------------------------------------------------------------- rules


@dataclass(frozen=True, slots=True)
class Rule:
    """One notification rule, as far as overlap and identity are concerned."""

    section: str
    arn: str
    events: frozenset[str]
    prefix: str = ""
    suffix: str = ""
    rule_id: str | None = None

    def same_as(self, other: Rule) -> bool:
        """Same destination, events and filters (the Id does not matter)."""
        selects = (self.section, self.arn, self.events, self.prefix, self.suffix)
        return selects == (other.section, other.arn, other.events, other.prefix, other.suffix)

    def describe(self) -> str:
        filters = []
        if self.prefix:
            filters.append(f"prefix {self.prefix!r}")
        if self.suffix:
            filters.append(f"suffix {self.suffix!r}")
        where = ", ".join(filters) if filters else "every key"
        name = f"rule {self.rule_id!r}" if self.rule_id else "a rule"
        return f"{name} ({', '.join(sorted(self.events))} on {where} -> {self.arn})"

    def document(self) -> dict[str, Any]:
        """The rule as PutBucketNotificationConfiguration takes it."""
        body: dict[str, Any] = {}
        if self.rule_id:
            body["Id"] = self.rule_id
        body[SECTIONS[self.section]] = self.arn
        body["Events"] = sorted(self.events)
        rules = [
            {"Name": n, "Value": v}
            for n, v in (("prefix", self.prefix), ("suffix", self.suffix))
            if v
        ]
        if rules:
            body["Filter"] = {"Key": {"FilterRules": rules}}
        return body


def rules_overlap(first: Rule, second: Rule) -> bool:
    """S3's overlap test: intersecting events, related prefixes and related suffixes."""
    return (
        events_overlap(first.events, second.events)
        and _prefixes_related(first.prefix, second.prefix)
        and _suffixes_related(first.suffix, second.suffix)
    )


def new_rule(
    destination: Destination,
    events: frozenset[str],
    prefix: str = "",
    suffix: str = "",
    rule_id: str | None = None,
) -> Rule:
    """The rule to add; its Id defaults to a stable hash of what it selects."""
    if destination.arn is None:
        raise NotificationSetupError(
            "--destination", "EventBridge takes no rule: use merge_eventbridge"
        )
    rule = Rule(destination.kind.value, destination.arn, events, prefix, suffix)
    if rule_id is None:
        material = json.dumps([rule.section, rule.arn, sorted(events), prefix, suffix])
        rule_id = "seqgate-" + hashlib.sha256(material.encode()).hexdigest()[:16]
    return Rule(rule.section, rule.arn, events, prefix, suffix, rule_id)


def _filter_value(body: Mapping[str, Any], name: str) -> str:
    rules = body.get("Filter", {}).get("Key", {}).get("FilterRules", [])
    # S3 answers "Prefix"/"Suffix"; requests usually say "prefix"/"suffix".
    return next(
        (str(r.get("Value", "")) for r in rules if str(r.get("Name", "")).lower() == name), ""
    )


def rules_of(configuration: Mapping[str, Any]) -> list[Rule]:
    """The rules of a configuration as GetBucketNotificationConfiguration returns it."""
    found = []
    for section, arn_member in SECTIONS.items():
        for body in configuration.get(section) or []:
            found.append(
                Rule(
                    section,
                    str(body.get(arn_member, "")),
                    frozenset(str(event) for event in body.get("Events", [])),
                    _filter_value(body, "prefix"),
                    _filter_value(body, "suffix"),
                    body.get("Id"),
                )
            )
    return found


# --------------------------------------------------------------------------- merging


@dataclass(frozen=True, slots=True)
class MergeResult:
    """The configuration to write, or ``changed`` False when it is already in place."""

    configuration: dict[str, Any]
    changed: bool
    note: str


def _kept(current: Mapping[str, Any]) -> dict[str, Any]:
    """The current configuration's sections, verbatim (response metadata dropped)."""
    kept: dict[str, Any] = {}
    for section in (*SECTIONS, EVENTBRIDGE_SECTION):
        if section in current and (current[section] or section == EVENTBRIDGE_SECTION):
            kept[section] = copy.deepcopy(current[section])
    return kept


def merge_rule(current: Mapping[str, Any], rule: Rule) -> MergeResult:
    """Add ``rule`` to ``current``, keeping every other rule exactly as it is."""
    existing = rules_of(current)
    for other in existing:
        if other.same_as(rule):
            return MergeResult(_kept(current), False, f"already configured: {other.describe()}")
    for other in existing:
        if rules_overlap(rule, other):
            raise NotificationSetupError(
                "--prefix/--suffix/--events",
                f"the new rule overlaps the existing {other.describe()}: S3 refuses two"
                " rules that could match the same event of the same key; give the new rule"
                " a --prefix that neither starts nor is the start of the other's (or such a"
                " --suffix), or --events that do not intersect, or remove the existing rule"
                " first",
            )
    for other in existing:
        if other.rule_id is not None and other.rule_id == rule.rule_id:
            raise NotificationSetupError(
                "--id",
                f"{rule.rule_id!r} is already the Id of {other.describe()}: choose another --id",
            )
    merged = _kept(current)
    merged.setdefault(rule.section, []).append(rule.document())
    return MergeResult(merged, True, f"added {rule.describe()}")


def merge_eventbridge(current: Mapping[str, Any]) -> MergeResult:
    """Turn on EventBridge delivery (every event, no filters), keeping every rule."""
    if EVENTBRIDGE_SECTION in current:
        return MergeResult(_kept(current), False, "already configured: EventBridge delivery")
    merged = _kept(current)
    merged[EVENTBRIDGE_SECTION] = {}
    return MergeResult(merged, True, "enabled EventBridge delivery (every event of the bucket)")


# --------------------------------------------------------------------------- permissions


def bucket_arn(bucket: str, partition: str = "aws") -> str:
    return f"arn:{partition}:s3:::{bucket}"


def destination_policy(destination: Destination, bucket: str, account_id: str) -> dict[str, Any]:
    """The resource policy that lets S3 (this bucket of this account) send to the destination.

    ``account_id`` is the bucket owner's account: with ``aws:SourceAccount`` it
    keeps another account's bucket of the same name from using the queue.
    """
    if _ACCOUNT_ID.fullmatch(account_id) is None:
        raise NotificationSetupError(
            "--account-id",
            f"{account_id!r} is not an AWS account id: write the 12 digits of the account"
            " that owns the bucket",
        )
    if destination.arn is None:
        raise NotificationSetupError(
            "--destination",
            "EventBridge needs no resource policy for S3; the EventBridge rule's target"
            " needs one instead (see the EventBridge documentation)",
        )
    action = "SQS:SendMessage" if destination.kind is DestinationKind.QUEUE else "SNS:Publish"
    return {
        "Version": "2012-10-17",
        "Id": f"seqgate-s3-notifications-{bucket}",
        "Statement": [
            {
                "Sid": "AllowS3BucketNotifications",
                "Effect": "Allow",
                "Principal": {"Service": "s3.amazonaws.com"},
                "Action": action,
                "Resource": destination.arn,
                "Condition": {
                    "ArnLike": {"aws:SourceArn": bucket_arn(bucket, destination.partition)},
                    "StringEquals": {"aws:SourceAccount": account_id},
                },
            }
        ],
    }
