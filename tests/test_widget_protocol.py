"""The edit protocol every live view shares (docs/payload.md): one numbered
``edit`` message from the front end, answered by one write of the ``answer``
trait. The messages here go through ipywidgets' own comm handler, as the
front end's do; the states are checked against JAX's own types.
"""

from __future__ import annotations

import threading
from typing import Any

import anywidget
import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz import ShardingWidget


def edit(widget: Any, seq: int, control: str, text: Any) -> None:
    """The front end's edit, as the comm delivers it to the widget."""
    content = {"type": "edit", "seq": seq, "control": control, "text": text}
    widget._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


def record(widget: Any) -> list[dict[str, Any]]:
    """Every ``answer`` Python writes, in order."""
    answers: list[dict[str, Any]] = []
    widget.observe(lambda change: answers.append(change["new"]), names=["answer"])
    return answers


@pytest.fixture
def x() -> jax.Array:
    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])
    return jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P("x", "y")))


SPECS = {"x, y": "float32[8@x,8@y]", "y, x": "float32[8@y,8@x]", "None, (x, y)": "float32[8,8@(x,y)]"}


def test_an_edit_is_answered_by_one_write_carrying_its_number_and_whole_state(x):
    w = ShardingWidget(x)
    answers = record(w)
    edit(w, 7, "spec_text", "y, x")
    assert len(answers) == 1
    (answer,) = answers
    assert answer["seq"] == 7 and answer["error"] == "" and answer["texts"]["spec_text"] == "y, x"
    assert answer["payload"]["type_str"] == "float32[8@y,8@x]" == str(jax.typeof(w.array))
    assert answer["texts"] == {"spec_text": "y, x", "mesh_text": "x=2, y=4", "memory_kind": "device"}
    assert set(answer) == {"seq", "payload", "error", "error_source", "notice", "texts", "move"}
    # The answer is the only synced trait Python writes: nothing else can arrive out of step with it
    # (drawn_seq is the front end's, and the edit left it alone).
    ours = set(w.keys) - set(anywidget.AnyWidget.class_trait_names(sync=True))
    assert {name for name in ours if not name.startswith("_")} == {"answer", "drawn_seq"}
    assert w.drawn_seq == 0


def test_a_refusal_repeated_is_answered_again_with_its_new_number(x):
    w = ShardingWidget(x)
    answers = record(w)
    edit(w, 1, "spec_text", "q")
    edit(w, 2, "spec_text", "q")  # the same text after its refusal: a new edit, a new answer
    assert [a["seq"] for a in answers] == [1, 2]
    assert all("axis 'q' is not in the mesh" in a["error"] and a["error_source"] == "spec" for a in answers)
    assert answers[1]["payload"] == answers[0]["payload"] and w.spec_text == "x, y"
    assert str(jax.typeof(w.array)) == "float32[8@x,8@y]"


def test_the_texts_in_force_after_a_refusal_end_it_without_redoing_anything(x):
    program = shardviz.trace(lambda a: a.sum(axis=0), x)
    for widget, control, bad in (
        (ShardingWidget(x), "spec_text", "zz"),
        (shardviz.ProgramWidget(program), "input_specs", ["q"]),
        (shardviz.TreeWidget({"w": x}, rules="w = y"), "rules_text", "w = nope"),
    ):
        payload = widget.payload
        edit(widget, 1, control, bad)
        assert widget.error and widget.answer["seq"] == 1
        held = widget.state
        edit(widget, 2, control, widget.answer["texts"][control])
        assert (widget.error, widget.error_source, widget.answer["seq"]) == ("", "", 2)
        assert widget.payload == payload and widget.state is held  # nothing traced or placed again


def test_an_edit_older_than_one_answered_changes_nothing(x):
    w = ShardingWidget(x)
    edit(w, 5, "spec_text", "y, x")
    answers = record(w)
    edit(w, 4, "spec_text", "None, (x, y)")  # arrived late: the user's newer edit stands
    assert answers == [] and w.layout.type_str == "float32[8@y,8@x]" == str(jax.typeof(w.array))


def test_a_burst_of_200_edits_ends_on_the_last_with_every_answer_whole(x):
    w = ShardingWidget(x)
    answers = record(w)
    texts = list(SPECS)
    for i in range(200):
        edit(w, i + 1, "spec_text", texts[i % 3])
    assert [a["seq"] for a in answers] == list(range(1, 201))
    for i, answer in enumerate(answers):
        assert answer["texts"]["spec_text"] == texts[i % 3] == answer["payload"]["spec_text"]
        assert answer["payload"]["type_str"] == SPECS[texts[i % 3]]
    assert w.spec_text == texts[199 % 3] and str(jax.typeof(w.array)) == SPECS[texts[199 % 3]]


def test_edits_on_a_subshell_thread_while_a_cell_changes_the_widget_leave_every_answer_whole(x):
    """ipykernel 7 runs comm messages on a subshell thread beside the cell's."""
    w = ShardingWidget(x)
    answers = record(w)
    texts = list(SPECS)
    failures: list[BaseException] = []

    def run(work: Any) -> None:
        try:
            work()
        except BaseException as err:  # reported from the main thread
            failures.append(err)

    def front_end() -> None:
        for i in range(60):
            edit(w, i + 1, "spec_text", texts[i % 3])

    def cell() -> None:
        for i in range(60):
            w.spec = texts[(i + 1) % 3]

    threads = [threading.Thread(target=run, args=(work,)) for work in (front_end, cell)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    # Each answer is one state: its text, payload and type agree, and numbers never go back.
    for answer in answers:
        assert answer["texts"]["spec_text"] == answer["payload"]["spec_text"]
        assert answer["payload"]["type_str"] == SPECS[answer["texts"]["spec_text"]]
    seqs = [a["seq"] for a in answers]
    assert seqs == sorted(seqs) and seqs[-1] == 60
    assert w.layout.type_str == SPECS[w.spec_text] == str(jax.typeof(w.array)) and w.error == ""


def test_a_cells_change_keeps_the_number_answered(x):
    w = ShardingWidget(x)
    edit(w, 3, "spec_text", "y, x")
    w.spec = P(None, ("x", "y"))
    assert w.answer["seq"] == 3 and w.answer["payload"]["type_str"] == "float32[8,8@(x,y)]"


@pytest.mark.parametrize(
    "message",
    [
        {"type": "edit", "seq": 1, "control": "payload", "text": "{}"},
        {"type": "edit", "seq": 1, "control": "spec_text"},
    ],
)
def test_an_edit_of_no_control_is_refused_by_name(x, message):
    w = ShardingWidget(x)
    w._handle_msg({"content": {"data": {"method": "custom", "content": message}}, "buffers": []})
    assert w.error_source == "general" and repr(message["control"]) in w.error
    assert w.layout.type_str == "float32[8@x,8@y]" and w.answer["seq"] == 1


@pytest.mark.parametrize("seq", [None, 0, -1, True, "3", 1.5])
def test_an_unnumbered_edit_is_ignored(x, seq):
    w = ShardingWidget(x)
    answers = record(w)
    w._handle_msg(
        {
            "content": {"data": {"method": "custom", "content": {"type": "edit", "seq": seq, "control": "spec_text"}}},
            "buffers": [],
        }
    )
    assert answers == [] and w.answer["seq"] == 0


def test_the_front_end_cannot_write_the_answer(x):
    w = ShardingWidget(x)
    w.set_state({"answer": {"seq": 99, "payload": {}, "error": "forged"}})
    assert w.answer["seq"] == 0 and w.error == "" and w.payload["type_str"] == "float32[8@x,8@y]"


def test_a_refusal_ends_the_notice_of_the_edit_before(x):
    w = ShardingWidget(x)
    edit(w, 1, "mesh_text", "x=2, model=4")  # the spec follows the rename, and says so
    assert "axis 'y' is now 'model'" in w.notice
    edit(w, 2, "spec_text", "q")
    assert w.error and w.answer["notice"] == ""
    w.spec = P("x")  # a cell's change carries no notice of an edit
    assert w.answer["notice"] == "" and w.error == ""


def test_a_sharding_error_of_an_edit_is_shown_beside_its_control():
    from shardviz.errors import ShardingError
    from shardviz.widgets.controller import EditController

    def step(_state: str) -> tuple[str, str]:
        raise ShardingError("the mesh needs 64 devices")

    controller = EditController("before")
    assert controller.attempt("mesh", step) is False
    assert (controller.state, controller.error, controller.error_source) == (
        "before",
        "the mesh needs 64 devices",
        "mesh",
    )


def test_a_text_that_is_not_a_string_is_read_as_text_and_refused_by_its_control(x):
    w = ShardingWidget(x)
    edit(w, 1, "spec_text", 42)
    assert w.error_source == "spec" and "42" in w.error and w.layout.type_str == "float32[8@x,8@y]"


def test_an_edit_numbered_as_the_last_answered_is_not_applied_twice(x):
    w = ShardingWidget(x)
    edit(w, 1, "spec_text", "y, x")
    edit(w, 1, "spec_text", "None, (x, y)")
    assert w.layout.type_str == "float32[8@y,8@x]" == str(jax.typeof(w.array))


def test_a_message_that_sets_a_widget_trait_wrongly_is_refused_by_name(x):
    w = ShardingWidget(x)
    w.set_state({"tabbable": "not a bool"})
    assert w.error_source == "general" and w.error.startswith("the widget received a message it cannot read: ")
    assert w.layout.type_str == "float32[8@x,8@y]"


def test_a_cell_reading_the_widget_while_an_edit_runs_waits_for_its_answer(x):
    w = ShardingWidget(x)
    inside, read = threading.Event(), {}
    original = w._accepted

    def slow_accept(before: Any, after: Any) -> None:  # the edit is half done: state new, answer old
        inside.set()
        threading.Event().wait(0.5)
        original(before, after)

    w._accepted = slow_accept  # type: ignore[method-assign]
    comm = threading.Thread(target=edit, args=(w, 1, "spec_text", "y, x"))
    comm.start()
    assert inside.wait(10)
    read["type"], read["spec_text"], read["seq"] = w.layout.type_str, w.spec_text, w.answered_seq
    comm.join()
    assert read == {"type": "float32[8@y,8@x]", "spec_text": "y, x", "seq": 1}


def test_the_front_ends_drawn_seq_changes_nothing_python_shows():
    """drawn_seq is the front end's word that it drew an answer (for hosts such as marimo that re-run cells
    on a widget's value); Python takes nothing from it."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    import shardviz

    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])
    w = shardviz.ShardingWidget(jax.device_put(jnp.ones((4, 8)), NamedSharding(mesh, P("x", "y"))))
    before = dict(w.answer)
    w.set_state({"drawn_seq": 7})
    assert w.drawn_seq == 7 and w.answer == before and w.error == ""
