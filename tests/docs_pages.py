"""The documentation as the tests read it: the pages of docs/, the README, the examples.

The site's pages include the files of ``examples/`` with a snippet line
(``--8<-- "examples/NAME"``, alone in a fenced code block) instead of copying them,
so a recipe a page shows is the file the tests run.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"
README = ROOT / "README.md"

# A fenced block holding nothing but one snippet line (indented inside an admonition),
# titled with the file it shows.
_INCLUDE = re.compile(
    r'^(?P<indent>[ \t]*)```[\w+-]+ title="(?P<title>[^"]+)"\n'
    r'(?P=indent)--8<-- "(?P<path>[^"]+)"\n(?P=indent)```$',
    re.MULTILINE,
)


def pages() -> dict[str, str]:
    """Every Markdown page of the site, by its path under docs/."""
    return {
        path.relative_to(DOCS).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(DOCS.rglob("*.md"))
    }


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def included() -> dict[str, list[str]]:
    """The files included by snippet lines, each with the pages that include it."""
    found: dict[str, list[str]] = {}
    for name, text in pages().items():
        for match in _INCLUDE.finditer(text):
            assert match["title"] == match["path"], f"{name}: titled {match['title']}"
            found.setdefault(match["path"], []).append(name)
    return found


def example_files() -> list[str]:
    """Every file of examples/, as a snippet line names it.

    Not what a recipe's tools make or keep (its .gitignore: installed packages, generated
    types, builds, reports), nor its lock file (npm writes it; a page shows package.json).
    """
    made = {"__pycache__", "node_modules", "dist", "generated", "reports"}
    return sorted(
        path.relative_to(ROOT).as_posix()
        for path in EXAMPLES.rglob("*")
        if path.is_file()
        and not made & set(path.relative_to(EXAMPLES).parts)
        and path.name not in (".gitignore", "package-lock.json")
    )


def section(text: str, heading: str) -> str:
    """The body of the Markdown section that starts with the line ``heading``.

    It ends at the next heading of the same or a higher level outside a code block.
    """
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.split("\n")
    start = lines.index(heading) + 1
    fenced = False
    for end in range(start, len(lines)):
        line = lines[end]
        if line.lstrip().startswith("```"):
            fenced = not fenced
        depth = len(line) - len(line.lstrip("#"))
        if not fenced and 0 < depth <= level and line[depth : depth + 1] == " ":
            return "\n".join(lines[start:end])
    return "\n".join(lines[start:])
