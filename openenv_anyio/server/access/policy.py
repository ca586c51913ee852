"""Who may use which route: the server's access policy as one sans-IO decision.

:func:`decide` takes a request's method, path, headers and whether it is a WebSocket
handshake, plus the server's :class:`AccessPolicy`, and answers :class:`Granted` (with the
:class:`Role` the presented credential carries) or :class:`Refused` (an HTTP status, the
response headers and a one-line reason). It imports no I/O library and keeps no state, so
it is tested as a function and applied the same way on every path (PROTOCOL.md section 12):

1. **Origin** (``SEC-ORIGIN-1``). A request from a browser (it carries ``Origin``, or
   ``Sec-Fetch-Site`` without one) is served only when its origin is in
   ``allowed_origins``, or when it is same-origin (its host and port are the request's
   ``Host``) and that host is an IP literal or ``localhost`` (a page this server served on
   an address no DNS rebinding can forge). Anything else is 403, except a link followed to
   a page (a top-level ``GET`` navigation, which loads in this server's origin). Requests
   without either header (agents, SDKs, ``curl``) pass this rule.
2. **Bearer token** (``SEC-TOKEN-1``). When tokens are configured, every route but the
   probes (``/health``, ``/ready``) and ``/access`` needs ``Authorization: Bearer TOKEN`` (a browser, which
   cannot set headers on a WebSocket, offers the subprotocol ``openenv-anyio.bearer.`` + the
   token in unpadded base64url instead, beside one the server selects; the dashboard page's
   static files are public too, for the page holds nothing and asks for a token); a missing or wrong
   token is 401 with ``WWW-Authenticate: Bearer``. Tokens are compared in constant time (their SHA-256
   digests, every configured token each time). An operator token grants everything; an
   agent token grants sessions and HTTP but not :data:`OPERATOR_ROUTES` (403). With no
   token configured every admitted request acts as the operator.
3. **Content type** (``SEC-CT-1``). A state-changing HTTP request (``POST``, ``PUT``,
   ``PATCH``, ``DELETE``) with a body must declare ``Content-Type: application/json``
   (415 otherwise): browsers send ``text/plain`` and form bodies cross-site without a
   preflight, never JSON.

How a route applies it: the server's router calls :func:`decide` once for every HTTP
request and every WebSocket handshake before anything else runs, on the path it then routes
by (:func:`route_path`: ``//metrics``, ``http://host/metrics`` and ``/web/../metrics`` are
all ``/metrics``, to the decision and to the router alike) (``EnvServer``'s router,
and the direct ``/ws`` path through the same router method), so a new route, mounted
behind the router, is guarded without doing anything. What a route may choose is its
requirement: add its path to :data:`PUBLIC_ROUTES` (no token, e.g. a liveness probe) or
:data:`OPERATOR_ROUTES` (operator token only, e.g. ``/metrics``); every other path needs
an agent or operator token when tokens are configured. The role in :class:`Granted` tells
a handler what the caller may see (``/ws/ui`` payloads, section 8 and ``SEC-UI-1``).
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from ...web import WEB_PATHS

__all__ = [
    "BEARER_SUBPROTOCOL_PREFIX",
    "AccessPolicy",
    "AccessRequest",
    "Decision",
    "Granted",
    "OPERATOR_ROUTES",
    "PUBLIC_ROUTES",
    "Refused",
    "Role",
    "ACCESS_ROUTE",
    "decide",
    "presented_role",
    "normalize_origin",
    "route_path",
]

#: ``GET /access`` (``SEC-TOKEN-2``): whether tokens are required and what the presented one
#: grants, answered without refusing (a browser logs every refused request as an error).
ACCESS_ROUTE: Final = "/access"
#: Paths served without a token: the liveness and readiness probes, which load balancers and
#: orchestrators call without credentials and which say only "up" and "taking sessions",
#: ``/access``, which tells only what the request's own token grants (a guarded route tells as
#: much by refusing it), and the dashboard page's static files (everything the page reads is
#: guarded: it asks for a token).
PUBLIC_ROUTES: Final = frozenset({"/health", "/ready", ACCESS_ROUTE, *WEB_PATHS})
#: Paths only an operator token opens (server-wide figures, every session at once).
OPERATOR_ROUTES: Final = frozenset({"/metrics"})

_ABSOLUTE_FORM: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")
_SLASHES: Final = re.compile(r"/{2,}")
_STATE_CHANGING: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORTS: Final = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_BROWSER_SITES: Final = frozenset({b"same-origin", b"same-site", b"cross-site"})
_MAX_TOKEN_BYTES: Final = 4096
#: A WebSocket subprotocol offer that carries a bearer token (browsers cannot set headers):
#: this prefix, then the token in base64url without padding. Never selected by a server.
BEARER_SUBPROTOCOL_PREFIX: Final = "openenv-anyio.bearer."


class Role(enum.Enum):
    """What a credential grants."""

    OPERATOR = "operator"  # every route; every session's payloads on /ws/ui
    AGENT = "agent"  # sessions and HTTP; on /ws/ui the session list, payloads of its own sessions


@dataclass(frozen=True, slots=True)
class Granted:
    role: Role


@dataclass(frozen=True, slots=True)
class Refused:
    """The request is answered with ``status`` and ``headers`` and goes no further."""

    status: int
    reason: str
    headers: tuple[tuple[bytes, bytes], ...] = ()


Decision = Granted | Refused


@dataclass(frozen=True, slots=True)
class AccessRequest:
    """What :func:`decide` reads of a request (header names in any case, as bytes); ``path``
    is the router's (:func:`route_path`)."""

    method: str
    path: str
    headers: Sequence[tuple[bytes, bytes]]
    websocket: bool = False


def route_path(path: str) -> str:
    """The path a request's target names, as the router resolves it: an absolute-form target
    (``http://host/metrics``) reduced to its path, runs of slashes merged, ``.`` and ``..``
    segments removed (RFC 3986, section 5.2.4). Percent-decoding is the ASGI server's, done
    once before this; the result always starts with ``/``."""
    if path.startswith("/") and "//" not in path and "/." not in path:
        return path  # already plain (the usual request)
    absolute = _ABSOLUTE_FORM.match(path)
    if absolute is not None:
        path = path[absolute.end() :].split("?", 1)[0].split("#", 1)[0]
    segments: list[str] = []
    parts = _SLASHES.sub("/", "/" + path).split("/")[1:]
    for index, segment in enumerate(parts):
        last = index == len(parts) - 1
        if segment == "..":
            if segments:
                segments.pop()
            if last:
                segments.append("")
        elif segment == ".":
            if last:
                segments.append("")
        else:
            segments.append(segment)
    return "/" + "/".join(segments)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def normalize_origin(origin: str) -> str:
    """``scheme://host[:port]`` in lower case, the default port left out.

    Raises ``ValueError`` for anything that is not an origin (a path, no host, ``null``).
    """
    parts = urlsplit(origin.strip())
    scheme = parts.scheme.lower()
    if (
        scheme not in _DEFAULT_PORTS
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        raise ValueError(f"not an origin (scheme://host[:port]): {origin!r}")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"not an origin (bad port): {origin!r}") from None
    host = parts.hostname.lower()
    shown = f"[{host}]" if ":" in host else host
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{shown}"
    return f"{scheme}://{shown}:{port}"


@dataclass(frozen=True, slots=True, repr=False)
class AccessPolicy:
    """The server's configured origins and tokens (only digests of the tokens are kept).

    Build it with :meth:`build`; ``repr`` shows how many tokens there are, never a token.
    """

    allowed_origins: frozenset[str] = frozenset()
    operator_digests: tuple[bytes, ...] = ()
    agent_digests: tuple[bytes, ...] = ()

    @classmethod
    def build(
        cls,
        *,
        allowed_origins: Iterable[str] = (),
        operator_tokens: Iterable[str] = (),
        agent_tokens: Iterable[str] = (),
    ) -> AccessPolicy:
        """Raises ``ValueError`` for a malformed origin or an empty token."""
        origins = frozenset(normalize_origin(origin) for origin in allowed_origins)
        operators, agents = tuple(operator_tokens), tuple(agent_tokens)
        for token in (*operators, *agents):
            if not token or token != token.strip() or any(ord(c) < 0x21 or ord(c) > 0x7E for c in token):
                raise ValueError("a token must be non-empty printable ASCII without spaces")
        return cls(origins, tuple(map(_digest, operators)), tuple(map(_digest, agents)))

    @property
    def tokens_required(self) -> bool:
        return bool(self.operator_digests or self.agent_digests)

    def role_of(self, token: str | None) -> Role | None:
        """The role ``token`` carries, or None. Constant time in the token's content: every
        configured digest is compared, whatever matched before."""
        if token is None:
            return None
        presented = _digest(token)
        operator = agent = False
        for digest in self.operator_digests:
            operator |= hmac.compare_digest(digest, presented)
        for digest in self.agent_digests:
            agent |= hmac.compare_digest(digest, presented)
        return Role.OPERATOR if operator else Role.AGENT if agent else None

    def __repr__(self) -> str:
        return (
            f"AccessPolicy(allowed_origins={sorted(self.allowed_origins)!r}, "
            f"operator_tokens={len(self.operator_digests)}, agent_tokens={len(self.agent_digests)})"
        )


def _header(headers: Sequence[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def bearer_token(headers: Sequence[tuple[bytes, bytes]], *, websocket: bool = False) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header, else (on a WebSocket
    handshake) of a :data:`BEARER_SUBPROTOCOL_PREFIX` subprotocol offer, else None."""
    value = _header(headers, b"authorization")
    if value is None:
        return _subprotocol_token(headers) if websocket else None
    if len(value) > _MAX_TOKEN_BYTES:
        return None
    scheme, _, token = value.strip().partition(b" ")
    if scheme.lower() != b"bearer" or not token.strip():
        return None
    return token.strip().decode("latin-1")


def _subprotocol_token(headers: Sequence[tuple[bytes, bytes]]) -> str | None:
    prefix = BEARER_SUBPROTOCOL_PREFIX.encode("ascii")
    for key, value in headers:
        if key.lower() != b"sec-websocket-protocol" or len(value) > _MAX_TOKEN_BYTES:
            continue
        for offer in value.split(b","):
            offer = offer.strip()
            if offer.startswith(prefix):
                encoded = offer[len(prefix) :]
                try:
                    return base64.urlsafe_b64decode(encoded + b"=" * (-len(encoded) % 4)).decode("ascii")
                except (ValueError, UnicodeDecodeError):
                    return None
    return None


def _trusted_host(host: str) -> bool:
    """An IP literal or ``localhost``: no DNS answer can point a foreign page's name at it."""
    if host == "localhost":
        return True
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _same_origin(origin: str, host_header: bytes | None) -> bool:
    if host_header is None:
        return False
    scheme, _, authority = origin.partition("://")
    try:
        parts = urlsplit(f"{scheme}://{host_header.decode('ascii').strip()}")
        host, port = parts.hostname, parts.port
    except (UnicodeDecodeError, ValueError):
        return False
    if host is None:
        return False
    shown = f"[{host}]" if ":" in host else host
    expected = shown if port is None or port == _DEFAULT_PORTS[scheme] else f"{shown}:{port}"
    return authority == expected and _trusted_host(host)


def _origin_refusal(request: AccessRequest, policy: AccessPolicy) -> Refused | None:
    """``SEC-ORIGIN-1``: None when the request is not a foreign browser's."""
    headers = request.headers
    host = _header(headers, b"host")
    raw = _header(headers, b"origin")
    if raw is not None:
        candidates = [raw.decode("latin-1")]
    else:
        site = _header(headers, b"sec-fetch-site")
        if site is None or site.strip().lower() not in _BROWSER_SITES:
            return None  # not a browser, or a navigation the user started
        if site.strip().lower() != b"same-origin":
            if _top_level_navigation(request):
                return None  # a link followed to a page of ours: shown in our own origin
            return Refused(403, "cross-site browser requests are not served")
        # A same-origin request without Origin (a GET): the page's origin is this Host,
        # under a scheme the request does not tell.
        shown = host.decode("latin-1") if host is not None else ""
        candidates = [f"http://{shown}", f"https://{shown}"]
    for text in candidates:
        try:
            origin = normalize_origin(text)
        except ValueError:
            continue
        if origin in policy.allowed_origins or _same_origin(origin, host):
            return None
    return Refused(403, "this origin may not use the server (see --allow-origin)")


def _top_level_navigation(request: AccessRequest) -> bool:
    """A ``GET`` that opens a page in a window of its own (a followed link): the page loads
    in this server's origin, where the foreign site cannot read or frame it."""
    headers = request.headers
    return (
        request.method.upper() in ("GET", "HEAD")
        and not request.websocket
        and (_header(headers, b"sec-fetch-mode") or b"").strip().lower() == b"navigate"
        and (_header(headers, b"sec-fetch-dest") or b"").strip().lower() == b"document"
    )


def _challenge(error: str | None = None) -> tuple[tuple[bytes, bytes], ...]:
    value = 'Bearer realm="openenv"' + (f', error="{error}"' if error else "")
    return ((b"www-authenticate", value.encode("ascii")),)


def _content_type_refusal(request: AccessRequest) -> Refused | None:
    """``SEC-CT-1``: state-changing HTTP bodies are JSON."""
    if request.websocket or request.method.upper() not in _STATE_CHANGING:
        return None
    headers = request.headers
    declared = _header(headers, b"content-type")
    if declared is None:
        length = _header(headers, b"content-length")
        has_body = _header(headers, b"transfer-encoding") is not None or (
            length is not None and length.strip() not in (b"", b"0")
        )
        return Refused(415, "a request body must be sent as application/json") if has_body else None
    media_type = declared.split(b";", 1)[0].strip().lower()
    if media_type != b"application/json":
        return Refused(415, "a request body must be sent as application/json")
    return None


def presented_role(headers: Sequence[tuple[bytes, bytes]], policy: AccessPolicy) -> Role | None:
    """The role the request's bearer token carries (``SEC-TOKEN-2``): None for a missing or
    wrong token where tokens are required; the operator's where none are configured."""
    if not policy.tokens_required:
        return Role.OPERATOR
    return policy.role_of(bearer_token(headers))


def decide(request: AccessRequest, policy: AccessPolicy) -> Decision:
    """Whether ``request`` may go on, and with which role (the rules of the module doc)."""
    refusal = _origin_refusal(request, policy)
    if refusal is not None:
        return refusal
    path = route_path(request.path)
    if not policy.tokens_required:
        role = Role.OPERATOR
    elif path in PUBLIC_ROUTES:
        role = Role.AGENT
    else:
        presented = bearer_token(request.headers, websocket=request.websocket)
        found = policy.role_of(presented)
        if found is None:
            if presented is None:
                return Refused(401, "a bearer token is required (Authorization: Bearer TOKEN)", _challenge())
            return Refused(401, "the bearer token is not valid", _challenge("invalid_token"))
        role = found
    if (path in OPERATOR_ROUTES or path.rstrip("/") in OPERATOR_ROUTES) and role is not Role.OPERATOR:
        return Refused(403, "this route needs an operator token", _challenge("insufficient_scope"))
    refusal = _content_type_refusal(request)
    return refusal if refusal is not None else Granted(role)
