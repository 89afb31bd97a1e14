"""The tree widget's state: rules edits as the front end sends them, checked
against jax.device_put results; bad rules keep the last good picture."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AbstractMesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz import TreeWidget


@pytest.fixture
def mesh():
    return jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])


@pytest.fixture
def params(mesh):
    replicated = NamedSharding(mesh, P())
    return {
        "embed": jax.device_put(jnp.ones((16, 32)), replicated),
        "layers": [{"w": jax.device_put(jnp.ones((32, 32)), replicated)} for _ in range(2)],
        "step": 0,
    }


def test_rules_edit_reshards_with_device_put_and_leaves_the_tree_alone(params, mesh):
    w = TreeWidget(params)
    arrays = [x for x in jax.tree_util.tree_leaves(params) if isinstance(x, jax.Array)]
    before = [x.sharding for x in arrays]
    w.set_state({"rules_text": "layers.*.w = None, model\nembed = data"})
    assert w.error == "" and "3 leaves re-sharded by 2 rules" in w.notice
    for layer in w.tree["layers"]:
        assert layer["w"].sharding.is_equivalent_to(NamedSharding(mesh, P(None, "model")), 2)
    assert w.tree["embed"].sharding.is_equivalent_to(NamedSharding(mesh, P("data")), 2)
    assert [x.sharding for x in arrays] == before  # the user's tree is untouched
    assert not any(x.is_deleted() for x in arrays)
    truth = shardviz.describe_tree(w.tree)
    assert w.payload["total_bytes"] == truth.total_bytes
    per_device = {d: 0 for d in range(8)}
    for leaf in jax.tree_util.tree_leaves(w.tree):
        if isinstance(leaf, jax.Array):
            for shard in leaf.addressable_shards:
                per_device[shard.device.id] += shard.data.nbytes
    assert dict(w.tree_layout.device_bytes) == per_device
    assert w.rules_text == "layers.*.w = None, model\nembed = data"
    assert "NamedSharding" in w.payload["code"] and w.payload["rules_text"] == w.rules_text


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ("layers.*.w = None, nope", r"^line 1: .*axis 'nope' is not in the mesh"),
        ("embed = data\nlayers.*.w = None, None, None", r"^line 2: .*3 entries but the array has rank 2"),
        ("embed = (data, model), model", r"^line 1: .*axis 'model' is used twice"),
        ("nothing.here = data", r"^line 1: nothing.here matches no array leaf"),
        ("embed = (", r"^line 1"),
        ("embed data", r"^line 1"),
    ],
)
def test_a_bad_rule_names_its_line_and_keeps_the_last_good_picture(params, rules, message):
    import re

    w = TreeWidget(params, rules="embed = data")
    before = dict(w.payload)
    assert w.apply_edit(rules_text=rules) is False
    assert w.error_source == "rules" and re.search(message, w.error), w.error
    assert w.payload == before and w.rules_text == "embed = data"  # the editor shows Python's rules
    w.set_state({"rules_text": ""})
    assert w.error == "" and w.tree is params


def test_a_what_if_tree_on_4096_devices():
    mesh = AbstractMesh((16, 16, 16), ("data", "fsdp", "model"))
    s = NamedSharding(mesh, P())
    tree = {"embed": jax.ShapeDtypeStruct((32768, 4096), jnp.bfloat16, sharding=s)}
    w = TreeWidget(tree, rules="embed = fsdp, model")
    expected = NamedSharding(mesh, P("fsdp", "model")).shard_shape((32768, 4096))
    assert w.tree["embed"].sharding.spec == P("fsdp", "model")
    assert w.tree_layout.leaves[0].shard_shape == expected
    assert set(w.tree_layout.device_bytes.values()) == {int(np.prod(expected)) * 2}


def test_leaf_layout_answers_the_front_end(params):
    w = TreeWidget(params)
    reply = w._answer({"kind": "leaf_layout", "leaf": 0})
    assert reply["payload"] == shardviz.describe(params["embed"]).to_json()
    assert "not an array" in w._answer({"kind": "leaf_layout", "leaf": 3})["error"]
    assert w._answer({"kind": "preview", "device": 0}) is None


def test_show_picks_the_tree_view(params):
    from shardviz.widgets.show import widget_for

    assert isinstance(widget_for(params), TreeWidget)
    assert isinstance(widget_for(shardviz.describe_tree(params)), TreeWidget)
    assert isinstance(widget_for(params["embed"]), shardviz.ShardingWidget)


def test_the_rules_code_runs_as_pasted_under_the_trees_own_name(params, mesh):
    """Pasted where the user's tree lives, the widget's code gives what the widget shows,
    and leaves the user's `params` and `mesh` as they were."""
    w = TreeWidget(params)
    w.set_state({"rules_text": "layers.*.w = None, model\nembed = data"})
    code = w.payload["code"]
    assert code.startswith("# Defines ") and "(params is left as it is)" in code
    namespace = {"params": params, "mesh": mesh}
    exec(compile(code, "<pasted>", "exec"), namespace)  # test-only: the widget's own generated source
    assert namespace["params"] is params and namespace["mesh"] is mesh
    got, want = namespace["resharded"], w.tree
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        if isinstance(b, jax.Array):
            assert a.sharding.is_equivalent_to(b.sharding, b.ndim)
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        else:
            assert a == b


def test_a_tree_with_no_name_gets_a_marked_placeholder(params):
    w = TreeWidget(dict(params), rules="embed = data")
    assert "TREE stands for your tree" in w.payload["code"]
    assert "tree_map_with_path(reshard_leaf, TREE)" in w.payload["code"]
