"""Base URL -> WebSocket address (PROTOCOL.md section 1); bad URLs fail at construction."""

from __future__ import annotations

import pytest

from openenv_anyio.client import EnvClient, websocket_address


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("http://127.0.0.1:8000", "ws://127.0.0.1:8000/ws"),
        ("https://env.example.org", "wss://env.example.org/ws"),
        ("https://env.example.org:8443/", "wss://env.example.org:8443/ws"),
        ("ws://localhost:9000", "ws://localhost:9000/ws"),
        ("wss://h.example", "wss://h.example/ws"),
        ("localhost:8000", "ws://localhost:8000/ws"),
        ("127.0.0.1:8000", "ws://127.0.0.1:8000/ws"),
        ("http://h/prefix", "ws://h/prefix/ws"),
        ("http://h:81/a/b/", "ws://h:81/a/b/ws"),
        ("HTTP://H.Example:80", "ws://h.example/ws"),
        ("http://[::1]:8000", "ws://[::1]:8000/ws"),
        ("  http://h:1  ", "ws://h:1/ws"),
        # the agent channel's own URL, as `openenv-anyio serve` prints it, is accepted as is
        ("ws://127.0.0.1:8000/ws", "ws://127.0.0.1:8000/ws"),
        ("wss://h.example/prefix/ws/", "wss://h.example/prefix/ws"),
        ("http://h/ws", "ws://h/ws/ws"),  # an http:// base URL is a base: /ws may be its prefix
    ],
)
def test_url_normalisation(base_url: str, expected: str) -> None:
    assert websocket_address(base_url).url == expected
    assert EnvClient(base_url).url == expected


@pytest.mark.parametrize(
    ("base_url", "complaint"),
    [
        ("", "non-empty"),
        ("ftp://h:21", "scheme"),
        ("http://", "no host"),
        ("http://h:notaport", "invalid base_url"),
        ("http://h:99999", "invalid base_url"),
        ("http://user:pw@h", "credentials"),
        ("http://h/?q=1", "query"),
        ("http://h/#frag", "fragment"),
        ("http://h:0", "port 0"),
    ],
)
def test_unusable_url_fails_at_construction(base_url: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        EnvClient(base_url)


def test_host_header() -> None:
    assert websocket_address("http://h:80").host_header == "h"
    assert websocket_address("https://h:443").host_header == "h"
    assert websocket_address("https://h:444").host_header == "h:444"
    assert websocket_address("http://[::1]:8000").host_header == "[::1]:8000"


@pytest.mark.parametrize(
    "options",
    [
        {"connect_timeout_s": 0},
        {"connect_timeout_s": -1.0},
        {"message_timeout_s": 0},
        {"max_message_size_mb": 0},
        {"ping_interval_s": -5},
        {"connect_timeout_s": True},
    ],
)
def test_bad_limits_fail_at_construction(options: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(options))):
        EnvClient("http://h:1", **options)


def test_defaults_follow_the_openenv_client() -> None:
    env = EnvClient("http://h:1")
    assert env.connect_timeout_s == 10.0 and env.message_timeout_s == 60.0
    assert env.max_message_size == 100 * 1024 * 1024


def test_a_websocket_url_of_the_agent_channel_keeps_its_other_channels() -> None:
    assert websocket_address("ws://127.0.0.1:8000/ws", "/ws/ui").url == "ws://127.0.0.1:8000/ws/ui"
