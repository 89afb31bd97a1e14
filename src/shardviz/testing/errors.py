"""The failures ``shardviz.testing`` raises: AssertionErrors that carry what was checked.

Each carries ``subject``, the shardviz result the check read (a Layout, a
Program or a TreeLayout), so a saved page can show it (the pytest plugin's
``--shardviz-html``), ``check``, the name of the assertion, and for the page
``expected`` (the expected layout, where one can be drawn) and ``page`` (the
budget, the figure and the rows that differ).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FailurePage:
    """What a failure page shows above the picture: the budget against the figure, and a table whose
    ``marked`` rows are the ones that break it (the collectives over budget, the lines that changed)."""

    budget: str
    figure: str
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    marked: tuple[bool, ...] = ()


class ShardvizAssertionError(AssertionError):
    """A layout, budget or snapshot that does not hold; the message says what and where."""

    check = "shardviz"

    def __init__(self, message: str, *, subject: Any = None, expected: Any = None, page: Any = None) -> None:
        super().__init__(message)
        self.subject = subject
        self.expected = expected  # what the test expected, where it can be drawn (a Layout), for the page
        self.page = page  # a FailurePage: the budget, the figure and the rows that break it, for the page


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


class TreeLayoutMismatch(ShardvizAssertionError):
    """``assert_tree_layout``: leaves of a tree laid out unlike the rules or specs expected."""

    check = "assert_tree_layout"


class SnapshotChanged(ShardvizAssertionError):
    """``assert_collectives_snapshot``: a line sends a collective it did not, or more of one (strict: any change)."""

    check = "assert_collectives_snapshot"


class StepTimeExceeded(ShardvizAssertionError):
    """``assert_step_time``: the estimated step on the hardware takes longer than the budget."""

    check = "assert_step_time"
