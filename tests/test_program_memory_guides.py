"""The Flax NNX guide's Adam step and the JAX training cookbook's step against hand counts."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import jax
import pytest
from jax.sharding import AxisType

import shardviz

sys.path.insert(0, str(Path(__file__).parent))
from cookbook_bf16 import SPECS, Sizes, abstract_batch, abstract_state, jitted_train_step, shapes
from nnx_guide import guide_step

MiB = 2**20


def test_the_nnx_guides_adam_step():
    guide = guide_step()
    with jax.set_mesh(guide.mesh):
        prog = shardviz.trace(guide.train_step, guide.state, guide.x, guide.y)
    # by hand, per device: each kernel 1024 x 1024 f32 split 4 ways over model = 1 MiB; Adam's two
    # moments of each, f32, 1 MiB each; the state is not donated, so the new kernels and moments
    # (6 MiB) are written beside the old (6 MiB); x and y are 4 x 1024 f32 = 16 KiB each
    kernels, moments, batch = 2 * MiB, 4 * MiB, 2 * 4 * 1024 * 4
    timeline = prog.memory_timeline
    held = dict(timeline.bytes_by_category())
    assert held["optimizer state"] == pytest.approx(moments, abs=64)  # and optax's 4-byte step count
    assert held["parameters and inputs"] == kernels + batch + 4  # and nnx.Optimizer's step count
    hand = 2 * (kernels + moments) + batch
    assert abs(prog.memory.peak_bytes - hand) <= 0.10 * hand
    assert shardviz.testing.assert_fits(prog, hand * 11 // 10) == prog.memory.peak_bytes


def _stored_bytes(sizes: Sizes) -> int:
    """The cookbook's weights per device in bf16: FSDP over 8 devices where the spec names fsdp."""
    total = 0
    for name, shape in shapes(sizes).items():
        if name == "layers":
            for layer in shape:
                total += sum(math.prod(s) * 2 // 8 for s in layer.values())  # every layer weight is FSDP
        else:
            total += math.prod(shape) * 2 // (8 if any(SPECS[name]) else 1)
    return total


def test_the_cookbooks_step():
    sizes = Sizes()
    mesh = jax.make_mesh((8,), ("fsdp",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:8])
    with jax.set_mesh(mesh):
        state, batch = abstract_state(sizes, mesh), abstract_batch(sizes, mesh)
        prog = shardviz.trace(jitted_train_step, sizes, state, batch)
    timeline = prog.memory_timeline
    assert timeline.backward_step is not None
    at_backward = dict(timeline.bytes_by_category(timeline.backward_step))
    # by hand: 2,310,144 weight elements per device (the embedding and position table whole,
    # every other matrix an eighth), 2 bytes each; Adam's moments are kept in the weights' dtype
    weights = _stored_bytes(sizes)
    assert weights == 2_310_144 * 2
    tokens = 2 * (sizes.batch // 8) * sizes.seq * 4  # observed and target ids, int32, 2 of 16 rows
    assert at_backward["parameters and inputs"] == weights + tokens
    assert at_backward["optimizer state"] == pytest.approx(2 * weights, abs=256)  # and the step counts
    # JAX's backward pass reads each layer's weights as the forward pass gathered them (bf16, whole):
    # qkv 3 x 512 x 8 x 128, att_out 8 x 128 x 512, mlp_in and mlp_out 512 x 2048: 8 MiB a layer
    gathered = sizes.layers * 2 * (3 * 512 * 8 * 128 + 8 * 128 * 512 + 2 * 512 * 2048)
    whole = {f"bf16[{','.join(map(str, s))}]" for s in ((3 * 8 * 128, 512), (512, 1024), (512, 2048), (2048, 512))}
    kept = sum(n for g, n in timeline.live_at(timeline.backward_step) if g.kind == "saved" and g.type_str in whole)
    assert kept == gathered


def _never_a_smaller_values_name(prog) -> int:
    """Every group named after a variable its line binds is no larger per device than that value
    (the value's per-device shape from its jaxpr type and sharding); returns how many were checked."""
    largest: dict[tuple[str, int, str], int] = {}
    for v in prog.values:
        if v.source is not None and v.label:
            shape = v.layout.shard_shape if v.layout is not None else v.shape
            key = (v.source.file, v.source.line, v.label)
            largest[key] = max(largest.get(key, 0), math.prod(shape))
    checked = 0
    for g in prog.memory_timeline.groups:
        if g.source is None or g.kind in ("argument", "output") or "[" not in g.type_str:
            continue
        named = largest.get((g.source.file, g.source.line, g.label))
        if named is not None:
            dims = [int(d) for d in g.type_str.split("[", 1)[1].rstrip("]").split(",") if d]
            assert math.prod(dims) <= named, (g.label, g.type_str, named)
            checked += 1
    return checked


def test_a_fused_intermediate_is_named_by_what_it_computes_never_by_a_smaller_value():
    sizes = Sizes()
    mesh = jax.make_mesh((8,), ("fsdp",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:8])
    with jax.set_mesh(mesh):
        state, batch = abstract_state(sizes, mesh), abstract_batch(sizes, mesh)
        prog = shardviz.trace(jitted_train_step, sizes, state, batch)
    assert _never_a_smaller_values_name(prog) > 0
    # the MLP's gradient through gelu, [256, 2048] bf16 per device (2 x 128 tokens, 2048 wide), is made
    # on the line that binds h ([2, 128, 512] per device): named by its operations, not "h"
    fused = [g for g in prog.memory_timeline.groups if g.label.startswith("fused ")]
    assert fused and all(g.source is not None for g in fused)
    assert any(g.type_str == "bf16[256,2048]" for g in fused)
