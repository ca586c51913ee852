"""TLS for wss://, and no proxy and no os.environ changes (both backends)."""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from pathlib import Path

import anyio
import pytest

from openenv_anyio.client import ConnectError, EnvClient

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
    now = datetime.datetime.now(datetime.timezone.utc)
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
