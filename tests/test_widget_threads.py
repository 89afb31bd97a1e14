"""Widgets edited from two threads at once.

JupyterLab 4 with ipykernel 7 handles widget messages on a kernel subshell,
a thread of its own, so an edit from the browser can run while a cell changes
the same widget. Each change must be whole, and a cell's write must never be
mistaken for Python's own answer to an edit.
"""

from __future__ import annotations

import threading

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz import ShardingWidget

SPECS = {"x, y": "float32[8@x,8@y]", "y, x": "float32[8@y,8@x]", "None, (x, y)": "float32[8,8@(x,y)]"}


def widget() -> ShardingWidget:
    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])
    return ShardingWidget(jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P("x", "y"))))


def test_a_cells_write_is_an_edit_even_while_another_thread_writes_quietly():
    w = widget()
    inside, leave = threading.Event(), threading.Event()

    def answering_an_edit() -> None:  # the comm thread, in the middle of Python's answer
        with w._quietly():
            inside.set()
            leave.wait(10)

    other = threading.Thread(target=answering_an_edit)
    other.start()
    assert inside.wait(10)
    try:
        w.spec_text = "y, x"  # the user's cell, meanwhile
    finally:
        leave.set()
        other.join()
    assert w.layout.type_str == "float32[8@y,8@x]" and w.error == ""
    assert str(jax.typeof(w.array)) == "float32[8@y,8@x]"


def test_edits_from_two_threads_leave_one_consistent_state():
    w = widget()
    texts = list(SPECS)
    failures: list[BaseException] = []

    def front_end() -> None:
        for i in range(60):
            w.set_state({"spec_text": texts[i % 3], "edit_seq": i + 1})

    def cell() -> None:
        try:
            for i in range(60):
                w.spec = texts[(i + 1) % 3]
        except BaseException as err:  # reported below, from the main thread
            failures.append(err)

    threads = [threading.Thread(target=front_end), threading.Thread(target=cell)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    # Whatever came last, every trait and the array agree with each other and with JAX.
    assert w.error == ""
    assert w.spec_text == w.payload["spec_text"] and w.spec_text in SPECS
    assert w.layout.type_str == SPECS[w.spec_text] == str(jax.typeof(w.array))
    assert w.edit_answered == 60


def test_a_numbered_edit_that_changes_nothing_withdraws_a_refusal():
    """Every view sends Python's own text back after a refusal as it is: the trait does not
    change, so only the edit's number (and the stated edit) arrives. The refusal ends; nothing
    else changes."""
    import jax
    import jax.numpy as jnp

    import shardviz

    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])
    x = jax.device_put(jnp.ones((8, 8)), jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("x")))
    program = shardviz.trace(lambda a: a.sum(axis=0), x)
    tree = {"w": x}
    for widget, edit in (
        (shardviz.ShardingWidget(x), {"spec_text": "zz"}),
        (shardviz.ProgramWidget(program), {"input_specs": ["q"]}),
        (shardviz.TreeWidget(tree), {"rules_text": "w = nope"}),
    ):
        payload = widget.payload
        widget.set_state({**edit, "edit_seq": 1})
        assert widget.error and widget.edit_answered == 1
        widget.set_state({"edit_seq": 2})
        assert (widget.error, widget.error_source, widget.edit_answered) == ("", "", 2)
        assert widget.payload == payload  # the picture as it was
        # As the front end sends it: the edit stated beside its number (js/traits/edits.ts).
        widget.set_state({**edit, "edit_seq": 3})
        assert widget.error
        name = next(iter(edit))
        widget.set_state({"edit_seq": 4, "edit": {"seq": 4, "name": name, "value": getattr(widget, name)}})
        assert (widget.error, widget.error_source, widget.edit_answered) == ("", "", 4)
        assert widget.payload == payload


def test_every_view_takes_a_stated_edit_whose_trait_did_not_travel():
    """The front end's model may already hold an edit's text (the kernel's answer to an earlier
    edit put it there), so only the number and the stated edit arrive: each view applies it."""
    import jax
    import jax.numpy as jnp

    import shardviz

    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])
    x = jax.device_put(jnp.ones((8, 8)), jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("x")))
    program = shardviz.trace(lambda a: a.sum(axis=0), x)
    for widget, name, first, last in (
        (shardviz.ShardingWidget(x), "spec_text", "y", "None, y"),
        (shardviz.ProgramWidget(program), "input_specs", ["y"], ["None, y"]),
        (shardviz.TreeWidget({"w": x}), "rules_text", "w = y", "w = None, y"),
    ):
        widget.set_state({name: first, "edit_seq": 1, "edit": {"seq": 1, "name": name, "value": first}})
        assert (getattr(widget, name), widget.error) == (first, ""), widget.error
        widget.set_state({"edit_seq": 2, "edit": {"seq": 2, "name": name, "value": last}})
        assert (getattr(widget, name), widget.error, widget.edit_answered) == (last, "", 2), widget.error
