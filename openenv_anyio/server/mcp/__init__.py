"""The MCP surface: one JSON-RPC dispatch shared by ``POST /mcp``, ``WS /mcp`` and ``mcp``
frames on ``/ws``, and the sessions created over ``POST /mcp`` that outlive their sockets."""
