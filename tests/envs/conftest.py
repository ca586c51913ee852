"""Fixtures of the adapter tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _restore_sys_path() -> Iterator[None]:
    """Resolving a target puts a directory on ``sys.path``; each test starts from the same path."""
    saved = list(sys.path)
    yield
    sys.path[:] = saved
