"""What every shardviz widget shares: one AnyWidget whose whole picture is one
synced trait, ``answer``, wired to a plain-Python :class:`EditController`.

Python is the single source of truth, and the protocol is one message each
way (docs/payload.md):

- the front end sends each user edit as one custom message,
  ``{"type": "edit", "seq": n, "control": name, "text": value}``;
- Python applies it and writes ``answer`` once, whole:
  ``{"seq", "payload", "error", "error_source", "notice", "texts", ...}``
  (``seq``: the highest edit number answered; ``texts``: each control's text
  in force). A change made from a cell writes it the same way.

JupyterLab with ipykernel 7 handles widget messages on a kernel subshell, a
thread of its own, so an edit may run while a cell changes the same widget:
every change and its ``answer`` write happen under one lock per widget, so
the front end never holds half of one answer and half of another.
A subclass names its controls, how an edit becomes a step of its state, and
the texts of a state; it never handles errors itself.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar, Generic, TypeVar

import anywidget
import traitlets

from ..assets import bundle_path, bundle_text
from .controller import GENERAL, EditController, Step

S = TypeVar("S")

# The custom message's type the front end sends an edit as.
EDIT = "edit"


def _edit_number(value: Any) -> int | None:
    """An edit's number: a positive int, else None (no front end of this version sent it)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


class ViewWidget(anywidget.AnyWidget, Generic[S]):
    """The shared base of ShardingWidget, ProgramWidget and TreeWidget."""

    # One bundle for every view: the front end picks the view by the payload's kind.
    _esm = bundle_text("widget.js")
    _css = bundle_text("widget.css")

    # Everything the front end draws, written only by Python and only whole.
    answer = traitlets.Dict().tag(sync=True)
    # Written only by the front end: the last of its edits whose answer it has drawn. Python reads nothing
    # from it; hosts that re-run code when a widget's value changes (marimo) see each edit through it.
    drawn_seq = traitlets.Int(0).tag(sync=True)

    # The controls the front end edits (the keys of ``answer["texts"]``).
    CONTROLS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, state: S) -> None:
        bundle_path("widget.js")  # a clear message when the front end was never built
        # Edits from the front end (a comm subshell's thread) and from Python (a cell) take turns.
        self._lock = threading.RLock()
        self._answered = 0
        super().__init__()
        self._controller: EditController[S] = EditController(state)
        self._publish()
        self.on_msg(self._on_custom_message)

    # ------------------------------------------------------------------
    # what a view defines

    def _editor_texts(self, state: S) -> dict[str, Any]:
        """Each control's text for a state, in canonical form."""
        raise NotImplementedError

    def _edit_source(self, edits: dict[str, Any]) -> str:
        """The control an edit came from (where its error shows)."""
        raise NotImplementedError

    def _edit(self, state: S, edits: dict[str, Any]) -> tuple[S, str]:
        """The state after an edit, and a notice; raises EditError or ShardingError."""
        raise NotImplementedError

    def _read_edit(self, name: str, value: Any) -> Any:
        """An edited control's value as the view takes it; texts by default."""
        return value if isinstance(value, str) else str(value)

    def _accepted(self, before: S, after: S) -> None:
        """Called after a change is applied (from the front end or Python)."""

    def _extras(self) -> dict[str, Any]:
        """What else a view's answer carries (the array view's last move)."""
        return {}

    def _answer(self, content: dict[str, Any]) -> dict[str, Any] | None:
        """The reply to a request message from the front end, or None to ignore it."""
        return None

    # ------------------------------------------------------------------
    # state, and read views over the answer

    # Reads take the lock too: a cell reading the widget while an edit runs on the comm thread
    # waits for its answer, so it never sees the new state beside the old answer.

    @property
    def state(self) -> S:
        with self._lock:
            return self._controller.state

    @property
    def payload(self) -> dict[str, Any]:
        return dict(self._read("payload") or {})

    @property
    def error(self) -> str:
        return str(self._read("error") or "")

    @property
    def error_source(self) -> str:
        return str(self._read("error_source") or "")

    @property
    def notice(self) -> str:
        return str(self._read("notice") or "")

    @property
    def answered_seq(self) -> int:
        """The highest front-end edit number answered (0 before any)."""
        with self._lock:
            return self._answered

    def _read(self, key: str) -> Any:
        with self._lock:
            return self.answer.get(key)

    def _text(self, control: str) -> Any:
        return (self._read("texts") or {}).get(control)

    # ------------------------------------------------------------------
    # changes

    def apply_edit(self, **edits: Any) -> bool:
        """Apply an edit as the front end sends it; never raises.

        Returns True when it was applied; otherwise ``error`` says why, and
        the picture, the user's data and the controls' texts stay as they were.
        """
        with self._lock:
            applied = self._apply(edits)
            self._publish()
        return applied

    def _apply(self, edits: dict[str, Any], *, redo: bool = True) -> bool:
        """Apply an edit; with ``redo=False`` the texts in force are no edit (they only end a refusal)."""

        def step(state: S) -> tuple[S, str] | None:
            values = {name: self._read_edit(name, value) for name, value in edits.items()}
            texts = self._editor_texts(state)
            if not redo and all(texts.get(name) == value for name, value in values.items()):
                return None  # the user put Python's text back after a refusal: nothing to trace again
            return self._edit(state, values)

        before = self.state
        applied = self._controller.attempt(self._edit_source(edits), step)
        if applied and self.state is not before:
            self._accepted(before, self.state)
        return applied

    def _assign(self, step: Step[S]) -> None:
        """A change made from Python: raise ShardingError, change nothing."""
        with self._lock:
            before = self.state
            self._controller.assign(step)
            self._accepted(before, self.state)
            self._publish()

    def _publish(self) -> None:
        # One trait write: the front end gets this answer whole or not at all.
        ctrl = self._controller
        self.answer = {
            "seq": self._answered,
            "payload": ctrl.state.payload,  # type: ignore[attr-defined]
            "error": ctrl.error,
            "error_source": ctrl.error_source,
            "notice": ctrl.notice,
            "texts": self._editor_texts(ctrl.state),
            **self._extras(),
        }

    # ------------------------------------------------------------------
    # messages from the front end

    def _on_custom_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        if content.get("type") == EDIT:
            self._take_edit(content)
            return
        with self._lock:
            reply = self._answer(content)
        if reply is not None:
            self.send(reply)

    def _take_edit(self, message: dict[str, Any]) -> None:
        """One numbered edit from the front end, answered by one write of ``answer``."""
        seq, control = _edit_number(message.get("seq")), message.get("control")
        if seq is None:
            return
        with self._lock:
            if seq <= self._answered:
                return  # a later edit is already answered: this one is out of date
            self._answered = seq
            if control in self.CONTROLS and "text" in message:
                self._apply({control: message["text"]}, redo=False)
            else:
                self._controller.refuse(f"the widget cannot edit {control!r}", GENERAL)
            self._publish()

    def set_state(self, sync_data: dict[str, Any]) -> None:
        """Controls' texts in ``sync_data`` are one edit (``set_state({"spec_text": "y, x"})``);
        ``answer`` is Python's and never taken from the front end."""
        with self._lock:
            edits = {k: v for k, v in sync_data.items() if k in self.CONTROLS}
            rest = {k: v for k, v in sync_data.items() if k not in self.CONTROLS and k != "answer"}
            if rest:
                try:
                    super().set_state(rest)
                except Exception as err:  # a malformed message must not raise into the kernel
                    self._controller.refuse(f"the widget received a message it cannot read: {err}", GENERAL)
                    self._publish()
                    return
            if edits:
                self.apply_edit(**edits)

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
