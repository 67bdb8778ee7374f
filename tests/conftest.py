"""Shared pytest fixtures: a real Apache Kafka broker for tests marked ``kafka``.

The test folders:

* ``tests/unit``: tests that need no broker (pure rules, parsers, the CLI's options, stores on
  disk, local servers); none is marked ``kafka`` and none may request ``kafka_bootstrap``,
  ``kafka_source`` or ``secured_kafka`` (collection fails, naming the test);
* ``tests/kafka``: tests against a real broker; every one is marked ``kafka`` (here, by folder);
* ``tests/torture``: crash and fault tests against real brokers (kill -9, broker bounces, state
  loss, zombies, stalls), marked ``kafka`` the same way and ``slow`` by their modules;
* ``tests/support``: helpers the test modules import (builders, samples, clients, the HTTP
  bridge, signed requests...), no tests; ``tests/fixtures``: the data files.

``kafka_bootstrap`` picks, in order (docs/design.md §6):

1. ``$KAFKA_BOOTSTRAP_SERVERS`` if set (it must answer);
2. a Testcontainers Kafka container, when ``testcontainers`` is installed and a Docker engine
   answers (image ``$SEQGATE_TESTCONTAINERS_KAFKA_IMAGE``, default ``confluentinc/cp-kafka:7.6.0``;
   not exercised on the CI machines, which have no Docker engine);
3. the project's own launcher (:func:`seqgate_devtools.broker.running_broker`), Kafka 4.1.1
from
   Maven Central, in a pytest temporary directory, stopped at the end of the session.

The choice and the bootstrap address are printed on the terminal. If no broker can be had the
fixture fails (every test that needs it errors); with ``SEQGATE_ALLOW_NO_KAFKA=1`` those tests
are skipped instead.

``secured_kafka`` is a second, SASL_SSL-only broker (SCRAM-SHA-512 over TLS) always started by
the launcher, for tests of secured clients (:class:`tests.support.secure_helpers.SecuredKafka`).

``kafka_cluster`` is the session's three-node KRaft cluster, for the cluster-fault and partition
tests; it listens on a network namespace's veth pair (``cluster_namespace``) where namespaces can
be made, and every node runs again (the namespace healed) after each test.

Collection also keeps the tests of this run's tier (``$SEQGATE_TEST_TIER``,
tests/support/tier.py) and, under ``--dist loadgroup``, makes one pytest-xdist work unit per
module or shared fixture, longest first (docs/testing.md).
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest
from seqgate_devtools.broker import (
    KAFKA_VERSION,
    BrokerError,
    BrokerHandle,
    broker_answers,
    running_broker,
)
from seqgate_devtools.broker.cluster import running_cluster
from seqgate_devtools.broker.cluster_handle import ClusterHandle
from seqgate_devtools.broker.security import read_client_properties

from tests.support.durations import UNKNOWN_S, recorded
from tests.support.netns import (
    Namespace,
    isolated_namespace,
    netns_usable,
    require_netns,
    sweep_stale,
)
from tests.support.secure_helpers import SecuredKafka
from tests.support.tier import TIERS, VARIABLE, TierError, tier_of_run
from tests.support.wheels import Wheels, build_wheels

_DEFAULT_TC_IMAGE = "confluentinc/cp-kafka:7.6.0"

_TESTS = Path(__file__).resolve().parent
_BROKER_FOLDERS = frozenset({"kafka", "torture"})
_BROKER_FIXTURES = frozenset({"kafka_source", "kafka_bootstrap", "secured_kafka", "kafka_cluster"})


def pytest_configure(config: pytest.Config) -> None:
    try:
        tier_of_run()
    except TierError as error:
        raise pytest.UsageError(str(error)) from None


def _tiers_of(item: pytest.Item) -> tuple[str, ...]:
    """The tiers a test takes part in (tests/support/tier.py): its ``tier`` marker's, else
    the fast tier only."""
    marker = item.get_closest_marker("tier")
    if marker is None:
        return ("fast",)
    unknown = [name for name in marker.args if name not in TIERS]
    if not marker.args or unknown:
        raise pytest.UsageError(
            f"{item.nodeid}: tier({', '.join(map(repr, marker.args))}) names no tier of"
            f" {', '.join(TIERS)}"
        )
    return tuple(marker.args)


def _keep_this_tier(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep the tests of this run's tier (``$SEQGATE_TEST_TIER``); deselect the others, so
    that pytest counts them as deselected, never as skipped."""
    tier = tier_of_run()
    kept, dropped = [], []
    for item in items:
        (kept if tier in _tiers_of(item) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
        _announce(config, f"{VARIABLE}={tier}: {len(dropped)} test(s) of the other tier left out")


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by the marks added here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test of tests/kafka and tests/torture ``kafka``; refuse a broker in tests/unit,
    and a test in tests/kafka or tests/torture that uses none (neither the session's broker
    nor, marked ``own_broker``, one it starts itself): `-m "not kafka"` is the fast suite."""
    misplaced = []
    for item in items:
        try:
            folder = Path(item.path).resolve().relative_to(_TESTS).parts[0]
        except ValueError:
            continue
        if folder in _BROKER_FOLDERS:
            if item.get_closest_marker("kafka") is None:
                item.add_marker(pytest.mark.kafka)
            uses = _BROKER_FIXTURES.intersection(getattr(item, "fixturenames", ()))
            if not uses and item.get_closest_marker("own_broker") is None:
                misplaced.append(
                    f"{item.nodeid} uses no broker: move it to tests/unit, or mark it"
                    " own_broker if it starts its own"
                )
        elif folder == "unit":
            wanted = sorted(_BROKER_FIXTURES.intersection(getattr(item, "fixturenames", ())))
            if wanted:
                misplaced.append(
                    f"{item.nodeid} requests {', '.join(wanted)}: move it to tests/kafka"
                )
            elif item.get_closest_marker("kafka") is not None:
                misplaced.append(f"{item.nodeid} is marked kafka: move it to tests/kafka")
    if misplaced:
        raise pytest.UsageError(
            "tests/unit is for the tests without a broker, tests/kafka and tests/torture for"
            " those with one:\n  " + "\n  ".join(misplaced)
        )
    _keep_this_tier(config, items)
    if config.getoption("dist", "no") == "loadgroup":
        _group_for_xdist(items)


# Tests that share an expensive session fixture run on one pytest-xdist worker, so that it is
# started once: the three-node cluster, the SASL_SSL broker.
_SHARED_GROUPS = {"kafka_cluster": "cluster", "secured_kafka": "secured"}


def _group_for_xdist(items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup`` (scripts/test.sh's broker tests): one work unit per module,
    or per shared session fixture (``_SHARED_GROUPS``), so that module fixtures are made
    once; units ordered longest first by tests/durations.json (with
    ``--no-loadscope-reorder``, xdist hands them out in this order), so that the long ones
    do not start last."""
    seconds = recorded()
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        group = next(
            (g for f, g in _SHARED_GROUPS.items() if f in getattr(item, "fixturenames", ())),
            item.nodeid.split("::")[0],
        )
        item.add_marker(pytest.mark.xdist_group(group))
        units.setdefault(group, []).append(item)
    cost = {
        group: sum(seconds.get(item.nodeid, UNKNOWN_S) for item in members)
        for group, members in units.items()
    }
    order = sorted(units, key=lambda group: (-cost[group], group))
    items[:] = [item for group in order for item in units[group]]


@dataclass
class KafkaSource:
    """Where the session's broker comes from."""

    kind: str  # "env", "testcontainers" or "launcher"
    bootstrap_servers: str
    handle: BrokerHandle | None = None  # set when kind == "launcher"


def _announce(config: pytest.Config, message: str) -> None:
    """Write a line to the terminal even while pytest captures output."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        return
    cm = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
    with cm:
        reporter.ensure_newline()
        reporter.write_line(f"[kafka] {message}")


def _docker_engine_answers() -> tuple[bool, str]:
    try:
        import docker  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        return False, "the docker SDK is not installed"
    try:
        client = docker.from_env(timeout=3)
        client.ping()
    except Exception as exc:
        return False, f"no Docker engine answers ({type(exc).__name__})"
    return True, "a Docker engine answers"


@contextlib.contextmanager
def _testcontainers_kafka() -> Iterator[str]:
    from testcontainers.kafka import KafkaContainer

    image = os.environ.get("SEQGATE_TESTCONTAINERS_KAFKA_IMAGE", _DEFAULT_TC_IMAGE)
    container = KafkaContainer(image).with_kraft()
    # One node: internal topics need a single replica, or transactions never start.
    for key, value in {
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
    }.items():
        container.with_env(key, value)
    with container as kafka:
        yield str(kafka.get_bootstrap_server())


_NO_KAFKA_REMEDY = "set KAFKA_BOOTSTRAP_SERVERS, or SEQGATE_ALLOW_NO_KAFKA=1 to skip these tests"


def _no_kafka(reason: str, remedy: str = _NO_KAFKA_REMEDY) -> NoReturn:
    if os.environ.get("SEQGATE_ALLOW_NO_KAFKA") == "1":
        pytest.skip(f"no Kafka broker (SEQGATE_ALLOW_NO_KAFKA=1): {reason}")
    pytest.fail(f"no Kafka broker for the tests: {reason} ({remedy})", pytrace=False)


@contextlib.contextmanager
def _launcher_broker(
    config: pytest.Config, data_dir: Path, security: str
) -> Iterator[BrokerHandle]:
    """A broker of the project's own launcher for the session; no broker is `_no_kafka`."""
    label = "launcher" if security == "plaintext" else f"launcher ({security})"
    stack = contextlib.ExitStack()
    try:
        handle = stack.enter_context(
            running_broker(
                data_dir,
                security=security,
                progress=lambda line: _announce(config, f"{label}: {line}"),
            )
        )
    except (BrokerError, OSError) as exc:
        # The secured broker always comes from the launcher: KAFKA_BOOTSTRAP_SERVERS is no cure.
        remedy = _NO_KAFKA_REMEDY if security == "plaintext" else "SEQGATE_ALLOW_NO_KAFKA=1 skips"
        _no_kafka(f"the local launcher failed to start a {security} broker: {exc}", remedy)
    with stack:
        yield handle


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Wheels:
    """seqgate's wheel and the development tools', built once per test process
    (tests/unit/test_packaging.py, tests/unit/test_runtime_install.py)."""
    return build_wheels(tmp_path_factory.mktemp("wheels"))


@pytest.fixture(scope="session")
def kafka_source(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaSource]:
    """The session's Kafka broker and where it comes from (see the module docstring)."""
    config = request.config

    env = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if env:
        if not broker_answers(env, timeout=10.0):
            _no_kafka(f"KAFKA_BOOTSTRAP_SERVERS={env} does not answer")
        _announce(config, f"using KAFKA_BOOTSTRAP_SERVERS: {env}")
        yield KafkaSource("env", env)
        return

    notes = []
    try:
        import testcontainers.kafka  # noqa: F401
    except ImportError:
        notes.append("testcontainers is not installed")
    else:
        ok, why = _docker_engine_answers()
        if ok:
            _announce(config, f"starting a Testcontainers Kafka container ({why})")
            stack = contextlib.ExitStack()
            try:
                bootstrap = stack.enter_context(_testcontainers_kafka())
            except Exception as exc:
                notes.append(f"the Testcontainers Kafka container failed: {exc}")
            else:
                with stack:
                    _announce(config, f"using Testcontainers Kafka at {bootstrap}")
                    yield KafkaSource("testcontainers", bootstrap)
                return
        else:
            notes.append(why)

    _announce(
        config,
        f"starting the local launcher's Kafka {KAFKA_VERSION} broker "
        f"(no Testcontainers: {'; '.join(notes)})",
    )
    with _launcher_broker(config, tmp_path_factory.mktemp("kafka-broker"), "plaintext") as handle:
        _announce(
            config,
            f"using the local launcher's broker at {handle.bootstrap_servers} "
            f"(pid {handle.pid}, log {handle.log_file})",
        )
        yield KafkaSource("launcher", handle.bootstrap_servers, handle)


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_source: KafkaSource) -> str:
    """Bootstrap servers (``host:port``) of a real Kafka broker shared by the session."""
    return kafka_source.bootstrap_servers


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> str:
    """A unique, Kafka-legal prefix for topic / group / transactional ids in this test."""
    test = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name).strip("-")[:60]
    return f"t-{test}-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def secured_kafka(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SecuredKafka]:
    """A throwaway launcher broker whose client listener is SASL_SSL only (SCRAM-SHA-512).

    Always the project's own launcher (``security="sasl_ssl"``), whatever ``kafka_source``
    uses. If it cannot start the fixture fails, or skips with ``SEQGATE_ALLOW_NO_KAFKA=1``.
    """
    config = request.config
    _announce(config, f"starting a SASL_SSL Kafka {KAFKA_VERSION} broker with the launcher")
    with _launcher_broker(config, tmp_path_factory.mktemp("kafka-secured"), "sasl_ssl") as handle:
        if handle.client_properties is None or handle.ca_file is None:
            _no_kafka(
                "the local launcher's SASL_SSL broker has no client properties",
                "SEQGATE_ALLOW_NO_KAFKA=1 skips",
            )
        settings = read_client_properties(handle.client_properties)
        _announce(
            config,
            f"using the SASL_SSL broker at {handle.bootstrap_servers} (pid {handle.pid}, "
            f"properties {handle.client_properties})",
        )
        yield SecuredKafka(
            bootstrap_servers=handle.bootstrap_servers,
            properties_file=handle.client_properties,
            ca_file=handle.ca_file,
            username=settings["sasl.username"],
            password=settings["sasl.password"],
        )


# ---- the session's three-node cluster -------------------------------------------------------

CLUSTER_NODES = (1, 2, 3)


@pytest.fixture(scope="session")
def cluster_namespace() -> Iterator[Namespace]:
    """A network namespace linked to the host by a veth pair (tests/support/netns.py): the
    session cluster listens on the pair's host end, so that a worker started inside can be
    cut off from it, delayed or made to lose packets."""
    require_netns()
    sweep_stale()
    with isolated_namespace() as namespace:
        yield namespace


@pytest.fixture(scope="session")
def _session_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClusterHandle]:
    """Where network namespaces cannot be made (outside CI), the cluster listens on
    127.0.0.1 and only the partition tests, which ask for ``cluster_namespace``, go without."""
    config = request.config
    address = "127.0.0.1"
    if netns_usable() is None:
        address = request.getfixturevalue("cluster_namespace").host_address
    _announce(config, f"starting a three-node Kafka {KAFKA_VERSION} cluster on {address}")
    with running_cluster(
        3,
        data_dir=tmp_path_factory.mktemp("kafka-cluster"),
        listen_address=address,
        progress=lambda line: _announce(config, f"cluster: {line}"),
    ) as handle:
        _announce(config, f"using the three-node cluster at {handle.bootstrap_servers}")
        yield handle


@pytest.fixture
def kafka_cluster(
    request: pytest.FixtureRequest, _session_cluster: ClusterHandle
) -> Iterator[ClusterHandle]:
    """The session's KRaft cluster of three combined nodes (replication factor 3,
    ``min.insync.replicas=2``), shared by the cluster fault and partition tests: whatever a
    test did to it, the next one finds every node running and the namespace healed."""
    yield _session_cluster
    if "cluster_namespace" in request.fixturenames:
        namespace: Namespace = request.getfixturevalue("cluster_namespace")
        namespace.heal()
        namespace.restore()
    for node in CLUSTER_NODES:
        if not _session_cluster.node_running(node):
            _session_cluster.start_node(node)
