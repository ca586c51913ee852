"""The access policy as a function (PROTOCOL.md section 12): origins, tokens, content types."""

from __future__ import annotations

import pytest

from openenv_anyio.server.access.policy import (
    AccessPolicy,
    AccessRequest,
    Granted,
    Refused,
    Role,
    decide,
    normalize_origin,
)

OPEN = AccessPolicy.build()
LOCKED = AccessPolicy.build(operator_tokens=["op-secret-1"], agent_tokens=["agent-secret-1", "agent-secret-2"])
HOST = (b"host", b"127.0.0.1:8000")


def request(
    method: str = "GET", path: str = "/ws", *headers: tuple[bytes, bytes], websocket: bool = False
) -> AccessRequest:
    return AccessRequest(method, path, [HOST, *headers], websocket)


@pytest.mark.parametrize(
    "origin",
    [b"https://evil.example", b"http://127.0.0.1:9000", b"null", b"http://localhost:8000.evil.example", b"file://"],
)
def test_a_foreign_browser_origin_is_refused(origin: bytes) -> None:
    """SEC-ORIGIN-1: another port of the same host is another origin."""
    decision = decide(request("GET", "/ws", (b"origin", origin), websocket=True), OPEN)
    assert isinstance(decision, Refused) and decision.status == 403


@pytest.mark.parametrize("origin", [b"http://127.0.0.1:8000", b"HTTP://127.0.0.1:8000"])
def test_the_servers_own_loopback_origin_is_served(origin: bytes) -> None:
    assert decide(request("GET", "/ws/ui", (b"origin", origin), websocket=True), OPEN) == Granted(Role.OPERATOR)


def test_localhost_and_ipv6_loopback_are_same_origin() -> None:
    assert isinstance(
        decide(
            AccessRequest("GET", "/ws", [(b"host", b"localhost:8000"), (b"origin", b"http://localhost:8000")]), OPEN
        ),
        Granted,
    )
    assert isinstance(
        decide(AccessRequest("GET", "/ws", [(b"host", b"[::1]:8000"), (b"origin", b"http://[::1]:8000")]), OPEN),
        Granted,
    )


def test_dns_rebinding_a_name_onto_the_server_is_refused() -> None:
    """A foreign name pointed at 127.0.0.1 looks same-origin (Origin and Host agree); only
    IP literals and localhost count as the server's own origin."""
    rebound = AccessRequest(
        "POST", "/reset", [(b"host", b"attacker.example:8000"), (b"origin", b"http://attacker.example:8000")]
    )
    assert isinstance(decide(rebound, OPEN), Refused)
    same_origin_get = AccessRequest(
        "GET", "/state", [(b"host", b"attacker.example:8000"), (b"sec-fetch-site", b"same-origin")]
    )
    assert isinstance(decide(same_origin_get, OPEN), Refused)


def test_allowed_origins_are_served() -> None:
    policy = AccessPolicy.build(allowed_origins=["https://Dash.Example:443"])
    assert normalize_origin("https://Dash.Example:443") == "https://dash.example"
    decision = decide(request("GET", "/ws/ui", (b"origin", b"https://dash.example"), websocket=True), policy)
    assert decision == Granted(Role.OPERATOR)
    assert isinstance(decide(request("GET", "/ws/ui", (b"origin", b"https://dash.example:8443")), policy), Refused)


def test_clients_without_origin_are_served() -> None:
    """Agents and SDKs send no Origin; a user typing a URL sends Sec-Fetch-Site: none."""
    assert decide(request("GET", "/ws", websocket=True), OPEN) == Granted(Role.OPERATOR)
    assert decide(request("GET", "/schema", (b"sec-fetch-site", b"none")), OPEN) == Granted(Role.OPERATOR)


def test_cross_site_browser_requests_without_origin_are_refused() -> None:
    """An <img> or no-cors GET carries Sec-Fetch-Site: cross-site and no Origin."""
    assert isinstance(decide(request("GET", "/state", (b"sec-fetch-site", b"cross-site")), OPEN), Refused)


@pytest.mark.parametrize("origin", ["null", "http://", "https://x.example/path", "ftp://x.example", "x.example"])
def test_malformed_allowed_origins_are_refused_at_configuration(origin: str) -> None:
    with pytest.raises(ValueError, match="origin"):
        AccessPolicy.build(allowed_origins=[origin])


def test_tokens_decide_the_role() -> None:
    """SEC-TOKEN-1."""
    assert decide(request("GET", "/ws", (b"authorization", b"Bearer op-secret-1")), LOCKED) == Granted(Role.OPERATOR)
    assert decide(request("GET", "/ws", (b"Authorization", b"bearer agent-secret-2")), LOCKED) == Granted(Role.AGENT)


@pytest.mark.parametrize(
    "headers",
    [
        (),
        ((b"authorization", b"Bearer op-secret-2"),),
        ((b"authorization", b"Bearer op-secret-"),),
        ((b"authorization", b"Basic op-secret-1"),),
        ((b"authorization", b"op-secret-1"),),
        ((b"authorization", b"Bearer "),),
    ],
)
def test_missing_or_wrong_tokens_are_401_with_a_challenge(headers: tuple[tuple[bytes, bytes], ...]) -> None:
    decision = decide(request("GET", "/ws", *headers, websocket=True), LOCKED)
    assert isinstance(decision, Refused) and decision.status == 401
    assert dict(decision.headers)[b"www-authenticate"].startswith(b'Bearer realm="openenv"')
    assert b"op-secret" not in repr(decision).encode()


def test_health_is_public_and_metrics_needs_an_operator() -> None:
    assert isinstance(decide(request("GET", "/health"), LOCKED), Granted)
    agent = decide(request("GET", "/metrics", (b"authorization", b"Bearer agent-secret-1")), LOCKED)
    assert isinstance(agent, Refused) and agent.status == 403
    assert decide(request("GET", "/metrics", (b"authorization", b"Bearer op-secret-1")), LOCKED) == Granted(
        Role.OPERATOR
    )


def test_the_origin_rule_holds_with_a_valid_token() -> None:
    """A token does not make a foreign page welcome (it may be a cookie-less replay)."""
    decision = decide(
        request("GET", "/ws", (b"authorization", b"Bearer op-secret-1"), (b"origin", b"https://evil.example")), LOCKED
    )
    assert isinstance(decision, Refused) and decision.status == 403


@pytest.mark.parametrize(
    "content_type",
    [
        b"text/plain",
        b"text/plain;charset=UTF-8",
        b"application/x-www-form-urlencoded",
        b"multipart/form-data; boundary=x",
        b"application/jsonp",
    ],
)
def test_state_changing_http_bodies_must_be_json(content_type: bytes) -> None:
    """SEC-CT-1: the body types a browser sends cross-site without a preflight."""
    decision = decide(request("POST", "/step", (b"content-type", content_type), (b"content-length", b"12")), OPEN)
    assert isinstance(decision, Refused) and decision.status == 415


def test_json_bodies_and_empty_bodies_pass() -> None:
    assert isinstance(
        decide(request("POST", "/step", (b"content-type", b"application/json; charset=utf-8")), OPEN), Granted
    )
    assert isinstance(decide(request("POST", "/reset", (b"content-length", b"0")), OPEN), Granted)
    assert isinstance(decide(request("POST", "/reset"), OPEN), Granted)
    refused = decide(request("POST", "/reset", (b"content-length", b"5")), OPEN)
    assert isinstance(refused, Refused) and refused.status == 415


def test_tokens_are_checked_before_the_content_type() -> None:
    """An unauthenticated caller learns nothing about what a route accepts."""
    decision = decide(request("POST", "/step", (b"content-type", b"text/plain")), LOCKED)
    assert isinstance(decision, Refused) and decision.status == 401


def test_the_policy_never_shows_a_token() -> None:
    shown = repr(LOCKED)
    assert "secret" not in shown and "operator_tokens=1" in shown and "agent_tokens=2" in shown


@pytest.mark.parametrize("token", ["", " padded", "with space", "tab\there", "ünïcode"])
def test_unusable_tokens_are_refused_at_configuration(token: str) -> None:
    with pytest.raises(ValueError, match="token"):
        AccessPolicy.build(operator_tokens=[token])


def test_a_browser_carries_its_token_in_a_subprotocol_offer() -> None:
    """Browsers cannot set Authorization on a WebSocket (SEC-TOKEN-1)."""
    import base64

    encoded = base64.urlsafe_b64encode(b"agent-secret-1").rstrip(b"=")
    offer = (b"sec-websocket-protocol", b"openenv-anyio.v1, openenv-anyio.bearer." + encoded)
    assert decide(request("GET", "/ws/ui", offer, websocket=True), LOCKED) == Granted(Role.AGENT)
    assert isinstance(decide(request("POST", "/reset", offer), LOCKED), Refused)  # WebSocket handshakes only
    garbled = (b"sec-websocket-protocol", b"openenv-anyio.bearer.!!!")
    assert isinstance(decide(request("GET", "/ws/ui", garbled, websocket=True), LOCKED), Refused)


def test_a_link_followed_from_another_site_opens_a_page_but_frames_and_fetches_do_not() -> None:
    """A top-level GET navigation renders in the server's own origin; an iframe or a
    no-cors fetch from the foreign page does not get through."""
    navigate = [(b"sec-fetch-site", b"cross-site"), (b"sec-fetch-mode", b"navigate")]
    assert isinstance(decide(request("GET", "/web", *navigate, (b"sec-fetch-dest", b"document")), OPEN), Granted)
    assert isinstance(decide(request("GET", "/web", *navigate, (b"sec-fetch-dest", b"iframe")), OPEN), Refused)
    no_cors = [(b"sec-fetch-site", b"cross-site"), (b"sec-fetch-mode", b"no-cors"), (b"sec-fetch-dest", b"image")]
    assert isinstance(decide(request("GET", "/state", *no_cors), OPEN), Refused)
    assert isinstance(decide(request("POST", "/reset", *navigate, (b"sec-fetch-dest", b"document")), OPEN), Refused)
