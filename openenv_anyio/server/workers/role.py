"""What one worker process is: its place in the server (slot, generation), the sockets it
inherited, and the shared table, as the supervisor hands them over (:class:`WorkerSpec`)."""

from __future__ import annotations

import dataclasses
import json
import socket
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import ServerConfig
from .dashboard_relay import DashboardRelay
from .forwarding import OwnerForwarding
from .routing import OwnerRouter, session_prefix
from .table import WorkerTable

__all__ = ["RETIRE", "SECRETS_ENV", "SlotCapacity", "WorkerRole", "WorkerSpec", "split_secrets"]

#: The environment variable that hands a worker its bearer tokens. A command line is visible
#: to every local user (``ps``); a process's environment only to its owner.
SECRETS_ENV = "OPENENV_ANYIO_WORKER_SECRETS"
#: written by the supervisor on a worker's standard input, before closing it, when a
#: replacement serves the worker's slot (a rolling restart): the worker retires as it drains
RETIRE = b"retire\n"
_SECRET_FIELDS = ("token", "agent_tokens", "validation_token", "session_store")  # a Redis URL may hold a password


def split_secrets(config: ServerConfig) -> tuple[dict[str, Any], str]:
    """``config``'s init fields for the command line, and its tokens as JSON for
    :data:`SECRETS_ENV` (``SEC-TOKEN-1``: tokens never appear on a command line)."""
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.init}
    secrets = {name: fields.pop(name) for name in _SECRET_FIELDS}
    return fields, json.dumps(secrets)


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """Everything a worker process needs, as JSON on its command line."""

    target: str  # MODULE:ATTR, resolved in the worker
    config: dict[str, Any]  # ServerConfig fields
    slot: int
    generation: int
    tally: int  # which of the slot's two session tallies it counts in (the worker table's)
    listen_fd: int  # the server's listening socket (shared by all workers)
    inbox_fd: int  # this slot's inbox (receives handed-over connections)
    peer_fds: list[int]  # every slot's inbox, to hand connections to (index = slot)
    table_path: str
    ready_fd: int  # written "ready" and closed once listening

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> WorkerSpec:
        return cls(**json.loads(text))

    def server_config(self, environ: MutableMapping[str, str]) -> ServerConfig:
        """The worker's settings: the spec's fields plus the tokens of :data:`SECRETS_ENV`
        (removed from ``environ`` once read, so environment code never sees them)."""
        secrets = json.loads(environ.pop(SECRETS_ENV, "{}"))
        return ServerConfig(**self.config, **secrets)

    @property
    def fds(self) -> list[int]:
        """The descriptors the process must inherit."""
        return [self.listen_fd, self.inbox_fd, *self.peer_fds, self.ready_fd]


class SlotCapacity:
    """The shared session count, as one slot uses it (``SessionRegistry``'s ``shared``)."""

    def __init__(self, table: WorkerTable, slot: int, tally: int) -> None:
        self.table = table
        self.slot = slot
        self.tally = tally

    def take(self) -> bool:
        return self.table.take(self.slot, self.tally)

    def give_back(self) -> None:
        self.table.give_back(self.slot, self.tally)

    def total(self) -> int:
        return self.table.total()


class WorkerRole:
    """One worker's place in its server, built in the worker process from its spec."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self.slot = spec.slot
        self.generation = spec.generation
        self.table = WorkerTable(Path(spec.table_path))
        self.capacity = SlotCapacity(self.table, spec.slot, spec.tally)
        inbox = socket.socket(fileno=spec.inbox_fd)
        peers = [socket.socket(fileno=fd) for fd in spec.peer_fds]
        self.router = OwnerRouter(spec.slot, self.table, inbox, peers)
        #: where requests about another worker's hosted sessions go
        self.session_owners = OwnerForwarding(self.router)
        #: the other workers' /ws/ui updates, for this worker's subscribers
        self.other_dashboards = DashboardRelay(self.router)

    @property
    def session_prefix(self) -> str:
        return session_prefix(self.slot, self.generation)

    @property
    def bind(self) -> str:
        """Hypercorn's bind for the inherited listening socket."""
        return f"fd://{self.spec.listen_fd}"
