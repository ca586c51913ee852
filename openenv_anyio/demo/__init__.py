"""``openenv-anyio demo``: a real env server and concurrent agents in one task group."""
