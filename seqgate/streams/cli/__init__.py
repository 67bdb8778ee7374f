"""The `seqgate` command line (docs/design.md §7).

Configuration precedence: command-line flags, then `SEQGATE_*` environment
variables, then the optional YAML file given with `--config`, then defaults.

One module per group of commands: `app` (the group and the config file),
`options` (shared options), `offline` (parse), `topics` (topics create, check),
`aws` (S3 notification set-up), `bridge` (file, sqs, kafka), `bridge_http` (http), `worker` (worker,
verify, demo), `operate` (reset, watermark, status); `broker` comes from
`seqgate.streams.cli.broker`, `bench` from `seqgate.streams.cli.bench`.
"""

from __future__ import annotations

from seqgate.streams.cli import (  # noqa: F401  (register commands)
    aws,
    bridge,
    bridge_http,
    dispatch,
    offline,
    operate,
    topics,
    worker,
)
from seqgate.streams.cli.app import cli
from seqgate.streams.cli.bench import bench
from seqgate.streams.cli.broker import broker

cli.add_command(broker)
cli.add_command(bench)

__all__ = ["cli", "main"]


def main() -> None:
    cli(prog_name="seqgate")
