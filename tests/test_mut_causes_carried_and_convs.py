"""Exact reasons, operand by operand, for the causes read through layout-carrying operations, inputs
moved as they come in, convolutions, loop inputs and broadcast operands: each expected value is worked
out by hand from the operands' specs, and each program's collectives are JAX's compiled ones.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from test_program_causes_carried_and_convs import MESH, conv_nwc, hlo_kinds, put, top_fix_compiles_without


def constrain(x, *spec):
    return jax.lax.with_sharding_constraint(x, NamedSharding(MESH, P(*spec)))


def layouts(why):
    return [(o.label, o.type_str, o.spec, o.role, o.note) for o in why.operands]


# ---------------------------------------------------------------- dimensions carried to a constraint


def squeezed(y):
    z = jnp.squeeze(y, 1)
    return constrain(z, None, "b")


def test_a_squeeze_carries_the_kept_dimensions_splits_to_the_constraint():
    """y [12,1,12] P('a',None,'b') squeezed on its size-1 dimension is z [12,12] P('a','b'); the constraint
    asks P(None,'b'), so 'a' on dimension 0 is gathered."""
    y = put((12, 1, 12), P("a", None, "b"))
    assert hlo_kinds(squeezed, y) == ["all-gather"]
    prog = shardviz.trace(squeezed, y)
    (c,) = prog.collectives
    why = c.why
    assert layouts(why) == [
        ("y", "float32[12,1,12]", (("a",), (), ("b",)), "made", ""),
        ("z", "float32[12,12]", (("a",), ("b",)), "made", ""),
    ]
    assert (why.operand, why.dimension, why.axes, why.wanted) == (1, 0, ("a",), ((), ("b",)))
    assert why.rule == (
        "with_sharding_constraint asks for P(None, 'b') of z, made as P('a', 'b') by squeeze from y "
        "(P('a', None, 'b')): dimension 0 goes from 'a' to whole, so the split that is dropped is gathered"
    )
    top_fix_compiles_without(squeezed, [(12, 1, 12)], c, "all-gather")


def expanded(x):
    y = x[:, None, :]
    return constrain(y, None, None, "b")


def test_a_new_size_1_dimension_is_whole_and_the_others_keep_their_splits():
    """x[:, None, :] of x P('a','b') is broadcast_in_dim to [12,1,12]: dimensions 0 and 2 are x's, the new
    one is whole, so it is P('a',None,'b'), and the constraint P(None,None,'b') gathers 'a'."""
    x = put((12, 12), P("a", "b"))
    assert hlo_kinds(expanded, x) == ["all-gather"]
    prog = shardviz.trace(expanded, x)
    (c,) = prog.collectives
    why = c.why
    assert [(o.label, o.spec) for o in why.operands] == [("x", (("a",), ("b",))), ("y", (("a",), (), ("b",)))]
    assert (why.operand, why.dimension, why.axes) == (1, 0, ("a",))
    assert "made as P('a', None, 'b') by broadcast_in_dim from x (P('a', 'b'))" in why.rule
    assert top_fix_compiles_without(expanded, [(12, 12)], c, "all-gather").program.inputs[0].spec == ((), ("b",))


def merged(x):
    y = x.reshape(144)
    return constrain(y, None)


def test_a_reshape_that_merges_dimensions_carries_no_layout_and_is_the_whole_dimension_cause():
    """Planted: x [12,12] P('a') merged to [144]; no dimension of the result is one of x's alone, so no
    layout is carried "by reshape" to the constraint. The reshape itself needs dimension 0 whole."""
    x = put((12, 12), P("a", None))
    assert hlo_kinds(merged, x) == ["all-gather"]
    (c,) = shardviz.trace(merged, x).collectives
    assert (c.why.cause, c.why.primitive, c.why.dimension) == ("whole-dimension", "reshape", 0)
    assert "by reshape" not in c.why.rule


# ---------------------------------------------------------------- inputs moved as they come in


def stacked(x, y):
    return jnp.concatenate([x, y], axis=0)


def test_inputs_joined_along_dimension_0_are_moved_alike_even_where_the_metadata_names_the_input():
    """x P(None,'a') and y P(None,'b') joined along dimension 0: their dimension 1 must be split alike,
    so y is moved to P(None,'a') (gathered over 'b', cut over 'a'). One gather's metadata names only "y"
    on the concatenate's line, which has no operation called y."""
    shapes = ((12, 12), (12, 12))
    x, y = put(shapes[0], P(None, "a")), put(shapes[1], P(None, "b"))
    assert hlo_kinds(stacked, x, y) == ["all-gather", "all-gather"]
    prog = shardviz.trace(stacked, x, y)
    assert len(prog.collectives) == 2
    for c in prog.collectives:
        why = c.why
        assert (why.cause, why.primitive, why.operand, why.dimension) == ("layout-mismatch", "concatenate", 1, 1)
        assert why.wanted == ((), ("a",)) and why.expression == "return jnp.concatenate([x, y], axis=0)"
        assert why.rule == (
            "concatenate joins its operands along dimension 0 and needs them laid out alike, but x is "
            "P(None, 'a') and y is P(None, 'b'): one is moved to match"
        )
    assert top_fix_compiles_without(stacked, shapes, prog.collectives[0], "all-gather").program.inputs[1].spec == (
        (),
        ("a",),
    )


joined_inside_a_jit = jax.jit(lambda x, y: jnp.concatenate([x, y], axis=1))


def scaled_join(s, x, y):
    t = s.sum()
    return joined_inside_a_jit(x, y) * t


def test_an_input_moved_as_it_comes_in_is_followed_into_the_jit_that_reads_it():
    """s comes first and is read by a sum that needs nothing (s is whole); y is read only inside the
    inner jit's concatenate, where x is P('a') and y P(None,'a'): y is moved (an all-to-all named "y")."""
    shapes = ((12, 12), (12, 12), (12, 12))
    s, x, y = put(shapes[0], P()), put(shapes[1], P("a", None)), put(shapes[2], P(None, "a"))
    assert hlo_kinds(scaled_join, s, x, y) == ["all-to-all"]
    (c,) = shardviz.trace(scaled_join, s, x, y).collectives
    why = c.why
    assert (why.cause, why.primitive, why.operand, why.dimension, why.axes) == (
        "layout-mismatch",
        "concatenate",
        1,
        0,
        ("a",),
    )
    assert [(o.label, o.spec) for o in why.operands] == [("x", (("a",), ())), ("y", ((), ("a",)))]
    assert why.expression == "joined_inside_a_jit = jax.jit(lambda x, y: jnp.concatenate([x, y], axis=1))"


# ---------------------------------------------------------------- convolutions


def test_the_halo_rule_in_full():
    x, k = put((4, 24, 4), P(None, "b", None)), put((3, 4, 4), P())
    for c in shardviz.trace(conv_nwc, x, k).collectives:
        why = c.why
        assert layouts(why) == [
            ("x", "float32[4,24,4]", ((), ("b",), ()), "operand", ""),
            ("k", "float32[3,4,4]", ((), (), ()), "operand", ""),
        ]
        assert why.expression == (
            'return jax.lax.conv_general_dilated(x, k, (1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"))'
        )
        assert why.rule == (
            "a convolution's window of 3 along dimension 1 of x, split over 'b', reaches past each device's "
            "block: each device needs 2 elements beyond its block's edges, sent from its neighbours (a halo "
            "exchange)"
        )


def test_the_partial_sums_rule_in_full():
    x, k = put((4, 24, 6), P("a", None, "b")), put((3, 6, 4), P(None, "b", None))
    (c,) = shardviz.trace(conv_nwc, x, k).collectives
    assert c.why.expression.startswith("return jax.lax.conv_general_dilated(x, k")
    assert c.why.rule == (
        "a convolution sums over its input features, dimension 2 of x, split over 'b': each device convolves "
        "only its block of them and holds a partial sum, which the all-reduce adds up over 'b'"
    )


def test_a_kernels_input_features_split_alone_are_gathered_to_match():
    """k's input features (dimension 1 of a WIO kernel) are split over 'b' but x's features are whole:
    XLA gathers k over 'b' rather than split x's features. k whole needs no collective."""
    shapes = ((4, 24, 6), (3, 6, 4))
    x, k = put(shapes[0], P("a", None, None)), put(shapes[1], P(None, "b", None))
    assert hlo_kinds(conv_nwc, x, k) == ["all-gather"]
    prog = shardviz.trace(conv_nwc, x, k)
    (c,) = prog.collectives
    why = c.why
    assert (why.cause, why.operand, why.dimension, why.axes) == ("layout-mismatch", 1, 1, ("b",))
    assert why.rule == (
        "a convolution needs both operands' input features split alike, but dimension 1 of k is split over "
        "'b' and x's input features over no mesh axis: k is gathered over 'b' to match x"
    )
    assert (why.primitive, why.wanted, why.wanted_by) == ("conv_general_dilated", None, "")
    assert why.expression.startswith("return jax.lax.conv_general_dilated(x, k")
    assert top_fix_compiles_without(conv_nwc, shapes, c, "all-gather").program.inputs[1].spec == ((), (), ())


def test_a_window_of_one_along_a_split_width_needs_nothing():
    """Planted: a 1-wide kernel reads no neighbour, so a width split over 'b' needs no halo."""
    x, k = put((4, 24, 4), P(None, "b", None)), put((1, 4, 4), P())
    assert hlo_kinds(conv_nwc, x, k) == []
    assert shardviz.trace(conv_nwc, x, k).collectives == ()


def convolved_rows(x):
    k = jnp.ones((3,))
    return jax.vmap(lambda r: jnp.convolve(r, k, mode="same"))(x)


def test_a_vmapped_convolve_reads_its_rows_layout_through_the_reshape_vmap_adds():
    """jnp.convolve under vmap reshapes x [12,24] to [12,1,24] for conv_general_dilated; XLA's layout of
    that value is not listed, but the reshape only adds a size-1 dimension, so it is x's P('a','b') with
    the new dimension whole: P('a',None,'b'). The width (dimension 2) is split over 'b': a halo."""
    x = put((12, 24), P("a", "b"))
    kinds = hlo_kinds(convolved_rows, x)
    assert kinds and set(kinds) == {"collective-permute"}
    prog = shardviz.trace(convolved_rows, x)
    assert [c.kind for c in prog.collectives] == kinds
    for c in prog.collectives:
        why = c.why
        lhs = why.operands[0]
        assert (lhs.type_str, lhs.spec, lhs.note) == ("float32[12,1,24]", (("a",), (), ("b",)), "")
        assert (why.cause, why.operand, why.dimension, why.axes) == ("whole-dimension", 0, 2, ("b",))
    top_fix_compiles_without(convolved_rows, [(12, 24)], prog.collectives[0], "collective-permute")


# ---------------------------------------------------------------- loop inputs and broadcasts


def looped_until(x, w):
    return jax.lax.while_loop(lambda c: c.sum() < 100.0, lambda c: jnp.tanh(c @ w), x)


def test_a_carry_the_body_lays_out_otherwise_has_no_one_layout_and_says_both():
    """The carry starts P('a'); c @ w with w P(None,'b') makes it P('a','b'): no one layout holds in every
    pass, so the condition's sum over the carry cannot be read, and the operand says both layouts."""
    x, w = put((12, 12), P("a", None)), put((12, 12), P(None, "b"))
    prog = shardviz.trace(looped_until, x, w)
    sums = [c for c in prog.collectives if c.kind == "all-reduce"]
    assert sums
    for c in sums:
        assert c.why.cause == "unknown" and c.why.rule == "the layout of the carry x is unknown"
        assert layouts(c.why) == [
            (
                "the carry x",
                "float32[12,12]",
                None,
                "operand",
                "it comes in as P('a') and the body makes it P('a', 'b')",
            )
        ]


def passed_round(x):
    ring = [(i, (i + 1) % 4) for i in range(4)]
    body = jax.shard_map(lambda b: jax.lax.ppermute(b, "a", ring), mesh=MESH, in_specs=P("a"), out_specs=P("a"))
    return body(x)


def test_a_shard_map_block_is_an_unlisted_value_named_by_its_type():
    x = put((12, 12), P("a", None))
    assert hlo_kinds(passed_round, x) == ["collective-permute"]
    (c,) = shardviz.trace(passed_round, x).collectives
    assert c.why.cause == "shard-map"
    assert layouts(c.why) == [
        (
            "an unlisted float32[3,12]{V:a}",
            "float32[3,12]{V:a}",
            None,
            "operand",
            "not among the program's values",
        )
    ]


def biased(x, b):
    return x + b


def test_a_row_bias_stretched_over_dimension_0_needs_only_its_own_dimensions_split():
    """b [1,12] P(None,'a') is broadcast to [12,12] along its size-1 dimension 0; x is P('a','b'), so b's
    dimension 1 must be 'b' and its stretched dimension 0 nothing: b is moved to P(None,'b')."""
    shapes = ((12, 12), (1, 12))
    x, b = put(shapes[0], P("a", "b")), put(shapes[1], P(None, "a"))
    assert hlo_kinds(biased, x, b) == ["all-gather"]
    prog = shardviz.trace(biased, x, b)
    (c,) = prog.collectives
    why = c.why
    assert (why.cause, why.primitive, why.operand, why.wanted) == ("layout-mismatch", "add", 1, ((), ("b",)))
    assert why.arrival == (1, ((), ("b",)))
    assert top_fix_compiles_without(biased, shapes, c, "all-gather").program.inputs[1].spec == ((), ("b",))


def test_activation_features_split_alone_are_gathered_to_match_the_kernel():
    """x's features (dimension 2) split over 'b', k whole: XLA gathers x over 'b'; x whole needs nothing."""
    shapes = ((4, 24, 6), (3, 6, 4))
    x, k = put(shapes[0], P(None, None, "b")), put(shapes[1], P())
    assert hlo_kinds(conv_nwc, x, k) == ["all-gather"]
    prog = shardviz.trace(conv_nwc, x, k)
    (c,) = prog.collectives
    assert (c.why.cause, c.why.operand, c.why.dimension, c.why.axes) == ("layout-mismatch", 0, 2, ("b",))
    assert c.why.rule.endswith(
        "dimension 2 of x is split over 'b' and k's input features over no mesh axis: x is gathered over 'b' to match k"
    )
    assert top_fix_compiles_without(conv_nwc, shapes, c, "all-gather").program.inputs[0].spec == ((), (), ())


def test_a_window_of_two_reads_one_element_past_the_edge():
    """A 2-wide window along a width split over 'b': one neighbour element per block (collective-permute)."""
    x, k = put((4, 24, 4), P(None, "b", None)), put((2, 4, 4), P())
    kinds = hlo_kinds(conv_nwc, x, k)
    assert kinds == ["collective-permute"]
    (c,) = shardviz.trace(conv_nwc, x, k).collectives
    assert (c.why.cause, c.why.dimension) == ("whole-dimension", 1)
    assert "window of 2 along dimension 1 of x" in c.why.rule
    assert "each device needs 1 element beyond its block's edges" in c.why.rule


def multiplied_then_constrained(x, w):
    y = x @ w
    return constrain(y, None, "b")


def test_a_square_products_result_is_not_read_as_its_operand_carried_over():
    """Planted: y = x @ w has x's shape but not x's layout (w decides dimension 1). x P('a') and w
    P(None,'b') make P('a','b'); the constraint asks P(None,'b') and XLA gathers x over 'a' before the
    product. The reason is that gather of x into the contraction, never "y made as x's P('a')"."""
    x, w = put((12, 12), P("a", None)), put((12, 12), P(None, "b"))
    assert hlo_kinds(multiplied_then_constrained, x, w) == ["all-gather"]
    (c,) = shardviz.trace(multiplied_then_constrained, x, w).collectives
    why = c.why
    assert (why.cause, why.primitive, why.dimension, why.axes) == ("layout-mismatch", "sharding_constraint", 0, ("a",))
    assert [(o.label, o.spec) for o in why.operands] == [("x", (("a",), ())), ("y", ((), ("b",)))]
    assert why.wanted == ((), ()) and "XLA gathers x over 'a' first" in why.rule
