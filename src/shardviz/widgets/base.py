"""What every shardviz widget shares: one AnyWidget with flat traits over
one bundle, wired to a plain-Python :class:`EditController`.

Python is the single source of truth. The front end writes only the view's
editable traits; Python answers with ``payload``, ``error``,
``error_source`` and ``notice``, and after every answer the editable traits
hold the state Python shows (a refused edit puts the last good text back).
An edit numbered by the front end (``edit_seq``; it draws its own engine's
answer meanwhile) is answered with ``edit_answered`` set to that number,
after every other trait the answer changed.
JupyterLab with ipykernel 7 handles widget messages on a kernel subshell, a
thread of its own, so an edit from the front end may run while a cell
changes the same widget; one lock per widget makes each change whole.
A subclass declares its editable traits, how an edit becomes a step of its
state, and the editor texts of a state; it never handles errors itself.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, ClassVar, Generic, TypeVar

import anywidget
import traitlets

from ..assets import bundle_path, bundle_text
from .controller import EditController, Step

S = TypeVar("S")

# Sent by the front end with each edit (not a trait); the ``edit_answered`` trait echoes it.
EDIT_SEQ = "edit_seq"
# Sent with each edit too: ``{"seq", "name", "value"}``, the trait it edits and the text. A model
# sends only the traits that changed, and this kernel's answer to an earlier edit may have put the
# very text in the front end's model meanwhile; a burst merged into one message may carry an older
# value of the trait beside the newest edit. So the stated edit is taken over the trait.
EDIT = "edit"


class ViewWidget(anywidget.AnyWidget, Generic[S]):
    """The shared base of ShardingWidget, ProgramWidget and TreeWidget."""

    # One bundle for every view: the front end picks the view by the payload's kind.
    _esm = bundle_text("widget.js")
    _css = bundle_text("widget.css")

    # Python writes these; a front end that sends them anyway is ignored.
    payload = traitlets.Dict().tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    error_source = traitlets.Unicode("").tag(sync=True)
    notice = traitlets.Unicode("").tag(sync=True)
    # The number of the last front-end edit answered; set last, so the front end
    # holds the whole answer when it changes (a trait, not a custom message: the
    # widget manager applies trait updates in order, but may run a custom message first).
    edit_answered = traitlets.Int(0).tag(sync=True)

    PYTHON_OWNED: ClassVar[tuple[str, ...]] = ("payload", "error", "error_source", "notice", "edit_answered")
    EDITABLE: ClassVar[tuple[str, ...]] = ()

    def __init__(self, state: S) -> None:
        bundle_path("widget.js")  # a clear message when the front end was never built
        # Edits from the front end (a comm subshell's thread) and from Python (a cell) take turns.
        self._lock = threading.RLock()
        # Per thread: Python's own writes are quiet only in the thread making them.
        self._quiet_depth = threading.local()
        super().__init__()
        self._controller: EditController[S] = EditController(state)
        self._publish()
        self.observe(self._on_editor_trait, names=list(self.EDITABLE))
        self.on_msg(self._on_custom_message)

    # ------------------------------------------------------------------
    # what a view defines

    def _editor_texts(self, state: S) -> dict[str, Any]:
        """The editable traits' values for a state, in canonical form."""
        raise NotImplementedError

    def _edit_source(self, edits: dict[str, Any]) -> str:
        """The control an edit came from (where its error shows)."""
        raise NotImplementedError

    def _edit(self, state: S, edits: dict[str, Any]) -> tuple[S, str]:
        """The state after an edit, and a notice; raises EditError or ShardingError."""
        raise NotImplementedError

    def _read_edit(self, name: str, value: Any) -> Any:
        """An edited trait's value as the view takes it; texts by default."""
        return value if isinstance(value, str) else str(value)

    def _accepted(self, before: S, after: S) -> None:
        """Called after a change is applied (from the front end or Python)."""

    def _answer(self, content: dict[str, Any]) -> dict[str, Any] | None:
        """The reply to a custom message from the front end, or None to ignore it."""
        return None

    # ------------------------------------------------------------------
    # state

    @property
    def state(self) -> S:
        return self._controller.state

    def apply_edit(self, **edits: str) -> bool:
        """Apply an edit as the front end sends it; never raises.

        Returns True when it was applied; otherwise ``error`` says why, and
        the picture, the user's data and the editors' texts stay as they were.
        """

        def step(state: S) -> tuple[S, str]:
            values = {name: self._read_edit(name, value) for name, value in edits.items()}
            return self._edit(state, values)

        with self._lock:
            before = self.state
            applied = self._controller.attempt(self._edit_source(edits), step)
            if applied:
                self._accepted(before, self.state)
            self._publish()
        return applied

    def _withdraw(self) -> None:
        """The front end went back to Python's own texts: clear a refusal, keep the state."""
        with self._lock:
            if self._controller.error:
                self._controller.withdraw()
                self._publish()

    def _assign(self, step: Step[S]) -> None:
        """A change made from Python: raise ShardingError, change nothing."""
        with self._lock:
            before = self.state
            self._controller.assign(step)
            self._accepted(before, self.state)
            self._publish()

    def _publish(self) -> None:
        ctrl = self._controller
        texts = self._editor_texts(ctrl.state)
        with self._quietly():
            for name, text in texts.items():
                setattr(self, name, text)
            self.payload = ctrl.state.payload  # type: ignore[attr-defined]
            self.error = ctrl.error
            self.error_source = ctrl.error_source
            self.notice = ctrl.notice
            if ctrl.error and texts:
                # A refused edit never reached the trait here, so setting it changed nothing and
                # sent nothing, while the front end's model still holds the refused text: send
                # the text in force, so that both sides hold it (the editor keeps the user's).
                self.send_state(list(texts))

    @property
    def _quiet(self) -> bool:
        """True while this thread writes traits on Python's behalf (not a user's edit)."""
        return getattr(self.__dict__.get("_quiet_depth"), "depth", 0) > 0

    @contextlib.contextmanager
    def _quietly(self) -> Iterator[None]:
        # Python's own trait writes must not be taken for user edits.
        depth = self._quiet_depth
        depth.depth = getattr(depth, "depth", 0) + 1
        try:
            yield
        finally:
            depth.depth -= 1

    # ------------------------------------------------------------------
    # edits arriving from the front end (or from Python through the traits)

    def set_state(self, sync_data: dict[str, Any]) -> None:
        with self._lock:
            self._set_state(sync_data)

    def _set_state(self, sync_data: dict[str, Any]) -> None:
        # Python-owned traits are never taken from the front end; edits go to
        # the view as they came (it reads and checks them), never straight
        # into a trait. Several edits in one message are one edit. The front
        # end numbers its edits; the number is echoed once the edit is answered.
        seq = sync_data.get(EDIT_SEQ)
        edits = {k: v for k, v in sync_data.items() if k in self.EDITABLE}
        edits.update(self._stated_edit(sync_data.get(EDIT), edits))
        skip = (*self.EDITABLE, *self.PYTHON_OWNED, EDIT_SEQ, EDIT)
        rest = {k: v for k, v in sync_data.items() if k not in skip}
        if rest:
            with self._quietly():
                try:
                    super().set_state(rest)
                except Exception as err:  # a malformed message must not raise into the kernel
                    self._controller.error = f"the widget received a message it cannot read: {err}"
                    self._controller.error_source = "general"
                    self._publish()
                    edits = {}
        numbered = seq if isinstance(seq, int) and not isinstance(seq, bool) else None
        if edits:
            self.apply_edit(**edits)
        elif numbered is not None and not rest:
            # A numbered edit that changes no trait: the user put Python's own text back after a
            # refusal (a model sends only changed traits). Nothing to redo; the refusal is over.
            self._withdraw()
        if numbered is not None:
            # After the traits above: the front end, which drew its own answer meanwhile,
            # now holds the kernel's, which stays (it compares the two).
            with self._quietly():
                self.edit_answered = numbered

    def _stated_edit(self, stated: Any, traits: dict[str, Any]) -> dict[str, Any]:
        """The edit a message states (see EDIT), unless it only puts back Python's own text."""
        if not isinstance(stated, dict) or stated.get("name") not in self.EDITABLE or "value" not in stated:
            return {}
        name, value = stated["name"], stated["value"]
        # Python's own text, no trait beside it: the refusal is over (handled as a bare number).
        if name not in traits and value == self._editor_texts(self.state).get(name):
            return {}
        return {name: value}

    def _on_editor_trait(self, change: dict[str, Any]) -> None:
        if not self._quiet:
            self.apply_edit(**{change["name"]: change["new"]})

    def _on_custom_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict):
            with self._lock:
                reply = self._answer(content)
            if reply is not None:
                self.send(reply)

    # ------------------------------------------------------------------
    # display

    _shown_in_this_cell = False

    def _ipython_display_(self) -> None:
        # show() already displayed this widget in the running cell; the
        # returned value at the end of the cell must not add a second view.
        if self._shown_in_this_cell:
            return
        from IPython.display import publish_display_data

        bundle = self._repr_mimebundle_()
        if bundle is not None:
            data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
            publish_display_data(data, metadata)
