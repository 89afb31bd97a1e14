"""Memory as a TPU or GPU holds it: buffers in the program's dtypes, one peak, names that fit.

The issue's two-layer step, scaled down (weights ``[4096, 2048]`` and
``[2048, 4096]`` replicated, ``x [64, 4096]`` split over ``data`` on 8
devices), traced in bfloat16 and in float32. Hand counts, with
``W = 4096 * 2048 * itemsize`` (one weight; 16 MiB in bf16, 32 MiB in f32):

- arguments: w1 + w2 = 2 W (x, 8 * 4096 * itemsize per device, is small);
- gradients of w1 and w2: 2 W, each reduced over ``data`` in place;
- outputs, the updated weights: 2 W;
- at most 6 W live at once (weights in, gradients, weights out).

XLA:CPU widens bf16 to f32: its own count holds f32 copies of both weights
and gradients in f32 (12 W of reserved bytes in bf16, the same bytes as the
f32 twin).
"""

from __future__ import annotations

import dataclasses
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.plan.hardware import hardware_named
from shardviz.testing import MemoryBudgetExceeded, assert_fits
from shardviz.text.ranges import format_bytes

D, F, B = 4096, 2048, 64


def loss(w1, w2, x):
    h = jax.nn.gelu(x @ w1)
    y = h @ w2
    return jnp.mean(y**2)


def train_step(w1, w2, x):
    g1, g2 = jax.grad(loss, argnums=(0, 1))(w1, w2, x)
    return w1 - 0.01 * g1, w2 - 0.01 * g2


def _traced(dtype):
    mesh = Mesh(np.asarray(jax.devices()[:8]), ("data",))
    replicated, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    w1 = jax.ShapeDtypeStruct((D, F), dtype, sharding=replicated)
    w2 = jax.ShapeDtypeStruct((F, D), dtype, sharding=replicated)
    x = jax.ShapeDtypeStruct((B, D), dtype, sharding=split)
    return shardviz.trace(jax.jit(train_step), w1, w2, x)


@pytest.fixture(scope="module")
def steps():
    return {"bf16": _traced(jnp.bfloat16), "f32": _traced(jnp.float32)}


def _weight(dtype: str) -> int:
    return D * F * (2 if dtype == "bf16" else 4)  # one weight: 4096 * 2048 elements


def _report_peak(program) -> int:
    text = program.render(width=200, color=False)
    m = re.search(r"peak (\d+(?:\.\d+)?) (B|KiB|MiB|GiB) per device at step", text)
    assert m is not None, text
    return round(float(m.group(1)) * {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[m.group(2)])


def test_the_bf16_step_holds_half_its_f32_twin_and_what_the_hand_count_says(steps):
    bf16, f32 = steps["bf16"], steps["f32"]
    W = _weight("bf16")
    for figure in (
        lambda p: p.memory.peak_bytes,
        lambda p: p.memory.temp_bytes,
        lambda p: p.memory.argument_bytes + p.memory.output_bytes,
        lambda p: p.estimate("tpu-v5e").device_bytes,
        _report_peak,
    ):
        assert figure(bf16) <= 0.6 * figure(f32)
    # the hand count: at most 6 W at once; the two gradients, 2 W, are the temporaries
    assert 6 * W / 1.25 <= bf16.memory.peak_bytes <= 6 * W * 1.25
    assert 2 * W / 1.25 <= bf16.memory.temp_bytes <= 2 * W * 1.25
    assert bf16.memory.argument_bytes == pytest.approx(2 * W + (B // 8) * D * 2)


def test_xla_cpus_own_figures_stay_behind_one_switch(steps):
    bf16 = steps["bf16"]
    cpu = bf16.with_bytes("cpu")
    w1 = jax.ShapeDtypeStruct((D, F), jnp.bfloat16)
    assert cpu.memory.temp_bytes >= 4 * _weight("bf16")  # f32 copies of both weights (2 W each) at least
    assert cpu.memory.peak_bytes > bf16.memory.peak_bytes
    assert cpu.with_bytes("device").memory == bf16.memory
    del w1


def test_one_peak_for_the_report_memory_fits_compare_and_assert_fits(steps):
    for program in steps.values():
        peak = program.memory.peak_bytes
        assert program.memory_timeline.peak_bytes == peak
        assert program.estimate("tpu-v5e").device_bytes == peak
        assert assert_fits(program, peak) == peak
        assert _report_peak(program) == pytest.approx(peak, rel=0.01)
        with pytest.raises(MemoryBudgetExceeded):
            assert_fits(program, peak - 1)


def test_assert_fits_passes_the_bf16_step_under_seven_weights(steps):
    W = _weight("bf16")
    assert assert_fits(steps["bf16"], 7 * W) <= 6 * W  # the device holds at most 6 W


def test_a_gradient_is_named_after_its_weight_never_after_h(steps):
    for dtype, program in steps.items():
        W = _weight(dtype)
        big = [(g, n) for g, n in program.memory_timeline.at_peak if n >= W // 2]
        labels = {g.label for g, _ in big}
        assert not any(label.startswith(("h", "y")) for label in labels), labels
        gradients = {g.label: g for g, _ in big if g.label.startswith("gradient of")}
        assert set(gradients) <= {"gradient of w1", "gradient of w2"} and gradients, labels
        for label, group in gradients.items():
            shape = "[4096,2048]" if label.endswith("w1") else "[2048,4096]"
            assert group.type_str == dtype + shape
            assert group.source is not None and group.source.function.endswith("loss")


def test_the_report_says_which_groups_hold_the_peak(steps):
    text = steps["bf16"].render(width=200, color=False)
    assert "by group: " in text and "gradients " in text and "parameters and inputs " in text


def test_over_budget_says_by_how_much_and_which_groups_hold_the_peak(steps):
    bf16 = steps["bf16"]
    W = _weight("bf16")
    with pytest.raises(MemoryBudgetExceeded) as info:
        assert_fits(bf16, 4 * W)
    message = str(info.value)
    over = format_bytes(bf16.memory.peak_bytes - 4 * W)
    assert f"over the budget of {format_bytes(4 * W)} ({4 * W} B) by {over}" in message
    # by hand: both gradients are live at the peak, 2 W = 32 MiB
    assert "gradients 32 MiB" in message and "parameters and inputs" in message
    small = dataclasses.replace(hardware_named("tpu-v5e"), hbm_bytes=4 * W)
    est = bf16.estimate(small)
    assert est.fits is False and dict(est.held_by_group)["gradients"] == 2 * W
    assert any("does NOT fit" in n and "over by" in n and "gradients 32 MiB" in n for n in est.notes)
