"""The development cluster's pure parts (devtools/seqgate_devtools/broker/cluster_*): node
properties, the state file, the listen address, and the CLI where it needs no broker (the
real clusters are in tests/kafka/test_devcluster.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from seqgate_devtools.broker import (
    BrokerError,
    ClusterHandle,
    NodeHandle,
    load_cluster_state,
    load_state,
    validate_listen_address,
)
from seqgate_devtools.broker.cluster_config import (
    NodePorts,
    node_properties,
    replication_defaults,
)
from seqgate_devtools.broker.cluster_handle import cluster_from_json
from seqgate_devtools.broker.files import write_json_atomic
from seqgate_devtools.broker.handle import BrokerHandle
from seqgate_devtools.broker.locations import KAFKA_VERSION
from seqgate_devtools.broker.recorded import RecordedAccess
from seqgate_devtools.broker.security import SecurityMaterial
from seqgate_devtools.cli.broker import broker as broker_cli

NOT_HERE = "203.0.113.7"  # TEST-NET-3: never an address of this machine

NODES = [NodePorts(1, 40001, 40002), NodePorts(2, 40003, 40004), NodePorts(3, 40005, 40006)]


def _props(text: str) -> dict[str, str]:
    return dict(
        line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#")
    )


# --------------------------------------------------------------------------- server.properties


def test_node_properties_name_all_voters_and_replicate() -> None:
    props = _props(node_properties(NODES[1], NODES, "127.0.0.1", Path("/d/node-2/kraft"), None))
    assert props["node.id"] == "2"
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == (
        "1@127.0.0.1:40002,2@127.0.0.1:40004,3@127.0.0.1:40006"
    )
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:40003,CONTROLLER://127.0.0.1:40004"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:40003"
    assert props["log.dirs"] == "/d/node-2/kraft"
    for key, value in {
        "default.replication.factor": "3",
        "min.insync.replicas": "2",
        "offsets.topic.replication.factor": "3",
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2",
        "share.coordinator.state.topic.replication.factor": "3",
        "share.coordinator.state.topic.min.isr": "2",
    }.items():
        assert props[key] == value, key
    assert int(props["offsets.topic.num.partitions"]) <= 5
    assert int(props["transaction.state.log.num.partitions"]) <= 5


def test_node_properties_bind_and_advertise_the_listen_address() -> None:
    props = _props(node_properties(NODES[0], NODES, "10.200.0.1", Path("/k"), None))
    assert props["listeners"] == "PLAINTEXT://10.200.0.1:40001,CONTROLLER://10.200.0.1:40002"
    assert props["advertised.listeners"] == "PLAINTEXT://10.200.0.1:40001"
    assert props["controller.quorum.voters"].split(",")[2] == "3@10.200.0.1:40006"
    assert "127.0.0.1" not in "".join(props.values())


def test_sasl_ssl_node_properties_use_sasl_ssl_between_brokers(tmp_path: Path) -> None:
    material = SecurityMaterial(
        tmp_path / "ca.pem", tmp_path / "b.p12", "kspw", "seqgate", "pw", tmp_path / "c.props"
    )
    props = _props(node_properties(NODES[2], NODES, "127.0.0.1", Path("/k"), material))
    assert props["listeners"] == "SASL_SSL://127.0.0.1:40005,CONTROLLER://127.0.0.1:40006"
    assert props["advertised.listeners"] == "SASL_SSL://127.0.0.1:40005"
    assert props["inter.broker.listener.name"] == "SASL_SSL"
    assert props["controller.quorum.voters"].count("@") == 3
    assert props["min.insync.replicas"] == "2"


def test_replication_defaults_fit_the_cluster_size() -> None:
    assert replication_defaults(1)["default.replication.factor"] == "1"
    assert replication_defaults(1)["min.insync.replicas"] == "1"
    assert replication_defaults(5)["default.replication.factor"] == "3"
    assert replication_defaults(5)["transaction.state.log.min.isr"] == "2"


# --------------------------------------------------------------------------- state file


def _cluster(tmp_path: Path, state_file: Path | None = None) -> ClusterHandle:
    return ClusterHandle(
        data_dir=tmp_path / "data",
        cluster_id="AAAAAAAAAAAAAAAAAAAAAA",
        nodes=[
            NodeHandle(n.node_id, n.port, n.controller_port, 999_990 + n.node_id, tmp_path / "d")
            for n in NODES
        ],
        listen_address="10.200.0.1",
        security="sasl_ssl",
        client_properties=tmp_path / "client.properties",
        ca_file=tmp_path / "tls" / "ca.pem",
        state_file=state_file,
    )


def test_state_file_round_trip(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    cluster = _cluster(tmp_path, state)
    cluster.save()
    loaded = load_cluster_state(state)
    assert loaded == cluster
    assert loaded is not None
    assert loaded.bootstrap_servers == "10.200.0.1:40001,10.200.0.1:40003,10.200.0.1:40005"
    assert [n.pid for n in loaded.nodes] == [999_991, 999_992, 999_993]
    assert cluster_from_json(json.loads(state.read_text())) == _cluster(tmp_path)


def test_broker_record_round_trip_and_old_records_read_as_defaults(tmp_path: Path) -> None:
    """A single broker's record keeps the same client-access fields as a cluster's
    (recorded.RecordedAccess); a record written before they existed reads as plaintext."""
    state = tmp_path / "state.json"
    broker = BrokerHandle(
        bootstrap_servers="127.0.0.1:40001",
        pid=999_991,
        data_dir=tmp_path / "data",
        port=40001,
        controller_port=40002,
        state_file=state,
        security="sasl_ssl",
        client_properties=tmp_path / "client.properties",
        ca_file=tmp_path / "tls" / "ca.pem",
    )
    write_json_atomic(state, broker.to_json())
    assert load_state(state) == broker
    old = {k: v for k, v in broker.to_json().items() if k not in RecordedAccess._fields}
    state.write_text(json.dumps(old))
    loaded = load_state(state)
    assert loaded is not None
    assert loaded.access == RecordedAccess()
    assert (loaded.security, loaded.client_properties, loaded.kafka_version) == (
        "plaintext",
        None,
        KAFKA_VERSION,
    )


def test_single_and_cluster_records_ignore_each_other(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    _cluster(tmp_path, state).save()
    assert load_state(state) is None
    assert state.exists(), "a cluster's record must not be removed as a damaged single one"
    state.write_text(json.dumps({"pid": 1, "bootstrap_servers": "127.0.0.1:1"}))
    assert load_cluster_state(state) is None


def test_a_damaged_cluster_record_is_an_error(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"kind": "cluster", "nodes": []}))
    with pytest.raises(BrokerError, match="damaged"):
        load_cluster_state(state)


def test_unknown_node_id_names_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(BrokerError, match=r"no node 4 in this cluster: its node ids are 1, 2, 3"):
        _cluster(tmp_path).node(4)


# --------------------------------------------------------------------------- listen address


def test_listen_address_validation() -> None:
    assert validate_listen_address("127.0.0.1") == "127.0.0.1"
    assert validate_listen_address(" 127.0.0.2 ") == "127.0.0.2"  # all of 127/8 is local
    with pytest.raises(BrokerError, match="not an IPv4 address"):
        validate_listen_address("localhost")
    with pytest.raises(BrokerError, match="not an address of this machine"):
        validate_listen_address(NOT_HERE)
    with pytest.raises(BrokerError, match="cannot be advertised"):
        validate_listen_address("0.0.0.0")


def test_cli_rejects_a_foreign_listen_address_in_one_line(tmp_path: Path) -> None:
    runner = CliRunner(env={"SEQGATE_HOME": str(tmp_path / "home")})
    result = runner.invoke(broker_cli, ["up", "--nodes", "3", "--listen-address", NOT_HERE])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        f"error: --listen-address: {NOT_HERE} is not an address of this machine "
        "(no interface has it)"
    ]
    assert result.stdout == ""
    assert not (tmp_path / "home" / "broker").exists()  # refused before anything started


# --------------------------------------------------------------------------- CLI without a JVM


def test_cli_node_commands_without_a_cluster(tmp_path: Path) -> None:
    runner = CliRunner(env={"SEQGATE_HOME": str(tmp_path / "home")})
    for command in (["stop-node", "1"], ["start-node", "1"]):
        result = runner.invoke(broker_cli, command)
        assert result.exit_code == 2, result.output
        assert len(result.stderr.splitlines()) == 1
        assert "no dev cluster recorded" in result.stderr


def test_cli_status_and_unknown_node_of_a_dead_cluster(tmp_path: Path) -> None:
    home = tmp_path / "home"
    state = home / "broker" / "state.json"
    cluster = _cluster(tmp_path, state)
    cluster.security = "plaintext"
    cluster.save()
    runner = CliRunner(env={"SEQGATE_HOME": str(home)})
    status = runner.invoke(broker_cli, ["status"])
    assert status.exit_code == 1
    assert status.stdout.splitlines() == [
        f"node {n.node_id} 10.200.0.1:{n.port} pid={999_990 + n.node_id} down" for n in NODES
    ]
    unknown = runner.invoke(broker_cli, ["stop-node", "7"])
    assert unknown.exit_code == 2
    assert unknown.stderr.splitlines() == [
        "error: no node 7 in this cluster: its node ids are 1, 2, 3"
    ]
    assert runner.invoke(broker_cli, ["start-node", "0"]).exit_code == 2
    stopped = runner.invoke(broker_cli, ["stop-node", "2"])
    assert stopped.exit_code == 0
    assert stopped.stdout.strip() == "node 2 10.200.0.1:40003 was not running"
    down = runner.invoke(broker_cli, ["down"])
    assert down.exit_code == 0
    assert down.stdout.startswith("no broker running (no node of cluster 10.200.0.1:40001,")
    assert not state.exists()


def test_cli_node_command_help_has_examples() -> None:
    runner = CliRunner()
    for command in (["stop-node", "--help"], ["start-node", "--help"], ["up", "--help"]):
        result = runner.invoke(broker_cli, command)
        assert result.exit_code == 0
        assert "Example:" in result.stdout
        assert "seqgate broker" in result.stdout
    assert "--nodes" in runner.invoke(broker_cli, ["up", "--help"]).stdout
    assert "--listen-address" in runner.invoke(broker_cli, ["up", "--help"]).stdout
