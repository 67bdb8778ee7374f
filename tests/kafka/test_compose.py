"""`docker-compose.yml` and the `Dockerfile` agree with the CLI they run (docs/design.md §6, §7).

No Docker engine runs here, so the files are checked statically against the click tree
of `seqgate.cli.cli`: every `SEQGATE_*` variable a service sets is one an option reads,
every seqgate service's `command` is a real command path whose required inputs are given,
and the image's entrypoint is the `seqgate` console script.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from seqgate.runtime.topics import create_topics, pipeline_topics
from tests.support.compose import command_of, environment_of, load_compose, resolve
from tests.support.paths import REPO

# ---- the bridge service, run for real ------------------------------------------------------------


def host_path(service: dict[str, Any], container_path: str) -> str:
    """Map a path inside the container to the host through the service's bind mounts."""
    for volume in service.get("volumes") or []:
        source, _, target = str(volume).partition(":")
        target = target.split(":")[0]
        if source.startswith((".", "/")) and container_path.startswith(target):
            return str((REPO / source).resolve()) + container_path[len(target) :]
    return container_path


@pytest.mark.kafka
def test_the_bridge_service_command_publishes_the_mounted_files(
    kafka_bootstrap: str, unique_name: str
) -> None:
    bridge = load_compose()["services"]["bridge"]
    _, rest = resolve(command_of(bridge))
    specs = pipeline_topics(
        input_topic=f"{unique_name}.object-events",
        outbox_topic=f"{unique_name}.object-events.outbox",
        rejected_topic=f"{unique_name}.object-events.rejected",
        application_id=f"{unique_name}-app",
        partitions=6,
    )
    create_topics(AdminClient({"bootstrap.servers": kafka_bootstrap}), specs)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SEQGATE_")},
        **environment_of(bridge),
        "SEQGATE_BOOTSTRAP_SERVERS": kafka_bootstrap,
        "SEQGATE_INPUT_TOPIC": specs[0].name,
        "SEQGATE_REJECTED_TOPIC": specs[2].name,
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "seqgate.cli",
            *command_of(bridge)[: -len(rest)],
            *(host_path(bridge, arg) for arg in rest),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.splitlines()[-1:]
    assert json.loads(done.stdout)["published"] > 0
