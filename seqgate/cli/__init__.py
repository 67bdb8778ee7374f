"""The `seqgate` command line (docs/design.md §7).

Configuration precedence: command-line flags, then `SEQGATE_*` environment
variables, then the optional YAML file given with `--config`, then defaults.

One module per command, named for it (`bridge_http` for `bridge http`, ...); a group's
module (`bridge`, `topics`, `aws`) holds the group. `added_commands` adds the commands of
other installed packages: the development tools' `bench`, `broker` and `demo`
(devtools/seqgate_devtools/cli). Shared by them: `app` (the
group, the config file, the one place expected errors end a command), `options` (shared
options and how they become typed settings), `param_types` (the values click checks before
anything connects: instance ids, broker lists, URLs), `running` (signals, metrics endpoint, faults
of the long-running commands), `webhook_options` (the provider secrets of `bridge http`),
`http_processes` (`bridge http --processes N`).
"""

from __future__ import annotations

from seqgate.cli import (  # noqa: F401  (register commands)
    aws,
    bridge,
    bridge_http,
    bridge_kafka,
    bridge_sqs,
    dispatch,
    parse,
    reconcile,
    reset,
    status,
    tail,
    topics,
    verify,
    watermark,
    worker,
)
from seqgate.cli.added_commands import add_installed_commands
from seqgate.cli.app import cli

add_installed_commands(cli)

__all__ = ["cli", "main"]


def main() -> None:
    cli(prog_name="seqgate")
