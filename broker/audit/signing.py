"""Signed statements about the chains (checkpoints, an export's trailer): Ed25519 over canonical
JSON. Imports nothing of Django: the export's verifier (``broker.verify_export``) uses it.

A statement is a JSON object kept as the exact text that was signed (``body``) with its
signature (base64). Its ``key`` names the signing key by ``key_id``: the first 16 hex digits of
the sha256 of the raw public key. Whoever verifies decides which public keys they trust (the
deployment's, handed over out of band); a key named by a statement proves nothing by itself.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

#: What a checkpoint's ``prev`` names before the first checkpoint.
GENESIS = "0" * 64
_PEM_BLOCK = re.compile(
    rb"-----BEGIN PUBLIC KEY-----.+?-----END PUBLIC KEY-----", re.DOTALL | re.ASCII
)


def key_id(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def public_pem(public: Ed25519PublicKey) -> str:
    return public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


def public_keys_from_pem(data: bytes) -> dict[str, Ed25519PublicKey]:
    """Every Ed25519 public key in ``data`` (one or more PEM blocks), by key id. Raises
    ValueError when there is none, or a block is not an Ed25519 key."""
    keys: dict[str, Ed25519PublicKey] = {}
    for block in _PEM_BLOCK.findall(data):
        public = serialization.load_pem_public_key(block)
        if not isinstance(public, Ed25519PublicKey):
            raise ValueError("not an Ed25519 public key")
        keys[key_id(public)] = public
    if not keys:
        raise ValueError("no PEM public key (-----BEGIN PUBLIC KEY-----) found")
    return keys


def private_key_from_pem(data: bytes) -> Ed25519PrivateKey:
    private = serialization.load_pem_private_key(data, password=None)
    if not isinstance(private, Ed25519PrivateKey):
        raise ValueError("not an Ed25519 private key")
    return private


def private_pem(private: Ed25519PrivateKey) -> bytes:
    return private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def body_text(body: dict[str, Any]) -> str:
    """The text a statement is signed as: canonical JSON (sorted keys, compact)."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def body_digest(text: str) -> str:
    """What the next checkpoint names as ``prev``."""
    return hashlib.sha256(text.encode()).hexdigest()


def sign(private: Ed25519PrivateKey, text: str) -> str:
    return base64.b64encode(private.sign(text.encode())).decode()


def signature_problem(keys: dict[str, Ed25519PublicKey], text: str, signature: str) -> str | None:
    """None when ``signature`` over ``text`` verifies with the key its body names, which must be
    one of ``keys``; otherwise what is wrong."""
    try:
        named = json.loads(text).get("key")
    except (ValueError, AttributeError):
        return "its body is not a JSON object"
    public = keys.get(str(named))
    if public is None:
        return f"signed with key {named}, which is not among the trusted public keys"
    try:
        public.verify(base64.b64decode(signature, validate=True), text.encode())
    except (InvalidSignature, ValueError):
        return f"the signature does not verify with key {named} (forged or altered)"
    return None
