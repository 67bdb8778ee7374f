"""`seqgate demo`: the guide's demonstration on a real broker."""

from __future__ import annotations

import click

from seqgate.cli.options import optional_kafka_options
from seqgate.runtime.errors import UsageError
from seqgate.runtime.kafka_reach import ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings


@click.command()
@optional_kafka_options
def demo(kafka: KafkaSettings | None) -> None:
    """Run the guide's demonstration end to end on a real broker.

    Starts a local development broker (unless one is given), creates the
    topics, runs a worker, feeds the guide's fixture deliveries, restarts the
    worker, and prints each decision; then stops everything it started.

    \b
    Example:
      seqgate demo
    """
    from seqgate.streams.worker.processor import WorkerFatalError
    from seqgate_devtools.demo import run_demo

    if kafka is not None:
        ensure_reachable(kafka)
    try:
        run_demo(kafka, echo=click.echo)
    except (WorkerFatalError, RuntimeError) as error:
        raise UsageError(f"the demo failed: {error}") from error
