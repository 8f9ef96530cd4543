"""API key checks that cost the same whether the key ID exists or not.

A stored verifier is SHA-256 for a minted key (256 random bits) or PBKDF2 for a secret a
person chose (``CAIRN_ADMIN_KEY``). Running PBKDF2 on every request would cost ~55 ms
per call for that one key while an unknown key ID is refused at once: the difference
tells a caller which key IDs exist, and lets keyless callers make the server burn CPU.

So a handle remembers each slow key it has proven, as an HMAC of the secret under a
random per-process pepper (never written anywhere), bound to the exact stored verifier
string: any later attempt on that key ID, right or wrong, is one HMAC and one
constant-time comparison, which is also exactly what an unknown key ID costs. A
verifier that changes (rotation, revocation) no longer matches the memory, so nothing
stale authenticates. A slow key not yet proven in this process still costs one PBKDF2
per attempt; ``cairn serve`` proves its admin key at start and limits failures per
client (``cairn.server.throttle``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from collections import OrderedDict

from cairn.store.limits import MAX_PROVEN_KEYS
from cairn.store.policy import is_slow_verifier, make_verifier, verify_secret

__all__ = ["KeyProofs"]

_PEPPER_BYTES = 32


class KeyProofs:
    """One handle's memory of proven slow keys; see the module docstring."""

    def __init__(self, capacity: int = MAX_PROVEN_KEYS) -> None:
        self._pepper = secrets.token_bytes(_PEPPER_BYTES)
        self._capacity = capacity
        self._proven: OrderedDict[str, tuple[str, bytes]] = OrderedDict()
        self._lock = threading.Lock()
        self._decoy_tag = self._tag(secrets.token_urlsafe(_PEPPER_BYTES))
        self._decoy_verifier = make_verifier(secrets.token_urlsafe(_PEPPER_BYTES))

    @property
    def decoy_verifier(self) -> str:
        """A verifier no key has: the stand-in an unknown key ID is checked against."""
        return self._decoy_verifier

    def _tag(self, secret: str) -> bytes:
        return hmac.digest(self._pepper, secret.encode("utf-8"), hashlib.sha256)

    def check(self, key_id: str, secret: str, verifier: str | None) -> bool:
        """Whether ``secret`` matches ``verifier`` (None: the key ID is unknown).

        Unknown IDs, proven slow keys and fast keys all do the same work: one HMAC, one
        SHA-256 verification (the key's own, or a decoy's) and one constant-time
        comparison of tags (the proof's, or a decoy's).
        """
        tag = self._tag(secret)
        with self._lock:
            proven = self._proven.get(key_id)
        if verifier is None:
            verify_secret(secret, self._decoy_verifier)
            hmac.compare_digest(tag, self._decoy_tag)
            return False
        if proven is not None and proven[0] == verifier:
            verify_secret(secret, self._decoy_verifier)
            return hmac.compare_digest(tag, proven[1])
        if not is_slow_verifier(verifier):
            matched = verify_secret(secret, verifier)
            hmac.compare_digest(tag, self._decoy_tag)
            return matched
        matched = verify_secret(secret, verifier)  # PBKDF2, once per key in this process
        if matched:
            self._remember(key_id, verifier, tag)
        return matched

    def _remember(self, key_id: str, verifier: str, tag: bytes) -> None:
        with self._lock:
            self._proven[key_id] = (verifier, tag)
            self._proven.move_to_end(key_id)
            while len(self._proven) > self._capacity:
                self._proven.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._proven)
