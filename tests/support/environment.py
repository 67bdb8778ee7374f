"""The environment for a seqgate command started by a test: the caller's, without SEQGATE_* or
KAFKA_BOOTSTRAP_SERVERS, plus what the test sets."""

from __future__ import annotations

import os
from collections.abc import Mapping


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    environment = {
        name: value
        for name, value in os.environ.items()
        if not (name.startswith("SEQGATE_") or name == "KAFKA_BOOTSTRAP_SERVERS")
    }
    environment.update(extra or {})
    return environment
