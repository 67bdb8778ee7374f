"""A full disk and a store failing after the commit: one error line, nothing lost.

The full-disk tests mount an 8 MiB tmpfs (skipped where mounting is not permitted);
the worker tests run against a real broker.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from seqgate.schemas.codec import WATERMARK
from seqgate.streams.state.store import (
    StateDamaged,
    StateDirectory,
    StateUnavailable,
    watermark_key,
)
from seqgate.streams.worker.processor import WorkerFatalError
from tests.support.kafka_helpers import (
    caught_up,
    make_config,
    produce_events,
    read_all,
    wait_for,
    worker_thread,
)
from tests.support.state_helpers import (
    TOPIC,
    mark,
    objects,
    rebuild_warnings,
    rebuilds_counted,
    run_until_caught_up,
    s3_event,
)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs, unmounted at the end (skipped where mounting is not permitted)."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        reason = f"cannot mount a tmpfs at {mount}: {done.stderr.strip() or done.returncode}"
        print(f"skipped: {reason}")
        pytest.skip(reason)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def fill(mount: Path) -> Path:
    """Write a file until the filesystem is full, to the last byte it accepts."""
    filler = mount / "filler"
    with filler.open("wb", buffering=0) as out:
        for chunk in (1 << 20, 1 << 16, 1 << 12, 1 << 8, 1):
            with contextlib.suppress(OSError):
                for _ in range((16 << 20) // chunk):  # bounded: more than the disk holds
                    out.write(b"\0" * chunk)
    return filler


@pytest.mark.kafka
def test_a_full_disk_is_one_error_line_and_a_restart_recovers(
    kafka_bootstrap: str, unique_name: str, small_disk: Path
) -> None:
    config = make_config(kafka_bootstrap, unique_name, small_disk, partitions=1)
    first = objects(100, "before")
    produce_events(kafka_bootstrap, config.input_topic, first)
    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 120, "the worker to accept the first batch")
        filler = fill(small_disk)
        # One transaction's changes, far more than the page the store's log has left.
        produce_events(kafka_bootstrap, config.input_topic, objects(500, "after"))
        wait_for(lambda: bool(running.errors), 120, "the worker to stop on the full disk")
    error = running.errors[0]
    assert isinstance(error, WorkerFatalError), repr(error)
    message = str(error)
    assert "\n" not in message and "no space left on device" in message
    assert str(config.state_dir) in message and "--state-dir" in message
    assert caught_up(kafka_bootstrap, config)(), "the transaction was committed before the write"

    filler.unlink()
    produce_events(kafka_bootstrap, config.input_topic, [*first, s3_event("new")])
    again = run_until_caught_up(config, "the restarted worker, with space again")
    assert again == ["duplicate"] * len(first) + ["accepted"], set(again)
    assert len(read_all(kafka_bootstrap, config.outbox_topic)) == 100 + 500 + 1


def test_a_full_disk_is_unavailable_not_damaged_and_loses_nothing_applied(
    small_disk: Path,
) -> None:
    directory = StateDirectory(small_disk, TOPIC)
    store = directory.open(0)
    store.apply({watermark_key("s3://b/kept"): WATERMARK.encode(mark(1))}, 1)
    filler = fill(small_disk)
    big: dict[bytes, bytes | None] = {
        watermark_key(f"s3://b/{i:06d}"): WATERMARK.encode(mark(i)) for i in range(500)
    }
    with pytest.raises(StateUnavailable) as raised:
        store.apply(big, 2)
    assert raised.value.disk_full and raised.value.path == directory.partition_path(0)
    store.close()  # logged, not raised: the write-ahead log has what was applied
    filler.unlink()
    store = directory.open(0)
    try:
        assert store.watermark("s3://b/kept") == mark(1) and store.changelog_next_offset() == 1
    finally:
        store.close()


@pytest.mark.kafka
def test_a_store_failing_after_the_commit_is_rebuilt_with_the_committed_transaction(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The RocksDB write after a Kafka commit fails as corrupt (injected: a real one is
    met by a read first): the rebuild must wait for that transaction in the changelog."""
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=1)
    first = objects(50, "first")
    produce_events(kafka_bootstrap, config.input_topic, first)
    caplog.set_level(logging.INFO)
    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 120, "the worker to accept the first batch")
        store = running.worker._stores.get(0)
        assert store is not None
        failures: list[int] = []

        def failing_apply(changes: Mapping[bytes, bytes | None], next_offset: int) -> None:
            failures.append(next_offset)
            raise StateDamaged(0, store.path, "Corruption: injected after the commit")

        store.apply = failing_apply  # type: ignore[method-assign,assignment]
        produce_events(kafka_bootstrap, config.input_topic, objects(50, "second"))
        wait_for(lambda: bool(failures), 60, "the write after the commit to fail")
        produce_events(kafka_bootstrap, config.input_topic, objects(50, "second"))
        wait_for(caught_up(kafka_bootstrap, config), 120, "the worker to decide the redeliveries")
    assert not running.errors, repr(running.errors[0])
    outcomes = [d.outcome.value for d in running.decisions]
    # Every committed transaction counted, and the redeliveries of the one whose
    # write failed are recognized: the rebuilt store has it.
    assert outcomes == ["accepted"] * 100 + ["duplicate"] * 50, outcomes
    (warning,) = rebuild_warnings(caplog)
    assert "Corruption: injected after the commit" in warning.getMessage()
    assert rebuilds_counted(running.worker, "damaged") == 1
    assert running.worker.aborts == 0  # nothing was open to abort
