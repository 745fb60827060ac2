"""The deployment's checkpoint key: where it comes from, the public keys trusted, rotation.

The private key is ``RABS_CHECKPOINT_KEY`` (PEM text, production: from a secret store) or the
file ``RABS_CHECKPOINT_KEY_FILE`` (PEM, mode 600). Where neither exists and
``RABS_CHECKPOINT_KEY_GENERATE`` is on (development; off in production settings), the first
process that needs it generates the file (created exclusively, mode 600: two processes starting
at once end up with the same key). Rotation keeps the retired public key in
``RABS_CHECKPOINT_KEYS_DIR`` so that checkpoints it signed still verify.

Only public keys from this configuration are trusted: never one read from the database, which a
database writer could add to.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from django.conf import settings

from .signing import key_id, private_key_from_pem, private_pem, public_keys_from_pem, public_pem


class CheckpointKeyMissing(Exception):
    """No signing key is configured and none may be generated here."""


@dataclass(frozen=True)
class Keyring:
    private: Ed25519PrivateKey
    key_id: str
    #: Every public key trusted: the current one and the retired ones, by key id.
    trusted: dict[str, Ed25519PublicKey]


def checkpoint_keyring() -> Keyring:
    """The signing key and the trusted public keys, as the settings say: cached, and read again
    when the key file or the keys directory changes (a rotation by another process)."""
    key_file = str(settings.RABS_CHECKPOINT_KEY_FILE)
    keys_dir = str(settings.RABS_CHECKPOINT_KEYS_DIR)
    return _keyring(
        settings.RABS_CHECKPOINT_KEY,
        key_file,
        keys_dir,
        bool(settings.RABS_CHECKPOINT_KEY_GENERATE),
        (_changed_at(key_file), _changed_at(keys_dir)),
    )


def _changed_at(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


@functools.lru_cache(maxsize=4)
def _keyring(
    inline: str, key_file: str, keys_dir: str, generate: bool, version: tuple[int, int]
) -> Keyring:
    if inline.strip():
        private = private_key_from_pem(inline.encode())
    else:
        private = _from_file(Path(key_file), generate)
    trusted = dict(_retired(Path(keys_dir)))
    current = private.public_key()
    trusted[key_id(current)] = current
    return Keyring(private=private, key_id=key_id(current), trusted=trusted)


def _from_file(path: Path, generate: bool) -> Ed25519PrivateKey:
    try:
        return private_key_from_pem(path.read_bytes())
    except FileNotFoundError:
        if not generate:
            raise CheckpointKeyMissing(
                f"no checkpoint key: set RABS_CHECKPOINT_KEY or put the key at {path}"
            ) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    private = Ed25519PrivateKey.generate()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return private_key_from_pem(path.read_bytes())
    with os.fdopen(fd, "wb") as out:
        out.write(private_pem(private))
    return private


def _retired(keys_dir: Path) -> dict[str, Ed25519PublicKey]:
    found: dict[str, Ed25519PublicKey] = {}
    if keys_dir.is_dir():
        for path in sorted(keys_dir.glob("*.pem")):
            found.update(public_keys_from_pem(path.read_bytes()))
    return found


def checkpoint_public_keys_pem() -> str:
    """Every trusted public key as PEM, the current one first: what a verifier is handed."""
    ring = checkpoint_keyring()
    ordered = [ring.trusted[ring.key_id]]
    ordered += [key for kid, key in sorted(ring.trusted.items()) if kid != ring.key_id]
    return "".join(public_pem(key) for key in ordered)


def checkpoint_key_rotate() -> tuple[str, str]:
    """Retire the current key (its public half kept in the keys directory) and generate a new
    one in the key file. Returns (old key id, new key id). Only for a key kept in a file: a key
    given by ``RABS_CHECKPOINT_KEY`` is rotated where it is kept."""
    if settings.RABS_CHECKPOINT_KEY.strip():
        raise CheckpointKeyMissing(
            "the key comes from RABS_CHECKPOINT_KEY: rotate it there, and put the old public key "
            f"in {settings.RABS_CHECKPOINT_KEYS_DIR}"
        )
    old = checkpoint_keyring()
    keys_dir = Path(settings.RABS_CHECKPOINT_KEYS_DIR)
    keys_dir.mkdir(parents=True, exist_ok=True)
    (keys_dir / f"{old.key_id}.pem").write_text(public_pem(old.private.public_key()))
    path = Path(settings.RABS_CHECKPOINT_KEY_FILE)
    fresh = Ed25519PrivateKey.generate()
    temporary = path.with_name(path.name + ".new")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(private_pem(fresh))
    os.replace(temporary, path)
    _keyring.cache_clear()
    return old.key_id, key_id(fresh.public_key())
