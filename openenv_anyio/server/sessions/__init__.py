"""One home for a session's life on ``/ws`` (and ``WS /mcp``).

- :mod:`.ends`: :class:`~.ends.SessionEnd`, every way a connection ends, and its rule
  (close code, resumable?, slot kept?, reason);
- :mod:`.accept`: :func:`~.accept.serve_connection`, the one opening: accept, refuse while
  closing, hold capacity;
- :mod:`.connection`: the session loop, its idle/ping policy and its transitions;
- :mod:`.answers`, :mod:`.base`: the base protocol's answers and frames, plain sessions;
- :mod:`.resumable` (with :mod:`.resumable_store`), :mod:`.attached`, :mod:`.mcp_socket`:
  the variants, composed of the same parts.
"""
