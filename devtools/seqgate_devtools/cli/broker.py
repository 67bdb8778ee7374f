"""``seqgate broker up|down|status|stop-node|start-node``: the development Kafka broker (one
node, or a cluster) from the command line.

The lead registers :data:`broker` into the main ``seqgate`` CLI; it also runs on its own as
``python -m seqgate_devtools.cli.broker``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from seqgate.cli.app import SeqgateGroup
from seqgate_devtools.broker import (
    BrokerError,
    ClusterHandle,
    default_state_file,
    is_running,
    load_cluster_state,
    load_state,
    start_broker,
    start_cluster,
    stop_broker,
    stop_cluster,
    validate_listen_address,
)
from seqgate_devtools.broker.cluster_config import MAX_NODES
from seqgate_devtools.broker.cluster_handle import node_status
from seqgate_devtools.broker.locations import HOST
from seqgate_devtools.broker.security import PLAINTEXT, SASL_SSL, SECURITY_MODES

__all__ = ["broker", "main"]

EXIT_NOT_RUNNING = 1
"""``broker status``: the broker, or at least one node of the cluster, does not run or answer."""


def _progress(message: str) -> None:
    click.echo(message, err=True)


@click.group(name="broker", cls=SeqgateGroup)
def broker() -> None:
    """Run a local Apache Kafka broker, or a small cluster, for development.

    The broker is Apache Kafka (KRaft mode) run with Java 17 from the official Maven Central
    jars, which are resolved with Maven on first use and cached in
    $SEQGATE_HOME/kafka-<version>/libs (SEQGATE_HOME defaults to ~/.cache/seqgate).
    It listens on free ports on 127.0.0.1 and keeps running after the command returns.
    With --nodes 3 it is a cluster of three KRaft nodes (each broker and controller) with
    replication factor 3 and min.insync.replicas 2, whose nodes can be stopped and started
    one by one (stop-node, start-node) to test replication and failover.

    \b
    Example:
      export KAFKA_BOOTSTRAP_SERVERS=$(seqgate broker up)
      seqgate broker status
      seqgate broker down

    \b
    A three-node cluster, one node down and back:
      export KAFKA_BOOTSTRAP_SERVERS=$(seqgate broker up --nodes 3 | tail -n 1)
      seqgate broker stop-node 2 --kill
      seqgate broker status      # exit code 1: node 2 is down
      seqgate broker start-node 2

    \b
    With SASL_SSL (SCRAM-SHA-512 over TLS) clients read their settings from a file:
      out=$(seqgate broker up --security sasl_ssl)
      export KAFKA_BOOTSTRAP_SERVERS=$(echo "$out" | tail -n 1)
      export SEQGATE_KAFKA_CONFIG=$(echo "$out" | head -n 1)
    """


def _listen_address(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """Reject an address no listener can bind here before any JVM starts (one line)."""
    try:
        return validate_listen_address(value)
    except BrokerError as error:
        raise BrokerError(f"--listen-address: {error.message}") from None


@broker.command("up")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Broker data directory; WIPED on every start [default: $SEQGATE_HOME/broker/data]. "
    "A cluster keeps node N in <data dir>/node-N.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1.0),
    default=90.0,
    show_default=True,
    help="Seconds to wait for the broker (every node of a cluster) to answer.",
)
@click.option(
    "--security",
    type=click.Choice(SECURITY_MODES),
    default=PLAINTEXT,
    show_default=True,
    help="Client listener: plaintext, or sasl_ssl (SCRAM-SHA-512 over TLS, new CA and "
    "password on each start; settings in <data dir>/client.properties).",
)
@click.option(
    "--nodes",
    type=click.IntRange(1, MAX_NODES),
    default=1,
    show_default=True,
    help="Number of KRaft nodes, each broker and controller (3: replication factor 3, "
    "min.insync.replicas 2).",
)
@click.option(
    "--listen-address",
    default=HOST,
    show_default=True,
    callback=_listen_address,
    help="IPv4 address of this machine that every listener binds and advertises (e.g. the "
    "host side of a veth pair, so that a network namespace reaches each node directly).",
)
def up(
    data_dir: Path | None, timeout: float, security: str, nodes: int, listen_address: str
) -> None:
    """Start the development broker (Apache Kafka 4.1.1) unless it already runs.

    Progress goes to stderr; the LAST line on stdout is the bootstrap address (host:port,
    or host:port,host:port,host:port for a cluster).
    With --security sasl_ssl the FIRST of the two stdout lines is the absolute path of the
    client properties file (librdkafka names: security.protocol, sasl.mechanism,
    sasl.username, sasl.password, ssl.ca.location); a cluster's nodes share it.
    The data directory is wiped and reformatted on each start: nothing survives a restart
    (stop-node and start-node keep it). If the broker or cluster recorded in
    $SEQGATE_HOME/broker/state.json is already running and answering with the same
    settings, its address is printed and nothing else happens.

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
      $ seqgate broker up --nodes 3 --listen-address 10.200.0.1 2>/dev/null
      10.200.0.1:40601,10.200.0.1:40603,10.200.0.1:40605
    """
    if nodes > 1 or listen_address != HOST:
        _up_cluster(data_dir, timeout, security, nodes, listen_address)
        return
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
    _print_addresses(handle.security, handle.client_properties, handle.bootstrap_servers)


def _print_addresses(security: str, client_properties: Path | None, bootstrap: str) -> None:
    """stdout: the client properties file first (sasl_ssl), the bootstrap address last."""
    if security == SASL_SSL:
        click.echo(str(client_properties))
    click.echo(bootstrap)


def _up_cluster(
    data_dir: Path | None, timeout: float, security: str, nodes: int, listen_address: str
) -> None:
    cluster = start_cluster(
        data_dir,
        nodes,
        timeout=timeout,
        progress=_progress,
        security=security,
        listen_address=listen_address,
    )
    pids = ", ".join(f"node {n.node_id}: {n.pid}" for n in cluster.nodes)
    if cluster.already_running:
        _progress(f"cluster already running ({pids}; data dir {cluster.data_dir})")
    else:
        _progress(
            f"cluster pids {pids}; data dir {cluster.data_dir} (logs in node-N/server.log); "
            "stop it with: seqgate broker down"
        )
    _print_addresses(cluster.security, cluster.client_properties, cluster.bootstrap_servers)


@broker.command("down")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.0),
    default=30.0,
    show_default=True,
    help="Seconds to wait after SIGTERM before sending SIGKILL.",
)
def down(timeout: float) -> None:
    """Stop the development broker (every node of a cluster) started by `seqgate broker up`.

    Sends SIGTERM, waits for the process to exit (SIGKILL after --timeout seconds) and
    removes $SEQGATE_HOME/broker/state.json. Succeeds when no broker is running.

    \b
    Example:
      $ seqgate broker down
      stopped broker 127.0.0.1:40123 (pid 12345)
    """
    cluster = load_cluster_state(default_state_file())
    if cluster is not None:
        running = cluster.node_pids
        stop_cluster(cluster, timeout=timeout)
        if not running:
            click.echo(
                f"no broker running (no node of cluster {cluster.bootstrap_servers} ran; "
                f"removed stale {cluster.state_file})"
            )
            return
        pids = ", ".join(str(pid) for pid in running.values())
        click.echo(f"stopped cluster {cluster.bootstrap_servers} (pids {pids})")
        return
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
    A cluster prints one line per node: `node N host:port pid=P running` (or `down`, or
    `not answering`). Exits with code 0 when the broker (every node) runs and answers, and 1
    otherwise: nothing runs, or some node of a cluster is down (the lines say which).

    \b
    Example:
      $ seqgate broker status
      127.0.0.1:40123 pid=12345
      127.0.0.1:40567 pid=12399 security=sasl_ssl properties=/tmp/b/client.properties
      $ seqgate broker status || seqgate broker up
      $ seqgate broker status      # a cluster (broker up --nodes 3), node 2 stopped
      node 1 127.0.0.1:40601 pid=20001 running
      node 2 127.0.0.1:40603 pid=20002 down
      node 3 127.0.0.1:40605 pid=20003 running
    """
    cluster = load_cluster_state(default_state_file())
    if cluster is not None:
        results = [node_status(cluster, node) for node in cluster.nodes]
        for line, _ in results:
            click.echo(line)
        if not all(ok for _, ok in results):
            sys.exit(EXIT_NOT_RUNNING)
        return
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


def _recorded_cluster() -> ClusterHandle:
    """The cluster of `broker up --nodes N`, or the error that explains why there is none."""
    state_file = default_state_file()
    cluster = load_cluster_state(state_file)
    if cluster is not None:
        return cluster
    if load_state(state_file) is not None:
        raise BrokerError(
            "the dev broker is a single node: stop-node and start-node need a cluster "
            "(seqgate broker down, then seqgate broker up --nodes 3)"
        )
    raise BrokerError(
        f"no dev cluster recorded in {state_file}: start one with seqgate broker up --nodes 3"
    )


@broker.command("stop-node")
@click.argument("node_id", metavar="N", type=int)
@click.option("--kill", is_flag=True, help="SIGKILL (an unclean stop) instead of SIGTERM.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.0),
    default=30.0,
    show_default=True,
    help="Seconds to wait after SIGTERM before sending SIGKILL.",
)
def stop_node(node_id: int, kill: bool, timeout: float) -> None:
    """Stop node N of the cluster and wait until its process has exited.

    SIGTERM (a controlled shutdown), or SIGKILL with --kill (as after a power cut: the next
    start runs log recovery). The node's data directory and ports are kept for start-node.
    Succeeds when the node was not running. An unknown N is a usage error (exit code 2).

    \b
    Example:
      $ seqgate broker stop-node 2 --kill
      stopped node 2 127.0.0.1:40603 (pid 20002, SIGKILL)
    """
    cluster = _recorded_cluster()
    node = cluster.node(node_id)
    if not node.running():
        click.echo(f"node {node_id} {cluster.node_address(node_id)} was not running")
        return
    cluster.stop_node(node_id, kill=kill, timeout=timeout)
    how = "SIGKILL" if kill else "SIGTERM"
    click.echo(f"stopped node {node_id} {cluster.node_address(node_id)} (pid {node.pid}, {how})")


@broker.command("start-node")
@click.argument("node_id", metavar="N", type=int)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1.0),
    default=120.0,
    show_default=True,
    help="Seconds to wait for the node to answer and register.",
)
def start_node(node_id: int, timeout: float) -> None:
    """Start node N of the cluster again: same id, ports and data (nothing is wiped).

    Waits until the node answers and the cluster's metadata lists it. Succeeds when the node
    already runs. An unknown N is a usage error (exit code 2).

    \b
    Example:
      $ seqgate broker start-node 2
      started node 2 127.0.0.1:40603 (pid 20107)
    """
    cluster = _recorded_cluster()
    node = cluster.node(node_id)
    if node.running():
        click.echo(
            f"node {node_id} {cluster.node_address(node_id)} already running (pid {node.pid})"
        )
        return
    cluster.start_node(node_id, timeout=timeout)
    click.echo(f"started node {node_id} {cluster.node_address(node_id)} (pid {node.pid})")


def main() -> None:
    broker(prog_name="seqgate broker")


if __name__ == "__main__":
    main()
