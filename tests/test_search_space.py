"""The search's space without tracing: meshes factor the devices (model inside a GPU node), each
strategy's rules lay the arguments out as its kind says (checked with JAX's own shard shapes), and
the optimizer state follows its parameter or ZeRO-1."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.sharding import AbstractMesh, NamedSharding, PartitionSpec

from shardviz.plan.hardware import hardware_named
from shardviz.search.space import factorizations, leaves_of, plans
from shardviz.tree.rules import apply_rules


def _args():
    s = jax.ShapeDtypeStruct
    params = {
        "embed": s((1024, 64), jnp.bfloat16),  # vocab x d_model
        "w_in": s((64, 256), jnp.bfloat16),
        "w_out": s((256, 64), jnp.bfloat16),
        "experts_w": s((8, 64, 256), jnp.bfloat16),  # stacked experts
        "scale": s((64,), jnp.float32),
    }
    moments = {k: s(v.shape, jnp.float32) for k, v in params.items()}
    return params, moments, s((32, 64), jnp.bfloat16)


def _shards(plan):
    mesh = AbstractMesh(tuple(n for _, n in plan.axes), tuple(a for a, _ in plan.axes))
    laid = apply_rules(_args(), plan.rules, mesh=mesh).tree
    flat = jax.tree_util.tree_flatten_with_path(laid)[0]
    out = {}
    for path, x in flat:
        sharding = x.sharding if isinstance(x.sharding, NamedSharding) else NamedSharding(mesh, PartitionSpec())
        out[jax.tree_util.keystr(path)] = sharding.shard_shape(x.shape)  # JAX's own block per device
    return out


def _plan(name, devices=8, hw="tpu-v5p"):
    leaves = leaves_of(_args(), (0,), (1,))
    found, _ = plans(leaves, devices, hardware_named(hw))
    return next(p for p in found if p.name == name)


def test_meshes_factor_the_devices_and_gpus_keep_model_inside_a_node():
    tpu = factorizations(16, hardware_named("tpu-v5p"))
    assert sorted(tpu) == sorted((d, f, m) for m in (1, 2, 4, 8, 16) for f in (1, 2, 4, 8, 16) for d in (1, 2, 4, 8, 16)
                                 if d * f * m == 16)  # fmt: skip
    gpu = factorizations(32, hardware_named("h100"))
    assert all(8 % m == 0 for _, _, m in gpu) and {m for _, _, m in gpu} == {1, 2, 4, 8}
    assert all(math.prod(t) == 32 for t in gpu)


def test_megatron_pairs_fsdp_and_experts_as_jax_lays_them_out():
    shards = _shards(_plan("fsdp4-model2"))
    assert shards["[0]['w_in']"] == (64 // 4, 256 // 2)  # in-projection: F over model, D over fsdp
    assert shards["[0]['w_out']"] == (256 // 2, 64 // 4)  # out-projection: F over model on its input side
    assert shards["[0]['embed']"] == (1024 // 2, 64 // 4)  # vocab x d_model: Megatron's vocab split
    assert shards["[0]['experts_w']"] == (8 // 2, 64, 256 // 4)  # experts over model, FSDP on the largest left
    assert shards["[0]['scale']"] == (64 // 4,)
    assert shards["[2]"] == (32 // 4, 64)  # the batch over fsdp


def test_optimizer_state_follows_its_parameter_or_zero_1_over_data():
    same = _shards(_plan("data2-fsdp4"))
    zero1 = _shards(_plan("data2-fsdp4 zero-1"))
    assert same["[1]['w_in']"] == same["[0]['w_in']"] == (64, 256 // 4)
    assert zero1["[0]['w_in']"] == (64, 256 // 4)
    assert math.prod(zero1["[1]['w_in']"]) == math.prod(same["[1]['w_in']"]) // 2  # also split over data
    assert _plan("data2-fsdp4 zero-1").device_bytes() < _plan("data2-fsdp4").device_bytes()


def test_a_sequence_axis_only_where_the_batch_has_a_sequence_dimension():
    from shardviz.search.space import mesh_sizes

    hw = hardware_named("tpu-v5p")
    s = jax.ShapeDtypeStruct
    params = {"w_in": s((64, 256), jnp.bfloat16), "w_out": s((256, 64), jnp.bfloat16)}
    flat, _ = plans(leaves_of((params, s((32, 64), jnp.bfloat16)), (0,), ()), 16, hw)
    assert all("sequence" not in dict(p.axes) for p in flat)
    sequences = (params, s((4, 128, 64), jnp.bfloat16), s((4, 128), jnp.int32))  # activations and labels
    found, dropped = plans(leaves_of(sequences, (0,), ()), 16, hw)
    # every (data, fsdp, sequence, model) of 16 with at most three axes past 1
    every = [(d, f, q, m) for d in (1, 2, 4, 8, 16) for f in (1, 2, 4, 8, 16) for q in (1, 2, 4, 8, 16)
             for m in (1, 2, 4, 8, 16) if d * f * q * m == 16 and sum(n > 1 for n in (d, f, q, m)) <= 3]  # fmt: skip
    assert sorted(mesh_sizes(16, hw, sequence=True)) == sorted(every)
    assert (2, 2, 2, 2) not in mesh_sizes(16, hw, sequence=True)
    plan = next(p for p in found if p.name == "fsdp4-sequence4")
    mesh = AbstractMesh(tuple(n for _, n in plan.axes), tuple(a for a, _ in plan.axes))
    laid = jax.tree.leaves(apply_rules(sequences, plan.rules, mesh=mesh).tree)
    blocks = [x.sharding.shard_shape(x.shape) for x in laid]
    assert blocks[2:] == [(4 // 4, 128 // 4, 64), (4 // 4, 128 // 4)]  # JAX's own block per device
    # a sequence the axis does not divide is pruned, saying which
    odd = (params, s((16, 6, 64), jnp.bfloat16))
    _, dropped = plans(leaves_of(odd, (0,), ()), 16, hw)
    assert any(d.name == "sequence4-model4" and "its sequence over 4" in d.reason for d in dropped)


def _leaf(path, shape, role="param", itemsize=2, argnum=0):
    from shardviz.search.space import Leaf

    return Leaf(path, tuple(shape), itemsize, role, argnum)


def test_d_model_is_the_batchs_feature_dimension_else_the_one_most_matrices_share():
    from shardviz.search.space import residual_width

    w_in, w_out = _leaf("0.w_in", (64, 256)), _leaf("0.w_out", (256, 64))
    # 64 and 256 are met twice each; the batch's features say which one is d_model
    assert residual_width([w_in, w_out, _leaf("1", (32, 256), "batch", argnum=1)]) == 256
    assert residual_width([w_in, w_out, _leaf("1", (32, 64), "batch", argnum=1)]) == 64
    # no batch feature among them: the one most matrices share, the smaller on a tie
    assert residual_width([w_in, w_out, _leaf("1", (32, 7), "batch", argnum=1)]) == 64
    assert residual_width([w_in, w_out, _leaf("0.w_q", (256, 256))]) == 256
    # the last two dimensions of a stacked weight count, vectors and the optimizer's leaves do not
    assert residual_width([_leaf("0.e", (8, 32, 16)), _leaf("0.b", (16,)), _leaf("1.mu", (99, 99), "optimizer")]) == 16
    assert residual_width([_leaf("0.b", (16,))]) is None


def test_an_out_projection_by_its_output_or_by_its_name():
    from shardviz.search.space import _is_out_projection

    assert _is_out_projection(_leaf("0.w", (256, 64)), 64)
    assert not _is_out_projection(_leaf("0.w", (64, 256)), 64)
    for name in ("wo", "o_proj", "down", "w2", "fc2", "proj_out", "dense_out", "attn_out"):
        assert _is_out_projection(_leaf(f"0.layer.{name}", (64, 64)), 64), name
    # the name is the path's last part, any case
    assert _is_out_projection(_leaf("0.layer.Out", (64, 64)), 64)
    assert not _is_out_projection(_leaf("0.out.q", (64, 64)), 64)
    assert not _is_out_projection(_leaf("0.layer.query", (64, 64)), 64)


def test_each_parameters_strategy_and_where_nothing_divides():
    from shardviz.search.space import param_strategy

    sizes = {"data": 1, "fsdp": 4, "sequence": 1, "model": 2}
    cases = {
        # in-projection: its output dimension over model, then FSDP on the largest left
        "0.w_in": ((64, 256), ((("fsdp",), ("model",))), "tensor-in+fsdp"),
        "0.w_out": ((256, 64), ((("model",), ("fsdp",))), "tensor-out+fsdp"),
        # stacked experts over model on the expert dimension (a path naming moe)
        "0.moe.w": ((8, 64, 256), ((("model",), (), ("fsdp",))), "expert+fsdp"),
        # experts that model does not divide are left whole on that dimension, and split no other
        "0.experts": ((3, 64, 256), ((), (), ("fsdp",)), "fsdp"),
        # a matrix whose split dimension model does not divide: FSDP alone
        "0.odd": ((64, 255), ((("fsdp",), ())), "fsdp"),
        # a vector: FSDP only; one nothing divides: replicated
        "0.scale": ((64,), ((("fsdp",),)), "fsdp"),
        "0.bias": ((6,), ((),), "replicated"),
        # of two equal dimensions FSDP takes the first
        "0.sq_in": ((64, 64), ((("fsdp",), ("model",))), "tensor-in+fsdp"),
    }
    for path, (shape, dims, kind) in cases.items():
        s = param_strategy(_leaf(path, shape), sizes, 64)
        assert (s.dims, s.kind) == (dims, kind), path
        assert s.split(sizes) == math.prod(sizes[a] for d in dims for a in d)
    # on a mesh without model or fsdp nothing splits
    plain = param_strategy(_leaf("0.w_in", (64, 256)), {"data": 8, "fsdp": 1, "sequence": 1, "model": 1}, 64)
    assert (plain.dims, plain.kind) == (((), ()), "replicated")
    # FSDP's dimension must hold the axis: 2 rows do not split over 4
    tiny = param_strategy(_leaf("0.t", (2, 8)), sizes | {"model": 1}, 64)
    assert tiny.dims == ((), ("fsdp",))


def test_the_batch_and_the_optimizer_state_on_a_mesh():
    from shardviz.search.space import Strategy, batch_strategy, optimizer_strategy

    sizes = {"data": 2, "fsdp": 2, "sequence": 1, "model": 2}
    assert batch_strategy(_leaf("1", (8, 64), "batch"), sizes).dims == (("data", "fsdp"), ())
    assert batch_strategy(_leaf("1", (6, 64), "batch"), sizes) is None  # 6 rows over 4
    assert batch_strategy(_leaf("1", (), "batch"), sizes).kind == "replicated"
    assert batch_strategy(_leaf("1", (8,), "batch"), {**sizes, "data": 1, "fsdp": 1}).dims == ((),)
    w = Strategy(_leaf("0.w", (64, 256)), (("fsdp",), ("model",)), "tensor-in+fsdp")
    v = Strategy(_leaf("0.v", (64, 256)), ((), ()), "replicated")
    # matched by shape and the path's last part, else the first of its shape
    mu = optimizer_strategy(_leaf("1.mu.w", (64, 256), "optimizer", 4), [v, w], sizes, False)
    assert (mu.dims, mu.kind) == ((("fsdp",), ("model",)), "with its parameter")
    other = optimizer_strategy(_leaf("1.mu.x", (64, 256), "optimizer", 4), [v, w], sizes, False)
    assert other.dims == ((), ())
    # ZeRO-1: data too, on the dimension with most left after the parameter's split (64/2 > 256/2? no)
    zero = optimizer_strategy(_leaf("1.mu.w", (64, 256), "optimizer", 4), [w], sizes, True)
    assert (zero.dims, zero.kind) == ((("fsdp",), ("data", "model")), "zero-1")
    wide = Strategy(_leaf("0.w", (512, 256)), (("fsdp",), ("model",)), "tensor-in+fsdp")
    zero_wide = optimizer_strategy(_leaf("1.w", (512, 256), "optimizer", 4), [wide], sizes, True)
    assert zero_wide.dims == (("data", "fsdp"), ("model",))  # 512 / 2 = 256 left beats 256 / 2 = 128
    # no parameter of its shape: replicated, and ZeRO-1 splits it over data alone
    lone = optimizer_strategy(_leaf("1.count", (6,), "optimizer", 4), [w], sizes, True)
    assert (lone.dims, lone.kind) == ((("data",),), "zero-1")
    odd = optimizer_strategy(_leaf("1.c", (3,), "optimizer", 4), [w], sizes, True)
    assert (odd.dims, odd.kind) == (((),), "with its parameter")  # 3 does not split over data 2
    scalar = optimizer_strategy(_leaf("1.n", (), "optimizer", 4), [w], sizes, True)
    assert (scalar.dims, scalar.kind) == ((), "with its parameter")
    no_data = optimizer_strategy(_leaf("1.mu.w", (64, 256), "optimizer", 4), [w], sizes | {"data": 1}, True)
    assert no_data.kind == "with its parameter"


def test_the_space_names_its_plans_and_what_it_drops():
    hw = hardware_named("tpu-v5p")
    s = jax.ShapeDtypeStruct
    params = {"w_in": s((64, 256), jnp.bfloat16), "w_out": s((256, 64), jnp.bfloat16)}
    moments = {k: s(v.shape, jnp.float32) for k, v in params.items()}
    found, dropped = plans(leaves_of((params, moments, s((6, 64), jnp.bfloat16)), (0,), (1,)), 8, hw)
    names = sorted(p.name for p in found)
    # the batch of 6 splits over 1 or 2 batch devices; ZeRO-1 variants only where there is data
    assert names == sorted(["model8", "data2-model4", "data2-model4 zero-1", "fsdp2-model4", "model4-fsdp2"])
    assert all(p.optimizer == ("zero-1" if p.name.endswith("zero-1") else "with its parameter") for p in found)
    assert sorted(d.name for d in dropped) == sorted(
        ["data8", "data4-fsdp2", "data2-fsdp4", "fsdp8", "data4-model2", "data2-fsdp2-model2", "fsdp4-model2",
         "model2-fsdp4", "data2-model2-fsdp2"]
    )  # fmt: skip
    reason = next(d.reason for d in dropped if d.name == "data4-model2")
    assert reason == "the batch 2 [6, 64] does not split over 4 devices"
    plan = next(p for p in found if p.name == "data2-model4 zero-1")
    assert [s.leaf.path for s in plan.strategies] == ["0.w_in", "0.w_out", "1.w_in", "1.w_out", "2"]
    assert plan.rules.splitlines() == [
        "0.w_in = None, model", "0.w_out = model, None", "1.w_in = data, model", "1.w_out = (data, model), None",
        "2 = data, None",
    ]  # fmt: skip
    assert plan.tensor_devices == 4 and plan.sizes == {"data": 2, "fsdp": 1, "sequence": 1, "model": 4}
    # no optimizer state: no ZeRO-1 variant
    bare, _ = plans(leaves_of((params, s((8, 64), jnp.bfloat16)), (0,), ()), 8, hw)
    assert not any("zero-1" in p.name for p in bare)


def test_the_plan_as_logical_rules_or_none_where_no_rules_say_it():
    from shardviz.search.space import Plan, Strategy, logical_rules_of

    w_in = Strategy(_leaf("0.w_in", (64, 256)), (("fsdp",), ("model",)), "tensor-in+fsdp")
    w_out = Strategy(_leaf("0.w_out", (256, 64)), (("model",), ("fsdp",)), "tensor-out+fsdp")
    x = Strategy(_leaf("1", (8, 64), "batch", argnum=1), (("fsdp",), ()), "batch")
    plan = Plan("p", (("fsdp", 4), ("model", 2)), (w_in, w_out, x), "with its parameter")
    names = {"0.w_in": ("embed", "mlp"), "0.w_out": ("mlp", "embed"), "1": ("batch", "activation_embed")}
    assert logical_rules_of(plan, names) == (
        ("embed", ("fsdp",)), ("mlp", ("model",)), ("batch", ("fsdp",)), ("activation_embed", ()),
    )  # fmt: skip
    # one name on two layouts (the activations' embed unsplit, the weights' on fsdp)
    assert logical_rules_of(plan, names | {"1": ("batch", "embed")}) is None
    # a split dimension with no name, or a split leaf with no names or the wrong count of them
    assert logical_rules_of(plan, names | {"1": (None, "activation_embed")}) is None
    assert logical_rules_of(plan, {k: v for k, v in names.items() if k != "1"}) is None
    assert logical_rules_of(plan, names | {"0.w_in": ("embed",)}) is None
    # an unnamed dimension that is not split, and an unnamed leaf that is not split, say nothing
    bias = Strategy(_leaf("0.b", (6,)), ((),), "replicated")
    with_bias = Plan("p", plan.axes, (w_in, w_out, x, bias), plan.optimizer)
    assert logical_rules_of(with_bias, names | {"1": ("batch", None)}) == (
        ("embed", ("fsdp",)), ("mlp", ("model",)), ("batch", ("fsdp",)),
    )  # fmt: skip


def test_more_strategies_by_hand():
    from shardviz.search.space import _fsdp_dim, _is_out_projection, param_strategy, residual_width

    fsdp_only = {"data": 1, "fsdp": 4, "sequence": 1, "model": 1}
    assert param_strategy(_leaf("0.w", (256, 64)), fsdp_only, 64).dims == (("fsdp",), ())  # the largest
    assert param_strategy(_leaf("0.w", (64, 64)), fsdp_only, 64).dims == (("fsdp",), ())  # the first of equals
    assert _fsdp_dim((4, 3), set(), 4) == 0  # a dimension the size of the axis holds it
    # a stack of layers is no stack of experts: Megatron's split on its matrix
    model = {"data": 1, "fsdp": 1, "sequence": 1, "model": 2}
    layers = param_strategy(_leaf("0.layers.w", (4, 64, 256)), model, 64)
    assert (layers.dims, layers.kind) == (((), (), ("model",)), "tensor-in")
    assert _is_out_projection(_leaf("0.layers.w", (4, 256, 64)), 64)
    # experts over model take dimension 0; FSDP the largest of the others
    both = {"data": 1, "fsdp": 2, "sequence": 1, "model": 2}
    experts = param_strategy(_leaf("0.experts", (16, 8, 4)), both, 4)
    assert experts.dims == (("model",), ("fsdp",), ())
    # d_model from a [batch, seq, d_model] batch's last dimension
    mats = [_leaf("0.a", (64, 256)), _leaf("0.b", (256, 64))]
    assert residual_width([*mats, _leaf("1", (4, 128, 256), "batch", argnum=1)]) == 256


def test_more_of_the_space_by_hand():
    from shardviz.search.space import batch_strategy, optimizer_strategy, sequence_length

    hw = hardware_named("tpu-v5p")
    s = jax.ShapeDtypeStruct
    # the batch first, the parameters second: every parameter still gets its strategy
    leaves = leaves_of((s((8, 64), jnp.bfloat16), {"w": s((64, 256), jnp.bfloat16)}), (1,), ())
    assert [(x.path, x.role, x.argnum) for x in leaves] == [("0", "batch", 0), ("1.w", "param", 1)]
    plan = next(p for p in plans(leaves, 2, hw)[0] if p.name == "model2")
    assert [st.kind for st in plan.strategies] == ["batch", "tensor-in"]
    from shardviz.search.cost import implied

    assert [c.kind for c in implied(plan, 8, 64)] == []  # an in-projection alone is no pair
    # one device: the mesh is data of 1
    assert [p.name for p in plans(leaves, 1, hw)[0]] == ["data1"]
    # on GPUs model divides the node: 24 H100s (three nodes of 8) take model 1, 2, 4 or 8
    assert {m for _, _, m in factorizations(24, hardware_named("h100"))} == {1, 2, 4, 8}
    # the sequence: of the largest [batch, seq, ...] argument; split only on a sequence axis
    two = [_leaf("1", (4, 16, 8), "batch", argnum=1), _leaf("2", (4, 128, 64), "batch", argnum=2)]
    assert sequence_length(two) == 128 and sequence_length([_leaf("1", (4, 8), "batch")]) is None
    x = _leaf("1", (4, 128, 64), "batch", argnum=1)
    plain = batch_strategy(x, {"data": 2, "fsdp": 1, "sequence": 1, "model": 1}, 128)
    assert (plain.dims, plain.kind) == ((("data",), (), ()), "batch")
    split = batch_strategy(x, {"data": 2, "fsdp": 1, "sequence": 2, "model": 1}, 128)
    assert split.dims == (("data",), ("sequence",), ())
    assert batch_strategy(_leaf("1", (), "batch"), {"data": 2, "fsdp": 1, "sequence": 1, "model": 1}).leaf.path == "1"
    odd = leaves_of(({"w": s((64, 256), jnp.bfloat16)}, s((4, 3, 64), jnp.bfloat16)), (0,), ())
    dropped = {d.name: d for d in plans(odd, 8, hw)[1]}
    assert dropped["data2-sequence2-model2"].reason == (
        "the batch 1 [4, 3, 64] does not split over 2 devices and its sequence over 2"
    )
    assert dropped["data2-sequence2-model2"].axes == (("data", 2), ("sequence", 2), ("model", 2))
    # the optimizer's leaf takes the parameter of its shape whose path ends as its own
    from shardviz.search.space import Strategy

    sizes = {"data": 2, "fsdp": 2, "sequence": 1, "model": 2}
    w = Strategy(_leaf("0.a.w", (64, 256)), (("fsdp",), ("model",)), "tensor-in+fsdp")
    v = Strategy(_leaf("0.a.v", (64, 256)), ((), ("model",)), "tensor-in")
    assert optimizer_strategy(_leaf("1.mu.a.w", (64, 256), "optimizer", 4), [v, w], sizes, False).dims == w.dims
    assert optimizer_strategy(_leaf("1.mu.a.x", (64, 256), "optimizer", 4), [w, v], sizes, False).dims == w.dims
    bare = optimizer_strategy(_leaf("1", (64, 256), "optimizer", 4), [v, w], sizes, False)
    assert bare.dims == v.dims  # a path of one part: the first parameter of its shape


def test_a_scalar_batch_and_unnamed_leaves_before_the_named_ones():
    from shardviz.search.space import Plan, Strategy, batch_strategy, logical_rules_of

    assert batch_strategy(_leaf("1", (), "batch"), {"data": 2, "fsdp": 1, "sequence": 1, "model": 1}).dims == ()
    bias = Strategy(_leaf("0.b", (6,)), ((),), "replicated")
    w = Strategy(_leaf("0.w", (64, 256)), ((), ("model",)), "tensor-in")
    plan = Plan("p", (("model", 2),), (bias, w), "with its parameter")
    # the bias has no names and is not split; the weight's first dimension has no name and is not split
    assert logical_rules_of(plan, {"0.w": (None, "mlp")}) == (("mlp", ("model",)),)
