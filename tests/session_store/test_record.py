"""A kept session's record (``server.session_store.record``): written and read back equal,
no key in it, and every record that is not one a typed error."""

from __future__ import annotations

import json
from typing import Any

import pytest

from openenv_anyio.core import RequestLedger
from openenv_anyio.restoration import RestoreWay, seal_snapshot
from openenv_anyio.server.session_store import (
    CorruptRecord,
    IncompatibleRecord,
    StoredEnv,
    decode_record,
    encode_record,
    key_digest,
)

from .records import replayed_session, snapshot_session


def test_a_replayed_session_comes_back_equal() -> None:
    token, record = replayed_session()
    assert decode_record(encode_record(record), key=key_digest(token)) == record


@pytest.mark.parametrize("data", [None, b"\x00\x01\xfe\xff" * 10])
def test_a_snapshot_session_comes_back_equal(data: Any) -> None:
    record = snapshot_session(data=data)
    again = decode_record(encode_record(record))
    assert again == record
    assert again.env.snapshot is not None and again.env.snapshot.value() == record.env.snapshot.value()  # type: ignore[union-attr]


def test_the_ledger_compares_the_same_after_a_round_trip() -> None:
    """What the ledger compares a repeated request with comes back a tuple: a repeat is
    still a REPLAY after the record was read back, not a conflict."""
    _, record = replayed_session()
    again = decode_record(encode_record(record))
    ledger: RequestLedger[str] = RequestLedger()
    assert again.ledger.last_request_id is not None and again.ledger.answer is not None
    ledger.begin(again.ledger.last_request_id, again.ledger.asked)
    ledger.complete(again.ledger.last_request_id, again.ledger.answer)
    assert ledger.decide("r3", ("step", {"add": 1}, "ep")).value == "replay"


def test_the_key_is_not_in_the_record() -> None:
    """A reader of the store cannot take a session over: only the key's digest is kept."""
    token, record = replayed_session()
    secret = token.partition(".")[2]
    encoded = encode_record(record)
    assert secret.encode() not in encoded and token.encode() not in encoded
    assert key_digest(token).encode() in encoded
    assert key_digest(token) != key_digest(token + "x") and len(key_digest(token)) == 64


def _body() -> dict[str, Any]:
    return dict(json.loads(encode_record(replayed_session()[1])))


def test_a_record_of_another_version_is_incompatible() -> None:
    body = _body() | {"version": 2}
    with pytest.raises(IncompatibleRecord, match="record of version 2; this server reads version 1") as caught:
        decode_record(json.dumps(body).encode(), key="abc")
    assert caught.value.key_digest == "abc"


def _edited(**changes: Any) -> bytes:
    return json.dumps(_body() | changes).encode()


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"{not json", "is not JSON"),
        (encode_record(replayed_session()[1])[:-20], "is not JSON"),
        (b'{"format": "something else", "version": 1}', "is not a record of openenv-anyio.kept-session"),
        (b"[1, 2]", "is not a record"),
        (_edited(step_count=-1), "step_count is negative"),
        (_edited(step_count="3"), "step_count is missing or of the wrong type"),
        (_edited(step_count=True), "step_count is missing or of the wrong type"),
        (_edited(kind="plain"), "malformed: kind must be one of"),
        (_edited(ledger=None), "ledger is missing"),
        (_edited(env={"way": "teleport"}), "malformed"),
        (_edited(env={"way": "snapshot", "snapshot": {"json": False, "data": "!!"}, "log": None}), "malformed"),
        (_edited(env={"way": "replay", "snapshot": None, "log": None}), "keeps exactly what its way needs"),
        (_edited(env={"way": "replay", "snapshot": None, "log": {"reset": {}}}), "episode log"),
        (_edited(saved_at=None), "saved_at is missing"),
    ],
)
def test_a_corrupt_record_is_a_typed_error(data: bytes, words: str) -> None:
    with pytest.raises(CorruptRecord, match=words) as caught:
        decode_record(data, key="d" * 64)
    assert caught.value.key_digest == "d" * 64
    assert "\n" not in str(caught.value)


def test_a_record_under_another_sessions_key_is_corrupt() -> None:
    _, record = replayed_session()
    with pytest.raises(CorruptRecord, match="kept under another session's key"):
        decode_record(encode_record(record), key=key_digest("someone else"))


def test_an_env_keeps_what_its_way_needs() -> None:
    with pytest.raises(ValueError, match="keeps exactly what its way needs"):
        StoredEnv(RestoreWay.NONE, snapshot=seal_snapshot(b"x"))
    assert StoredEnv(RestoreWay.NONE).snapshot is None
