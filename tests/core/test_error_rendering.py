"""An invalid value is explained without rendering it whole: the reference engine quotes
the value a fault is about (``[{...}, ...] is not of type 'object'``), and a large request
(a ``POST /mcp`` batch of thousands of requests, a ``step`` whose data is a long array)
was rendered whole into the message before it was clipped, megabytes of text made while
the interpreter's lock was held. The message is what it was (its clipped form); the memory
used to make it stays a small fraction of the value's rendering."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from openenv_anyio.core import FrameCodec, ProtocolError, RpcFailure, decode_rpc_request
from openenv_anyio.core.errors import clip_message
from openenv_anyio.core.validation import Validator

ITEMS = 20_000
BATCH = [{"jsonrpc": "2.0", "id": i, "method": "tools/list", "params": {"note": "n" * 40}} for i in range(ITEMS)]
LONG_ARRAY = [{"message": "m" * 40} for _ in range(ITEMS)]
ACTION = Validator({"type": "object", "properties": {"message": {"type": "string"}}})


def refusal_of(call: Callable[[], object]) -> str:
    with pytest.raises((ProtocolError, RpcFailure)) as refused:
        call()
    return str(refused.value.message)


CASES: dict[str, tuple[Callable[[], object], str]] = {
    "mcp batch": (lambda: decode_rpc_request(BATCH), f"Invalid request at /: {BATCH!r} is not of type 'object'"),
    "step data": (
        lambda: FrameCodec("client-frame").decode_value({"type": "step", "data": LONG_ARRAY}),
        f"Invalid step frame at /data: {LONG_ARRAY!r} is not of type 'object'",
    ),
    "action member": (
        lambda: ACTION.check({"message": LONG_ARRAY}, what="action"),
        f"Invalid action at /message: {LONG_ARRAY!r} is not of type 'string'",
    ),
}


@pytest.mark.parametrize(("call", "unclipped"), list(CASES.values()), ids=list(CASES))
def test_a_large_invalid_value_is_not_rendered_whole(call: Callable[[], Any], unclipped: str) -> None:
    refusal_of(call)  # caches warm (schemas compiled) before measuring
    tracemalloc.start()
    try:
        message = refusal_of(call)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert message == clip_message(unclipped)
    # what remains is a shallow copy of the array (a pointer per member), not its text
    assert peak < len(unclipped) / 4, f"{peak} bytes to explain a value whose rendering is {len(unclipped)}"
