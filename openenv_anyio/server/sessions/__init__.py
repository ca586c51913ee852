"""One home for a session's life: ``/ws``, ``WS /mcp`` and the sessions of ``POST /mcp``.

- :mod:`.ends`: :class:`~.ends.SessionEnd`, every way a connection ends, and its rule
  (close code, resumable?, slot kept?, reason);
- :mod:`.accept`: :func:`~.accept.serve_connection`, the one opening: accept, refuse while
  closing, hold capacity;
- :mod:`.connection`: the session loop, its idle/ping policy and its transitions;
- :mod:`.session`: :class:`~.session.Session`, one session's identity, environment and
  slot, opened one way and ended one way (with a :class:`~openenv_anyio.core.SessionOutcome`);
- :mod:`.answers`, :mod:`.base`: the base protocol's answers and frames, plain sessions;
- :mod:`.kept`: the one store of sessions that outlive a connection (resumable ones by
  token, hosted ones by id): who holds each, their waiting and reaping, their records;
- :mod:`.resumable` and :mod:`.attached` (a socket on a session created over ``POST
  /mcp``): the variants, composed of the same parts.

This layer does not import the MCP surface (:mod:`..mcp`), which stands above it: the
JSON-RPC answers of ``mcp`` frames are handed in (:data:`~.answers.RpcDispatch`), and ``WS
/mcp`` (:mod:`..mcp.websocket`) is a plain session with a frame handler of its own.
"""
