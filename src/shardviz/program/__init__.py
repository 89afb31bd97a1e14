"""The program engine: trace a jitted program once and read its shardings,
collectives, memory and cost. Pure: imports no widget code.

``trace`` compiles; ``Program`` is the immutable result; ``retrace`` traces
the same function again with new input shardings.
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
