"""``seqgate broker up|down|status``: the development Kafka broker from the command line.

The lead registers :data:`broker` into the main ``seqgate`` CLI; it also runs on its own as
``python -m seqgate.streams.cli.broker``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from seqgate.streams.cli.app import SeqgateGroup
from seqgate.streams.devtools.broker import (
    default_state_file,
    is_running,
    load_state,
    start_broker,
    stop_broker,
)
from seqgate.streams.devtools.broker.security import PLAINTEXT, SASL_SSL, SECURITY_MODES

__all__ = ["broker", "main"]

EXIT_NOT_RUNNING = 1


def _progress(message: str) -> None:
    click.echo(message, err=True)


@click.group(name="broker", cls=SeqgateGroup)
def broker() -> None:
    """Run a local single-node Apache Kafka broker for development.

    The broker is Apache Kafka (KRaft mode) run with Java 17 from the official Maven Central
    jars, which are resolved with Maven on first use and cached in
    $SEQGATE_HOME/kafka-<version>/libs (SEQGATE_HOME defaults to ~/.cache/seqgate).
    It listens on free ports on 127.0.0.1 and keeps running after the command returns.

    \b
    Example:
      export KAFKA_BOOTSTRAP_SERVERS=$(seqgate broker up)
      seqgate broker status
      seqgate broker down

    \b
    With SASL_SSL (SCRAM-SHA-512 over TLS) clients read their settings from a file:
      out=$(seqgate broker up --security sasl_ssl)
      export KAFKA_BOOTSTRAP_SERVERS=$(echo "$out" | tail -n 1)
      export KAFKA_CLIENT_PROPERTIES=$(echo "$out" | head -n 1)
    """


@broker.command("up")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Broker data directory; WIPED on every start [default: $SEQGATE_HOME/broker/data].",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1.0),
    default=90.0,
    show_default=True,
    help="Seconds to wait for the broker to answer.",
)
@click.option(
    "--security",
    type=click.Choice(SECURITY_MODES),
    default=PLAINTEXT,
    show_default=True,
    help="Client listener: plaintext, or sasl_ssl (SCRAM-SHA-512 over TLS, new CA and "
    "password on each start; settings in <data dir>/client.properties).",
)
def up(data_dir: Path | None, timeout: float, security: str) -> None:
    """Start the development broker (Apache Kafka 4.1.1) unless it already runs.

    Progress goes to stderr; the LAST line on stdout is the bootstrap address (host:port).
    With --security sasl_ssl the FIRST of the two stdout lines is the absolute path of the
    client properties file (librdkafka names: security.protocol, sasl.mechanism,
    sasl.username, sasl.password, ssl.ca.location).
    The data directory is wiped and reformatted on each start: nothing survives a restart.
    If the broker recorded in $SEQGATE_HOME/broker/state.json is already running and
    answering, its address is printed and nothing else happens.

    \b
    Example:
      $ seqgate broker up
      formatting broker storage in /home/me/.cache/seqgate/broker/data
      starting Apache Kafka 4.1.1 on 127.0.0.1:40123 (log: .../server.log)
      ...
      127.0.0.1:40123
      $ seqgate broker up --security sasl_ssl --data-dir /tmp/secure-broker 2>/dev/null
      /tmp/secure-broker/client.properties
      127.0.0.1:40567
    """
    handle = start_broker(data_dir, timeout=timeout, progress=_progress, security=security)
    if handle.already_running:
        _progress(
            f"broker already running at {handle.bootstrap_servers} (pid {handle.pid}, "
            f"data dir {handle.data_dir})"
        )
    else:
        _progress(
            f"broker pid {handle.pid}, data dir {handle.data_dir}, log {handle.log_file}; "
            "stop it with: seqgate broker down"
        )
    if handle.security == SASL_SSL:
        click.echo(str(handle.client_properties))
    click.echo(handle.bootstrap_servers)


@broker.command("down")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.0),
    default=30.0,
    show_default=True,
    help="Seconds to wait after SIGTERM before sending SIGKILL.",
)
def down(timeout: float) -> None:
    """Stop the development broker started by `seqgate broker up`.

    Sends SIGTERM, waits for the process to exit (SIGKILL after --timeout seconds) and
    removes $SEQGATE_HOME/broker/state.json. Succeeds when no broker is running.

    \b
    Example:
      $ seqgate broker down
      stopped broker 127.0.0.1:40123 (pid 12345)
    """
    handle = load_state()
    if handle is None:
        click.echo(f"no broker running (no state file {default_state_file()})")
        return
    if not is_running(handle):
        stop_broker(handle, timeout=timeout)
        click.echo(
            f"no broker running (pid {handle.pid} had exited; removed stale {handle.state_file})"
        )
        return
    stop_broker(handle, timeout=timeout)
    click.echo(f"stopped broker {handle.bootstrap_servers} (pid {handle.pid})")


@broker.command("status")
def status() -> None:
    """Show whether the development broker runs: `host:port pid=N`, or `not running`.

    A sasl_ssl broker adds `security=sasl_ssl properties=<client properties file>`.
    Exits with code 0 when the broker runs and answers, 1 otherwise.

    \b
    Example:
      $ seqgate broker status
      127.0.0.1:40123 pid=12345
      127.0.0.1:40567 pid=12399 security=sasl_ssl properties=/tmp/b/client.properties
      $ seqgate broker status || seqgate broker up
    """
    handle = load_state()
    if handle is None:
        click.echo("not running")
        sys.exit(EXIT_NOT_RUNNING)
    if not is_running(handle):
        click.echo("not running")
        click.echo(f"(stale state file {handle.state_file}: pid {handle.pid} is gone)", err=True)
        sys.exit(EXIT_NOT_RUNNING)
    if not handle.answers(timeout=5.0):
        click.echo("not running")
        click.echo(
            f"(pid {handle.pid} is alive but {handle.bootstrap_servers} does not answer; "
            f"see {handle.log_file}, or restart: seqgate broker down && seqgate broker up)",
            err=True,
        )
        sys.exit(EXIT_NOT_RUNNING)
    line = f"{handle.bootstrap_servers} pid={handle.pid}"
    if handle.security != PLAINTEXT:
        line += f" security={handle.security} properties={handle.client_properties}"
    click.echo(line)


def main() -> None:
    broker(prog_name="seqgate broker")


if __name__ == "__main__":
    main()
