"""What a recording must never show in clear, and the alias it shows instead, wherever it is.

A real service's keys are secrets: ``mockstore record`` forwards them to the
upstream as sent, and journals (and so writes to every HAR, report, log line
and ``--out``) each key's alias (``keys.key_alias``) in its place. Which values
are keys is learnt, not only read off the names of the places they stand in:

* a credentials header (``Authorization``, ``Cookie``, ``X-Api-Key``, and any
  header whose name says key, token, auth, secret, password, session,
  credential or signature: ``api-key``, ``x-auth-token``), a query parameter
  under such a name (``?x-api-key=``), and a member of a JSON or form request
  body under such a name: the value is a key;
* keys given to the recorder (``mockstore record --keys-file``): a key sent
  where no name marks it (in a path, say) is aliased all the same;
* every key learnt is remembered (``KeyRing``, the last ``REMEMBERED_SECRETS``,
  the given ones for ever): wherever it appears later, in any request or
  answer, in the path, the query under any name, any header or a body, it is
  aliased, as sent and percent-encoded.

A remembered key is found in a text as a whole word of URL-safe characters
(``[A-Za-z0-9_.~-]``: what a key made of those stands between), in one
regular-expression pass, whatever the number of keys; a key with other
characters (``+``, ``/``, ``=``) is looked for as it is and percent-encoded.
A key of fewer than ``MIN_SECRET`` characters is aliased only where a name
marks it: anywhere else it would match by chance.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable
from urllib.parse import quote

from mockstore.keys import key_alias

# Request headers whose values are credentials whatever their names say.
SECRET_REQUEST_HEADERS = frozenset(
    {b"authorization", b"proxy-authorization", b"x-api-key", b"cookie"}
)
SECRET_RESPONSE_HEADERS = frozenset({b"set-cookie"})
# Shorter values are not looked for outside the place that marks them: too likely by chance.
MIN_SECRET = 8
# Keys learnt lately, aliased wherever they appear later.
REMEMBERED_SECRETS = 4096
# A name that says its value is a credential: of a header, a query parameter, a body member.
_CREDENTIAL_NAME = re.compile(
    r"key|token|auth|secret|passw|session|credential|signature", re.IGNORECASE
)
# Headers whose value is "scheme credentials": the secret is what follows the scheme.
_SCHEMED = frozenset({b"authorization", b"proxy-authorization"})
# A key made of URL-safe characters, as it stands in any text.
_WORD = re.compile(rb"[A-Za-z0-9_.~-]{%d,}" % MIN_SECRET)
_WORD_ONLY = re.compile(rb"[A-Za-z0-9_.~-]+")
# Body members and form fields with their values (a body's keys, by name).
_JSON_MEMBER = re.compile(rb'"([^"\\]{1,64})"\s*:\s*"([^"\\]{%d,512})"' % MIN_SECRET)
_FORM_FIELD = re.compile(rb"(?:^|&)([^=&]{1,64})=([^&]{%d,512})" % MIN_SECRET)


def is_credential_name(name: str | bytes) -> bool:
    """Whether a header, parameter or member of this name holds a credential."""
    text = name.decode("latin-1") if isinstance(name, bytes) else name
    return _CREDENTIAL_NAME.search(text) is not None


def is_secret_header(name: bytes) -> bool:
    """Whether a request header (its name lower-case) carries a credential."""
    return name in SECRET_REQUEST_HEADERS or is_credential_name(name)


def secret_of(name: bytes, value: bytes) -> bytes:
    """The secret part of a credentials header: the token after the scheme, or all of it."""
    if name not in _SCHEMED:
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


def body_secrets(body: bytes) -> list[bytes]:
    """The values a request body holds under credentials' names (JSON members, form fields)."""
    found = []
    for pattern in (_JSON_MEMBER, _FORM_FIELD):
        for name, value in pattern.findall(body):
            if is_credential_name(name):
                found.append(value)
    return found


class KeyRing:
    """The keys a recorder knows: those given to it for ever, those learnt lately.

    ``found_in`` says which of them a text holds, in one pass for the keys of
    URL-safe characters (a set lookup per word) and one search per other key.
    """

    def __init__(self, given: Iterable[str] = ()) -> None:
        self._given: set[bytes] = set()
        self._recent: OrderedDict[bytes, None] = OrderedDict()
        self._words: set[bytes] = set()
        self._others: dict[bytes, bytes] = {}  # each form looked for -> the key
        for key in given:
            secret = key.encode("utf-8")
            self._given.add(secret)
            self._index(secret)

    def __len__(self) -> int:
        return len(self._given) + len(self._recent)

    def learn(self, secret: bytes) -> None:
        """Remember ``secret`` (forgetting the oldest learnt past ``REMEMBERED_SECRETS``)."""
        if len(secret) < MIN_SECRET or secret in self._given:
            return
        recent = self._recent
        if secret in recent:
            recent.move_to_end(secret)
            return
        recent[secret] = None
        self._index(secret)
        while len(recent) > REMEMBERED_SECRETS:
            old, _ = recent.popitem(last=False)
            self._words.discard(old)
            for form in (old, quote(old, safe="").encode()):
                self._others.pop(form, None)

    def _index(self, secret: bytes) -> None:
        if _WORD_ONLY.fullmatch(secret):
            self._words.add(secret)
        else:
            self._others[secret] = secret
            self._others[quote(secret, safe="").encode()] = secret

    def found_in(self, data: bytes) -> list[bytes]:
        """The known keys ``data`` holds (as they are or percent-encoded)."""
        if not data:
            return []
        found: list[bytes] = []
        if self._words:
            found.extend(self._words.intersection(_WORD.findall(data)))
        for form, secret in self._others.items():
            if form in data:
                found.append(secret)
        return found


class Scrubber:
    """Replaces every key of one exchange by its alias, in what the journal keeps.

    The exchange's keys are those its credentials carry and any key the ring
    finds in what is scrubbed (``ring``: the recorder's, shared by every
    exchange); each is learnt by the ring for later exchanges.
    """

    __slots__ = ("pairs", "ring")

    def __init__(self, ring: KeyRing | None = None) -> None:
        self.pairs: list[tuple[bytes, bytes]] = []
        self.ring = ring if ring is not None else KeyRing()

    def learn(self, name: bytes, value: bytes) -> None:
        self.add(secret_of(name, value))

    def add(self, secret: bytes) -> None:
        """Alias ``secret`` (as sent and percent-encoded) in all this exchange journals."""
        if len(secret) < MIN_SECRET or any(secret == known for known, _ in self.pairs):
            return
        self.ring.learn(secret)
        alias = key_alias(secret.decode("latin-1")).encode()
        self.pairs.append((secret, alias))
        escaped = quote(secret, safe="").encode()
        if escaped != secret:
            self.pairs.append((escaped, alias))
        # The longest first: a key that holds another is aliased whole.
        self.pairs.sort(key=lambda pair: -len(pair[0]))

    def __call__(self, data: bytes) -> bytes:
        for secret in self.ring.found_in(data):
            self.add(secret)
        for secret, alias in self.pairs:
            if secret in data:
                data = data.replace(secret, alias)
        return data


def read_keys_file(path: str) -> list[str]:
    """The keys of a ``--keys-file``: one a line, blank lines and ``#`` comments skipped.

    Raises ``ValueError`` naming the file, line and column of a key too short
    to be looked for safely, or of a file that cannot be read.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the keys file: {exc}") from None
    keys = []
    for number, line in enumerate(lines, 1):
        key = line.strip()
        if not key or key.startswith("#"):
            continue
        column = len(line) - len(line.lstrip()) + 1
        if len(key) < MIN_SECRET:
            raise ValueError(
                f"{path}:{number}:{column}: a key of {len(key)} characters is too short to be "
                f"looked for wherever it appears (at least {MIN_SECRET})"
            )
        keys.append(key)
    return keys
