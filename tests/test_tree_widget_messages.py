"""Messages the tree view's front end sends: rules edits and leaf layouts."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz import TreeWidget


def test_the_rules_in_force_sent_again_clear_a_refused_edit():
    mesh = jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])
    tree = {"embed": jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, P()))}
    w = TreeWidget(tree, rules="embed = data")
    assert w.apply_edit(rules_text="embed = nope") is False
    assert w.error.startswith("line 1: ") and w.rules_text == "embed = data"
    w._on_custom_message(w, {"type": "edit", "seq": 1, "control": "rules_text", "text": "embed = data"}, [])
    assert (w.error, w.error_source, w.rules_text) == ("", "", "embed = data")
    assert w.tree["embed"].sharding.is_equivalent_to(NamedSharding(mesh, P("data")), 2)
    # The old message that did this is gone: it is ignored, and nothing raises.
    assert w._answer({"kind": "apply_rules", "rules_text": "embed = nope"}) is None
    assert w.error == ""
