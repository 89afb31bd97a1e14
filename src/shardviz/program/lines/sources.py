"""Lines of source as a user knows them: a line with its text (file names: ``text/files.py``).

IPython is never imported here (it is no dependency): when a kernel has it
loaded, its compiler names the cells it ran, and ``linecache`` holds their
text as it holds a module's.
"""

from __future__ import annotations

import ast
import linecache
from functools import cache
from typing import cast


def line_text(file: str, line: int) -> str:
    """The line's text without its indentation ('' when Python cannot read it)."""
    return linecache.getline(file, line).strip()


@cache
def bound_names(text: str) -> tuple[str, ...] | None:
    """The variables a line of source binds, in order: ``h = relu(x @ w)`` -> ``('h',)``,
    ``q, k, v = split(t, 3)`` -> ``('q', 'k', 'v')``.

    ``x += 1`` and ``h: Array = f(x)`` count; starred targets, attributes,
    subscripts and lines that are not a whole statement give None.
    """
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    if len(tree.body) != 1:
        return None
    statement = tree.body[0]
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target: ast.expr = statement.targets[0]
    elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
        target = statement.target
    else:
        return None
    if isinstance(target, ast.Name):
        return (target.id,)
    if isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts):
        return tuple(e.id for e in target.elts if isinstance(e, ast.Name)) or None
    return None


def expression_columns(file: str, line: int) -> tuple[tuple[int, int], ...] | None:
    """Where each expression of a line ``a, b = f(x), g(x)`` starts and ends, as Python numbers a
    line's columns (bytes from the line's start, indentation included), one per bound name;
    None for any other line. An operation (or call) at exactly one of these is what that name binds."""
    raw = linecache.getline(file, line)
    names = bound_names(raw.strip())
    if names is None or len(names) < 2:
        return None
    statement = ast.parse(raw.strip()).body[0]  # an assignment: only its target binds several names
    value = cast(ast.Assign, statement).value
    if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != len(names):
        return None
    if any(isinstance(e, ast.Starred) for e in value.elts):
        return None
    indent = len(raw.encode()) - len(raw.lstrip().encode())
    return tuple((indent + e.col_offset, indent + (e.end_col_offset or 0)) for e in value.elts)
