"""A robustness corpus over the real ``/ws`` endpoint (after the Autobahn TestSuite's
framing, fragmentation, UTF-8 and close cases): every broken frame ends its connection with
the close code RFC 6455 names (``WS-CLOSE-3``), never a bare TCP close, and never touches
another session (``WS-ERR-9``)."""

from __future__ import annotations

import pytest
from wsproto.events import CloseConnection

from .conftest import ask, ws_connect
from .test_direct_ws import RESET, EchoText, RawClient, client_frame, step_frame

PROTOCOL_ERROR, INVALID_PAYLOAD = 1002, 1007

CORPUS = {
    # framing (Autobahn 3.x, 4.x): reserved bits and opcodes
    "rsv2": (bytes([0xA1]) + client_frame(b"{}")[1:], PROTOCOL_ERROR),
    "rsv3-ping": (bytes([0x99]) + client_frame(b"", opcode=0x9)[1:], PROTOCOL_ERROR),
    **{
        f"opcode-{op:x}": (client_frame(b"x", opcode=op), PROTOCOL_ERROR)
        for op in (0x3, 0x4, 0x5, 0x6, 0x7, 0xB, 0xC, 0xD, 0xE, 0xF)
    },
    "unmasked-text": (client_frame(b"{}", mask=False), PROTOCOL_ERROR),
    "unmasked-ping": (client_frame(b"", opcode=0x9, mask=False), PROTOCOL_ERROR),
    # control frames (Autobahn 2.x): too long, fragmented
    "ping-126-bytes": (client_frame(b"p" * 126, opcode=0x9), PROTOCOL_ERROR),
    "fragmented-ping": (client_frame(b"p", opcode=0x9, fin=False), PROTOCOL_ERROR),
    # fragmentation (Autobahn 5.x): continuation without a start, text inside a message
    "continuation-first": (client_frame(b"x", opcode=0x0), PROTOCOL_ERROR),
    "text-inside-fragments": (client_frame(b'{"ty', fin=False) + client_frame(b'{"type": "state"}'), PROTOCOL_ERROR),
    # close payloads (Autobahn 7.x)
    "close-1-byte": (client_frame(b"\x03", opcode=0x8), PROTOCOL_ERROR),
    "close-code-999": (client_frame((999).to_bytes(2, "big"), opcode=0x8), PROTOCOL_ERROR),
    "close-code-1005": (client_frame((1005).to_bytes(2, "big"), opcode=0x8), PROTOCOL_ERROR),
    "close-code-1006": (client_frame((1006).to_bytes(2, "big"), opcode=0x8), PROTOCOL_ERROR),
    # UTF-8 (Autobahn 6.x): overlong, surrogate, truncated, split across fragments
    "overlong-slash": (client_frame(b'{"type": "\xc0\xaf"}'), INVALID_PAYLOAD),
    "utf16-surrogate": (client_frame(b'"\xed\xa0\x80"'), INVALID_PAYLOAD),
    "beyond-u10ffff": (client_frame(b'"\xf4\x90\x80\x80"'), INVALID_PAYLOAD),
    "truncated-at-end": (client_frame(b'{"type": "\xe2\x82"'), INVALID_PAYLOAD),
    "bad-in-second-fragment": (
        client_frame(b'{"type":', fin=False) + client_frame(b' "\xff"}', opcode=0x0),
        INVALID_PAYLOAD,
    ),
}


@pytest.mark.parametrize(("frame", "code"), list(CORPUS.values()), ids=list(CORPUS))
def test_broken_frame_gets_its_close_code_and_spares_other_sessions(serve, frame: bytes, code: int) -> None:
    with serve(EchoText) as server:
        with ws_connect(server) as bystander:
            assert ask(bystander, {"type": "reset"})["type"] == "observation"
            raw = RawClient(server.url)
            raw.sock.sendall(RESET)
            raw.answer()
            raw.sock.sendall(frame + step_frame("never answered"))
            event = raw.next_event()
            if code == INVALID_PAYLOAD:  # text that is not UTF-8 is first told so (WS-CONN-5)
                assert event.data and '"INVALID_JSON"' in event.data, event
                event = raw.next_event()
            assert isinstance(event, CloseConnection) and event.code == code, event
            raw.close()
            answer = ask(bystander, {"type": "step", "data": {"message": "still here"}})
            assert answer["data"]["observation"]["echo"] == "still here"
