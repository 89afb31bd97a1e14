"""The program engine: trace a jitted program once and read its shardings,
collectives, memory and cost. Pure: imports no widget code.

``trace`` (``trace.py``, ``shardviz.trace``) compiles here (``compiling.py``:
the arguments checked and named in ``arguments.py``; the compiled program
read back in ``assemble.py``, its inputs and outputs in ``inputs_outputs.py``,
its collectives in ``collectives.py``) or, with ``mesh=``, in a what-if child
(``whatif/``); ``Program`` (``program.py``) is the immutable result, priced by
``shardviz.plan``; ``retrace`` traces the same function again with new input
shardings.
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
