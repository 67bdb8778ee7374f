"""Types of `seqgate._core`, the compiled hot path built from core/ (Rust, PyO3)."""

from collections.abc import Callable
from typing import Any, Final

OUTCOMES: Final[list[str]]
"""The outcome values the core can reach, by the index its results use."""

class WorkerCore:
    """The Worker's record step for runs of a batch (seqgate/streams/worker/compiled_step.py)."""

    def __init__(
        self,
        *,
        text_limits: list[int],
        known_sources: list[str],
        schemes: list[tuple[str, str]],
        order: str,
        source_orders: list[tuple[str, str]],
        admitted_kinds: list[str],
        ordered_sources: list[str],
        dedupe_window_ms: int,
        reconcile_prefix: str,
        seen_prefix: bytes,
        latest_prefix: bytes,
        stream_time_key: bytes,
        watermark_header: bytes,
        seen_header: bytes,
        outbox_header: bytes,
        decision_header: bytes | None,
    ) -> None: ...
    def run(
        self,
        messages: list[Any],
        start: int,
        *,
        prefixes: list[bytes],
        view_for: Callable[[int], Any],
        produce: Callable[..., None],
        outbox_topic: str,
        audit: tuple[Callable[..., None], str, Callable[..., None]] | None,
        reach: Callable[[], None] | None,
        keep_decisions: bool,
    ) -> tuple[
        int,
        int,
        list[tuple[int, int]],
        list[tuple[int, int, str, int]],
        list[tuple[int, int, str, str | None, int, str, str]] | None,
        BaseException | None,
    ]: ...

def produce_changes(
    produce: Callable[..., None],
    topic: str,
    partition: int,
    changes: dict[bytes, bytes | None],
    on_last: Callable[[Any, Any], None],
) -> int:
    """The changelog records of `changes`, in order; how many were produced."""

class S3Reader:
    """The bridges' reading of clean native S3 notifications (connectors/parsers/compiled.py)."""

    def __init__(
        self,
        *,
        names: list[tuple[str, str, str | None]],
        schema_floor_two_zero: bool,
        text_limits: list[int],
        max_depth: int,
        event_type: type,
    ) -> None: ...
    def events(self, raw: bytes, origin: str) -> tuple[Any, ...] | None:
        """The ObjectEvents of `raw`, or None: the Python parsers must read it."""
    def records(
        self, raw: bytes, origin: str, writer: EventWriter
    ) -> list[tuple[bytes, bytes]] | None:
        """The Kafka records of those events as `writer.record` makes them, or None."""

class EventWriter:
    """An ObjectEvent's bytes for one framing, and its Kafka record."""

    def __init__(
        self, *, header: bytes, event_type: type, schemes: list[tuple[str, str]]
    ) -> None: ...
    def __call__(self, event: Any) -> bytes | None: ...
    def record(self, event: Any) -> tuple[bytes, bytes] | None: ...
