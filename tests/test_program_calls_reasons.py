"""Values made inside the functions a program calls (a jitted helper, ``jax.checkpoint``, a custom_jvp such as
``jax.nn.relu``): their layouts, and the reasons and fixes of a collective whose operand one of them returns.
Each expectation is a hand analysis checked against JAX: the compiled program's output shardings, and the
collectives in its HLO before and after the fix.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from test_program_fixes_made_inside import hlo_kinds, put, the

MESH = jax.make_mesh((4, 3), ("a", "b"), axis_types=(AxisType.Auto,) * 2)
SPLIT_ROWS = P("a", None)


def doubled_sine(v):
    return jnp.sin(v) * 2


def summed_after_a_checkpoint(x):
    z = jax.checkpoint(doubled_sine)(x)
    return z.sum(axis=1)


def test_a_value_a_checkpointed_function_returns_is_laid_out_as_what_it_returns():
    """x [12,24] P('a'): sin and the doubling keep rows split over 'a', so the checkpointed call's result z is
    P('a'), as JAX lays it out when a program returns it. z is jax.checkpoint's result (the remat2
    primitive): its layout is the one its body's last value has."""
    x = put((12, 24), P("a"))
    returned = jax.jit(jax.checkpoint(doubled_sine)).lower(x).compile().output_shardings
    assert returned.is_equivalent_to(NamedSharding(MESH, SPLIT_ROWS), 2)
    prog = shardviz.trace(summed_after_a_checkpoint, x)
    (z,) = [v for v in prog.values if v.label == "z"]
    assert (z.primitive, z.spec, z.sharding_from) == ("remat2", (("a",), ()), "xla")


@jax.jit
def flipped_doubled(v):
    return v.T * 2


def transposed_in_a_jitted_helper(x):
    z = flipped_doubled(x)
    return jax.lax.with_sharding_constraint(z, NamedSharding(MESH, SPLIT_ROWS))


def doubled_product_of_a_helper(x):
    return jax.lax.with_sharding_constraint(flipped(x) * 2, NamedSharding(MESH, SPLIT_ROWS))


@jax.jit
def flipped(v):
    return v.T


def flipped_relu(v):
    return jax.nn.relu(v.T), v.sum()


def transposed_by_a_relu_helper(x):
    z, _total = jax.jit(flipped_relu)(x)
    return jax.lax.with_sharding_constraint(z, NamedSharding(MESH, SPLIT_ROWS))


def transposed_in_a_checkpoint(x):
    z = jax.checkpoint(lambda v: v.T * 2)(x)
    return jax.lax.with_sharding_constraint(z, NamedSharding(MESH, SPLIT_ROWS))


@pytest.mark.parametrize(
    "program",
    [
        transposed_in_a_jitted_helper,
        doubled_product_of_a_helper,
        transposed_by_a_relu_helper,
        transposed_in_a_checkpoint,
    ],
)
def test_a_wanted_layout_is_followed_into_the_function_that_makes_the_value(program):
    """x [12,24] P('a') is transposed inside a function the program calls (the split moves to dimension 1,
    P(None,'a')) and constrained outside to P('a') of [24,12]: the split moves from dimension 1 to 0, one
    all-to-all. Followed into the function (its result, the doubling or relu, the transpose, its argument)
    and out to the program's input, x laid out P(None,'a') arrives as P('a'): compiled so, the program moves
    nothing. The helpers: a jitted one; one whose result is doubled outside it; one returning a second result
    whose relu is a custom_jvp call of its own; and jax.checkpoint, where XLA's metadata puts the all-to-all
    on the constraint's line while the value it moves is made inside the checkpoint."""
    x = put((12, 24), P("a"))
    assert hlo_kinds(program, x) == ["all-to-all"]
    prog = shardviz.trace(program, x)
    why = the(prog, "all-to-all").why
    assert why.cause == "layout-mismatch"
    assert why.wanted == (("a",), ())
    assert [o.spec for o in why.operands][:1] == [((), ("a",))]
    assert why.arrival == (0, ((), ("a",)))
    top = the(prog, "all-to-all").fixes[0]
    assert top.removed and top.program.inputs[0].spec == ((), ("a",))
    assert top.summary.startswith("input x as P(None, 'a') (lay x out ")
    assert hlo_kinds(program, put((12, 24), P(None, "a"))) == []
