"""The program view's widget: where a jitted program's shardings go and what
it communicates, re-traced live when an input's spec changes.

The front end edits one trait, ``input_specs``: one spec text per array
input, in the array widget's grammar. An edit checks each changed spec
against its input (the alert names the input), then traces the program again
with the inputs laid out on the new specs (:func:`shardviz.program.retrace`:
ShapeDtypeStructs on the program's mesh, so no data is copied) and redraws.
A program that fails to trace or compile under the new shardings is refused
with JAX's message; the last good picture stays.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import traitlets

from ..engine.checks import check_spec, spec_from_entries
from ..engine.edits import EditError
from ..engine.grammar import format_spec, parse_spec
from ..errors import ShardingError
from ..program.program import Program
from ..program.trace import retrace
from .base import ViewWidget

PROGRAM = "program"
# A malformed edit (not one spec text per input): no input and not the program is to blame.
GENERAL = "general"


def input_source(k: int) -> str:
    """The error source naming input ``k``'s spec editor."""
    return f"input:{k}"


@dataclass(frozen=True, eq=False)
class ProgramState:
    """What the program view shows: the Program now traced."""

    program: Program

    @functools.cached_property
    def payload(self) -> dict[str, Any]:
        return self.program.to_json()

    @property
    def input_specs(self) -> list[str]:
        return [format_spec(layout.spec) for layout in self.program.inputs]

    def with_specs(self, texts: list[str]) -> tuple[ProgramState, str]:
        current = self.input_specs
        if len(texts) != len(current):
            raise EditError(
                f"input_specs needs {len(current)} spec texts (one per array input), got {len(texts)}", GENERAL
            )
        mesh = self.program.origin.mesh if self.program.origin is not None else None
        specs: list[Any] = []
        for k, (text, layout) in enumerate(zip(texts, self.program.inputs)):
            if text == current[k]:
                specs.append(None)  # unchanged: the input keeps its sharding
                continue
            path = self.program.input_paths[k]
            try:
                entries = parse_spec(text)
                if format_spec([e or () for e in entries]) == current[k]:
                    specs.append(None)  # the same spec written another way: nothing to trace again
                    continue
                spec = spec_from_entries(entries)
                if mesh is None:
                    raise ShardingError("the program has no mesh to lay a spec out on")
                check_spec(mesh, spec, layout.shape)
            except ShardingError as err:
                raise EditError(f"{path}: {err}", input_source(k)) from None
            specs.append(spec)
        if all(s is None for s in specs):
            return self, ""
        try:
            program = retrace(self.program, specs)
        except ShardingError as err:
            raise EditError(str(err), PROGRAM) from None
        return ProgramState(program), ""


class ProgramWidget(ViewWidget[ProgramState]):
    """A live picture of a traced program: values, collectives, bytes, memory.

    ``ProgramWidget(prog)`` takes a :class:`shardviz.Program` (from
    :func:`shardviz.trace`); editing an input's spec re-traces it.
    """

    input_specs = traitlets.List(traitlets.Unicode()).tag(sync=True)

    EDITABLE = ("input_specs",)

    def __init__(self, program: Program) -> None:
        if not isinstance(program, Program):
            raise ShardingError(
                f"ProgramWidget shows a shardviz.Program, not a {type(program).__name__}; "
                "make one with shardviz.trace(f, *args)"
            )
        super().__init__(ProgramState(program))

    @property
    def program(self) -> Program:
        """The Program now shown (the last good one while an error shows)."""
        return self.state.program

    def _editor_texts(self, state: ProgramState) -> dict[str, Any]:
        return {"input_specs": state.input_specs}

    def _read_edit(self, name: str, value: Any) -> Any:
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise EditError(f"input_specs must be a list of spec texts, not {value!r}", GENERAL)
        return list(value)

    def _edit_source(self, edits: dict[str, Any]) -> str:
        return PROGRAM

    def _edit(self, state: ProgramState, edits: dict[str, Any]) -> tuple[ProgramState, str]:
        return state.with_specs(edits["input_specs"])


__all__ = ["ProgramState", "ProgramWidget"]
