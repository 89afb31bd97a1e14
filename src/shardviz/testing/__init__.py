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

import importlib
from typing import TYPE_CHECKING, Any

# Public name -> its module, imported when first read: the pytest plugin lives
# in this package, and a test run that never asserts a layout should not load JAX.
_LAZY = {
    "assert_collectives": "collectives",
    "CollectiveBudgetExceeded": "errors",
    "LayoutMismatch": "errors",
    "MemoryBudgetExceeded": "errors",
    "NotShardedEnough": "errors",
    "ShardvizAssertionError": "errors",
    "SnapshotChanged": "errors",
    "TreeLayoutMismatch": "errors",
    "assert_tree_layout": "tree_layout",
    "StepTimeExceeded": "errors",
    "assert_step_time": "steptime",
    "assert_layout": "layout",
    "assert_fits": "memory",
    "assert_sharded": "memory",
    "parse_bytes": "sizes",
    "SnapshotResult": "snapshot",
    "assert_collectives_snapshot": "snapshot",
    "collectives_record": "snapshot",
    "assert_no_rematerialization": "remat",
    "RematerializationFound": "remat",
}

__all__ = [
    "CollectiveBudgetExceeded",
    "LayoutMismatch",
    "MemoryBudgetExceeded",
    "NotShardedEnough",
    "RematerializationFound",
    "ShardvizAssertionError",
    "SnapshotChanged",
    "SnapshotResult",
    "StepTimeExceeded",
    "TreeLayoutMismatch",
    "assert_collectives",
    "assert_collectives_snapshot",
    "assert_fits",
    "assert_layout",
    "assert_no_rematerialization",
    "assert_sharded",
    "assert_step_time",
    "assert_tree_layout",
    "collectives_record",
    "parse_bytes",
]

if TYPE_CHECKING:
    from .collectives import assert_collectives
    from .errors import (
        CollectiveBudgetExceeded,
        LayoutMismatch,
        MemoryBudgetExceeded,
        NotShardedEnough,
        ShardvizAssertionError,
        SnapshotChanged,
        StepTimeExceeded,
        TreeLayoutMismatch,
    )
    from .layout import assert_layout
    from .memory import assert_fits, assert_sharded
    from .remat import RematerializationFound, assert_no_rematerialization
    from .sizes import parse_bytes
    from .snapshot import SnapshotResult, assert_collectives_snapshot, collectives_record
    from .steptime import assert_step_time
    from .tree_layout import assert_tree_layout


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'shardviz.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
