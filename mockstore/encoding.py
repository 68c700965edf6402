"""Content coding (RFC 9110 section 8.4): which coding an answer is sent in, and the coding itself.

A scenario's provider may compress its answers (``http.compression``): when
the request's ``Accept-Encoding`` accepts one of its codings and the body is at
least ``min_bytes``, the body is sent gzip- or deflate-coded with
``Content-Encoding``; ``Vary: Accept-Encoding`` says the answer depends on it.

Negotiation follows RFC 9110 section 12.5.3: each coding the client lists has a
weight (``q``, 1 when not given; 0 refuses it); ``*`` stands for every coding
not listed; the coding the client weighs highest is chosen, the provider's
order breaking ties. A request without ``Accept-Encoding`` gets the body as it
is (a client that says nothing is not sent what it may not read).

The coding is deterministic: gzip writes no timestamp and no file name
(``mtime=0``), so the same body gives the same bytes in every process.
``deflate`` is the zlib format, as RFC 9110 section 8.4.1.2 names it. ``br``
is not offered: it needs a compiled library, and what a client sees of it (the
``Content-Encoding`` token) is all it would change (see the Fidelity page).
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable

CODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": lambda body: gzip.compress(body, compresslevel=6, mtime=0),
    "deflate": lambda body: zlib.compress(body, 6),
}


def weights(accept_encoding: bytes) -> dict[str, float]:
    """``Accept-Encoding`` as {coding: weight}, lower-case; a malformed weight is 0."""
    found: dict[str, float] = {}
    for part in accept_encoding.decode("latin-1").split(","):
        coding, _, parameters = part.partition(";")
        coding = coding.strip().lower()
        if not coding:
            continue
        weight = 1.0
        for parameter in parameters.split(";"):
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value.strip())
                except ValueError:
                    weight = 0.0
                if not 0.0 <= weight <= 1.0:
                    weight = 0.0
        found.setdefault(coding, weight)
    return found


def choose(accept_encoding: bytes | None, offered: tuple[str, ...]) -> str | None:
    """The coding to send a body in, of ``offered`` (the provider's order), or None."""
    if accept_encoding is None or not offered:
        return None
    given = weights(accept_encoding)
    star = given.get("*", 0.0)
    best, best_weight = None, 0.0
    for coding in offered:
        weight = given.get(coding, given.get("x-gzip", star) if coding == "gzip" else star)
        if weight > best_weight:
            best, best_weight = coding, weight
    return best


def encode(coding: str, body: bytes) -> bytes:
    """``body`` in ``coding`` (one of ``CODERS``)."""
    return CODERS[coding](body)


def decode(coding: str, data: bytes) -> bytes:
    """The content of ``data`` sent in ``coding`` (for the tests and the journal's readers)."""
    if coding == "gzip":
        return gzip.decompress(data)
    if coding == "deflate":
        return zlib.decompress(data)
    raise ValueError(f"no such coding: {coding}")


__all__ = ["CODERS", "choose", "decode", "encode", "weights"]
