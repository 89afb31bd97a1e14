"""The program engine: trace a jitted program once and read its shardings,
collectives, memory and cost. Pure: imports no widget code.

``trace`` (``trace.py``, ``shardviz.trace``) compiles here or, with ``mesh=``,
in a what-if child (``whatif/``); ``Program`` (``program.py``) is the
immutable result, priced by ``shardviz.plan``; ``retrace`` traces the same
function again with new input shardings; ``state.py`` is the program view's
edit state. The trace goes through one sub-package per stage, each of which
says what it takes and gives: ``compiling/`` (the compile and the module read
back, joined into a Program), ``lines/`` (each value's line, name, scope and
loop pass), ``values/`` (each value's layout), ``collectives/``, ``memory/``
(every byte count), ``result/`` (payload and report), over ``hlo/`` (the
reader of XLA's text) and ``model.py`` (the data every stage fills in).
"""

from __future__ import annotations

from .model import Body, Collective, MemoryStats, ProgramData, SourceListing, SourceLocation, Total, Totals, Value
from .program import Program
from .trace import retrace, trace

__all__ = [
    "Body",
    "Collective",
    "MemoryStats",
    "Program",
    "ProgramData",
    "SourceListing",
    "SourceLocation",
    "Total",
    "Totals",
    "Value",
    "retrace",
    "trace",
]
