"""A real SMTP server (aiosmtpd) on 127.0.0.1 for the email channel's tests, with optional AUTH and TLS."""

from __future__ import annotations

import datetime as dt
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from pathlib import Path
from typing import Any

from .receivers import free_port

aiosmtpd_controller = __import__("pytest").importorskip("aiosmtpd.controller")
from aiosmtpd.smtp import AuthResult, LoginPassword  # noqa: E402


@dataclass
class Mailbox:
    port: int
    messages: list[Message] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)
    tls_used: list[bool] = field(default_factory=list)


class _Handler:
    def __init__(self, box: Mailbox) -> None:
        self.box = box

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.box.messages.append(message_from_bytes(envelope.content))
        self.box.tls_used.append(session.ssl is not None)
        return "250 Message accepted"


@contextmanager
def smtp_server(
    credentials: tuple[str, str] | None = None, tls: ssl.SSLContext | None = None
) -> Iterator[Mailbox]:
    """SMTP on an ephemeral port; with `tls`, it offers STARTTLS; with `credentials`, AUTH is required."""
    box = Mailbox(port=free_port())

    def authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        if isinstance(data, LoginPassword):
            pair = (data.login.decode(), data.password.decode())
            box.logins.append(pair)
            return AuthResult(success=pair == credentials, handled=False)
        return AuthResult(success=False, handled=False)

    options: dict[str, Any] = {}
    if credentials is not None:
        assert tls is not None, "AUTH without TLS sends the password in the clear"
        options.update(authenticator=authenticate, auth_required=True)
    if tls is not None:
        options.update(tls_context=tls, require_starttls=True)
    controller = aiosmtpd_controller.Controller(_Handler(box), hostname="127.0.0.1", port=box.port, **options)
    controller.start()
    try:
        yield box
    finally:
        controller.stop()


def self_signed(folder: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context for 127.0.0.1 with a fresh self-signed cert, and a client context trusting it."""
    crypto = __import__("pytest").importorskip("cryptography")
    del crypto
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_file, key_file)
    client = ssl.create_default_context(cafile=str(cert_file))
    return server, client
