"""The faust example agent (examples/faust_outbox_agent.py) as a real `faust worker` process.

Each agent has its own faust app id (so its own consumer group), SQLite file and faust data
directory. ``guarantee`` replaces the example's ``processing_guarantee`` before faust starts,
to show what the agent would read without it.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "faust_outbox_agent.py"

# Loads the example as a module (not as __main__, so it does not start), sets the
# guarantee given as the first argument, then starts faust with the remaining ones.
_WITH_GUARANTEE = (
    "import runpy, sys; example = runpy.run_path(sys.argv[1], run_name='faust_outbox_agent');"
    " example['app'].conf.processing_guarantee = sys.argv[2];"
    " sys.argv = [sys.argv[1], *sys.argv[3:]]; example['app'].main()"
)


@dataclass(frozen=True, slots=True)
class Delivery:
    """One record the agent applied, or received again (``first`` False)."""

    event_id: str
    partition: int
    offset: int
    first: bool


@dataclass
class FaustAgent:
    bootstrap: str
    outbox_topic: str
    app_id: str
    workdir: Path
    guarantee: str | None = None
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def db_path(self) -> Path:
        return self.workdir / "applied.sqlite"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        faust_args = ["worker", "--loglevel", "warn", "--without-web"]
        if self.guarantee is None:
            command = [sys.executable, str(EXAMPLE), *faust_args]
        else:
            command = [sys.executable, "-c", _WITH_GUARANTEE, str(EXAMPLE), self.guarantee]
            command += faust_args
        environment = {
            **os.environ,
            "SEQGATE_BOOTSTRAP_SERVERS": self.bootstrap,
            "SEQGATE_OUTBOX_TOPIC": self.outbox_topic,
            "SEQGATE_FAUST_APP_ID": self.app_id,
            "SEQGATE_FAUST_DB": str(self.db_path),
            "SEQGATE_FAUST_DATADIR": str(self.workdir / "faust-data"),
            "PYTHONPATH": str(ROOT),
        }
        log = self.workdir / f"agent-{len(self.started):02d}.log"
        with log.open("wb") as output:
            self.started.append(
                subprocess.Popen(
                    command,
                    cwd=self.workdir,
                    env=environment,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=output,
                )
            )

    @property
    def current(self) -> subprocess.Popen[bytes]:
        return self.started[-1]

    def assert_alive(self) -> None:
        assert self.current.poll() is None, f"the faust agent exited:\n{self.log()[-4000:]}"

    def kill(self) -> None:
        """SIGKILL (no commit of what it applied since its last offset commit)."""
        self.current.send_signal(signal.SIGKILL)
        self.current.wait(30)

    def stop(self) -> bool:
        """SIGTERM, then SIGKILL if it has not exited within 20 s; whether it exited on its own.
        (faust-streaming 0.15.3 with exactly_once can fail in its shutdown with "Not in the
        middle of a transaction" and then hang: docs/consumers.md.)"""
        self.current.send_signal(signal.SIGTERM)
        try:
            self.current.wait(20)
        except subprocess.TimeoutExpired:
            self.kill()
            return False
        return True

    def cleanup(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.kill()
                process.wait(30)

    def log(self) -> str:
        return "".join(
            path.read_text(errors="replace") for path in sorted(self.workdir.glob("agent-*.log"))
        )

    def deliveries(self) -> list[Delivery]:
        """Every delivery so far, in the order the agent applied them."""
        if not self.db_path.exists():
            return []
        db = sqlite3.connect(self.db_path)
        try:
            rows = db.execute(
                "SELECT event_id, outbox_partition, outbox_offset, first"
                " FROM deliveries ORDER BY rowid"
            ).fetchall()
        except sqlite3.OperationalError:  # the agent has not created its tables yet
            return []
        finally:
            db.close()
        return [Delivery(event_id, p, o, bool(first)) for event_id, p, o, first in rows]

    def offsets_seen(self) -> set[tuple[int, int]]:
        return {(d.partition, d.offset) for d in self.deliveries()}
