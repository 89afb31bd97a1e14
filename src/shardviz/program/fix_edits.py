"""The program view's reason panel edits (pure: no widget code): find a collective's fixes, try one, go back.

The widget's ``fix`` control takes one text: ``show:3`` traces the fixes of
collective 3 (``show:remat:0`` those of the first rematerialization),
``try:3:0`` makes fix 0 of collective 3 the program shown (``try:remat:0:1``
a rematerialization's), and ``back`` returns to the program it was tried on.
"""

from __future__ import annotations

from typing import Any

from ..array.edits import EditError
from .state import GENERAL, PROGRAM, ProgramState

FIX = "fix"


def fix_edit(state: ProgramState, text: str) -> tuple[ProgramState, str]:
    """The state after one ``fix`` control text, and a notice; EditError names what was wrong."""
    program = state.program
    words = text.split(":")
    if words == ["back"]:
        if state.before is None:
            raise EditError("there is no program to go back to: no fix was tried", GENERAL)
        return state.before, "back to the program before the fix"
    if words[0] not in ("show", "try"):
        raise EditError(f"the fix control takes show:N, try:N:K or back, not {text!r}", GENERAL)
    remat = len(words) > 1 and words[1] == "remat"
    numbers = words[2:] if remat else words[1:]
    try:
        index = int(numbers[0])
        choice = int(numbers[1]) if words[0] == "try" else None
    except (IndexError, ValueError):
        raise EditError(f"the fix control takes show:N, try:N:K or back, not {text!r}", GENERAL) from None
    fixes = _fixes(program, index, remat)
    if words[0] == "show":
        return ProgramState(program, state.before), f"{len(fixes)} fix(es) traced"
    assert choice is not None
    if not 0 <= choice < len(fixes):
        raise EditError(f"there is no fix {choice} (of {len(fixes)})", PROGRAM)
    chosen = fixes[choice]
    return ProgramState(chosen.program, state), f"tried: {chosen.summary}"


def _fixes(program: Any, index: int, remat: bool) -> tuple[Any, ...]:
    if remat:
        if not 0 <= index < len(program.rematerializations):
            raise EditError(f"there is no rematerialization {index}", GENERAL)
        return tuple(program.rematerialization_fixes(index))
    if not 0 <= index < len(program.collectives):
        raise EditError(f"there is no collective {index} (of {len(program.collectives)})", GENERAL)
    return tuple(program.collectives[index].fixes)
