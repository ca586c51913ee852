"""The quick look at a request head: whole and HTTP/1.x, or not (``head_complete``), in
agreement with the full parse (``read_head``) wherever the latter accepts the head."""

from __future__ import annotations

import pytest

from openenv_anyio.server.request_head import head_complete, read_head


@pytest.mark.parametrize(
    ("data", "complete"),
    [
        (b"GET / HTTP/1.1\r\nhost: x\r\n\r\n", True),
        (b"GET /ws?x=1 HTTP/1.0\r\n\r\n", True),
        (b"GET / HTTP/1.1\r\nhost: x\r\n\r\n{partial body", True),
        (b"GET / HTTP/1.1\r\nhost: x\r\n", False),  # the blank line has not arrived
        (b"GET / HTTP/1.1", False),
        (b"", False),
        (b"\r\n\r\n", False),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", False),  # HTTP/2's preface
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", False),  # a TLS client hello
    ],
)
def test_head_complete(data: bytes, complete: bool) -> None:
    assert head_complete(data) is complete
    try:
        parsed = read_head(data) is not None
    except ValueError:
        parsed = False
    assert parsed is complete
