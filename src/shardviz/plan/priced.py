"""What the estimate reads of a traced program, as protocols.

``shardviz.program``'s Program and Collective satisfy them; ``plan`` never
imports ``program`` (the program prices itself by calling :mod:`.estimate`), so
these name each fact the estimate reads and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..array.model import MeshInfo


class SourceLine(Protocol):
    @property
    def file(self) -> str: ...
    @property
    def line(self) -> int: ...


class Bytes(Protocol):
    """A collective's (or one operand's) bytes as one platform moves them."""

    @property
    def dtype(self) -> str: ...


class PricedPart(Protocol):
    @property
    def on_device(self) -> Bytes | None: ...
    @property
    def on_cpu(self) -> Bytes | None: ...


class PricedCollective(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def axes(self) -> tuple[str, ...] | None: ...
    @property
    def group_size(self) -> int: ...
    @property
    def groups(self) -> Sequence[Sequence[int]]: ...
    @property
    def pairs(self) -> Sequence[tuple[int, int]]: ...
    @property
    def count(self) -> int: ...
    @property
    def source(self) -> SourceLine | None: ...
    @property
    def device_result_bytes(self) -> int: ...
    @property
    def widened(self) -> bool: ...
    @property
    def on_device(self) -> Bytes | None: ...
    @property
    def on_cpu(self) -> Bytes | None: ...
    @property
    def parts(self) -> Sequence[PricedPart]: ...


class LineCost(Protocol):
    @property
    def source(self) -> SourceLine | None: ...
    @property
    def flops(self) -> float: ...


class HeldMemory(Protocol):
    @property
    def held_bytes(self) -> int: ...  # the peak: bytes live at the worst step, arguments and outputs as held


class PricedProgram(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def mesh(self) -> MeshInfo | None: ...
    @property
    def num_partitions(self) -> int: ...
    @property
    def assignment(self) -> Any: ...  # mesh position of each partition (a NumPy array), or None
    @property
    def collectives(self) -> Sequence[PricedCollective]: ...
    @property
    def flops(self) -> float | None: ...
    @property
    def matmul_flops(self) -> float | None: ...
    @property
    def line_flops(self) -> Sequence[LineCost]: ...
    @property
    def memory(self) -> HeldMemory | None: ...
    @property
    def hbm_bytes(self) -> float | None: ...
    @property
    def whatif(self) -> Any: ...  # how a what-if program was made (its ``devices``), or None
