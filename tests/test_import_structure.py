"""No import circles in shardviz, between modules or between its packages.

Every module under src/shardviz is read with ``ast`` (not imported), and every
``import`` statement counts, wherever it sits: at the top, inside a function,
under ``if TYPE_CHECKING:``. A circle hidden in a function body is still a
circle. The package graph folds modules into their top-level part (``engine``,
``text``, ``program``, ``tree``, ``widgets``, ``export``; a module at the top,
such as ``api``, is its own part), so ``array -> text -> array`` fails even
when no two single modules import each other. ``shardviz/__init__.py`` is the
public face that gathers every part; it is left out of the package graph (it
would make everything a circle through the root), but its own imports still
join the module graph.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

from shardviz.kinds import KINDS

SRC = Path(__file__).resolve().parent.parent / "src"
ROOT_PACKAGE = "shardviz"


def module_names(src: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``src/package``."""
    names = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported_modules(module: str, path: Path, known: Iterable[str]) -> set[str]:
    """The modules of the package that ``module`` imports, anywhere in its body."""
    known = set(known)
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def add(name: str) -> None:
        # ``from a.b import c`` imports a.b, and a.b.c too when c is a module.
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node)
            for alias in node.names:
                add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target)
    return found


def module_graph(src: Path, package: str) -> dict[str, set[str]]:
    names = module_names(src, package)
    return {name: imported_modules(name, path, names) for name, path in names.items()}


def part_of(module: str, package: str) -> str | None:
    """The top-level part a module belongs to (None for the package's ``__init__``)."""
    rest = module.removeprefix(package).lstrip(".")
    return rest.split(".")[0] or None


def package_graph(modules: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, targets in modules.items():
        source = part_of(name, package)
        if source is None:
            continue
        edges = graph.setdefault(source, set())
        for target in targets:
            part = part_of(target, package)
            if part is not None and part != source:
                edges.add(part)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle in ``graph`` as ``[a, b, ..., a]``, or None (depth-first search)."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_scanner_sees_every_module():
    modules = module_graph(SRC, ROOT_PACKAGE)
    for name in ("shardviz.api", "shardviz.array.describe", "shardviz.text.ansi", "shardviz.widgets.array"):
        assert name in modules
    # a relative import, an absolute one and one inside a function body all count
    assert "shardviz.array.layout" in modules["shardviz.array.describe"]
    assert "shardviz.errors" in modules["shardviz.array.describe"]


def test_no_module_circle():
    cycle = find_cycle(module_graph(SRC, ROOT_PACKAGE))
    assert cycle is None, "import circle between modules: " + " -> ".join(cycle or [])


def test_no_package_circle():
    graph = package_graph(module_graph(SRC, ROOT_PACKAGE), ROOT_PACKAGE)
    assert {"array", "text", "program", "tree", "widgets", "export"} <= set(graph)
    cycle = find_cycle(graph)
    assert cycle is None, "import circle between packages: " + " -> ".join(cycle or [])


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_planted_module_circle_is_found(tmp_path: Path):
    """A circle a -> b -> a that hides its second half in a function body."""
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from . import b\n",
            "pkg/b.py": "def late():\n    from .a import thing\n    return thing\n",
        },
    )
    assert find_cycle(module_graph(tmp_path, "pkg")) == ["pkg.a", "pkg.b", "pkg.a"]


def test_planted_package_circle_is_found(tmp_path: Path):
    """A package circle low -> high -> low where no two modules form a circle."""
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low/__init__.py": "",
            "pkg/low/base.py": "from ..high import top\n",
            "pkg/low/leaf.py": "X = 1\n",
            "pkg/high/__init__.py": "",
            "pkg/high/top.py": "import pkg.low.leaf\n",
        },
    )
    modules = module_graph(tmp_path, "pkg")
    assert find_cycle(modules) is None
    assert modules["pkg.high.top"] == {"pkg.low.leaf"}
    assert modules["pkg.low.base"] == {"pkg.high.top"}
    cycle = find_cycle(package_graph(modules, "pkg"))
    assert cycle in (["high", "low", "high"], ["low", "high", "low"])


def test_planted_package_without_circle_passes(tmp_path: Path):
    _write(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "from . import b\n", "pkg/b.py": "X = 1\n"})
    modules = module_graph(tmp_path, "pkg")
    assert find_cycle(modules) is None
    assert find_cycle(package_graph(modules, "pkg")) is None


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_widgets_named_by_the_registry_do_not_import_it_back():
    """kinds.py names each widget by module (anywidget loads on first use, not
    at ``import shardviz``); that lazy import must not close a circle either."""
    modules = module_graph(SRC, ROOT_PACKAGE)
    for kind in KINDS.values():
        module = kind.widget.partition(":")[0]
        assert module in modules, kind.widget
        assert "shardviz.kinds" not in reachable(modules, module), f"{module} imports kinds.py back"


# The program engine's stages, each at its floor: a module may import its own floor and those below.
PROGRAM_FLOORS = {
    "hlo": 0,
    "model": 0,
    "lines": 1,
    "values": 2,
    "memory": 2,
    "collectives": 3,
    "why": 3,
    "result": 3,
    "program": 4,
    "compiling": 5,
    "whatif": 6,
    "trace": 7,
    "state": 8,
    "fix_edits": 9,
}


def program_stage(module: str) -> str | None:
    """The stage of ``shardviz.program`` a module belongs to (None outside it, or for its face)."""
    rest = module.removeprefix("shardviz.program")
    if rest == module or not rest:
        return None
    return rest.lstrip(".").split(".")[0]


def upward_imports(modules: dict[str, set[str]]) -> list[str]:
    """Each import from a stage of program/ to a stage on a higher floor, as ``source -> target``."""
    return [
        f"{source} -> {target}"
        for source, targets in sorted(modules.items())
        if (low := program_stage(source)) is not None
        for target in sorted(targets)
        if (high := program_stage(target)) is not None and PROGRAM_FLOORS[high] > PROGRAM_FLOORS[low]
    ]


def test_program_stages_import_only_their_own_floor_or_below():
    """program/ is grouped by the stages a trace goes through (docs/architecture.md): reading XLA's
    text and the data at the bottom, then lines, values and memory, collectives and the result, the
    Program, the compile that joins them, and the face on top. An import up a floor names the pair."""
    modules = module_graph(SRC, ROOT_PACKAGE)
    stages = {program_stage(m) for m in modules} - {None}
    assert stages == set(PROGRAM_FLOORS), "a stage of program/ is missing from PROGRAM_FLOORS, or gone"
    assert upward_imports(modules) == []


def test_a_planted_upward_import_between_program_stages_is_named():
    """A line's frame that imported the report would read the result from below it."""
    modules = module_graph(SRC, ROOT_PACKAGE)
    modules["shardviz.program.lines.frames"] = modules["shardviz.program.lines.frames"] | {
        "shardviz.program.result.report",
        "shardviz.program.hlo.module",  # below: allowed
        "shardviz.program.lines.scopes",  # the same floor: allowed
        "shardviz.tree.describe",  # outside program/: not this test's business
    }
    assert upward_imports(modules) == ["shardviz.program.lines.frames -> shardviz.program.result.report"]
