"""Layouts and budgets asserted in tests: ``import shardviz.testing``.

Pure: no widget code and no pytest. Each assertion returns what it checked
and raises a :class:`ShardvizAssertionError` (an AssertionError) whose
message shows the difference; bad input (a budget of the wrong type, a
collective kind or mesh axis that does not exist) raises
:class:`shardviz.ShardingError`. The pytest plugin
(``shardviz.testing.plugin``, registered as an entry point) adds
``--shardviz-html DIR`` and ``--shardviz-update`` and the
``shardviz_snapshot`` fixture; see docs/testing.md.
"""

from __future__ import annotations

from .collectives import assert_collectives
from .errors import (
    CollectiveBudgetExceeded,
    LayoutMismatch,
    MemoryBudgetExceeded,
    NotShardedEnough,
    ShardvizAssertionError,
    SnapshotChanged,
)
from .layout import assert_layout
from .memory import assert_fits, assert_sharded
from .sizes import parse_bytes
from .snapshot import SnapshotResult, assert_collectives_snapshot, collectives_record

__all__ = [
    "CollectiveBudgetExceeded",
    "LayoutMismatch",
    "MemoryBudgetExceeded",
    "NotShardedEnough",
    "ShardvizAssertionError",
    "SnapshotChanged",
    "SnapshotResult",
    "assert_collectives",
    "assert_collectives_snapshot",
    "assert_fits",
    "assert_layout",
    "assert_sharded",
    "collectives_record",
    "parse_bytes",
]
