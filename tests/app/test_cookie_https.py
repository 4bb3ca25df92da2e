"""The identity cookie over https: the app served with TLS (a self-signed certificate made
here) sets `mp_refresh_token` with `Secure` and `SameSite=Strict`, so the browser never
sends the refresh token over plain http. It is not HttpOnly: Streamlit gives a page no
way to set response headers, so a component writes it (see docs/SECURITY.md)."""

from __future__ import annotations

import datetime as dt
import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.app import start_streamlit, stop_streamlit
from tests.support.browser import COOKIE_NAME, wait_for_identity_cookie

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _self_signed_certificate(directory):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@pytest.fixture(scope="module")
def https_url(database_uri, tmp_path_factory):
    process, url = start_streamlit(tls=_self_signed_certificate(tmp_path_factory.mktemp("tls")))
    yield url
    stop_streamlit(process)


def test_the_identity_cookie_is_secure_over_https(https_url, browser):
    assert https_url.startswith("https://")
    context = browser.new_context(ignore_https_errors=True)
    try:
        page = context.new_page()
        page.goto(f"{https_url}/memories")
        wait_for_identity_cookie(page, timeout_ms=120_000)
        page.get_by_text("User id:").first.wait_for(timeout=90_000)
        (cookie,) = [c for c in context.cookies() if c["name"] == COOKIE_NAME]
        assert cookie["secure"] is True
        assert cookie["sameSite"] == "Strict"
        assert cookie["httpOnly"] is False  # the known limit documented in docs/SECURITY.md
        assert cookie["expires"] > dt.datetime.now().timestamp() + 29 * 86400
    finally:
        context.close()


def test_the_identity_cookie_is_not_secure_over_plain_http(streamlit_server, new_browser_page):
    """Local http (the default `make run`): a Secure cookie would be dropped there, so it is not set."""
    page = new_browser_page()
    page.goto(f"{streamlit_server}/memories")
    wait_for_identity_cookie(page, timeout_ms=120_000)
    (cookie,) = [c for c in page.context.cookies() if c["name"] == COOKIE_NAME]
    assert cookie["secure"] is False
    assert cookie["sameSite"] == "Strict"
