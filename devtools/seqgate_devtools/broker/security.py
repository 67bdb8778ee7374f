"""Security material of a SASL_SSL development broker (SCRAM-SHA-512 over TLS).

A broker started with ``security="sasl_ssl"`` (see
:func:`seqgate_devtools.broker.start_broker`)
gets, in its data directory:

* ``tls/ca.pem`` - a throwaway certificate authority (its private key is never written);
* ``tls/broker.p12`` - the broker's key and certificate (SAN ``IP:127.0.0.1``,
  ``DNS:localhost``) signed by that CA, in a PKCS12 keystore;
* a SCRAM-SHA-512 user with a random password, created when the storage is formatted;
* ``client.properties`` (mode 0600) - librdkafka settings for clients: ``security.protocol``,
  ``sasl.mechanism``, ``sasl.username``, ``sasl.password`` and ``ssl.ca.location``.

Everything is regenerated on each :func:`~seqgate_devtools.broker.start_broker` (which
wipes the data
directory) and kept by :func:`~seqgate_devtools.broker.restart_broker`.

Public API: :func:`create_sasl_ssl_material`, :func:`read_client_properties`,
:func:`client_settings`, :func:`write_unrelated_ca` (a CA that signed nothing, for
"wrong CA" tests) and :data:`SECURITY_MODES`.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from seqgate.runtime.kafka_settings import read_properties_file

__all__ = [
    "PLAINTEXT",
    "SASL_SSL",
    "SCRAM_MECHANISM",
    "SECURITY_MODES",
    "SecurityMaterial",
    "client_settings",
    "create_sasl_ssl_material",
    "format_arguments",
    "jaas_config",
    "read_client_properties",
    "server_properties",
    "write_client_properties",
    "write_unrelated_ca",
]

PLAINTEXT = "plaintext"
SASL_SSL = "sasl_ssl"
SECURITY_MODES = (PLAINTEXT, SASL_SSL)
"""Values of ``security`` accepted by the launcher (and ``seqgate broker up --security``)."""
SCRAM_MECHANISM = "SCRAM-SHA-512"

CLIENT_PROPERTIES = "client.properties"
_TLS_DIR = "tls"
_LISTENER = "SASL_SSL"
_USERNAME = "seqgate"
_VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class SecurityMaterial:
    """The files and credentials of one SASL_SSL broker."""

    ca_file: Path
    keystore_file: Path
    keystore_password: str
    username: str
    password: str
    client_properties: Path


# --------------------------------------------------------------------------- certificates


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "seqgate development broker"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _certificate(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey
) -> x509.CertificateBuilder:
    """A builder for a certificate of ``key``, valid from an hour ago for :data:`_VALIDITY`."""
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        # Backdated a little: a clock that is slightly behind must not reject a fresh cert.
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + _VALIDITY)
    )


def _key_usage(*, certificate_authority: bool) -> x509.KeyUsage:
    """A CA signs certificates; the broker signs and agrees on keys in its TLS handshakes."""
    return x509.KeyUsage(
        digital_signature=not certificate_authority,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=not certificate_authority,
        key_cert_sign=certificate_authority,
        crl_sign=certificate_authority,
        encipher_only=False,
        decipher_only=False,
    )


def _new_ca(common_name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name)
    cert = (
        _certificate(name, name, key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(certificate_authority=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _broker_cert(
    ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, addresses: Sequence[str]
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    ips = dict.fromkeys(["127.0.0.1", *addresses])  # ordered, without duplicates
    cert = (
        _certificate(_name("localhost"), ca_cert.subject, key)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    *(x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips),
                ]
            ),
            critical=False,
        )
        .add_extension(_key_usage(certificate_authority=False), critical=True)
        # The broker is also the TLS client of its own inter-broker listener.
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def _write_private(path: Path, data: bytes) -> None:
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def write_unrelated_ca(path: Path) -> Path:
    """Write a fresh CA certificate (PEM) to ``path`` that signed no broker: "wrong CA" tests."""
    _, cert = _new_ca("seqgate unrelated test CA")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path.absolute()


# --------------------------------------------------------------------------- properties


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def write_client_properties(path: Path, settings: dict[str, str]) -> None:
    """Write ``settings`` as a Java ``.properties`` file readable only by its owner."""
    lines = [
        "# librdkafka client settings for the seqgate development broker (generated)",
        *(f"{key}={_escape(value)}" for key, value in settings.items()),
    ]
    _write_private(path, ("\n".join(lines) + "\n").encode("utf-8"))


def read_client_properties(path: Path) -> dict[str, str]:
    """The settings of a ``.properties`` file, read as ``--kafka-config`` reads it."""
    return {prop.name: prop.value for prop in read_properties_file(path)}


def client_settings(properties: Path | None, bootstrap_servers: str) -> dict[str, str]:
    """confluent_kafka settings: ``bootstrap.servers`` plus those of ``properties`` (if any)."""
    config = read_client_properties(properties) if properties is not None else {}
    config["bootstrap.servers"] = bootstrap_servers
    return config


def jaas_config(username: str, password: str) -> str:
    """The broker's SCRAM login (``sasl.jaas.config``) for its own inter-broker connections."""
    return (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{username}" password="{password}";'
    )


def format_arguments(material: SecurityMaterial) -> list[str]:
    """Extra ``kafka.tools.StorageTool format`` arguments: create the SCRAM user."""
    return [
        "--add-scram",
        f"{SCRAM_MECHANISM}=[name={material.username},password={material.password}]",
    ]


def server_properties(
    material: SecurityMaterial, host: str, port: int, controller_port: int
) -> dict[str, str]:
    """Broker settings replacing the PLAINTEXT client listener by a SASL_SSL-only one."""
    prefix = f"listener.name.{_LISTENER.lower()}"
    return {
        "listeners": f"{_LISTENER}://{host}:{port},CONTROLLER://{host}:{controller_port}",
        "advertised.listeners": f"{_LISTENER}://{host}:{port}",
        "listener.security.protocol.map": f"{_LISTENER}:SASL_SSL,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": _LISTENER,
        "sasl.enabled.mechanisms": SCRAM_MECHANISM,
        "sasl.mechanism.inter.broker.protocol": SCRAM_MECHANISM,
        f"{prefix}.sasl.enabled.mechanisms": SCRAM_MECHANISM,
        f"{prefix}.{SCRAM_MECHANISM.lower()}.sasl.jaas.config": jaas_config(
            material.username, material.password
        ),
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(material.keystore_file),
        "ssl.keystore.password": material.keystore_password,
        "ssl.key.password": material.keystore_password,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(material.ca_file),
        "ssl.client.auth": "none",
        "ssl.endpoint.identification.algorithm": "https",
    }


def create_sasl_ssl_material(data_dir: Path, addresses: Sequence[str] = ()) -> SecurityMaterial:
    """Generate the CA, broker keystore, SCRAM credentials and ``client.properties``.

    The certificate names 127.0.0.1 and ``addresses`` (a cluster's ``listen_address``): clients
    verify the address they dial. All nodes of a cluster share this one keystore and user.
    """
    data_dir = data_dir.absolute()
    tls = data_dir / _TLS_DIR
    tls.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _new_ca("seqgate development CA")
    key, cert = _broker_cert(ca_key, ca_cert, addresses)
    ca_file = tls / "ca.pem"
    ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    keystore_password = secrets.token_urlsafe(24)
    keystore = tls / "broker.p12"
    _write_private(
        keystore,
        pkcs12.serialize_key_and_certificates(
            b"broker",
            key,
            cert,
            [ca_cert],
            serialization.BestAvailableEncryption(keystore_password.encode()),
        ),
    )
    material = SecurityMaterial(
        ca_file=ca_file,
        keystore_file=keystore,
        keystore_password=keystore_password,
        username=_USERNAME,
        # token_urlsafe never yields ',', '=', '"' or ']': safe in --add-scram and in JAAS text.
        password=secrets.token_urlsafe(24),
        client_properties=data_dir / CLIENT_PROPERTIES,
    )
    write_client_properties(
        material.client_properties,
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": SCRAM_MECHANISM,
            "sasl.username": material.username,
            "sasl.password": material.password,
            "ssl.ca.location": str(ca_file),
        },
    )
    return material
