"""The edit controller every view's widget shares: plain Python, no traitlets.

A view's state is an immutable object with a ``payload``; an edit is a
function from the current state to a new one (and a notice, or ``""``). The
controller runs it and keeps the last good state when it fails:

- an :class:`~shardviz.array.edits.EditError` or ``ShardingError`` is a
  refusal: its message becomes ``error`` and ``error_source`` names the
  control that caused it;
- anything else is a bug in shardviz, not a refusal: it is logged with its
  traceback and reported with ``error_source == "internal"``, so tests can
  tell the two apart. Nothing is raised into the kernel either way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, TypeVar

from ..array.edits import EditError
from ..errors import ShardingError

logger = logging.getLogger("shardviz")

INTERNAL = "internal"
GENERAL = "general"

S = TypeVar("S")
Step = Callable[[S], "tuple[S, str]"]
# A front-end edit's step may also answer None: the texts in force, nothing to redo.
EditStep = Callable[[S], "tuple[S, str] | None"]


class EditController(Generic[S]):
    """The state a view shows, and what the last edit said about itself."""

    def __init__(self, state: S) -> None:
        self.state = state
        self.error = ""
        self.error_source = ""
        self.notice = ""

    def attempt(self, source: str, step: EditStep[S]) -> bool:
        """Apply an edit from the front end; never raises. True when it was applied.

        A step answering None changes nothing but ends a refusal shown (the
        user put the texts in force back).
        """
        try:
            result = step(self.state)
        except EditError as err:
            return self._refuse(str(err), err.source)
        except ShardingError as err:
            return self._refuse(str(err), source)
        except Exception as err:
            logger.exception("shardviz failed on an edit from the %s control", source)
            return self._refuse(
                f"shardviz failed on this edit ({type(err).__name__}: {err}). This is a bug in shardviz, "
                "not a problem with your input; the last good picture stays.",
                INTERNAL,
            )
        if result is None:
            self.error = self.error_source = ""
        else:
            self._accept(*result)
        return True

    def assign(self, step: Step[S]) -> None:
        """Apply a change made from Python: a refusal raises and changes nothing."""
        new, notice = step(self.state)
        self._accept(new, notice)

    def _accept(self, state: S, notice: str) -> None:
        self.state = state
        self.error = self.error_source = ""
        self.notice = notice

    def refuse(self, message: str, source: str) -> None:
        """An edit refused before it reached the state (one the widget cannot read)."""
        self._refuse(message, source)

    def _refuse(self, message: str, source: str) -> bool:
        self.error, self.error_source, self.notice = message, source, ""
        return False
