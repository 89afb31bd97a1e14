"""``assert_no_rematerialization``: fail where XLA gathers a whole array on every device to reshard it.

XLA logs "[SPMD] Involuntary full rematerialization" when it cannot move an
array between two shardings efficiently; ``shardviz.trace`` catches it during
the compile and places it on the user's line (``Program.rematerializations``).
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import ShardingError
from ..program.model import ProgramData
from ..program.why.reasons import spec_text
from .errors import ShardvizAssertionError
from .messages import relative_file

__all__ = ["RematerializationFound", "assert_no_rematerialization", "rematerialization_records"]


class RematerializationFound(ShardvizAssertionError):
    """XLA gathered a whole array on every device to reshard it (an involuntary full rematerialization)."""


def assert_no_rematerialization(program: ProgramData) -> ProgramData:
    """Fail, naming each line, the array, both specs and the bytes, if XLA rematerialized an array in full."""
    __tracebackhide__ = True
    if not isinstance(program, ProgramData):
        raise ShardingError(
            f"assert_no_rematerialization checks a program traced with shardviz.trace, not {type(program).__name__}"
        )
    found = program.rematerializations
    if not found:
        return program
    lines = [f"the program {program.name} makes XLA rematerialize {len(found)} array(s) in full:"]
    for r in found:
        lines.append(f"  {r.text}")
        lines.append(f"    its collectives send {r.wire_bytes} B per device per call; XLA: {r.message[:160]}")
    lines.append(
        "lay the array out in a layout XLA can reach in steps (e.g. constrain one dimension at a time), "
        "or change the spec asked for"
    )
    raise RematerializationFound("\n".join(lines), subject=program)


def rematerialization_records(program: ProgramData, base: str | os.PathLike[str] = ".") -> list[dict[str, Any]]:
    """The program's rematerializations as a snapshot stores them (files relative to ``base``)."""
    out = []
    for r in program.rematerializations:
        where = "?" if r.source_file is None else f"{relative_file(r.source_file, base)}:{r.source_line}"
        out.append(
            {
                "where": where,
                "shape": f"{r.dtype}[{','.join(map(str, r.shape))}]",
                "from": spec_text(r.before),
                "to": spec_text(r.after),
                "bytes": r.full_bytes,
            }
        )
    return sorted(out, key=lambda r: (r["where"], r["shape"]))
