"""`EventPublisher.publish_clean`'s accounting when a record cannot be queued: each such
message is one failure that `flush` reports, as `submit` does. A stand-in producer refuses
the records (the accounting is under test; tests/kafka/test_bridge_file.py publishes
through a real broker)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from seqgate_devtools.samples import s3_notification, s3_record, to_bytes

from seqgate.connectors.errors import PublishError
from seqgate.connectors.publish.publisher import EventPublisher, Topics
from seqgate.runtime.kafka_settings import KafkaSettings


class _RefusingProducer:
    def produce(self, *_args: object, **_kwargs: object) -> None:
        raise KafkaException(KafkaError(KafkaError._INVALID_ARG, "refused here"))

    def poll(self, _timeout: float) -> int:
        return 0

    def flush(self, _timeout: float) -> int:
        return 0

    def purge(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_each_message_that_cannot_be_queued_is_a_failure_flush_reports() -> None:
    publisher = EventPublisher(KafkaSettings("127.0.0.1:1"), Topics(), engine="compiled")
    publisher._producer = _RefusingProducer()  # type: ignore[assignment]
    for name in ("a.txt", "b.txt"):
        raw = to_bytes(s3_notification(s3_record(key=name, sequencer="1")))
        assert publisher.publish_clean(raw, f"test:{name}", "2.1")
    with pytest.raises(PublishError, match=r"^2 message\(s\) could not be queued: .*refused"):
        publisher.flush()
    assert publisher.counters.as_dict()["published"] == 0
