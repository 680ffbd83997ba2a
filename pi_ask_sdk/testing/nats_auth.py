"""TLS and credentials for a test ``nats-server``, made at test time (docs/fleet.md, Production).

Needs the ``cryptography`` package (in ``pip install 'pi-ask-sdk[nats-test]'``). Nothing here is
fit for a real deployment: the keys live in a test's directory and the CA signs anything.

* **TLS**: ``make_tls(directory)`` writes a test CA and a server certificate for 127.0.0.1 and
  ``localhost``; ``NatsServer(..., tls=...)`` / ``NatsCluster(..., tls=...)`` serve ``tls://``
  with it, and a client trusts it with ``NatsOptions(url, tls_ca=str(tls.ca))``.
* **nkey users**: ``nkey_user(directory, name, permissions)`` makes a user key pair, writes its
  seed to ``<directory>/<name>.nk`` (mode 0600; the client's ``nkeys_seed``) and gives the
  ``authorization`` entry naming its public key; ``authorization_config(users)`` is the block::

      tls = make_tls(tmp_path / "tls")
      bot = nkey_user(tmp_path / "keys", "bot", names.bridge_permissions("bot"))
      with nats_server(tmp_path, tls=tls, config=authorization_config([bot.entry])) as server:
          options = NatsOptions(server.url, tls_ca=str(tls.ca), nkey=str(bot.seed_file))

* **decentralised auth** (``.creds``, how NATS runs in production): ``Operator(directory)``
  signs an account (JetStream enabled) and its users; ``operator.user(name, permissions)``
  writes ``<directory>/<name>.creds`` (the user's JWT and seed, mode 0600) for
  ``NatsOptions(creds=...)``, and ``operator.config()`` is the server configuration (the
  operator, the system account, and a memory resolver preloaded with the account).

``permissions_block`` turns a ``NatsPermissions`` (``FleetNames.forwarder_permissions(host)``,
``bridge_permissions(user)``) into a configuration user's ``permissions``. No function here
prints or logs a seed or a key: ``repr`` of a key pair shows its public key only.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import ipaddress
import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from pi_ask_sdk.fleet.protocol import NatsPermissions

__all__ = [
    "NkeyKind",
    "NkeyPair",
    "NkeyUser",
    "Operator",
    "TlsFiles",
    "authorization_config",
    "make_tls",
    "nkey_user",
    "permissions_block",
]


# --- TLS -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """A test CA's certificate (``ca``: what clients trust, ``NatsOptions.tls_ca``) and the
    server certificate and key it signed (PEM files)."""

    ca: Path
    cert: Path
    key: Path

    def server_block(self) -> str:
        """nats-server's ``tls {}`` block serving this certificate to clients."""
        return (
            f"tls {{\n  cert_file: {json.dumps(str(self.cert))}\n"
            f"  key_file: {json.dumps(str(self.key))}\n  timeout: 5\n}}\n"
        )


def make_tls(directory: Path, *, hosts: Iterable[str] = ("127.0.0.1", "localhost")) -> TlsFiles:
    """Write a new test CA (``ca.pem``) and a server certificate it signed for ``hosts`` (IP
    addresses and DNS names, as subject alternative names: ``server.pem``, ``server-key.pem``,
    mode 0600) under ``directory``. Each call makes another CA: a client given another call's
    ``ca`` refuses this server.

    Raises:
        ModuleNotFoundError: the ``cryptography`` package is missing (the ``nats-test`` extra).
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=2)

    ca_usage = x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=False,
        data_encipherment=False, key_agreement=False, key_cert_sign=True,
        crl_sign=True, encipher_only=False, decipher_only=False,
    )  # fmt: skip
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pi-ask-sdk test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(ca_usage, critical=True)
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )

    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "nats-server")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    files = TlsFiles(
        ca=directory / "ca.pem", cert=directory / "server.pem", key=directory / "server-key.pem"
    )
    files.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_secret(
        files.key,
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
    return files  # (the CA's key is dropped: nothing else is ever signed by this CA)


def _write_secret(path: Path, data: bytes) -> None:
    """Write ``data`` to a new file only its owner may read (0600 from the start)."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


# --- nkeys ---------------------------------------------------------------------------------------

NkeyKind = Literal["operator", "account", "user"]
"""The role of an nkey: its public key starts with ``O``, ``A`` or ``U``."""

_PREFIX: Final[dict[NkeyKind, int]] = {"operator": 14 << 3, "account": 0, "user": 20 << 3}
_SEED: Final = 18 << 3  # base32-encodes to "S"


def _crc16(data: bytes) -> bytes:
    return binascii.crc_hqx(data, 0).to_bytes(2, "little")  # (CRC-16/XMODEM, as nkeys)


def _b32(data: bytes) -> str:
    return base64.b32encode(data).decode("ascii").rstrip("=")


class NkeyPair:
    """An nkey (NATS's Ed25519 key pair) of one ``kind``: ``public_key`` (``U...``, ``A...``,
    ``O...``) names it in a configuration or a JWT; ``sign`` signs with it; ``write_seed``
    writes its seed (``SU...``) to a 0600 file. ``repr`` shows the public key only."""

    def __init__(self, kind: NkeyKind) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        self.kind: NkeyKind = kind
        self._raw = os.urandom(32)
        self._key = Ed25519PrivateKey.from_private_bytes(self._raw)
        public = bytes([_PREFIX[kind]]) + self._key.public_key().public_bytes(
            Encoding.Raw, PublicFormat.Raw
        )
        self.public_key: str = _b32(public + _crc16(public))

    def seed(self) -> str:
        """The seed (secret): what ``nkeys_seed`` files and ``.creds`` files hold."""
        prefix = _PREFIX[self.kind]
        head = bytes([_SEED | prefix >> 5, (prefix & 31) << 3])
        return _b32(head + self._raw + _crc16(head + self._raw))

    def sign(self, data: bytes) -> bytes:
        """The Ed25519 signature of ``data``."""
        return self._key.sign(data)

    def write_seed(self, path: Path) -> Path:
        """Write the seed to ``path`` (a new file, mode 0600); returns ``path``."""
        _write_secret(Path(path), self.seed().encode("ascii") + b"\n")
        return Path(path)

    def __repr__(self) -> str:
        return f"NkeyPair({self.kind!r}, public_key={self.public_key!r})"


def permissions_block(permissions: NatsPermissions) -> dict[str, object]:
    """``permissions`` (a ``NatsPermissions``, e.g. ``FleetNames.forwarder_permissions(host)``)
    as a configuration user's ``permissions`` value: ``publish``/``subscribe`` allow lists and
    ``allow_responses``."""
    return {
        "publish": {"allow": list(permissions["publish"])},
        "subscribe": {"allow": list(permissions["subscribe"])},
        "allow_responses": bool(permissions["allow_responses"]),
    }


@dataclass(frozen=True, slots=True)
class NkeyUser:
    """A configuration user authenticated by an nkey: ``seed_file`` is for the client
    (``NatsOptions(nkey=...)``, nats-py's ``nkeys_seed``), ``entry`` for
    ``authorization_config``."""

    name: str
    public_key: str
    seed_file: Path
    entry: dict[str, object] = field(repr=False)


def nkey_user(directory: Path, name: str, permissions: NatsPermissions | None = None) -> NkeyUser:
    """A new user nkey: its seed written to ``directory/<name>.nk`` (0600), its
    ``authorization`` entry with ``permissions`` (None: no limits, an administrator)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    pair = NkeyPair("user")
    seed_file = pair.write_seed(directory / f"{name}.nk")
    entry: dict[str, object] = {"nkey": pair.public_key}
    if permissions is not None:
        entry["permissions"] = permissions_block(permissions)
    return NkeyUser(name=name, public_key=pair.public_key, seed_file=seed_file, entry=entry)


def authorization_config(users: Iterable[Mapping[str, object]]) -> str:
    """nats-server's ``authorization { users = [...] }`` block for ``users``: each an entry
    (``NkeyUser.entry``, or ``{"user": ..., "password": ..., "permissions": ...}``)."""
    return "authorization " + json.dumps({"users": [dict(user) for user in users]}) + "\n"


# --- decentralised auth: JWTs and .creds ---------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _jwt(issuer: NkeyPair, subject: str, name: str, nats: dict[str, object]) -> str:
    """A NATS JWT (``ed25519-nkey``) of ``subject`` signed by ``issuer``."""
    claims: dict[str, object] = {
        "jti": "",
        "iat": int(time.time()),
        "iss": issuer.public_key,
        "name": name,
        "sub": subject,
        "nats": {**nats, "version": 2},
    }
    claims["jti"] = _b32(hashlib.sha256(json.dumps(claims).encode()).digest())
    head = _b64(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
    body = _b64(json.dumps(claims).encode())
    signature = issuer.sign(f"{head}.{body}".encode("ascii"))
    return f"{head}.{body}.{_b64(signature)}"


_UNLIMITED: Final = {"subs": -1, "data": -1, "payload": -1}
_ACCOUNT_LIMITS: Final = {
    **_UNLIMITED, "imports": -1, "exports": -1, "wildcards": True, "conn": -1, "leaf": -1,
}  # fmt: skip
_JETSTREAM: Final = {"mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1}


class Operator:
    """A NATS operator for decentralised auth, with one account (JetStream enabled) for the
    fleet and a system account: ``user`` makes ``.creds`` files, ``config`` is the server's
    configuration. The keys stay in memory; only users' ``.creds`` files are written."""

    def __init__(self, directory: Path, *, name: str = "pi-ask-test") -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._operator = NkeyPair("operator")
        self._system = NkeyPair("account")
        self.account = NkeyPair("account")
        self.name = name
        self._jwts = {
            self._system.public_key: _jwt(
                self._operator, self._system.public_key, "SYS", {"type": "account"}
            ),
            self.account.public_key: _jwt(
                self._operator,
                self.account.public_key,
                "FLEET",
                {"type": "account", "limits": {**_ACCOUNT_LIMITS, **_JETSTREAM}},
            ),
        }
        self._operator_jwt = _jwt(
            self._operator,
            self._operator.public_key,
            name,
            {"type": "operator", "system_account": self._system.public_key},
        )

    def user(self, name: str, permissions: NatsPermissions | None = None) -> Path:
        """Write ``directory/<name>.creds`` (0600): a user of the fleet's account, limited to
        ``permissions`` (None: no limits), for ``NatsOptions(creds=...)``; returns its path."""
        pair = NkeyPair("user")
        nats: dict[str, object] = {"type": "user", **_UNLIMITED}
        if permissions is not None:
            nats["pub"] = {"allow": list(permissions["publish"])}
            nats["sub"] = {"allow": list(permissions["subscribe"])}
            if permissions["allow_responses"]:
                nats["resp"] = {"max": 1, "ttl": 0}
        token = _jwt(self.account, pair.public_key, name, nats)
        text = (
            f"-----BEGIN NATS USER JWT-----\n{token}\n------END NATS USER JWT------\n\n"
            f"-----BEGIN USER NKEY SEED-----\n{pair.seed()}\n------END USER NKEY SEED------\n"
        )
        path = self.directory / f"{name}.creds"
        _write_secret(path, text.encode("ascii"))
        return path

    def config(self) -> str:
        """The server configuration: this operator, its system account, and a memory
        resolver preloaded with both accounts."""
        preload = ", ".join(f"{key}: {jwt}" for key, jwt in self._jwts.items())
        return (
            f"operator: {self._operator_jwt}\n"
            f"system_account: {self._system.public_key}\n"
            f"resolver: MEMORY\nresolver_preload: {{ {preload} }}\n"
        )

    def __repr__(self) -> str:
        return f"Operator({self.name!r}, account={self.account.public_key!r})"
