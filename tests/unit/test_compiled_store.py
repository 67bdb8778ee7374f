"""The state store's loops from the compiled core against their Python loops.

`PartitionStore.apply` and the restore's `_ChangelogApplier.take` use the core's
`batch_changes` and `take_changelog` with `--engine compiled`; the Python loops are the
specification. Every key and value RocksDB holds afterwards must be the same, and a
restore must take the same records into the same pending state.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from seqgate.schemas.codec import SEEN_EVENT, encode_watermark
from seqgate.schemas.records import SeenEvent
from seqgate.streams.state.keys import STREAM_TIME_KEY, latest_key, seen_key
from seqgate.streams.state.restore import _ChangelogApplier
from seqgate.streams.state.store import PartitionStore
from seqgate.streams.worker.engine import load_core
from tests.support.engines import Message

IDS = ("a", "b", "é", "d")
IDENTITIES = ("s3://b/one", "s3://b/two", "gs://b/é")


@st.composite
def change_sets(draw: st.DrawFn) -> dict[bytes, bytes | None]:
    changes: dict[bytes, bytes | None] = {}
    for _ in range(draw(st.integers(1, 12))):
        choice = draw(st.integers(0, 3))
        if choice == 0:
            identity = draw(st.sampled_from(IDENTITIES))
            position = draw(st.sampled_from(["1", "f", "10"]))
            changes[identity.encode()] = encode_watermark(position, "x", 0, draw(st.integers(0, 9)))
        elif choice == 1:
            event_id = draw(st.sampled_from(IDS))
            time = draw(st.integers(0, 10**6))
            entry = SeenEvent(event_id, "s3://b/one", time, 0, 1)
            value = None if draw(st.integers(0, 3)) == 0 else SEEN_EVENT.encode(entry)
            changes[seen_key(event_id)] = value
        elif choice == 2:
            entry = SeenEvent(draw(st.sampled_from(IDS)), "s3://b/one", 5, 0, 1)
            changes[latest_key(draw(st.sampled_from(IDENTITIES)))] = SEEN_EVENT.encode(entry)
        else:
            changes[STREAM_TIME_KEY] = str(draw(st.integers(0, 10**6))).encode()
    return changes


def everything(store: PartitionStore) -> list[tuple[bytes, bytes]]:
    """Every key and value of the store's RocksDB, the offset and the indexes included."""
    return list(store._scan(b""))


@settings(max_examples=60, deadline=None)
@given(st.lists(change_sets(), min_size=1, max_size=6))
def test_a_store_applies_the_same_batches_either_way(
    tmp_path_factory: object, batches: list[dict[bytes, bytes | None]]
) -> None:
    root = Path(tmp_path_factory.mktemp("apply"))  # type: ignore[attr-defined]
    python = PartitionStore(root / "python", partition=0)
    compiled = PartitionStore(root / "compiled", partition=0, core=load_core())
    try:
        for offset, changes in enumerate(batches):
            python.apply(changes, offset + 1)
            compiled.apply(changes, offset + 1)
            assert everything(compiled) == everything(python)
    finally:
        python.close()
        compiled.close()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([b"k1", b"k2", b"\x00seen\x00a", None]),
            st.sampled_from([b"v", b"", None]),
        ),
        max_size=30,
    ),
    st.integers(0, 100),
)
def test_a_restore_takes_the_same_records_either_way(
    tmp_path_factory: object, records: list[tuple[bytes | None, bytes | None]], start: int
) -> None:
    root = Path(tmp_path_factory.mktemp("take"))  # type: ignore[attr-defined]
    messages = [Message(v, k, 0, start + i, 0) for i, (k, v) in enumerate(records)]
    taken = {}
    for engine, core in (("python", None), ("compiled", load_core())):
        store = PartitionStore(root / engine, partition=0, core=core)
        try:
            applier = _ChangelogApplier(store, 0, start, start + len(records), None)
            applier.take(messages[: len(messages) // 2], None)  # type: ignore[arg-type]
            applier.take(messages[len(messages) // 2 :], None)  # type: ignore[arg-type]
            taken[engine] = (dict(applier._pending), applier.applied, applier.next_offset)
        finally:
            store.close()
    assert taken["compiled"] == taken["python"]
