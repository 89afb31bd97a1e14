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


def stated(seq: int, name: str, value: str) -> dict[str, object]:
    """An edit as the front end sends it: its number, the edited trait (when the model's value
    changed) and the stated edit (js/traits/edits.ts)."""
    return {"edit_seq": seq, "edit": {"seq": seq, "name": name, "value": value}}


def test_a_stated_edit_is_taken_when_its_trait_did_not_travel() -> None:
    """The kernel's answer to an earlier edit may already have put this very text in the front
    end's model, which then sends no trait: the stated edit is the one to take (a burst of edits
    otherwise ended at the one before the last)."""
    w = make_widget()
    w.set_state({"spec_text": "y, x", **stated(1, "spec_text", "y, x")})
    w.set_state({"spec_text": "None, (x, y)", **stated(2, "spec_text", "None, (x, y)")})
    w.set_state(stated(3, "spec_text", "y, x"))
    assert (w.spec_text, w.edit_answered, w.error) == ("y, x", 3, "")
    assert w.payload["type_str"] == str(jax.typeof(w.array)) == "float32[4@y,8@x]"


def test_a_stated_edit_wins_over_an_older_value_of_its_trait_in_a_merged_message() -> None:
    """The widget manager merges a burst into one message: the trait may be an older edit's."""
    w = make_widget()
    w.set_state({"spec_text": "y, x", **stated(5, "spec_text", "None, (x, y)")})
    assert (w.spec_text, w.edit_answered) == ("None, (x, y)", 5)
    assert w.payload["type_str"] == str(jax.typeof(w.array)) == "float32[4,8@(x,y)]"


def test_a_stated_edit_of_pythons_own_text_only_ends_a_refusal() -> None:
    w = make_widget()
    w.set_state({"spec_text": "y, x", **stated(1, "spec_text", "y, x")})
    move, payload = w.move, w.payload
    w.set_state({"spec_text": "zz", **stated(2, "spec_text", "zz")})
    assert w.error_source == "spec"
    w.set_state(stated(3, "spec_text", "y, x"))
    assert (w.error, w.error_source, w.edit_answered) == ("", "", 3)
    assert (w.payload, w.move) == (payload, move)  # the picture and the last move line as they were
