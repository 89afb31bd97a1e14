"""The kernel's side of local-first editing: a numbered edit from the front end
(``edit_seq``) is answered by setting ``edit_answered`` to its number, after
every other trait the answer changed, so the front end knows it holds the
kernel's whole answer and can compare it with the one it drew itself
(js/host/liveHost.ts)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz import ShardingWidget

WATCHED = ["payload", "error", "error_source", "notice", "spec_text", "mesh_text", "memory_kind", "edit_answered"]


def recorded(widget: ShardingWidget) -> list[str]:
    """The traits the widget changes (and so syncs to the front end), in order."""
    events: list[str] = []
    widget.observe(lambda change: events.append(change["name"]), names=WATCHED)
    return events


def make_widget() -> ShardingWidget:
    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])
    x = jax.device_put(jnp.zeros((4, 8)), NamedSharding(mesh, P("x", "y")))
    return ShardingWidget(x, name="x")


def test_a_numbered_edit_is_answered_after_its_traits() -> None:
    w = make_widget()
    events = recorded(w)
    w.set_state({"spec_text": "y, x", "edit_seq": 7})
    assert w.payload["type_str"] == "float32[4@y,8@x]"
    assert w.edit_answered == 7
    assert events[-1] == "edit_answered" and "payload" in events
    assert not hasattr(w, "edit_seq")  # it travels with the edit; it is no trait


def test_a_refused_edit_is_answered_too() -> None:
    w = make_widget()
    events = recorded(w)
    w.set_state({"mesh_text": "x=", "edit_seq": 2})
    assert w.error_source == "mesh" and w.error
    assert events[-1] == "edit_answered" and "error" in events
    assert w.edit_answered == 2


def test_an_unnumbered_edit_leaves_the_answer_alone() -> None:
    w = make_widget()
    events = recorded(w)
    w.set_state({"spec_text": "y"})
    assert w.payload["type_str"] == "float32[4@y,8]"
    assert "edit_answered" not in events and w.edit_answered == 0


def test_the_front_end_cannot_write_the_answer() -> None:
    w = make_widget()
    w.set_state({"edit_answered": 99, "payload": {}})
    assert w.edit_answered == 0 and w.payload["type_str"] == "float32[4@x,8@y]"
