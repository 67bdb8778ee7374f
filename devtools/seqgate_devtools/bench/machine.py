"""What a report was measured on (machine, Python, clients, broker) and the top of a profile."""

from __future__ import annotations

import contextlib
import os
import platform
import pstats
import sqlite3
from pathlib import Path
from typing import Any

import confluent_kafka

__all__ = ["environment", "profile_top"]

_PROFILE_TOP = 15


def environment(kafka_version: str | None) -> dict[str, Any]:
    mem_kib = 0
    with contextlib.suppress(OSError), open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    return {
        "nproc": os.cpu_count(),
        "ram_gib": round(mem_kib / 2**20, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "confluent_kafka": confluent_kafka.version(),
        "librdkafka": confluent_kafka.libversion()[0],
        "kafka": kafka_version or "external broker",
        "sqlite": sqlite3.sqlite_version,
    }


def profile_top(path: Path, top: int = _PROFILE_TOP) -> list[dict[str, Any]]:
    """The `top` functions of a cProfile dump by own time."""
    stats = pstats.Stats(str(path))
    entries: list[dict[str, Any]] = []
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    for (filename, line, function), (cc, nc, tt, ct, _) in raw.items():
        name = f"{Path(filename).name}:{line}({function})" if line else function
        calls = str(nc) if cc == nc else f"{nc}/{cc}"
        entries.append(
            {
                "function": name,
                "ncalls": calls,
                "tottime_s": round(tt, 3),
                "cumtime_s": round(ct, 3),
            }
        )
    entries.sort(key=lambda entry: -entry["tottime_s"])
    return entries[:top]
