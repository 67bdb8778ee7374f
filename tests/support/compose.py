"""Reading `docker-compose.yml`: its services, their environment and their seqgate commands."""

from __future__ import annotations

import shlex
from typing import Any

import click
import yaml

from seqgate.cli import cli
from tests.support.paths import REPO

COMPOSE_FILE = REPO / "docker-compose.yml"


def load_compose() -> dict[str, Any]:
    document = yaml.safe_load(COMPOSE_FILE.read_text())
    assert isinstance(document, dict), "docker-compose.yml is not a mapping"
    return document


def environment_of(service: dict[str, Any]) -> dict[str, str]:
    """A service's `environment`, in either of compose's forms (mapping or KEY=VALUE list)."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        pairs = [str(item).partition("=") for item in env]
        return {name: value for name, _, value in pairs}
    return {str(name): "" if value is None else str(value) for name, value in env.items()}


def command_of(service: dict[str, Any]) -> list[str]:
    command = service.get("command") or []
    return shlex.split(command) if isinstance(command, str) else [str(arg) for arg in command]


def resolve(args: list[str], root: click.Command = cli) -> tuple[list[click.Command], list[str]]:
    """Follow `args` down the tree: the commands on the path, and the arguments left over."""
    chain = [root]
    rest = list(args)
    while isinstance(chain[-1], click.Group) and rest and rest[0] in chain[-1].commands:
        chain.append(chain[-1].commands[rest.pop(0)])
    return chain, rest
