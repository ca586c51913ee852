"""The reconnect policy's budget (EXT-HAND-6) and which failed tries are tried again."""

from __future__ import annotations

import pytest

from openenv_anyio.client import (
    CapacityReached,
    ConnectionClosedByServer,
    ConnectionLost,
    ConnectionRefused,
    HandshakeRejected,
    ProtocolViolation,
    ReconnectPolicy,
    RequestIdReused,
    ServerError,
)
from openenv_anyio.client.reconnect import retry_resume_after

URL = "ws://127.0.0.1:1/ws"


def test_the_default_budget_is_time_not_a_count_of_tries() -> None:
    policy = ReconnectPolicy()
    assert policy.attempts is None and policy.within_s == 15.0
    assert policy.next_delay_s(0, 0.0) == 0.0
    assert policy.next_delay_s(3, 1.0) == pytest.approx(0.2)
    assert policy.next_delay_s(40, 14.0) is None  # the wait would outlast the budget
    assert policy.next_delay_s(40, 10.0) == 2.0  # max_backoff_s


def test_attempts_still_caps_the_tries() -> None:
    policy = ReconnectPolicy(attempts=3, backoff_s=0.01)
    assert [policy.next_delay_s(n, 0.0) for n in range(4)] == [0.0, 0.01, 0.02, None]
    assert ReconnectPolicy(attempts=100, within_s=None).next_delay_s(99, 1e6) is not None


@pytest.mark.parametrize(
    "settings",
    [{"attempts": 0}, {"within_s": 0}, {"within_s": -1.0}, {"attempts": None, "within_s": None}, {"backoff_s": -1}],
)
def test_a_budget_that_ends_never_or_at_once_is_refused(settings: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ReconnectPolicy(**settings)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("failure", "retried"),
    [
        (ConnectionRefused(URL, "refused"), True),
        (ConnectionLost(URL, "reset"), True),
        (ConnectionClosedByServer(URL, 1012, "service restart"), True),
        (ConnectionClosedByServer(URL, 1013, "server draining"), True),
        (ConnectionClosedByServer(URL, 1001, "server shutting down"), True),
        (ConnectionClosedByServer(URL, 4409, "taken over"), False),
        (HandshakeRejected(URL, 503), True),
        (HandshakeRejected(URL, 502), True),
        (HandshakeRejected(URL, 401), False),
        (HandshakeRejected(URL, 404), False),
        (CapacityReached("CAPACITY_REACHED", "full"), True),
        (RequestIdReused("REQUEST_ID_REUSED", "no"), False),
        (ServerError("REPLAY_MISMATCH", "step 3 differs"), False),
        (ProtocolViolation(URL, "garbage"), False),
    ],
)
def test_what_a_restart_explains_is_tried_again(failure: Exception, retried: bool) -> None:
    assert retry_resume_after(failure) is retried  # type: ignore[arg-type]
