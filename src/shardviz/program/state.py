"""The program view's edit state (pure: no widget code): the Program now traced,
and what an edit of the input specs does to it.

An edit checks each changed spec against its input (the error names the
input), then traces the program again with the inputs laid out on the new
specs (:func:`shardviz.program.retrace`: ShapeDtypeStructs on the program's
mesh, so no data is copied). A program that fails to trace or compile under
the new shardings is refused with JAX's message.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ..array.checks import check_spec, spec_from_entries
from ..array.edits import EditError
from ..array.grammar import format_spec, parse_spec
from ..errors import ShardingError
from .program import Program
from .trace import ref_refusal, retrace

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
    before: ProgramState | None = None  # the state a tried fix came from (fix_edits.py), for "back"

    @functools.cached_property
    def payload(self) -> dict[str, Any]:
        payload = self.program.to_json()
        if self.before is not None:
            payload["reasons"]["back"] = True
        return payload

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
            if layout.type_str.startswith("Ref{"):
                raise EditError(ref_refusal(path), input_source(k))
            specs.append(spec)
        if all(s is None for s in specs):
            return self, ""
        try:
            program = retrace(self.program, specs)
        except ShardingError as err:
            raise EditError(str(err), PROGRAM) from None
        return ProgramState(program, self.before), ""
