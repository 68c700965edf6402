"""What a recording keeps of a secret: its alias, wherever the secret appears.

A real service's keys are secrets, and a recording is shared (a HAR in a bug
report, a fixture in a repository): what ``mockstore record`` journals carries
each key's alias (``keys.key_alias``) in its place. ``SECRET_REQUEST_HEADERS``
and ``SECRET_RESPONSE_HEADERS`` are the headers whose values are credentials
(journaled as ``aliased`` values); ``Scrubber`` replaces every secret one
exchange showed, as sent and percent-encoded, in what else is journaled
(bodies, URLs, other headers); ``SECRET_QUERY_PARAMETERS`` names the query
parameters that carry one.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote

from mockstore.keys import key_alias

# Request headers whose values are credentials: journaled as the alias of their secret.
SECRET_REQUEST_HEADERS = frozenset(
    {b"authorization", b"proxy-authorization", b"x-api-key", b"cookie"}
)
SECRET_RESPONSE_HEADERS = frozenset({b"set-cookie"})
# Shorter strings are not scrubbed from bodies: too likely to occur by chance.
MIN_SCRUBBED = 8
# Query parameters whose values are credentials (lower-case, '-' read as '_').
SECRET_QUERY_PARAMETERS = frozenset(
    {"api_key", "apikey", "key", "access_token", "token", "auth", "secret", "password"}
)


# Headers whose whole value is the secret (cookies hold several; the scheme-less key header).
WHOLE_VALUE = frozenset({b"cookie", b"set-cookie", b"x-api-key"})


def secret_of(name: bytes, value: bytes) -> bytes:
    """The secret part of a credentials header: the token after the scheme, or all of it."""
    if name in WHOLE_VALUE:
        return value.strip()
    _scheme, space, token = value.strip().partition(b" ")
    return token.strip() if space and token.strip() else value.strip()


def aliased(name: bytes, value: bytes) -> bytes:
    """A credentials header value with its secret replaced by the secret's alias."""
    secret = secret_of(name, value)
    if not secret:
        return value
    alias = key_alias(secret.decode("latin-1")).encode()
    return value.replace(secret, alias)


class Scrubber:
    """Replaces every secret seen in one exchange by its alias, in what the journal keeps."""

    __slots__ = ("pairs",)

    def __init__(self) -> None:
        self.pairs: list[tuple[bytes, bytes]] = []

    def learn(self, name: bytes, value: bytes) -> None:
        self.add(secret_of(name, value))

    def add(self, secret: bytes) -> None:
        """Alias ``secret`` (as sent and percent-encoded) in all this exchange journals."""
        if len(secret) < MIN_SCRUBBED or any(secret == known for known, _ in self.pairs):
            return
        alias = key_alias(secret.decode("latin-1")).encode()
        self.pairs.append((secret, alias))
        escaped = quote(secret, safe="").encode()
        if escaped != secret:
            self.pairs.append((escaped, alias))
        # The longest first: a key that holds another is aliased whole.
        self.pairs.sort(key=lambda pair: -len(pair[0]))

    def __call__(self, data: bytes) -> bytes:
        for secret, alias in self.pairs:
            if secret in data:
                data = data.replace(secret, alias)
        return data

    def url(self, data: bytes, remembered: Iterable[bytes] = ()) -> bytes:
        """A path or query with every secret aliased: this exchange's, and any remembered.

        A remembered key found in the URL is this exchange's from then on, so
        an answer that echoes the URL is aliased too.
        """
        for secret in remembered:
            if secret in data or quote(secret, safe="").encode() in data:
                self.add(secret)
        return self(data)


__all__ = [
    "SECRET_QUERY_PARAMETERS",
    "SECRET_REQUEST_HEADERS",
    "SECRET_RESPONSE_HEADERS",
    "Scrubber",
    "aliased",
    "secret_of",
]
