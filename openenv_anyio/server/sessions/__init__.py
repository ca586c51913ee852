"""One home for a session's life: how a ``/ws`` connection is accepted, served and ended,
for plain, resumable and attached sessions, and the registry of who is connected."""
