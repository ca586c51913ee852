"""A peer's bytes and the replies an echoing end owes them, in order (the differential
tests of the connection, the client transport and the server's direct path).

wsproto plays the peer; every message is to be echoed, every ping answered, a close echoed,
bytes that break RFC 6455 answered with a close frame naming why; the replies are owed in
the order of what they answer (Autobahn|Testsuite 3.x-5.x): a pong for a ping between a
message's fragments before that message's echo, the close after the echoes before it.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from wsproto.frame_protocol import FrameProtocol, Opcode

from openenv_anyio.ws import Role

__all__ = ["cut", "endings", "ordered_specs", "ordered_wire", "peer_of", "read_as", "texts"]

#: text messages, among them the lengths where a frame header changes size
texts = st.one_of(
    st.text(max_size=200),
    st.sampled_from([125, 126, 65535, 65536]).map(lambda n: "é" * (n // 2) + "x" * (n % 2)),
)
ordered_specs = st.lists(
    st.one_of(
        st.tuples(st.just("text"), texts),
        st.tuples(st.just("fragments"), st.lists(st.text(max_size=30), min_size=2, max_size=4)),
        st.tuples(st.just("binary"), st.binary(max_size=60)),
        st.tuples(st.just("ping"), st.binary(max_size=20)),
        st.tuples(
            st.just("ping-inside"), st.tuples(st.text(max_size=20), st.binary(max_size=20), st.text(max_size=20))
        ),
    ),
    max_size=8,
)
#: how the peer's bytes end: not at all, its close, a frame with a reserved bit (1002), text
#: that is not UTF-8 (1007); a ping after a bad frame is never answered
endings = st.sampled_from(["none", "close", "reserved-bit", "not-utf8"])


def peer_of(role: Role) -> FrameProtocol:
    """wsproto playing the other end of ``role``."""
    return FrameProtocol(client=role is Role.SERVER, extensions=[])


def read_as(role: Role, data: bytes) -> list[tuple[Opcode, object]]:
    """The frames of ``data`` as the peer of ``role`` reads them."""
    proto = peer_of(role)
    proto.receive_bytes(data)
    return [(frame.opcode, frame.payload) for frame in proto.received_frames()]


def ordered_wire(role: Role, specs: list[tuple[str, Any]], ending: str) -> tuple[bytes, list[tuple[Opcode, object]]]:
    """The bytes of ``role``'s peer for ``specs`` then ``ending``, and the frames an echoing
    end answers them with, in order."""
    peer = peer_of(role)
    wire = bytearray()
    replies: list[tuple[Opcode, object]] = []
    for kind, payload in specs:
        if kind in ("text", "binary"):
            wire += peer.send_data(payload, True)
            replies.append((Opcode.TEXT if kind == "text" else Opcode.BINARY, payload))
        elif kind == "fragments":
            for index, part in enumerate(payload):
                wire += peer.send_data(part, index == len(payload) - 1)
            replies.append((Opcode.TEXT, "".join(payload)))
        elif kind == "ping":
            wire += peer.ping(payload)
            replies.append((Opcode.PONG, payload))
        else:  # a ping between two fragments: its pong precedes the message's echo
            first, ping, last = payload
            wire += peer.send_data(first, False) + peer.ping(ping) + peer.send_data(last, True)
            replies += [(Opcode.PONG, ping), (Opcode.TEXT, first + last)]
    if ending == "close":
        wire += peer.close(1000, "done")
        replies.append((Opcode.CLOSE, (1000, "done")))
    elif ending == "reserved-bit":
        wire += bytes([0xA1]) + bytes(peer.send_data("rsv", True))[1:] + peer.ping(b"after")
        replies.append((Opcode.CLOSE, (1002, "invalid frame")))
    elif ending == "not-utf8":
        wire += bytes([0x81]) + bytes(peer.send_data(b"\xc0", True))[1:] + peer.ping(b"after")
        replies.append((Opcode.CLOSE, (1007, "invalid frame")))
    return bytes(wire), replies


def cut(wire: bytes, cuts: list[int]) -> list[bytes]:
    """``wire`` cut at the offsets ``cuts`` (those past its end ignored), as reads."""
    bounds = [0, *sorted({min(offset, len(wire)) for offset in cuts}), len(wire)]
    return [wire[start:end] for start, end in zip(bounds, bounds[1:]) if end > start]
