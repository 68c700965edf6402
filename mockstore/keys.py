"""API keys: the key ring and the parsing of ``Authorization`` headers.

Keys are looked up by their SHA-256 digest and confirmed with
``hmac.compare_digest``, so the time a lookup takes does not depend on how
much of a guessed key matches a real one.

Both steps are remembered, because a client sends the same header on every
request and hashing it costs about 15,000 instructions (OpenSSL's SHA-256
set-up), most of what authentication cost. A key once confirmed is found
again by a dict lookup on the token, and a parsed header by a dict lookup on
its bytes. Neither leaks how much of a guess matches: a dict compares two
strings only when their 64-bit hashes (SipHash, keyed per process) are equal,
so a wrong guess is never compared with a real key character by character.
What a remembered key does reveal is that it is valid, which the answer (200
rather than 401) says anyway. The hidden costs: the parse cache holds header
values (secrets included) within a byte budget, and the ring's memo must be
emptied whenever a key is issued or revoked (``issue`` and ``revoke`` do).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass, field
from typing import Literal

from mockstore.budget import ByteBudget


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An issued key: its secret, its plan's name and its tenant for isolation.

    ``bucket`` is its rate-limit bucket (``key_bucket``), worked out once here
    rather than on each request.
    """

    key: str
    plan: str
    tenant: str
    bucket: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "bucket", key_bucket(self.key))


CredentialKind = Literal["missing", "malformed", "bearer"]


@dataclass(frozen=True, slots=True)
class Credentials:
    """What the ``Authorization`` header said."""

    kind: CredentialKind
    token: str = ""


MISSING = Credentials("missing")
MALFORMED = Credentials("malformed")


# Parsed headers by their bytes (see the module docstring), within a budget:
# 256 KiB, none from a value over 1 KiB.
_parsed: dict[bytes, Credentials] = {}
_parsed_budget = ByteBudget(256 * 1024, 1024)


def parse_authorization(header: bytes | None) -> Credentials:
    """Parse ``Authorization: Bearer <token>`` (RFC 6750).

    The scheme is case-insensitive (RFC 9110 section 11.1); anything else,
    including ``Bearer`` with no token, is malformed.
    """
    if header is None:
        return MISSING
    credentials = _parsed.get(header)
    if credentials is None:
        credentials = _parse(header)
        if _parsed_budget.admit(_parsed, len(header)):
            _parsed[header] = credentials
    return credentials


def _parse(header: bytes) -> Credentials:
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
        # Tokens already confirmed, and their keys (see the module docstring):
        # only valid keys, so it holds no more than the ring does.
        self._confirmed: dict[str, ApiKey] = {}
        for key in keys or []:
            self.issue(key)

    def copy(self) -> KeyRing:
        """A ring of its own with the same keys (a reset's): no key is hashed again."""
        twin = KeyRing()
        twin._by_digest = dict(self._by_digest)
        return twin

    def issue(self, key: ApiKey) -> None:
        self._by_digest[_digest(key.key)] = key
        self._confirmed.clear()  # the key may replace one of the same secret

    def revoke(self, key: str) -> ApiKey | None:
        self._confirmed.clear()
        return self._by_digest.pop(_digest(key), None)

    def lookup(self, token: str) -> ApiKey | None:
        found = self._confirmed.get(token)
        if found is not None:
            return found
        found = self._by_digest.get(_digest(token))
        if found is None or not hmac.compare_digest(found.key.encode(), token.encode()):
            return None
        self._confirmed[token] = found
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
