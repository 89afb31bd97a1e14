"""The widget base and its edit controller on a stand-in view: no JAX, so each mutant of
widgets/base.py and widgets/controller.py runs in a fraction of a second (docs/mutation.md).

The view's state is a counter with a text; every expected value is written out by hand from
the protocol in docs/payload.md (one numbered edit in, one whole ``answer`` out).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

import pytest

from shardviz import ShardingError
from shardviz.array.edits import EditError
from shardviz.widgets.base import ViewWidget, _edit_number
from shardviz.widgets.controller import GENERAL, INTERNAL, EditController


@dataclass(frozen=True)
class Count:
    value: int
    word: str = "one"

    @property
    def payload(self) -> dict[str, Any]:
        return {"kind": "count", "value": self.value}


class CountWidget(ViewWidget[Count]):
    """A view of one number: ``value_text`` sets it, ``word`` names it; "bad" and "boom" fail."""

    CONTROLS = ("value_text", "word")

    def __init__(self, state: Count) -> None:
        self.accepted: list[tuple[int, int]] = []
        self.sources: list[str] = []
        super().__init__(state)

    def _editor_texts(self, state: Count) -> dict[str, Any]:
        return {"value_text": str(state.value), "word": state.word}

    def _edit_source(self, edits: dict[str, Any]) -> str:
        source = "value" if "value_text" in edits else "word"
        self.sources.append(source)
        return source

    def _edit(self, state: Count, edits: dict[str, Any]) -> tuple[Count, str]:
        if "word" in edits:
            return replace(state, word=edits["word"]), f"named {edits['word']}"
        text = edits["value_text"]
        if text == "bad":
            raise EditError("not a number: 'bad'", "value")
        if text == "boom":
            raise KeyError("boom")
        return replace(state, value=int(text)), f"set to {text}"

    def _accepted(self, before: Count, after: Count) -> None:
        self.accepted.append((before.value, after.value))

    def _answer(self, content: dict[str, Any]) -> dict[str, Any] | None:
        return {"type": "echo", "asked": content["ask"]} if "ask" in content else None


def edit(widget: ViewWidget[Any], content: Any) -> None:
    """A custom message, as ipywidgets' comm handler delivers it."""
    widget._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


def numbered(widget: ViewWidget[Any], seq: Any, control: str, text: Any) -> None:
    edit(widget, {"type": "edit", "seq": seq, "control": control, "text": text})


# ---------------------------------------------------------------------------
# the controller


def step_to(value: int, notice: str = ""):
    return lambda state: (replace(state, value=value), notice)


def raising(err: Exception):
    def step(state: Count) -> tuple[Count, str]:
        raise err

    return step


def test_an_applied_edit_takes_its_state_and_notice_and_ends_an_error():
    ctrl = EditController(Count(1))
    assert (ctrl.state, ctrl.error, ctrl.error_source, ctrl.notice) == (Count(1), "", "", "")
    assert ctrl.attempt("value", raising(ShardingError("no"))) is False
    assert ctrl.attempt("value", step_to(2, "two")) is True
    assert (ctrl.state, ctrl.error, ctrl.error_source, ctrl.notice) == (Count(2), "", "", "two")


def test_an_edit_error_names_its_own_control_and_a_sharding_error_the_edits():
    ctrl = EditController(Count(1))
    ctrl.notice = "kept until a refusal"
    assert ctrl.attempt("value", raising(EditError("bad mesh", "mesh"))) is False
    assert (ctrl.state, ctrl.error, ctrl.error_source, ctrl.notice) == (Count(1), "bad mesh", "mesh", "")
    assert ctrl.attempt("spec", raising(ShardingError("bad spec"))) is False
    assert (ctrl.error, ctrl.error_source) == ("bad spec", "spec")


def test_any_other_exception_is_reported_as_shardviz_s_bug_and_logged(caplog):
    ctrl = EditController(Count(1))
    with caplog.at_level(logging.ERROR, logger="shardviz"):
        assert ctrl.attempt("rules", raising(ValueError("oops"))) is False
    assert ctrl.state == Count(1) and ctrl.error_source == INTERNAL == "internal"
    assert ctrl.error == (
        "shardviz failed on this edit (ValueError: oops). This is a bug in shardviz, "
        "not a problem with your input; the last good picture stays."
    )
    (logged,) = caplog.records
    assert logged.name == "shardviz" and logged.getMessage() == "shardviz failed on an edit from the rules control"
    assert logged.exc_info is not None and logged.exc_info[0] is ValueError


def test_a_step_answering_none_ends_a_refusal_and_keeps_state_and_notice():
    ctrl = EditController(Count(1))
    ctrl.attempt("value", step_to(2, "two"))
    ctrl.error, ctrl.error_source = "shown", "value"
    assert ctrl.attempt("value", lambda state: None) is True
    assert (ctrl.state, ctrl.error, ctrl.error_source, ctrl.notice) == (Count(2), "", "", "two")


def test_a_change_from_python_raises_its_refusal_and_changes_nothing():
    ctrl = EditController(Count(1))
    ctrl.error, ctrl.error_source, ctrl.notice = "old", "value", "old notice"
    with pytest.raises(ShardingError, match="no"):
        ctrl.assign(raising(ShardingError("no")))
    assert (ctrl.state, ctrl.error, ctrl.error_source, ctrl.notice) == (Count(1), "old", "value", "old notice")
    ctrl.assign(step_to(3, "three"))
    assert (ctrl.state, ctrl.error, ctrl.error_source, ctrl.notice) == (Count(3), "", "", "three")


def test_refuse_shows_a_message_and_clears_the_notice():
    ctrl = EditController(Count(1))
    ctrl.notice = "before"
    assert ctrl.refuse("unreadable", GENERAL) is None
    assert (ctrl.state, ctrl.error, ctrl.error_source, ctrl.notice) == (Count(1), "unreadable", "general", "")


# ---------------------------------------------------------------------------
# the widget: one numbered edit in, one whole answer out


@pytest.mark.parametrize(("value", "number"), [(1, 1), (7, 7), (0, None), (-1, None), (True, None), (False, None)])
def test_an_edit_number_is_a_positive_int_and_never_a_bool(value, number):
    assert _edit_number(value) == number


@pytest.mark.parametrize("value", ["3", 1.0, None, [1]])
def test_an_edit_number_of_another_type_is_none(value):
    assert _edit_number(value) is None


def answers_of(widget: ViewWidget[Any]) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    widget.observe(lambda change: seen.append(change["new"]), names=["answer"])
    return seen


def test_a_new_widget_publishes_its_state_whole_and_numbered_zero():
    w = CountWidget(Count(4))
    assert w.answer == {
        "seq": 0,
        "payload": {"kind": "count", "value": 4},
        "error": "",
        "error_source": "",
        "notice": "",
        "texts": {"value_text": "4", "word": "one"},
    }
    assert (w.state, w.payload, w.error, w.error_source, w.notice, w.answered_seq) == (
        Count(4),
        {"kind": "count", "value": 4},
        "",
        "",
        "",
        0,
    )
    assert w._text("word") == "one" and w._text("nothing") is None


def test_an_edit_is_answered_once_with_its_number_and_the_whole_new_state():
    w = CountWidget(Count(4))
    seen = answers_of(w)
    numbered(w, 3, "value_text", "9")
    assert seen == [
        {
            "seq": 3,
            "payload": {"kind": "count", "value": 9},
            "error": "",
            "error_source": "",
            "notice": "set to 9",
            "texts": {"value_text": "9", "word": "one"},
        }
    ]
    assert w.accepted == [(4, 9)] and w.answered_seq == 3 and w.sources == ["value"]


def test_an_edit_numbered_at_or_below_the_last_answered_is_dropped():
    w = CountWidget(Count(4))
    numbered(w, 5, "value_text", "9")
    seen = answers_of(w)
    numbered(w, 5, "value_text", "10")
    numbered(w, 2, "value_text", "11")
    assert seen == [] and w.state == Count(9) and w.answered_seq == 5
    numbered(w, 6, "value_text", "12")
    assert w.state == Count(12) and w.answered_seq == 6 and len(seen) == 1


@pytest.mark.parametrize("seq", [None, 0, -2, True, "4", 2.0])
def test_an_unnumbered_edit_is_ignored(seq):
    w = CountWidget(Count(4))
    seen = answers_of(w)
    numbered(w, seq, "value_text", "9")
    assert seen == [] and w.state == Count(4) and w.answered_seq == 0


@pytest.mark.parametrize(
    "message",
    [
        {"type": "edit", "seq": 1, "control": "colour", "text": "red"},
        {"type": "edit", "seq": 1, "control": "value_text"},
        {"type": "edit", "seq": 1, "text": "9"},
    ],
)
def test_an_edit_of_no_control_or_with_no_text_is_refused_by_name(message):
    w = CountWidget(Count(4))
    seen = answers_of(w)
    edit(w, message)
    control = message.get("control")
    assert len(seen) == 1 and seen[0]["seq"] == 1
    assert seen[0]["error"] == f"the widget cannot edit {control!r}" and seen[0]["error_source"] == "general"
    assert w.state == Count(4) and w.accepted == []


def test_a_refused_edit_keeps_the_state_and_texts_and_the_next_edit_ends_the_refusal():
    w = CountWidget(Count(4))
    numbered(w, 1, "value_text", "5")
    numbered(w, 2, "value_text", "bad")
    assert (w.error, w.error_source, w.notice) == ("not a number: 'bad'", "value", "")
    assert w.state == Count(5) and w.answer["texts"] == {"value_text": "5", "word": "one"} and w.answered_seq == 2
    numbered(w, 3, "value_text", "boom")
    assert w.error_source == "internal" and "KeyError: 'boom'" in w.error and w.state == Count(5)
    numbered(w, 4, "value_text", "6")
    assert (w.error, w.error_source, w.notice, w.state) == ("", "", "set to 6", Count(6))
    assert w.accepted == [(4, 5), (5, 6)]


def test_the_texts_in_force_sent_back_after_a_refusal_end_it_and_redo_nothing():
    w = CountWidget(Count(4))
    numbered(w, 1, "value_text", "bad")
    numbered(w, 2, "value_text", "4")
    assert (w.error, w.error_source, w.state, w.accepted, w.answered_seq) == ("", "", Count(4), [], 2)
    # The same text through apply_edit is an edit: it is applied again.
    assert w.apply_edit(value_text="4") is True
    assert w.notice == "set to 4" and w.accepted == [(4, 4)]


def test_an_edit_with_the_texts_in_force_for_only_some_controls_is_applied():
    w = CountWidget(Count(4))
    numbered(w, 1, "word", "one")
    assert w.accepted == [] and w.notice == ""
    numbered(w, 2, "word", "two")
    assert w.state == Count(4, "two") and w.notice == "named two"


def test_a_text_that_is_not_a_string_is_read_as_text():
    w = CountWidget(Count(4))
    numbered(w, 1, "value_text", 8)
    assert w.state == Count(8) and w.answer["texts"]["value_text"] == "8"


def test_apply_edit_answers_whether_it_applied_and_publishes_either_way():
    w = CountWidget(Count(4))
    seen = answers_of(w)
    assert w.apply_edit(value_text="bad") is False
    assert w.apply_edit(value_text="7") is True
    assert [a["error"] for a in seen] == ["not a number: 'bad'", ""] and [a["seq"] for a in seen] == [0, 0]


def test_an_applied_edit_that_keeps_the_same_state_object_is_not_accepted_again():
    class Same(CountWidget):
        def _edit(self, state: Count, edits: dict[str, Any]) -> tuple[Count, str]:
            return state, "unchanged"

    w = Same(Count(4))
    assert w.apply_edit(value_text="9") is True
    assert w.accepted == [] and w.notice == "unchanged"


def test_a_change_from_python_is_accepted_and_published_or_raises_and_changes_nothing():
    w = CountWidget(Count(4))
    seen = answers_of(w)
    w._assign(step_to(6, "from a cell"))
    assert w.accepted == [(4, 6)] and seen[-1]["payload"]["value"] == 6 and seen[-1]["notice"] == "from a cell"
    with pytest.raises(ShardingError):
        w._assign(raising(ShardingError("no")))
    assert w.state == Count(6) and len(seen) == 1 and w.accepted == [(4, 6)]


def test_set_state_takes_controls_as_one_edit_and_never_the_answer():
    w = CountWidget(Count(4))
    w.set_state({"value_text": "9", "answer": {"seq": 99, "payload": {}}})
    assert w.state == Count(9) and w.answer["seq"] == 0 and w.answer["payload"] == {"kind": "count", "value": 9}
    w.set_state({"drawn_seq": 3})
    assert w.drawn_seq == 3 and w.state == Count(9) and w.error == ""


def test_set_state_refuses_a_trait_it_cannot_read_by_name_and_applies_nothing():
    w = CountWidget(Count(4))
    seen = answers_of(w)
    w.set_state({"drawn_seq": "three", "value_text": "9"})
    assert w.state == Count(4) and w.error_source == "general"
    assert w.error.startswith("the widget received a message it cannot read: ")
    assert len(seen) == 1 and seen[0]["error"] == w.error


def test_a_request_message_is_answered_by_the_view_and_others_are_ignored(monkeypatch):
    w = CountWidget(Count(4))
    replies: list[Any] = []
    monkeypatch.setattr(w, "send", lambda content, buffers=None: replies.append(content))
    seen = answers_of(w)
    edit(w, {"type": "question", "ask": 2})
    edit(w, {"type": "question"})
    edit(w, ["not", "a", "dict"])
    edit(w, "edit")
    assert replies == [{"type": "echo", "asked": 2}] and seen == [] and w.answered_seq == 0


def test_a_view_that_defines_nothing_says_so():
    class Bare(ViewWidget[Count]):
        pass

    with pytest.raises(NotImplementedError):
        Bare(Count(1))
    bare = ViewWidget.__new__(Bare)
    for call in (lambda: bare._edit_source({}), lambda: bare._edit(Count(1), {})):
        with pytest.raises(NotImplementedError):
            call()
    assert bare._extras() == {} and bare._answer({"ask": 1}) is None
    assert bare._read_edit("x", 3) == "3" and bare._read_edit("x", "y") == "y"


def test_a_widget_displays_its_bundle_once_unless_show_already_did(monkeypatch):
    import IPython.display

    published: list[tuple[Any, Any]] = []
    monkeypatch.setattr(
        IPython.display, "publish_display_data", lambda data, metadata: published.append((data, metadata))
    )
    w = CountWidget(Count(4))
    w._ipython_display_()
    ((data, metadata),) = published
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == w.model_id
    assert isinstance(metadata, dict)
    w._shown_in_this_cell = True
    w._ipython_display_()
    assert len(published) == 1


def test_each_edited_control_is_read_by_its_own_name():
    class Named(CountWidget):
        def _read_edit(self, name: str, value: Any) -> Any:
            return value.strip() if name == "word" else super()._read_edit(name, value)

    w = Named(Count(4))
    numbered(w, 1, "word", "  two ")
    assert w.state == Count(4, "two") and w.answer["texts"]["word"] == "two"
    assert w.apply_edit(value_text=5) is True and w.state == Count(5, "two")


def test_a_bundle_in_ipywidgets_own_form_displays_with_no_metadata(monkeypatch):
    import IPython.display

    published: list[tuple[Any, Any]] = []
    monkeypatch.setattr(
        IPython.display, "publish_display_data", lambda data, metadata: published.append((data, metadata))
    )
    w = CountWidget(Count(4))
    monkeypatch.setattr(w, "_repr_mimebundle_", lambda: {"text/plain": "CountWidget"})
    w._ipython_display_()
    assert published == [({"text/plain": "CountWidget"}, {})]
