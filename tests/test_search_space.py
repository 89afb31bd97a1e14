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
