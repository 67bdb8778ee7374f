"""One root for the expected errors, a family per exit code, caught once by the `seqgate`
group: the classes docs/operations.md lists under "Errors" are in the family it names, and a
command that raises one ends with one `error:` line and the family's code."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from seqgate_devtools.broker.launcher import BrokerError

from seqgate.cli.app import SeqgateGroup
from seqgate.connectors.aws.notification_rules import NotificationSetupError
from seqgate.connectors.aws.notification_setup import AwsSetupError
from seqgate.connectors.publish.filters import FilterError
from seqgate.connectors.publish.publisher import PublishError
from seqgate.connectors.sources.kafka_topic import KafkaSourceFatalError
from seqgate.connectors.sources.sqs_queue import SqsSourceError
from seqgate.runtime.errors import (
    CommandFailed,
    KafkaUnreachable,
    SeqgateError,
    UsageError,
    WorkerFatalError,
)
from seqgate.runtime.kafka_settings import KafkaSettingsError
from seqgate.runtime.topic_check import TopicCheckError
from seqgate.runtime.topics import TopicConfigError, TopicCreateError
from seqgate.streams.dispatch.destinations import DestinationConfigError
from seqgate.streams.dispatch.runner import DispatchError
from seqgate.streams.rules.policy import PolicyError
from seqgate.streams.tools.inspect import InspectError
from seqgate.streams.tools.reset_plan import ResetError
from seqgate.streams.tools.tail import TailError
from seqgate.streams.tools.verify import VerifyError
from tests.support.paths import REPO

FAMILIES: dict[str, type[SeqgateError]] = {
    "CommandFailed": CommandFailed,
    "UsageError": UsageError,
    "KafkaUnreachable": KafkaUnreachable,
}
MEMBERS: dict[str, type[Exception]] = {
    cls.__name__: cls
    for cls in (
        WorkerFatalError,
        KafkaSourceFatalError,
        PublishError,
        KafkaSettingsError,
        PolicyError,
        FilterError,
        TopicConfigError,
        TopicCreateError,
        TopicCheckError,
        NotificationSetupError,
        AwsSetupError,
        SqsSourceError,
        DestinationConfigError,
        DispatchError,
        VerifyError,
        ResetError,
        InspectError,
        TailError,
        BrokerError,
    )
}


def documented_members() -> dict[str, list[str]]:
    """{family: [class, ...]} from the "Errors" list of docs/operations.md."""
    text = (REPO / "docs" / "operations.md").read_text()
    section = text.split("### Errors", 1)[1].split("\n## ", 1)[0]
    members: dict[str, list[str]] = {}
    for item in re.split(r"\n\* ", section)[1:]:
        family, _, rest = item.partition(" ")
        names = re.findall(r"`(\w+)`", rest.split("—", 1)[1]) if "—" in rest else []
        members[family.strip("`")] = names
    return members


def test_each_family_has_its_exit_code() -> None:
    assert {name: family.exit_code for name, family in FAMILIES.items()} == {
        "CommandFailed": 1,
        "UsageError": 2,
        "KafkaUnreachable": 3,
    }


def test_the_documented_classes_are_in_their_family() -> None:
    documented = documented_members()
    named = {name for family in FAMILIES for name in documented[family]}
    assert named == set(MEMBERS)
    for family, names in documented.items():
        if family in FAMILIES:
            for name in names:
                assert issubclass(MEMBERS[name], FAMILIES[family]), (name, family)


def probe(error: SeqgateError) -> SeqgateGroup:
    group = SeqgateGroup("probe")

    @group.command("fail")
    def fail() -> None:
        raise error

    return group


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (WorkerFatalError("fenced: another worker took over"), 1),
        (PolicyError("admitted_kinds", "unknown kind 'x'"), 2),
        (KafkaUnreachable("Kafka at b:1: no broker answered"), 3),
    ],
)
def test_a_command_ends_with_one_line_and_the_family_code(error: SeqgateError, code: int) -> None:
    result = CliRunner().invoke(probe(error), ["fail"])
    assert result.exit_code == code, result.output
    assert result.stderr.splitlines() == [f"error: {error.args[0]}"]
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_detail_lines_follow_the_error_line() -> None:
    error = BrokerError("the broker did not start", "last log line 1\nlast log line 2")
    result = CliRunner().invoke(probe(error), ["fail"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: the broker did not start",
        "last log line 1",
        "last log line 2",
    ]
