"""Where code may reach: the reports are pure functions of journal entries."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPORTS = Path(__file__).resolve().parent.parent / "mockstore" / "reports"
# The web layer and what runs it; a report module needs none of them.
FORBIDDEN = ("starlette", "httpx", "uvicorn", "mockstore.app", "mockstore.control")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted(REPORTS.glob("*.py")), ids=lambda p: p.name)
def test_a_report_module_imports_no_web_layer(path: Path) -> None:
    reached = {
        name
        for name in _imports(path)
        for forbidden in FORBIDDEN
        if name == forbidden or name.startswith(forbidden + ".")
    }
    assert not reached, f"{path.name} imports {sorted(reached)}"
