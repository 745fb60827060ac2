"""The canonical JSON every hash in the system is taken over: keys sorted, compact separators,
UTF-8 text. One encoder, so an event's hash and an audit row's hash cannot drift apart."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def canonical_json(
    value: Any, *, strict: bool = True, default: Callable[[Any], Any] = str
) -> bytes:
    """``value`` as canonical JSON bytes; ``default`` writes what JSON has no type for.

    ``strict``: NaN and Infinity (not JSON: no stored row holds them) raise DataError, as the
    database would refuse them (a row is hashed before it is written). Only hashes of values that
    are never stored (a request's fingerprint, say) may pass ``strict=False``."""
    try:
        return json.dumps(
            value,
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            default=default,
            allow_nan=not strict,
        ).encode()
    except ValueError as exc:
        if not strict:
            raise
        # Imported here: the export's verifier hashes with this module and runs without Django.
        from django.db import DataError

        raise DataError(f"not JSON: {exc}") from exc
