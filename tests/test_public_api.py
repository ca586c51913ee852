"""The top-level package re-exports the client's public names explicitly (type checkers see
them), and nothing drifts between the two lists."""

from __future__ import annotations

import openenv_anyio
import openenv_anyio.client


def test_top_level_exports_the_client_api_and_the_core_names() -> None:
    expected = set(openenv_anyio.client.__all__) | {"Environment", "ErrorCode", "ProtocolError", "__version__"}
    assert set(openenv_anyio.__all__) == expected
    for name in openenv_anyio.__all__:
        assert getattr(openenv_anyio, name) is not None, name
    assert openenv_anyio.CapacityReached is openenv_anyio.client.CapacityReached
