"""Valid verdicts kept on disk: a scenario jsonschema passed is not checked by it again.

Most of a server's start was importing jsonschema to check a scenario that had
passed the same check on the previous start (issue 29). A verdict depends only
on the scenario's data and on the code and schemas that judged it, so once a
load found no problem, a digest of both is written to the cache directory; a
later load of the same data by the same code finds it and skips jsonschema's
checks (the scenario schema, its pets, its Error bodies). The plain-code checks
of the builder still run on every load, and a scenario with any problem is never
remembered, so every refusal is still jsonschema's, with its file, line and
column.

The directory is ``$MOCKSTORE_CACHE_DIR`` (``off`` or empty: no cache), else
``$XDG_CACHE_HOME/mockstore/verdicts`` or ``~/.cache/mockstore/verdicts``. A file
read back is input: it must hold exactly the digest it is named after, or it is
ignored (and written again). The directory holds at most ``MAX_ENTRIES`` files,
so scenarios sent to the control API cannot fill a disk; past it, a new verdict
takes an older one's place. Any error reading or writing it only costs the check it would
have saved.

The same directory keeps what a valid scenario's YAML (and the packaged OpenAPI
document's) parsed into, as JSON, keyed by a digest of the text and of the code
and libraries that read it (``parsed_before``, ``keep_parsed``): a start of a
scenario read before imports no YAML parser either. Only loads that draw on no
memory account (a start's, ``mockstore validate``'s) keep one; a file read back
must carry the digest of its own content and parse as JSON, or it is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import cache
from importlib.util import find_spec
from itertools import islice
from pathlib import Path
from typing import Any

CACHE_ENV = "MOCKSTORE_CACHE_DIR"
MAX_ENTRIES = 1000
# Bumped when what a verdict covers changes in a way the identity below cannot see.
_FORMAT = b"mockstore-verdict/1\0"
_PACKAGE = Path(__file__).resolve().parent
# What judges a scenario: the checks' code and the schemas they read.
_JUDGES = (
    "scenario/scenario.schema.json",
    "openapi.yaml",
    "schemas.py",
    "clock.py",
    "scenario/loader.py",
    "scenario/build.py",
    "scenario/collections.py",
    "scenario/problems.py",
    "scenario/yaml_reader.py",
)
# The libraries that judge it (and read it): a new version may judge differently.
_LIBRARIES = ("jsonschema", "referencing", "jsonschema_specifications", "yaml")
# A parsed document kept is read back only up to this size (a scenario is at most
# limits.MAX_SCENARIO_BYTES of YAML; its JSON may be longer, never this much).
MAX_PARSED_BYTES = 64 * 1024 * 1024


def cache_directory() -> Path | None:
    """Where verdicts are kept, or None when the cache is off."""
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return None if configured.strip() in ("", "off") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mockstore" / "verdicts"


def _library_stamp(name: str) -> bytes:
    """A library's modules by name, size and change time (found without importing it)."""
    try:
        spec = find_spec(name)
    except (ImportError, ValueError):
        return name.encode() + b" missing\0"
    if spec is None or spec.origin is None:
        return name.encode() + b" missing\0"
    stamp = [name.encode(), b"\0"]
    folder = Path(spec.origin).parent
    try:
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.name.endswith(".py"):
                info = entry.stat()
                stamp.append(f"{entry.name}:{info.st_size}:{info.st_mtime_ns}\0".encode())
    except OSError:
        return name.encode() + b" unreadable\0"
    return b"".join(stamp)


@cache
def judges_identity() -> bytes:
    """A digest of the code, schemas and libraries a verdict depends on."""
    digest = hashlib.sha256(_FORMAT)
    for name in _JUDGES:
        digest.update(name.encode() + b"\0" + (_PACKAGE / name).read_bytes() + b"\0")
    for library in _LIBRARIES:
        digest.update(_library_stamp(library))
    return digest.digest()


def digest_of(data: Any) -> str:
    """The key of ``data``'s verdict: its exact value (``repr`` tells 1, 1.0 and true
    apart, as the schema's strict integers do) under the judges' identity."""
    return hashlib.sha256(
        judges_identity() + repr(data).encode("utf-8", "surrogatepass")
    ).hexdigest()


def known_valid(data: Any) -> bool:
    """True when the same judges found no problem in exactly ``data`` before."""
    folder = cache_directory()
    if folder is None:
        return False
    key = digest_of(data)
    try:
        with open(folder / key, "rb") as file:
            held = file.read(len(key) + 2)
    except (OSError, ValueError):
        return False
    return held == (key + "\n").encode()


def remember_valid(data: Any) -> None:
    """Note that the judges found no problem in ``data`` (best effort)."""
    folder = cache_directory()
    if folder is None:
        return
    key = digest_of(data)
    _write(folder, folder / key, (key + "\n").encode())


def _write(folder: Path, target: Path, content: bytes) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with os.scandir(folder) as entries:
            held = list(islice(entries, MAX_ENTRIES))
        if len(held) >= MAX_ENTRIES:
            os.unlink(held[0].path)  # full: one older entry makes room (any one)
        # Written whole under another name, then renamed: a reader never sees half a file.
        temporary = folder / f".writing-{os.getpid()}-{target.name}"
        try:
            with open(temporary, "wb") as file:
                file.write(content)
            os.replace(temporary, target)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
    except OSError:
        return


def _parsed_path(folder: Path, kind: str, source: bytes) -> Path:
    digest = hashlib.sha256(judges_identity() + kind.encode() + b"\0" + source).hexdigest()
    return folder / f"{kind}-{digest}.json"


def parsed_before(kind: str, source: bytes) -> Any:
    """The data ``source`` (YAML of ``kind``) was parsed into before, or None.

    Read back as input: the file is bounded, its first line is the digest of the
    rest, and the rest is JSON (no other decoder is trusted with it).
    """
    folder = cache_directory()
    if folder is None:
        return None
    try:
        with open(_parsed_path(folder, kind, source), "rb") as file:
            held = file.read(MAX_PARSED_BYTES + 1)
    except (OSError, ValueError):
        return None
    digest, _, payload = held.partition(b"\n")
    if len(held) > MAX_PARSED_BYTES or digest != hashlib.sha256(payload).hexdigest().encode():
        return None
    try:
        return json.loads(payload)
    except (ValueError, RecursionError):
        return None


def keep_parsed(kind: str, source: bytes, data: Any) -> None:
    """Keep what ``source`` parsed into, when JSON gives back exactly that (best effort)."""
    folder = cache_directory()
    if folder is None:
        return
    try:
        payload = json.dumps(data, separators=(",", ":")).encode()
        if repr(json.loads(payload)) != repr(data):
            return  # keys that are not strings, say: JSON would change the data
    except (ValueError, TypeError, RecursionError):
        return
    digest = hashlib.sha256(payload).hexdigest().encode()
    _write(folder, _parsed_path(folder, kind, source), digest + b"\n" + payload)


__all__ = [
    "CACHE_ENV",
    "MAX_ENTRIES",
    "cache_directory",
    "digest_of",
    "keep_parsed",
    "known_valid",
    "parsed_before",
    "remember_valid",
]
