"""The program view's widget: where a jitted program's shardings go and what
it communicates, re-traced live when an input's spec changes.

The front end edits one control, ``input_specs``: one spec text per array
input, in the array widget's grammar. An edit checks each changed spec
against its input (the alert names the input), then traces the program again
with the inputs laid out on the new specs (:func:`shardviz.program.retrace`:
ShapeDtypeStructs on the program's mesh, so no data is copied) and redraws.
A program that fails to trace or compile under the new shardings is refused
with JAX's message; the last good picture stays.
"""

from __future__ import annotations

from typing import Any

from ..array.edits import EditError
from ..compare.edits import edit_notice
from ..errors import ShardingError
from ..program.fix_edits import FIX, fix_edit
from ..program.program import Program
from ..program.state import GENERAL, PROGRAM, ProgramState
from .base import ViewWidget


class ProgramWidget(ViewWidget[ProgramState]):
    """A live picture of a traced program: values, collectives, bytes, memory.

    ``ProgramWidget(prog)`` takes a :class:`shardviz.Program` (from
    :func:`shardviz.trace`); editing an input's spec re-traces it.
    """

    CONTROLS = ("input_specs", "fix")

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

    @property
    def input_specs(self) -> list[str]:
        """One spec text per array input, as the editors show them."""
        return list(self._text("input_specs") or [])

    @input_specs.setter
    def input_specs(self, specs: list[str]) -> None:
        self.apply_edit(input_specs=specs)  # as the front end's edit: a refusal shows, nothing raises

    def show_fixes(self, collective: int) -> bool:
        """Trace collective ``collective``'s fixes and show them in its reason panel, as its "Find fixes" does."""
        return self.apply_edit(fix=f"show:{collective}")

    def try_fix(self, collective: int, fix: int = 0) -> bool:
        """Show the program with that fix applied, as "Try it" does; ``back()`` returns."""
        return self.apply_edit(fix=f"try:{collective}:{fix}")

    def back(self) -> bool:
        """Return to the program a tried fix came from."""
        return self.apply_edit(fix="back")

    def _editor_texts(self, state: ProgramState) -> dict[str, Any]:
        return {"input_specs": state.input_specs, "fix": ""}

    def _read_edit(self, name: str, value: Any) -> Any:
        if name == FIX:
            if not isinstance(value, str):
                raise EditError(f"fix takes a text (show:N, try:N:K, back), not {value!r}", GENERAL)
            return value
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise EditError(f"input_specs must be a list of spec texts, not {value!r}", GENERAL)
        return list(value)

    def _edit_source(self, edits: dict[str, Any]) -> str:
        return PROGRAM

    def _edit(self, state: ProgramState, edits: dict[str, Any]) -> tuple[ProgramState, str]:
        if FIX in edits:  # the reason panel: find fixes, try one, or go back (program/fix_edits.py)
            return fix_edit(state, edits[FIX])
        after, notice = state.with_specs(edits["input_specs"])
        if after is state:
            return after, notice
        return after, edit_notice(state.program, after.program)  # which collectives the edit changed, by line


__all__ = ["ProgramState", "ProgramWidget"]
