"""Sessions handed over between server processes (``serve --session-store``), real servers
restarted on the same port; clients on both backends."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
