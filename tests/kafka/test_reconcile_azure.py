"""`seqgate reconcile --provider azure` end to end (issue 21) against Azurite, Microsoft's
Azure Storage emulator: real blobs, listed through azure-storage-blob.

Azurite sends no Event Grid events, so the test writes the BlobCreated deliveries Azure
would send for the blobs it uploaded (their real ETags, increasing sequencers, in the Event
Grid schema of tests/support/azure_samples.py) and publishes them with `seqgate bridge
file`; the worker decides them by sequencer, so here reconcile reads watermarks (the S3
test reads the dedupe path's latest events). One upload's event is never sent, one blob is
overwritten and one deleted without events: reconcile must report exactly those, repair
them, and find nothing the second time.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from seqgate.cli import cli
from seqgate.schemas.listing import plain_etag
from seqgate.streams.rules.policy import Policy
from seqgate.streams.tools.verify import verify
from seqgate.streams.worker.config import WorkerConfig
from tests.support.azure_samples import (
    account_resource,
    blob_data,
    blob_subject,
    blob_url,
    event_grid_event,
)
from tests.support.azurite import ACCOUNT, azurite_blob
from tests.support.kafka_helpers import (
    last_outbox_events,
    make_config,
    run_until_caught_up,
    verify_target,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

CONTAINER = "uploads"
KEYS = ["a.txt", "summer trip/beach+sunset 100%.jpg", "overwritten", "deleted", "lost"]


@pytest.fixture(scope="module")
def azurite() -> Iterator[str]:
    with azurite_blob() as connection:
        yield connection


@dataclasses.dataclass
class Azure:
    connection: str
    bootstrap: str
    config: WorkerConfig
    rejected: str
    workdir: Path
    sequencer: int = 0

    @property
    def container(self) -> Any:
        from azure.storage.blob import ContainerClient

        return ContainerClient.from_connection_string(self.connection, CONTAINER)

    def upload(self, key: str, body: bytes) -> dict[str, Any]:
        """Upload; the Event Grid event Azure would send for it."""
        blob = self.container.upload_blob(key, body, overwrite=True)
        etag = str(blob.get_blob_properties().etag).strip('"')  # Event Grid's: unquoted
        self.sequencer += 1
        data = blob_data(
            url=blob_url(CONTAINER, key).replace("contosomedia", ACCOUNT),
            sequencer=f"{self.sequencer:032x}",
            etag=etag,
            content_length=len(body),
        )
        return event_grid_event(
            event_id=f"event-{self.sequencer}",
            topic=account_resource(ACCOUNT),
            subject=blob_subject(CONTAINER, key),
            data=data,
        )

    def deliver(self, events: list[dict[str, Any]]) -> None:
        """`seqgate bridge file` with one Event Grid delivery, then the worker."""
        path = self.workdir / f"delivery-{self.sequencer}.json"
        path.write_text(json.dumps(events))
        result = CliRunner().invoke(
            cli,
            [
                "bridge", "file", str(path), "--bootstrap-servers", self.bootstrap,
                "--events-topic", self.config.input_topic, "--rejected-topic", self.rejected,
            ],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        self.process()

    def process(self) -> None:
        run_until_caught_up(self.config, "the worker to catch up")

    def dispatch(self) -> dict[str, tuple[str, str | None]]:
        """`seqgate dispatch` of the outbox into SQLite (each run resumes where the last
        stopped); object key -> (kind, plain ETag) as the table holds it."""
        database = self.workdir / "objects.db"
        result = CliRunner().invoke(
            cli,
            [
                "dispatch", "--destination", f"sqlite:///{database}",
                "--bootstrap-servers", self.bootstrap,
                "--outbox-topic", self.config.outbox_topic,
                "--group-id", f"{self.config.application_id}-dispatch",
                "--idle-exit-seconds", "2",
            ],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        with sqlite3.connect(database) as connection:
            rows = connection.execute("SELECT identity, kind, etag FROM objects").fetchall()
        return {
            identity.split("/", 3)[3]: (kind, plain_etag(etag)) for identity, kind, etag in rows
        }

    def reconcile(self, *options: str) -> tuple[int, dict[str, Any]]:
        args = [
            "reconcile", "--provider", "azure", "--bucket", CONTAINER,
            "--azure-connection-string", self.connection,
            "--bootstrap-servers", self.bootstrap,
            "--input-topic", self.config.input_topic, "--rejected-topic", self.rejected,
            "--application-id", self.config.application_id,
            "--grace-seconds", "0", "--json", *options,
        ]  # fmt: skip
        result = CliRunner().invoke(cli, args)
        assert result.exit_code in (0, 1), result.output
        return result.exit_code, json.loads(result.stdout)


@pytest.fixture
def azure(azurite: str, kafka_bootstrap: str, unique_name: str, tmp_path: Path) -> Azure:
    config = dataclasses.replace(
        make_config(kafka_bootstrap, unique_name, tmp_path, partitions=2),
        policy=Policy.build("aws", ["created", "removed"]),
    )
    state = Azure(azurite, kafka_bootstrap, config, config.rejected_topic, tmp_path)
    state.container.create_container()  # Azurite is in memory, one per module
    return state


def test_reconcile_repairs_what_event_grid_never_delivered(azure: Azure) -> None:
    events = {key: azure.upload(key, f"v1 of {key}".encode()) for key in KEYS}
    azure.deliver([event for key, event in events.items() if key != "lost"])
    assert len(azure.dispatch()) == len(KEYS) - 1
    azure.container.delete_blob("deleted")
    azure.upload("overwritten", b"v2")  # its event is never sent

    code, report = azure.reconcile()
    assert code == 1
    assert {(f["key"], f["drift"]) for f in report["findings"]} == {
        ("lost", "missing"),
        ("overwritten", "behind"),
        ("deleted", "gone"),
    }
    assert report["source"] == "azure" and report["counts"]["in_sync"] == 2

    code, report = azure.reconcile("--publish")
    assert code == 1 and report["published"] == 3
    azure.process()
    assert verify(verify_target(azure.config)).ok()
    last = last_outbox_events(azure.bootstrap, azure.config.outbox_topic)
    listed = {blob.name: plain_etag(blob.etag) for blob in azure.container.list_blobs()}
    assert {key: plain_etag(last[key].etag) for key in listed} == listed
    assert last["deleted"].kind == "removed"
    applied = azure.dispatch()  # the repairs win over what the notifications had applied
    assert {key: etag for key, (_, etag) in applied.items() if key in listed} == listed
    assert applied["deleted"][0] == "removed"

    code, report = azure.reconcile("--publish")
    assert code == 0 and report["findings"] == [] and report["published"] == 0
