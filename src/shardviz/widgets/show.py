"""``shardviz.show``: display the right widget for what it is given."""

from __future__ import annotations

from typing import Any

from ..api import kind_of
from ..kinds import KINDS
from .base import ViewWidget


def widget_for(x: Any = None, **kwargs: Any) -> ViewWidget[Any]:
    """The widget that shows ``x``: a widget as it is; a Program in the
    program view; a pytree (or a TreeLayout) in the tree view; anything else
    in the array view."""
    if isinstance(x, ViewWidget):
        if kwargs:
            raise TypeError("a widget is shown as it is; arguments such as shape= do not apply")
        return x
    widget: ViewWidget[Any] = KINDS[kind_of(x)].widget_class()(x, **kwargs)
    return widget


def show(x: Any = None, **kwargs: Any) -> ViewWidget[Any]:
    """Display a widget for ``x`` in the notebook and return it.

    ``shardviz.show(x)`` as the last line of a cell shows one widget, not
    two: the returned widget does not display itself again in that cell.
    """
    from IPython import get_ipython
    from IPython.display import display

    widget = widget_for(x, **kwargs)
    display(widget)
    shell = get_ipython()
    if shell is not None:
        widget._shown_in_this_cell = True

        def cell_done(*_: Any) -> None:
            widget._shown_in_this_cell = False
            shell.events.unregister("post_run_cell", cell_done)

        shell.events.register("post_run_cell", cell_done)
    return widget
