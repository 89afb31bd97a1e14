"""``Program.memory_counts``: the memory figures by count, each worked out on first read.

``"device"`` (the program's dtypes, what ``Program.memory`` shows) is given at once;
``"cpu"`` (XLA:CPU's module, what ``with_bytes("cpu")`` shows) waits until it is asked for,
as most traces never ask; ``"xla"`` is ``memory_analysis()``'s own figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..model import Deferred, MemoryStats

Count = tuple[MemoryStats | None, Any]  # (MemoryStats, MemoryTimeline or None)


class MemoryCounts(Mapping[str, Count]):
    """Each count's (memory, timeline), read-only; a count given as a function is called on first read."""

    def __init__(self, counts: Mapping[str, Count | Callable[[], Count]]) -> None:
        self._counts = {name: Deferred(c) if callable(c) else c for name, c in counts.items()}

    def __getitem__(self, name: str) -> Count:
        count = self._counts[name]
        return count.result() if isinstance(count, Deferred) else count

    def __iter__(self) -> Iterator[str]:
        return iter(self._counts)

    def __len__(self) -> int:
        return len(self._counts)

    def worked_out(self, name: str) -> bool:
        """Whether ``name``'s figures are known yet (a count given as a function is not, until read)."""
        count = self._counts[name]
        return not isinstance(count, Deferred) or count.done

    def __repr__(self) -> str:
        return f"MemoryCounts({', '.join(self._counts)})"
