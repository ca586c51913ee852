"""The resume extension's sans-IO logic: tokens (EXT-SES-2) and the request ledger (EXT-REQ-1)."""

from __future__ import annotations

import pytest

from openenv_anyio.core import (
    Decision,
    Observation,
    RequestLedger,
    ResumeToken,
    Session,
    Step,
    decode_client_frame,
    decode_server_frame,
    encode_frame,
    new_resume_token,
    token_hint,
)


def test_tokens_are_long_random_and_parse_back() -> None:
    first, second = new_resume_token("abc"), new_resume_token("abc")
    assert first.secret != second.secret
    assert len(first.secret) >= 43  # 32 bytes of urlsafe base64: 256 bits (>= 128 required)
    parsed = ResumeToken.parse(str(first))
    assert parsed == first and parsed.session_id == "abc"
    assert parsed.matches(first.secret) and not parsed.matches(second.secret)
    assert first.secret not in repr(first) and first.secret not in token_hint(str(first))


@pytest.mark.parametrize("text", ["", "nodot", ".secretsecretsecretsecret", "id.short"])
def test_malformed_tokens_are_refused(text: str) -> None:
    assert ResumeToken.parse(text) is None


def test_session_ids_with_a_dot_are_refused() -> None:
    with pytest.raises(ValueError):
        new_resume_token("a.b")


def test_ledger_runs_new_requests_replays_the_last_and_waits_for_one_in_flight() -> None:
    ledger: RequestLedger[str] = RequestLedger()
    assert ledger.decide("1") is Decision.RUN
    ledger.begin("1")
    assert ledger.decide("1") is Decision.WAIT and ledger.in_flight
    with pytest.raises(LookupError):
        ledger.stored_answer()
    ledger.complete("1", "answer-1")
    assert ledger.decide("1") is Decision.REPLAY and ledger.stored_answer() == "answer-1"
    assert ledger.decide("2") is Decision.RUN
    ledger.begin("2")
    with pytest.raises(ValueError):
        ledger.complete("1", "late")
    ledger.complete("2", "answer-2")
    assert ledger.last_request_id == "2" and ledger.decide("1") is Decision.RUN


def test_ledger_refuses_the_last_request_id_with_another_request() -> None:
    """EXT-REQ-3: like an idempotency key, a request_id names one request."""
    ledger: RequestLedger[str] = RequestLedger()
    ledger.begin("1", ("step", {"n": 1}, None))
    assert ledger.decide("1", ("step", {"n": 2}, None)) is Decision.CONFLICT
    assert ledger.decide("1", ("step", {"n": 1}, None)) is Decision.WAIT
    ledger.complete("1", "answer-1")
    assert ledger.decide("1", ("reset", {})) is Decision.CONFLICT
    assert ledger.decide("1", ("step", {"n": 1}, None)) is Decision.REPLAY
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    assert ledger.decide("1", ("step", {"n": deep}, None)) is Decision.CONFLICT


def test_extension_members_round_trip_through_the_codec() -> None:
    step = decode_client_frame('{"type":"step","data":{"x":1},"request_id":"7","episode_id":"ep"}')
    assert step == Step({"x": 1}, "7", "ep")
    assert decode_client_frame(encode_frame(step)) == step
    answer = Observation({"o": 1}, 1.0, False, request_id="7", episode_id="ep")
    assert decode_server_frame(encode_frame(answer)) == answer
    session = Session("sid", "sid." + "s" * 43, False, 60.0, None, None)
    assert decode_server_frame(encode_frame(session)) == session
    assert "s" * 43 not in repr(session)
