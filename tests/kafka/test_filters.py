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

import json
from pathlib import Path

import pytest
from click.testing import Result
from seqgate_devtools.samples import s3_notification, s3_record, s3_test_event, to_bytes

from tests.support.filter_cli import clean_environment as clean_environment
from tests.support.filter_cli import invoke

# ---- the options ---------------------------------------------------------------------------------


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
