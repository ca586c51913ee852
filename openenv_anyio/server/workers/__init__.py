"""Multi-process serving (``openenv-anyio serve TARGET --workers N``): a supervisor, worker
processes sharing one listening socket, owner routing of resumes, one capacity limit."""

from .supervisor import WorkerSupervisor, worker_count

__all__ = ["WorkerSupervisor", "worker_count"]
