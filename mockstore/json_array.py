"""A JSON array of encoded values whose size is known before its bytes are made.

A listing is the one answer a client can make large by asking (a big
``limit``, many large pets created first), and a hundred clients that never
read their answers ask for a hundred of them. Joined first and charged to the
memory budget afterwards, each listing was 16.6 MB made before it could be
refused. A ``JsonArray`` holds the parts (the pets' encodings, which the store
keeps anyway) and their total size, so the web layer charges the size to the
connections' share (``mockstore.memory``) and answers 507 before one byte of
the body exists; ``join`` makes it only once it is paid for.

A listing small enough to go straight to the socket (at most ``SMALL`` bytes)
is joined at once: the hot path keeps getting bytes.
"""

from __future__ import annotations

# Bodies up to this size are never held for a slow reader (api.HELD_ANSWER_BYTES:
# they go to the socket's buffer whole), so they are made at once.
SMALL = 64 * 1024


class JsonArray:
    """The parts of a JSON array not yet joined, and the size the joined array will have."""

    __slots__ = ("parts", "size")

    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts
        # n parts: n - 1 commas and two brackets.
        self.size = sum(map(len, parts)) + len(parts) + 1 if parts else 2

    def __len__(self) -> int:
        return self.size

    def join(self) -> bytes:
        """The array's bytes (the parts are consumed): see ``join_array``."""
        parts, self.parts = self.parts, []
        return join_array(parts)


def join_array(parts: list[bytes]) -> bytes:
    """The JSON array of ``parts``, made in one allocation (``parts`` is consumed).

    ``b"[" + b",".join(parts) + b"]"`` copies the whole twice: 33 MB at once for
    a 16.6 MB listing. Here only the first and the last part are copied again.
    """
    if not parts:
        return b"[]"
    parts[0] = b"[" + parts[0]
    parts[-1] = parts[-1] + b"]"
    return b",".join(parts)


def array_of(parts: list[bytes], made_up_to: int = SMALL) -> bytes | JsonArray:
    """The array's bytes when it is at most ``made_up_to``, else the ``JsonArray`` to charge first.

    A store made ``made_up_to`` the largest listing it caches: a body it may keep is
    made (and charged, if held for a reader, as a made answer is), a larger one waits.
    """
    array = JsonArray(parts)
    return array.join() if array.size <= made_up_to else array


def as_bytes(body: bytes | JsonArray) -> bytes:
    """``body`` made, for a reader that holds it in process (nothing to charge)."""
    return body if type(body) is bytes else body.join()  # type: ignore[union-attr]
