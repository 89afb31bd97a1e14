"""The functions a program runs, each as its own block of source, and the calls between them.

Every call chain the program records (a value's or collective's stack,
innermost first) passes through functions of the user's: ``train_step`` calls
``loss_fn`` on one line, which calls ``mlp``, which calls ``dense``. A source
view shows each of them as a block of its own lines; a call site links to the
block of the function it calls. A function's extent is read from its file's
syntax tree (the innermost ``def`` or ``lambda`` around the line), its text
from ``linecache`` (which holds notebook cells too).
"""

from __future__ import annotations

import ast
import linecache
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..model import SourceLocation
from .frames import is_user_file

MAX_BLOCK_LINES = 400  # a block longer than this keeps only the lines something is on


@dataclass(frozen=True)
class SourceBlock:
    """One function's source: ``name`` as the frames call it, its first line and its lines' text."""

    file: str
    name: str
    first_line: int
    lines: tuple[str, ...]


@lru_cache(maxsize=256)
def _functions(file: str, size: int) -> tuple[tuple[int, int, str], ...]:
    """``(first line, last line, name)`` of every function and lambda in a file, by its syntax tree."""
    text = "".join(linecache.getlines(file))
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
            name = getattr(node, "name", "<lambda>")
            out.append((first, node.end_lineno or node.lineno, name))
    return tuple(out)


def enclosing(file: str, line: int) -> tuple[int, int, str] | None:
    """The innermost function around ``file:line``, or None (module level, unreadable)."""
    found = [f for f in _functions(file, len(linecache.getlines(file))) if f[0] <= line <= f[1]]
    return min(found, key=lambda f: f[1] - f[0]) if found else None


class Blocks:
    """Source blocks and call sites gathered from call chains."""

    def __init__(self) -> None:
        self.index: dict[tuple[str, int], int] = {}
        self.blocks: list[SourceBlock] = []
        self.calls: dict[tuple[int, int], set[int]] = {}  # (caller block, line) -> callee blocks

    def block_of(self, frame: SourceLocation) -> int | None:
        found = enclosing(frame.file, frame.line)
        if found is None:
            return None
        key = (frame.file, found[0])
        if key not in self.index:
            first, last, name = found
            text = tuple(linecache.getline(frame.file, k).rstrip("\n") for k in range(first, last + 1))
            if len(text) > MAX_BLOCK_LINES:
                text = text[:MAX_BLOCK_LINES]
            self.index[key] = len(self.blocks)
            self.blocks.append(SourceBlock(frame.file, frame.function.rsplit(".", 1)[-1] or name, first, text))
        return self.index[key]

    def add_chain(self, stack: Sequence[SourceLocation], last: Callable[[SourceLocation], bool]) -> None:
        """Record the blocks of a chain's user frames (innermost first) and each call between them,
        ending at the frame ``last`` accepts (a line of the traced function itself)."""
        mine = [f for f in stack if is_user_file(f.file)]
        callee: int | None = None
        for frame in mine:
            block = self.block_of(frame)
            if block is not None and callee is not None and block != callee:
                self.calls.setdefault((block, frame.line), set()).add(callee)
            callee = block
            if last(frame):
                break
