"""Which paths ``mockstore record`` forwards: those under the upstream's base path, however read.

The recorder resolves a path's dot segments (RFC 3986 5.2.4) and forwards it
only if it stays under the base path (``/v1/../../admin`` would reach the
upstream's ``/admin``). But servers read paths in more ways than RFC 3986
says, and a path the recorder took for one under the base could be one
outside it for the upstream. So a path is refused (answered 404 by the proxy,
never forwarded) when it holds anything some server decodes into a dot, a
slash or a backslash, or treats as a dot segment:

* a backslash, as sent or percent-encoded (``\\``, ``%5c``): Windows servers
  and some frameworks read it as a slash;
* a percent-encoded dot or slash (``%2e``, ``%2F``), any case: a server may
  decode it before resolving;
* an encoded percent (``%25``): double encoding (``%252e``) is a dot to a
  server that decodes twice;
* percent-encoded bytes that are not well-formed UTF-8, such as overlong
  forms (``%c0%ae``, ``%e0%80%ae`` for a dot): lenient decoders take them for
  the ASCII character; and IIS's ``%u002e``;
* a character that Unicode compatibility normalisation (NFKC) turns into a
  dot or a slash (the fullwidth full stop, U+FF0E), for servers that normalise;
* a dot segment with path parameters (``..;``, ``.;x``, ``..%3b``): Tomcat
  and servers like it drop the parameters and then resolve the ``..``.

Plain dot segments that stay under the base are resolved before forwarding,
as before.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote_to_bytes

# Percent-encodings of a dot, a slash, a backslash or a percent; and IIS's %u form.
_HIDDEN = re.compile(rb"%(2e|2f|5c|25)|%u", re.IGNORECASE)
_NORMALISED_SEPARATORS = frozenset("./\\")


def _hides_a_separator(raw_path: bytes) -> bool:
    """Whether ``raw_path`` holds a dot, slash or backslash some server decodes differently."""
    if b"\\" in raw_path or _HIDDEN.search(raw_path):
        return True
    decoded = unquote_to_bytes(raw_path)
    try:
        text = decoded.decode("utf-8")  # strict: overlong forms and stray bytes fail
    except UnicodeDecodeError:
        return True
    if text.isascii():
        return False
    normalised = unicodedata.normalize("NFKC", text)
    return any(normalised.count(c) != text.count(c) for c in _NORMALISED_SEPARATORS)


def _dot_segment_with_parameters(segment: bytes) -> bool:
    """``..;x``, ``.;``, ``..%3b``: a dot segment once a server drops its parameters."""
    plain = unquote_to_bytes(segment)
    if b";" not in plain:
        return False
    return plain.split(b";", 1)[0] in (b".", b"..")


def forwarded_path(raw_path: bytes, base: str) -> bytes | None:
    """``raw_path`` with its dot segments resolved (RFC 3986 5.2.4), if it stays under ``base``.

    None for a path outside ``base`` after resolution, or one that holds
    anything a server might read as a dot, slash or backslash, or a dot
    segment with parameters (see the module's docstring).
    """
    if _hides_a_separator(raw_path):
        return None
    segments: list[bytes] = []
    parts = raw_path.split(b"/")[1:]
    for segment in parts:
        if segment == b"..":
            if segments:
                segments.pop()
        elif segment != b".":
            if _dot_segment_with_parameters(segment):
                return None
            segments.append(segment)
    resolved = b"/" + b"/".join(segments)
    if parts and parts[-1] in (b".", b"..") and not resolved.endswith(b"/"):
        resolved += b"/"
    prefix = base.encode()
    if resolved != prefix and not resolved.startswith(prefix + b"/"):
        return None
    return resolved
