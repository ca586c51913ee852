"""Base URL -> WebSocket address (PROTOCOL.md section 1); bad URLs fail at construction."""

from __future__ import annotations

import pytest

from openenv_anyio.client import EnvClient, HandshakeRejected, http_base_url, websocket_address


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
        # whatever the scheme: one rule for every entry point (client, demo, check, TRL factory)
        ("http://h:8000/ws", "ws://h:8000/ws"),
        ("https://h/prefix/ws/", "wss://h/prefix/ws"),
        ("h:8000/ws", "ws://h:8000/ws"),
        ("http://h/ws/ws", "ws://h/ws/ws"),  # a server mounted under a prefix ending in /ws: name its channel
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


@pytest.mark.anyio
@pytest.mark.parametrize("suffix", ["/ws", "/ws/"])
async def test_the_agent_channel_s_http_url_reaches_the_server(server_url: str, suffix: str) -> None:
    """``EnvClient("http://HOST:PORT/ws")`` dials ``/ws``, not ``/ws/ws`` (a 404)."""
    async with EnvClient(server_url + suffix) as env:
        assert env.url == "ws" + server_url.removeprefix("http") + "/ws"
        result = await env.reset()
        assert result.done is False


@pytest.mark.anyio
async def test_no_agent_channel_is_one_line_without_the_page(server_url: str) -> None:
    """A URL whose server has no agent channel there: one line naming the status, never the
    server's HTML (or JSON) 404 page dumped into the message."""
    with pytest.raises(HandshakeRejected) as caught:
        async with EnvClient(server_url + "/elsewhere"):
            pass
    message = str(caught.value)
    assert "\n" not in message and "<" not in message, message
    if caught.value.status == 404:  # ours; uvicorn refuses an unknown WebSocket route with 403
        assert message.endswith("(no OpenEnv agent channel there: is the URL the server's base URL?)"), message
    else:
        assert caught.value.status == 403


@pytest.mark.parametrize(
    "url",
    ["http://h:8000", "http://h:8000/ws", "ws://h:8000/ws/", "h:8000", "h:8000/ws", "https://h/p/ws"],
)
def test_every_entry_point_reads_a_url_by_one_rule(url: str) -> None:
    """The client, ``check``, ``demo`` and the TRL factory agree on the server a URL names."""
    from openenv_anyio.conformance.cli import _with_scheme
    from openenv_anyio.conformance.driver import Target
    from openenv_anyio.demo.cli import _server_base
    from openenv_anyio.integrations.trl import _http_base

    base = http_base_url(url)
    assert base == ("https://h/p" if url.startswith("https") else "http://h:8000")
    assert websocket_address(url).url == "ws" + base.removeprefix("http") + "/ws"
    assert _server_base(url) == _http_base(url) == base
    assert Target.from_url(_with_scheme(url)).http_base == base  # check reads HOST:PORT as the client does
