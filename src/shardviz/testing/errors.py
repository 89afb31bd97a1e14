"""The failures ``shardviz.testing`` raises: AssertionErrors that carry what was checked.

Each carries ``subject``, the shardviz result the check read (a Layout, a
Program or a TreeLayout), so a saved page can show it (the pytest plugin's
``--shardviz-html``), and ``check``, the name of the assertion.
"""

from __future__ import annotations

from typing import Any


class ShardvizAssertionError(AssertionError):
    """A layout, budget or snapshot that does not hold; the message says what and where."""

    check = "shardviz"

    def __init__(self, message: str, *, subject: Any = None) -> None:
        super().__init__(message)
        self.subject = subject


class LayoutMismatch(ShardvizAssertionError):
    """``assert_layout``: the array is laid out unlike the expected layout."""

    check = "assert_layout"


class CollectiveBudgetExceeded(ShardvizAssertionError):
    """``assert_collectives``: a collective of a kind or over axes not allowed, or bytes over a budget."""

    check = "assert_collectives"


class MemoryBudgetExceeded(ShardvizAssertionError):
    """``assert_fits``: more bytes per device than the budget."""

    check = "assert_fits"


class NotShardedEnough(ShardvizAssertionError):
    """``assert_sharded``: too small a fraction of the tree's bytes is sharded."""

    check = "assert_sharded"


class SnapshotChanged(ShardvizAssertionError):
    """``assert_collectives_snapshot``: a line sends a collective it did not, or more of one."""

    check = "assert_collectives_snapshot"


class StepTimeExceeded(ShardvizAssertionError):
    """``assert_step_time``: the estimated step on the hardware takes longer than the budget."""

    check = "assert_step_time"
