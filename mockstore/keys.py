"""API keys: the key ring and the parsing of ``Authorization`` headers.

Keys are looked up by their SHA-256 digest and confirmed with
``hmac.compare_digest``, so the time a lookup takes does not depend on how
much of a guessed key matches a real one.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An issued key: its secret, its plan's name and its tenant for isolation."""

    key: str
    plan: str
    tenant: str


CredentialKind = Literal["missing", "malformed", "bearer"]


@dataclass(frozen=True, slots=True)
class Credentials:
    """What the ``Authorization`` header said."""

    kind: CredentialKind
    token: str = ""


MISSING = Credentials("missing")
MALFORMED = Credentials("malformed")


def parse_authorization(header: bytes | None) -> Credentials:
    """Parse ``Authorization: Bearer <token>`` (RFC 6750).

    The scheme is case-insensitive (RFC 9110 section 11.1); anything else,
    including ``Bearer`` with no token, is malformed.
    """
    if header is None:
        return MISSING
    scheme, _, token = header.strip().partition(b" ")
    if scheme.lower() != b"bearer":
        return MALFORMED
    token = token.strip()
    if not token or b" " in token:
        return MALFORMED
    try:
        return Credentials("bearer", token.decode("ascii"))
    except UnicodeDecodeError:
        return MALFORMED


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


class KeyRing:
    """The keys the server accepts. Issue, revoke and look up."""

    def __init__(self, keys: list[ApiKey] | None = None) -> None:
        self._by_digest: dict[bytes, ApiKey] = {}
        for key in keys or []:
            self.issue(key)

    def issue(self, key: ApiKey) -> None:
        self._by_digest[_digest(key.key)] = key

    def revoke(self, key: str) -> ApiKey | None:
        return self._by_digest.pop(_digest(key), None)

    def lookup(self, token: str) -> ApiKey | None:
        found = self._by_digest.get(_digest(token))
        if found is None or not hmac.compare_digest(found.key.encode(), token.encode()):
            return None
        return found

    def __iter__(self):
        return iter(sorted(self._by_digest.values(), key=lambda k: k.key))

    def __len__(self) -> int:
        return len(self._by_digest)

    def __contains__(self, key: str) -> bool:
        return self.lookup(key) is not None


def key_bucket(key: str) -> str:
    """The rate-limit bucket of an API key."""
    return "key:" + key


def client_bucket(client: str) -> str:
    """The rate-limit bucket shared by callers without a valid key from one address."""
    return "anon:" + client


ALIAS_PREFIX = "key-"
_ALIAS = re.compile(r"key-[0-9a-f]{8}")


def key_alias(key: str) -> str:
    """A stable stand-in for a key that does not reveal it: ``key-`` and 8 hex digits.

    The first 32 bits of the key's SHA-256: the same key always gets the same
    alias, so a recording shows which requests used one key, and a scenario
    that names the key (or the alias itself) is matched to it; a real key,
    long and random, cannot be recovered from 32 bits of its digest. An alias
    is its own alias, so masking a recording twice changes nothing.
    """
    if _ALIAS.fullmatch(key):
        return key
    return ALIAS_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:8]


def is_alias(token: str) -> bool:
    """True for a string of the form ``key_alias`` gives."""
    return _ALIAS.fullmatch(token) is not None
