"""Test certificates for TLS listeners, generated with ``cryptography`` (no openssl CLI).

Use::

    from tests.weir.security.tls_certs import TlsCerts, make_tls_certs, tls_certs  # noqa: F401

``tls_certs`` is a session-scoped pytest fixture (import it into your test module or
conftest) returning a ``TlsCerts`` whose attributes are file paths:

- ``ca``: the trusted CA certificate (PEM): the broker's truststore, the clients' CA file;
- ``server_keystore``: key + chain (PEM) for ``127.0.0.1`` / ``localhost`` (SAN IP and DNS):
  ``ssl.keystore.location`` with ``ssl.keystore.type=PEM`` (the default);
  ``server_cert`` / ``server_key``: the same as separate files;
  ``server_p12``: the same as PKCS12, password ``TlsCerts.P12_PASSWORD``;
- ``writer`` / ``reader``: client certificates ``CN=writer,OU=eng,O=Acme`` and
  ``CN=reader,OU=eng,O=Acme`` signed by ``ca``, each a ``ClientCert`` with ``cert``, ``key``
  (unencrypted PEM), ``keystore`` (key + chain PEM) and ``principal``
  (``User:CN=writer,OU=eng,O=Acme``);
- ``untrusted``: a ``ClientCert`` ``CN=mallory`` signed by a CA the broker does not trust.

Broker configs for an SSL listener named SSL::

    --config listener.name.ssl.ssl.keystore.location=<server_keystore>
    --config listener.name.ssl.ssl.truststore.location=<ca>
    --config listener.name.ssl.ssl.client.auth=required
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["ClientCert", "TlsCerts", "make_tls_certs", "tls_certs"]


@dataclass(frozen=True)
class ClientCert:
    cert: str
    key: str
    keystore: str
    principal: str


@dataclass(frozen=True)
class TlsCerts:
    P12_PASSWORD = "p12-secret"

    directory: str
    ca: str
    server_cert: str
    server_key: str
    server_keystore: str
    server_p12: str
    writer: ClientCert
    reader: ClientCert
    untrusted: ClientCert


def _name(cn: str, ou: str | None = None, o: str | None = None) -> x509.Name:
    # Most general first in the certificate; RFC 2253 text reverses it (CN=...,OU=...,O=...).
    attributes = []
    if o:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o))
    if ou:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ou))
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    return x509.Name(attributes)


def _builder(subject: x509.Name, issuer: x509.Name, public_key: object) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)  # type: ignore[arg-type]
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
    )


def _ca(cn: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(cn, o="Acme")
    cert = (
        _builder(name, name, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _leaf(
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    subject: x509.Name,
    *,
    server: bool,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        _builder(subject, ca_cert.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    return key, builder.sign(ca_key, hashes.SHA256())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _write(directory: Path, name: str, data: bytes) -> str:
    path = directory / name
    path.write_bytes(data)
    path.chmod(0o600)
    return str(path)


def _client(
    directory: Path,
    name: str,
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    subject: x509.Name,
) -> ClientCert:
    key, cert = _leaf(ca_key, ca_cert, subject, server=False)
    return ClientCert(
        cert=_write(directory, f"{name}.crt", _pem_cert(cert)),
        key=_write(directory, f"{name}.key", _pem_key(key)),
        keystore=_write(directory, f"{name}.keystore.pem", _pem_key(key) + _pem_cert(cert)),
        principal="User:" + subject.rfc4514_string(),
    )


def make_tls_certs(directory: Path) -> TlsCerts:
    """Generate every certificate and key into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _ca("Weir Test CA")
    server_key, server_cert = _leaf(ca_key, ca_cert, _name("localhost", o="Acme"), server=True)
    server_p12 = pkcs12.serialize_key_and_certificates(
        b"server",
        server_key,
        server_cert,
        [ca_cert],
        serialization.BestAvailableEncryption(TlsCerts.P12_PASSWORD.encode()),
    )
    other_key, other_cert = _ca("Untrusted CA")
    return TlsCerts(
        directory=str(directory),
        ca=_write(directory, "ca.crt", _pem_cert(ca_cert)),
        server_cert=_write(directory, "server.crt", _pem_cert(server_cert)),
        server_key=_write(directory, "server.key", _pem_key(server_key)),
        server_keystore=_write(
            directory,
            "server.keystore.pem",
            _pem_key(server_key) + _pem_cert(server_cert) + _pem_cert(ca_cert),
        ),
        server_p12=_write(directory, "server.p12", server_p12),
        writer=_client(directory, "writer", ca_key, ca_cert, _name("writer", "eng", "Acme")),
        reader=_client(directory, "reader", ca_key, ca_cert, _name("reader", "eng", "Acme")),
        untrusted=_client(directory, "mallory", other_key, other_cert, _name("mallory")),
    )


@pytest.fixture(scope="session")
def tls_certs(tmp_path_factory: pytest.TempPathFactory) -> TlsCerts:
    return make_tls_certs(tmp_path_factory.mktemp("tls"))
