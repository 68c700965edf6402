"""The house a newcomer walks: four floors, each importing only the floors below it, no cycles.

Every module under ``mockstore/`` is on one floor of ``FLOORS``. A module may
import its own floor and the floors below, never a higher one; the import
graph (every ``import``, including those inside functions and under
``TYPE_CHECKING``) has no cycle; only the command line imports the command
line; commands never import each other. The graph is read from the source
with ``ast``, so a lazy import inside a function counts like any other.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mockstore"

# The floors, bottom up. ``pkg.*`` is a package and every module in it; any other name,
# that one module.
FLOORS: dict[int, tuple[str, ...]] = {
    # 1 domain: the rules, with no HTTP framework and no I/O beyond the state backend.
    1: (
        "mockstore.version",
        "mockstore.budget",
        "mockstore.clock",
        "mockstore.conditional",
        "mockstore.cors",
        "mockstore.encoding",
        "mockstore.error_bodies",
        "mockstore.errors",
        "mockstore.faults",
        "mockstore.headers",
        "mockstore.http_semantics",
        "mockstore.journal",
        "mockstore.journal_picks",
        "mockstore.kept_journals",
        "mockstore.keys",
        "mockstore.latency",
        "mockstore.limits",
        "mockstore.maintenance",
        "mockstore.memory",
        "mockstore.body_reserve",
        "mockstore.document",
        "mockstore.document_semantics",
        "mockstore.document_collections",
        "mockstore.profile",
        "mockstore.ratelimit",
        "mockstore.routing",
        "mockstore.runs",
        "mockstore.schemas",
        "mockstore.service",
        "mockstore.state",
        "mockstore.store",
        "mockstore.templates",
        "mockstore.json_array",
        "mockstore.ordering",
        "mockstore.pages",
        "mockstore.status_filter",
        "mockstore.intake",
        "mockstore.urls",
        "mockstore.validation",
        "mockstore.parameter_checks",
        "mockstore.verdicts",
        "mockstore.scenario.*",  # model, build, loader, source
        "mockstore.limiter.*",  # the general limiter: windows, buckets, logs, their headers
        "mockstore.reports.*",  # pure functions of journal entries
        "mockstore.shared.*",  # the state backend in Redis
    ),
    # 2 web: HTTP to the domain and back.
    2: (
        "mockstore.app",
        "mockstore.api",
        "mockstore.protocol",
        "mockstore.pipelining",
        "mockstore.fast_answer",
        "mockstore.transport",
        "mockstore.tenants",
        "mockstore.sharing",
        "mockstore.sharing_errors",
        "mockstore.shaping",
        "mockstore.control.*",
    ),
    # 3 tools: what runs a server and talks to one; know the control API and the domain.
    3: (
        "mockstore",  # the public names, loaded lazily (MockServer, Control, create_app)
        "mockstore.server",
        "mockstore.watch",
        "mockstore.clients.*",
        "mockstore.fidelity.*",
    ),
    # 4 commands: parse arguments, call the floors below, print; imported by nothing below.
    4: (
        "mockstore.__main__",
        "mockstore.cli.*",
        "mockstore.pytest_plugin",
    ),
}
# Libraries that speak HTTP: the domain knows none of them.
HTTP_LIBRARIES = ("starlette", "uvicorn", "httpx", "httptools", "h11")
# What the commands share; every other module of the cli package is one command.
CLI_SHARED = ("mockstore.cli", "mockstore.cli.args", "mockstore.cli.logs", "mockstore.cli.serving")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The module of ours that ``name`` names (a module, or the package holding it)."""
    known = modules()
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _imports(name: str) -> Iterator[tuple[str, int]]:
    """(what is imported, line) for every import statement of module ``name``, anywhere."""
    path = modules()[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                # ``from mockstore import schemas`` imports the module mockstore.schemas.
                full = f"{base}.{alias.name}"
                yield (full if full in modules() else base), node.lineno


@cache
def graph() -> dict[str, dict[str, int]]:
    """Module -> {module of ours it imports: the first line that does}."""
    edges: dict[str, dict[str, int]] = {}
    for name in modules():
        found: dict[str, int] = {}
        for imported, line in _imports(name):
            target = _resolve(imported) if imported.startswith("mockstore") else None
            if target is not None and target != name:
                found.setdefault(target, line)
        edges[name] = found
    return edges


def floor_of(name: str) -> int:
    """The floor ``name`` is on (0: on none)."""
    for level, entries in FLOORS.items():
        for entry in entries:
            package = entry.removesuffix(".*")
            if name == package or (entry.endswith(".*") and name.startswith(package + ".")):
                return level
    return 0


def cycles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(edges)))
    for node in edges:
        if node not in index:
            visit(node)
    return found


def test_every_module_is_on_a_floor() -> None:
    lost = [name for name in modules() if floor_of(name) == 0]
    assert not lost, f"put these modules on a floor of FLOORS: {lost}"


def test_the_import_graph_has_no_cycle() -> None:
    assert cycles() == []


def test_no_floor_imports_a_higher_one() -> None:
    upward = [
        f"{name} (floor {floor_of(name)}) imports {target} (floor {floor_of(target)}) "
        f"on line {line}"
        for name, targets in graph().items()
        for target, line in targets.items()
        if floor_of(target) > floor_of(name)
    ]
    assert not upward, "\n".join(upward)


def _in_cli(name: str) -> bool:
    return name == "mockstore.cli" or name.startswith("mockstore.cli.")


def test_only_the_command_line_imports_the_command_line() -> None:
    reached = [
        f"{name} imports {target}"
        for name, targets in graph().items()
        for target in targets
        if _in_cli(target) and not _in_cli(name) and name != "mockstore.__main__"
    ]
    assert not reached, reached


def test_commands_never_import_each_other() -> None:
    commands = {n for n in modules() if n.startswith("mockstore.cli.") and n not in CLI_SHARED}
    commands.discard("mockstore.cli.main")  # builds the parser from every command
    crossing = [
        f"{name} imports {target}"
        for name in commands | set(CLI_SHARED)
        for target in graph()[name]
        if target in commands
    ]
    assert not crossing, crossing


@pytest.mark.parametrize("name", [n for n in modules() if floor_of(n) == 1])
def test_the_domain_speaks_no_http(name: str) -> None:
    spoken = sorted(
        {
            imported.split(".")[0]
            for imported, _ in _imports(name)
            if imported.split(".")[0] in HTTP_LIBRARIES
        }
    )
    assert not spoken, f"{name} imports {spoken}"


def test_a_report_module_reaches_no_web_module() -> None:
    # The reports are pure functions of journal entries; the floors say so too.
    reached = [
        f"{name} imports {target}"
        for name, targets in graph().items()
        if name.startswith("mockstore.reports")
        for target in targets
        if floor_of(target) >= 2
    ]
    assert not reached, reached


def test_the_graph_sees_imports_inside_functions() -> None:
    # serve imports the app only when it runs, to keep `mockstore --help` quick.
    assert "mockstore.app" in graph()["mockstore.cli.serve"]


def test_every_package_is_installed_with_its_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = config["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    packages = {_module_name(p.parent) for p in PACKAGE.rglob("__init__.py")}
    # A folder of modules without an __init__.py imports from a checkout (a namespace
    # package) but is left out of the wheel: the container image lost mockstore.limiter.
    folders = {_module_name(p.parent) for p in PACKAGE.rglob("*.py")}
    assert folders <= packages, f"add an __init__.py to: {sorted(folders - packages)}"
    assert packages <= listed, f"add to [tool.setuptools] packages: {sorted(packages - listed)}"
    data = setuptools["package-data"]
    for package, patterns in data.items():
        folder = ROOT / setuptools.get("package-dir", {}).get(package, package.replace(".", "/"))
        for pattern in patterns:
            assert list(folder.glob(pattern)), f"{package}: {pattern} matches no file"
    for needed in ("openapi.yaml", "py.typed", "ui/*.js", "ui/*.html", "ui/*.css"):
        assert needed in data["mockstore"], needed
    assert "scenario.schema.json" in data["mockstore.scenario"]
