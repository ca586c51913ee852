"""TLS for wss://, HTTP proxies (never for loopback), and no os.environ changes (both backends)."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
import ssl
from pathlib import Path

import anyio
import pytest

from openenv_anyio.client import ConnectError, EnvClient, ProxyRejected, websocket_address
from openenv_anyio.client.proxy import proxy_from_environment

from .connect_proxy import connect_proxy
from .raw_server import echo_answers, raw_server

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def tls_contexts(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1: (server context, client context trusting it)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    directory: Path = tmp_path_factory.mktemp("tls")
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_file, key_file)
    client = ssl.create_default_context(cafile=str(cert_file))
    return server, client


async def test_wss_uses_tls(tls_contexts: tuple[ssl.SSLContext, ssl.SSLContext]) -> None:
    server_context, client_context = tls_contexts
    async with raw_server(echo_answers, ssl_context=server_context) as url:
        assert url.startswith("https://")
        async with EnvClient(url, ssl_context=client_context) as env:
            assert env.url.startswith("wss://")
            with anyio.fail_after(10):
                assert (await env.step({"message": "secret"})).observation == {"echoed": "secret"}


async def test_wss_checks_the_certificate(tls_contexts: tuple[ssl.SSLContext, ssl.SSLContext]) -> None:
    server_context, _ = tls_contexts
    async with raw_server(echo_answers, ssl_context=server_context) as url:
        with anyio.fail_after(10), pytest.raises(ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            async with EnvClient(url):
                pass


async def test_loopback_ignores_proxy_settings_and_leaves_os_environ_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client connects directly (a proxy at a dead port would fail it) and never
    writes to os.environ (openenv-core's client rewrites NO_PROXY while connecting)."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    before = dict(os.environ)
    async with raw_server(echo_answers) as url:
        async with EnvClient(url) as env:
            assert dict(os.environ) == before
            with anyio.fail_after(10):
                assert (await env.step({"message": "direct"})).observation == {"echoed": "direct"}
            assert dict(os.environ) == before
    assert dict(os.environ) == before


def _remote(url: str, name: str = "env.test") -> str:
    """The same server under a name only the test proxy resolves (not loopback)."""
    return url.replace("127.0.0.1", name)


async def test_http_proxy_from_the_environment_tunnels_to_a_remote_server(monkeypatch: pytest.MonkeyPatch) -> None:
    async with raw_server(echo_answers) as url, connect_proxy(hosts={"env.test": "127.0.0.1"}) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.delenv("http_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        before = dict(os.environ)
        async with EnvClient(_remote(url)) as env:
            with anyio.fail_after(10):
                assert (await env.step({"message": "via proxy"})).observation == {"echoed": "via proxy"}
        assert dict(os.environ) == before
    port = url.rsplit(":", 1)[1]
    assert [(method, target) for method, target, _ in proxy.requests] == [("CONNECT", f"env.test:{port}")]


async def test_explicit_proxy_with_credentials_and_tls_through_the_tunnel(
    tls_contexts: tuple[ssl.SSLContext, ssl.SSLContext],
) -> None:
    server_context, client_context = tls_contexts
    async with raw_server(echo_answers, ssl_context=server_context) as url, connect_proxy() as proxy:
        proxy_url = proxy.url.replace("http://", "http://agent:s%40cret@")
        async with EnvClient(url, proxy=proxy_url, ssl_context=client_context) as env:
            with anyio.fail_after(10):
                assert (await env.step({"message": "tunnelled"})).observation == {"echoed": "tunnelled"}
    ((_, _, headers),) = proxy.requests
    assert headers["proxy-authorization"] == "Basic " + base64.b64encode(b"agent:s@cret").decode()


async def test_a_proxy_that_refuses_the_tunnel() -> None:
    async with connect_proxy(status=407) as proxy:
        with anyio.fail_after(10), pytest.raises(ProxyRejected) as caught:
            async with EnvClient("http://env.test:8000", proxy=proxy.url):
                pass
    assert caught.value.status == 407 and isinstance(caught.value, ConnectError)
    assert proxy.url in str(caught.value)


@pytest.mark.parametrize(
    ("url", "environ", "expected"),
    [
        ("http://env.example:1", {"HTTP_PROXY": "http://p:3128"}, "http://p:3128"),
        ("https://env.example", {"HTTP_PROXY": "http://p:3128"}, None),
        ("https://env.example", {"HTTPS_PROXY": "p2:8080"}, "http://p2:8080"),
        ("http://env.example:1", {"ALL_PROXY": "http://all:1"}, "http://all:1"),
        ("http://env.example:1", {"http_proxy": "http://lower:1", "HTTP_PROXY": "http://upper:1"}, "http://lower:1"),
        ("http://127.0.0.1:1", {"HTTP_PROXY": "http://p:3128"}, None),
        ("http://localhost:1", {"HTTP_PROXY": "http://p:3128"}, None),
        ("http://[::1]:1", {"HTTP_PROXY": "http://p:3128"}, None),
        ("http://env.example:1", {"HTTP_PROXY": "http://p:3128", "NO_PROXY": "other.org, .example"}, None),
        ("http://a.env.example:1", {"HTTP_PROXY": "http://p:3128", "no_proxy": "env.example:443"}, None),
        ("http://env.example:1", {"HTTP_PROXY": "http://p:3128", "NO_PROXY": "*"}, None),
        ("http://notenv.example:1", {"HTTP_PROXY": "http://p:3128", "NO_PROXY": "env.example"}, "http://p:3128"),
    ],
)
def test_which_proxy_the_environment_names(url: str, environ: dict[str, str], expected: str | None) -> None:
    proxy = proxy_from_environment(websocket_address(url), environ)
    assert (proxy.url if proxy else None) == expected


@pytest.mark.parametrize("url", ["https://p:1", "socks5://p:1", "http://", "http://p:nope"])
def test_unusable_proxy_urls_fail_at_construction(url: str) -> None:
    with pytest.raises(ValueError, match="proxy URL"):
        EnvClient("http://env.example:1", proxy=url)
    with pytest.raises(ValueError, match="proxy URL"):
        proxy_from_environment(websocket_address("http://env.example:1"), {"HTTP_PROXY": url})
