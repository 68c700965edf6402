"""What a scenario load reports, and where: problems, their positions, the load's account.

``loader`` (the schema's checks) and ``yaml_reader`` (the YAML document) both
report with these; ``loader`` names them all again for its callers. The YAML
reader is imported on a document's first parse only (a start whose scenario
was read before reads none: ``mockstore.verdicts``, issue 29).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from mockstore.memory import Account

Path = tuple[str | int, ...]

# A document whose aliases expand past this many values, or past this many
# bytes of keys and values, is refused while it is being read: a "billion
# laughs" file, or a 400-byte one that expands to millions of values, must not
# take the server (or the CI) down. Expanded, a scenario may hold what it could
# hold written out (MAX_NODES values; about as many bytes as the largest file).
MAX_VALUES = 300_000
MAX_EXPANDED_BYTES = 16 * 1024 * 1024
# Nothing in a scenario nests deeper than a dozen levels; a document nested
# deeper is refused as soon as the parser gets there (YAML is composed by
# recursion, and 5,000 levels of brackets cost seconds before failing).
MAX_DEPTH = 64
# Nor does a scenario within its bounds hold more than a few hundred thousand
# values (10,000 listed pets are 90,000; 10,000 keys about as many); more is refused while
# it is being read, instead of after seconds of building what would be refused.
MAX_NODES = 300_000
# What one YAML node costs at the peak of a load (composed, built, checked
# against the schema, made into the model), measured on CPython 3.11 with
# bench/scenario_cost.py: charged to the memory budget while the document is
# read, PRICE_EVERY nodes at a time, so a load the budget cannot hold is
# refused before it is built.
NODE_COST = 1024
PRICE_EVERY = 4096
# The share of the memory budget a load in this thread draws on (None: not
# charged, as ``mockstore validate`` loads). Set with ``priced``.
_BUILD_ACCOUNT: ContextVar[Account | None] = ContextVar("mockstore_build_account", default=None)
# A value quoted in a problem is cut to this many characters: a problem names
# what is wrong, it does not copy the file into the log.
QUOTE_LIMIT = 60


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a scenario, and where."""

    file: str
    line: int
    column: int
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.path}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "path": self.path,
            "message": self.message,
        }


class ScenarioError(Exception):
    """A scenario that cannot be used, with every problem found in it."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def json_path(path: Path) -> str:
    """``("faults", 0, "match")`` -> ``$.faults[0].match``."""
    text = "$"
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


@contextmanager
def priced(account: Account) -> Iterator[None]:
    """Loads in this thread (and context) draw on ``account`` while they read a document."""
    token = _BUILD_ACCOUNT.set(account)
    try:
        yield
    finally:
        _BUILD_ACCOUNT.reset(token)


def problem_order(problem: Problem) -> tuple[int, int, str, str]:
    """Problems in file order."""
    return (problem.line, problem.column, problem.path, problem.message)


def build_account() -> Account | None:
    """The account loads in this thread (and context) draw on, if any (``priced``)."""
    return _BUILD_ACCOUNT.get()


class Marks:
    """Where each value (and each mapping key) of a document stands in its file."""

    def __init__(self) -> None:
        self.values: dict[Path, tuple[int, int]] = {}
        self.keys: dict[Path, tuple[int, int]] = {}

    def at(self, path: Path, *, key: bool = False) -> tuple[int, int]:
        """The position of ``path``'s value (or key), else of its nearest ancestor."""
        if key and path in self.keys:
            return self.keys[path]
        while path not in self.values and path:
            path = path[:-1]
        return self.values.get(path, (1, 1))


def quoted(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)``, a string cut to ``limit`` characters: a problem quotes, never copies."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value):,} characters)"
    return repr(value)
