"""Mutation-testing survivors of the fixes and reasons of values made inside the program (compare/fixes.py and
program/why/causes.py as changed on 2026-12-02): pure helpers on stand-ins, each figure a hand count, and
traced programs, each checked against JAX's compiled HLO first and then against the hand analysis in its
docstring."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.compare import fixes as fixes_module
from shardviz.program.why.reasons import OperandLayout, Why
from test_program_fixes_made_inside import MESH, hlo_kinds, line_of, put, the  # the same mesh and readers

# ---------------------------------------------------------------- pure helpers on stand-ins


def where(file="m.py", line=7):
    return SimpleNamespace(file=file, line=line)


def test_a_collectives_place_is_its_line_then_its_layer_then_its_pass():
    """Same line, same layer, same pass: the same place. A scope or pass either side does not give is no
    difference; two that differ are another layer's or another pass's collective on the line."""
    same = fixes_module._same_place
    here = ("m.py", 7)
    collective = SimpleNamespace(scope="layers_1", pass_number=2)
    item = SimpleNamespace(source=where(), scope="layers_1", pass_number=2)
    assert same(item, collective, here)
    assert not same(SimpleNamespace(source=None, scope="layers_1", pass_number=2), collective, here)
    assert not same(SimpleNamespace(source=where(line=8), scope="layers_1", pass_number=2), collective, here)
    assert not same(SimpleNamespace(source=where(file="n.py"), scope="layers_1", pass_number=2), collective, here)
    # another layer on the line
    assert not same(SimpleNamespace(source=where(), scope="layers_2", pass_number=2), collective, here)
    # a scope one side does not say is no difference, either side
    assert same(SimpleNamespace(source=where(), scope="", pass_number=2), collective, here)
    assert same(item, SimpleNamespace(scope="", pass_number=2), here)
    # another pass of the loop on the line
    assert not same(SimpleNamespace(source=where(), scope="layers_1", pass_number=3), collective, here)
    # a pass one side does not say is no difference, either side
    assert same(SimpleNamespace(source=where(), scope="layers_1", pass_number=None), collective, here)
    assert same(item, SimpleNamespace(scope="layers_1", pass_number=None), here)


def test_a_constraint_on_a_value_says_where_it_goes_by_its_line_or_by_its_type():
    """A value named like a variable is constrained by name after its line; one with no Python name
    (``%12``) is described by its type, and a line of 0 (none known) by "the line that makes it"."""
    h = OperandLayout("h", "float32[16,48]", (("a",), ("b",)), "operand")
    change = fixes_module._value_change(h, (("a",), ()), (1, 0, 54))
    assert change == fixes_module._Change(
        "constraint",
        "constrain h to P('a') at line 54",
        "h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P('a')))  # after line 54, where h is made",
        (("a",), ()),
        "line 54",
        value_at=(1, 0),
    )
    unnamed = OperandLayout("%12", "float32[16,48]", (("a",), ("b",)), "operand")
    change = fixes_module._value_change(unnamed, ((), ("b",)), (3, 1, 0))
    described = "the float32[16,48] the line that makes it makes (%12)"
    assert change == fixes_module._Change(
        "constraint",
        f"constrain {described} to P(None, 'b') at the line that makes it",
        f"jax.lax.with_sharding_constraint(..., NamedSharding(mesh, P(None, 'b')))  # around {described}",
        ((), ("b",)),
        "the line that makes it",
        value_at=(3, 1),
    )


def collective(kind="all-reduce", axes=("b",), line=7, count=1, charged_to="", parts=(), op_name="jit(f)/dot_general"):
    return SimpleNamespace(kind=kind, axes=axes, source=None if line is None else where(line=line), count=count,
                           charged_to=charged_to, parts=parts, scope="", pass_number=None, op_name=op_name)  # fmt: skip


def test_a_collective_is_alike_by_kind_and_a_shared_mesh_axis_and_counted_so():
    """An all-reduce over 'b' is like one over 'b' or ('a','b'), not one over 'a' nor an all-gather over 'b';
    axes not known as whole mesh axes (None) or none at all are no difference, either side."""
    alike = fixes_module._alike
    over_b = collective(axes=("b",))
    assert alike(collective(axes=("a", "b")), over_b) and alike(over_b, collective(axes=("a", "b")))
    assert not alike(collective(axes=("a",)), over_b)
    assert not alike(collective(kind="all-gather"), over_b)
    assert alike(collective(axes=None), over_b) and alike(collective(axes=()), over_b)
    assert alike(over_b, collective(axes=None)) and alike(over_b, collective(axes=()))
    # counted by how often each runs: 3 + 2 over 'b' (a loop's), not the one over 'a' nor the gather
    program = SimpleNamespace(
        collectives=(
            collective(count=3),
            collective(axes=("a", "b"), count=2),
            collective(axes=("a",), count=5),
            collective(kind="all-gather", count=7),
        )
    )
    assert fixes_module._count(program, over_b) == 5


def test_a_collective_is_still_there_on_its_line_or_more_often_on_no_line():
    """A changed program still has the collective where one like it is on its line (or one of a combined
    collective's parts is); or where more like it run on no line than before (XLA dropped the line, the
    collective is not gone). One over other axes, or of another kind, on no line, is another collective."""
    still = fixes_module._still_there
    gone = collective(line=7)
    before = SimpleNamespace(collectives=(collective(line=None, count=1),))
    assert still(SimpleNamespace(collectives=(collective(line=7),)), gone, before)
    assert not still(SimpleNamespace(collectives=(collective(line=8),)), gone, before)
    part = SimpleNamespace(source=where(line=7), scope="", pass_number=None)
    combined = collective(line=None, parts=(SimpleNamespace(source=where(line=3), scope="", pass_number=None), part))
    assert still(SimpleNamespace(collectives=(combined,)), gone, SimpleNamespace(collectives=()))
    # a Python loop's layer on the line: still there in its own layer only
    layer = SimpleNamespace(**{**vars(collective(line=7)), "scope": "layers_1"})
    other_layer = SimpleNamespace(**{**vars(collective(line=7)), "scope": "layers_2"})
    assert still(SimpleNamespace(collectives=(layer,)), layer, SimpleNamespace(collectives=()))
    assert not still(SimpleNamespace(collectives=(other_layer,)), layer, SimpleNamespace(collectives=()))
    # one more on no line than before: still there; as many as before: gone
    assert still(SimpleNamespace(collectives=(collective(line=None, count=2),)), gone, before)
    assert not still(SimpleNamespace(collectives=(collective(line=None, count=1),)), gone, before)
    # one more on no line for another operation (an input's own relayout, op_name "y"): not this one
    assert not still(SimpleNamespace(collectives=(collective(line=None, count=2, op_name="y"),)), gone, before)
    # the operation is the op_name's last part, however deep the calls around it: jnp.pad's is
    # jit(f)/jit(_pad)/pad, and one more pad on no line at the top level is still it
    padded = collective(line=7, op_name="jit(f)/jit(_pad)/pad")
    padded_before = SimpleNamespace(collectives=(collective(line=None, count=1, op_name="jit(f)/pad"),))
    assert still(
        SimpleNamespace(collectives=(collective(line=None, count=2, op_name="jit(f)/pad"),)), padded, padded_before
    )
    # an op_name naming no operation (an input's relayout, "x"; or none): nothing on no line is it
    for name in ("x", ""):
        bare = collective(line=7, op_name=name)
        assert not still(SimpleNamespace(collectives=(collective(line=None, count=3, op_name=name),)), bare, before)
    # unlined ones of another kind or over other axes do not count
    others = (collective(kind="all-gather", line=None, count=4), collective(axes=("a",), line=None, count=4))
    assert not still(SimpleNamespace(collectives=others), gone, before)
    # a collective on no line of yours is still there where one like it is charged alike
    nowhere = collective(line=None, charged_to="out")
    assert still(SimpleNamespace(collectives=(collective(line=None, charged_to="out"),)), nowhere)
    assert not still(SimpleNamespace(collectives=(collective(line=None, charged_to="x"),)), nowhere)
    assert not still(
        SimpleNamespace(collectives=(collective(kind="all-gather", line=None, charged_to="out"),)), nowhere
    )
    assert not still(SimpleNamespace(collectives=(collective(axes=("a",), line=None, charged_to="out"),)), nowhere)


def test_an_array_types_shape_and_the_words_for_inputs_and_axes():
    """The shape as JAX types an array: f32[12,24], Explicit's f32[12@a,24], a scalar's f32[]."""
    shape = fixes_module._shape
    assert shape("float32[12,24]") == (12, 24)
    assert shape("float32[12@a,24@b]") == (12, 24)
    assert shape("float32[]") == ()
    assert shape("key<fry>[3]") == (3,)
    assert shape("float32[n,24]") is None
    assert fixes_module._names(["w1"]) == "w1"
    assert fixes_module._names(["x", "w1", "w2"]) == "x, w1 and w2"
    assert fixes_module._axes_words(("a",)) == "'a'"
    assert fixes_module._axes_words(("a", "b")) == "'a' and 'b'"


def test_a_constraint_past_the_programs_equations_is_refused():
    """A value constrained at equation 1 of a one-equation jaxpr (or later) is not in the program."""
    closed = jax.make_jaxpr(lambda x: x * 2)(jnp.ones(4))
    assert len(closed.jaxpr.eqns) == 1
    sharding = NamedSharding(MESH, P())
    for k in (1, 2):
        with pytest.raises(shardviz.ShardingError) as refused:
            fixes_module._evaluate(closed, [jnp.ones(4)], lambda eqn: None, MESH, ((k, 0), sharding))
        assert str(refused.value) == "the program's jaxpr has no equation where the constraint was to go"
    (doubled,) = fixes_module._evaluate(closed, [jnp.ones(4)], lambda eqn: None, MESH, ((0, 0), sharding))
    assert doubled.tolist() == [2.0] * 4


def program_of(paths, layouts):
    """A stand-in program on the 4x3 mesh: its inputs' paths and (shape, spec) each."""
    return SimpleNamespace(input_paths=paths, inputs=tuple(SimpleNamespace(shape=sh, spec=sp) for sh, sp in layouts),
                           mesh=SimpleNamespace(axis_names=("a", "b"), axis_sizes=(4, 3)))  # fmt: skip


def upstream(program, cause, operand, **fields):
    why = Why(cause, "dot_general", "y = h @ w", (operand,), "a rule", operand=0, **fields)
    return [(c.kind, c.summary, c.spec) for c in fixes_module._upstream_changes(program, why, operand)]


def test_the_inputs_a_value_is_made_from_are_kept_off_the_axes_and_the_value_constrained_where_it_is_made():
    """h = x @ w, then h's own operation: x [16,24] P('a','b') and w [24,48] P('b') are both split over 'b',
    so both are taken off 'b' (x to P('a'), w whole); a source past the program's inputs (a constant) is no
    input. h itself (made by equation 1, at line 54) is constrained as the cause asks: its split dimension
    kept whole (partial sums), that split moved to the first whole dimension it divides (a whole dimension
    wanted: 48 by 'a''s 4), or the layout wanted, where it has h's rank."""
    program = program_of(("x", "w"), (((16, 24), (("a",), ("b",))), ((24, 48), (("b",), ()))))
    none = OperandLayout("h", "float32[16,48]", None, "operand")
    assert upstream(program, "partial-sums", none, dimension=1, axes=("b",), sources=(0, 1, 2)) == [
        ("input-spec", "inputs x as P('a'), w as P() (keep x and w off 'b')", (("a",), ())),
    ]
    assert upstream(program, "partial-sums", none, dimension=1, axes=("a",), sources=(0, 1)) == [
        ("input-spec", "input x as P(None, 'b') (keep x off 'a')", ((), ("b",))),
    ]
    assert upstream(program, "partial-sums", none, dimension=1, axes=(), sources=(0, 1)) == []
    at = (1, 0, 54)
    h3 = OperandLayout("h", "float32[16,48,6]", (("a",), ("b",), ()), "operand")
    # partial sums: dimension 1 kept whole, the third (whole, 6 divides by 3) left whole
    assert upstream(program, "partial-sums", h3, dimension=1, axes=("b",), made_at=at) == [
        ("constraint", "constrain h to P('a') at line 54", (("a",), (), ())),
    ]
    h = OperandLayout("h", "float32[16,48]", (("a",), ()), "operand")
    assert upstream(program, "whole-dimension", h, dimension=0, axes=("a",), made_at=at) == [
        ("constraint", "constrain h to P(None, 'a') at line 54", ((), ("a",))),
    ]
    # nowhere to move it: dimension 0 of 13 rows kept whole
    odd = OperandLayout("h", "float32[16,13]", (("a",), ()), "operand")
    assert upstream(program, "whole-dimension", odd, dimension=0, axes=("a",), made_at=at) == [
        ("constraint", "constrain h to P() at line 54", ((), ())),
    ]
    for cause in ("layout-mismatch", "loop-carry"):
        assert upstream(program, cause, h, wanted=((), ("a",)), made_at=at) == [
            ("constraint", "constrain h to P(None, 'a') at line 54", ((), ("a",))),
        ]
        assert upstream(program, cause, h, wanted=((), (), ("a",)), made_at=at) == []  # another rank
        assert upstream(program, cause, h, made_at=at) == []  # nothing wanted
        assert upstream(program, cause, h, wanted=(("a",), ()), made_at=at) == []  # as it is already
    # no dimension named, or one past h's: nothing to keep whole
    assert upstream(program, "partial-sums", h, axes=("a",), made_at=at) == []
    assert upstream(program, "whole-dimension", h, dimension=2, axes=("b",), made_at=at) == []
    # an input, a value of unknown layout, or one made nowhere at the top level: no constraint on it
    x = OperandLayout("x", "float32[16,24]", (("a",), ("b",)), "operand")
    assert upstream(program, "partial-sums", x, dimension=1, axes=("a",), made_at=at) == []
    assert upstream(program, "partial-sums", none, dimension=1, axes=("a",), made_at=at) == []
    assert upstream(program, "partial-sums", h3, dimension=1, axes=("b",)) == []


# ---------------------------------------------------------------- traced programs


BIAS = jnp.arange(48.0)  # closed over: a constant of the program's jaxpr, not an input


def scoped_mlp(x, w1, w2):
    with jax.named_scope("mlp"):
        g = x @ w1 + BIAS
        h = jax.nn.relu(g)
        y = h @ w2
    return y


def scoped_mlp_constrained(x, w1, w2):
    with jax.named_scope("mlp"):
        g = x @ w1 + BIAS
        h = jax.nn.relu(g)
        h = jax.lax.with_sharding_constraint(h, NamedSharding(MESH, P("a")))
        y = h @ w2
    return y


def test_the_constraint_on_a_value_made_on_a_line_is_traced_where_it_is_made_in_its_scope():
    """Megatron's MLP in a named scope, with a closed-over bias: x [16,24] P('a'), w1 [24,48] P(None,'b'),
    w2 [48,24] P('b'). g = x @ w1 + bias and h = relu(g) are [16,48] P('a','b'); h @ w2 sums partial products
    over 'b' (an all-reduce on y's line). The jaxpr's top-level equations: the dot (0), the bias broadcast (1)
    and add (2) on g's line, the relu (3) on h's: h is equation 3's only result. The constraint fix keeps h's
    dimension 1 whole, P('a'), on h's line. JAX's module with that constraint pasted gathers h over 'b' and
    still sums: an all-gather and an all-reduce. The fix's traced program is that one, in the scope 'mlp':
    the gather on h's line (not g's), the sum on y's; so it does not remove the sum."""
    x, w1, w2 = put((16, 24), P("a")), put((24, 48), P(None, "b")), put((48, 24), P("b"))
    assert hlo_kinds(scoped_mlp, x, w1, w2) == ["all-reduce"]
    assert sorted(hlo_kinds(scoped_mlp_constrained, x, w1, w2)) == ["all-gather", "all-reduce"]
    prog = shardviz.trace(scoped_mlp, x, w1, w2)
    c = the(prog, "all-reduce")
    made, used = line_of(scoped_mlp, "h = jax.nn.relu"), line_of(scoped_mlp, "y = h @ w2")
    assert (c.scope, c.source.line, c.why.made_at) == ("mlp", used, (3, 0, made))
    (constraint,) = [f for f in c.fixes if f.kind == "constraint"]
    assert (constraint.summary, constraint.target, constraint.spec, constraint.removed) == (
        f"constrain h to P('a') at line {made}",
        f"line {made}",
        (("a",), ()),
        False,
    )
    assert sorted((d.kind, d.axes, d.source.line, d.scope) for d in constraint.program.collectives) == [
        ("all-gather", ("b",), made, "mlp"),
        ("all-reduce", ("b",), used, "mlp"),
    ]


def test_the_inputs_a_change_lays_out_and_the_arguments_laid_out_so():
    """An input-spec change names its inputs three ways: the first, a second (two operands' change) and the
    rest; each is laid out as it says, on the argument's own mesh (or the program's, where the argument has
    no NamedSharding), and a leaf that is no array is no argument."""
    Change = fixes_module._Change
    whole, by_a, by_b = ((), ()), (("a",), ()), ((), ("b",))
    change = Change("input-spec", "", "", whole, "x", input_index=1, second_index=0, second_spec=by_a,
                    more=((2, by_b),))  # fmt: skip
    assert fixes_module._changed_inputs(change) == [(1, whole), (0, by_a), (2, by_b)]
    assert fixes_module._changed_inputs(Change("constraint", "", "", whole, "line 3")) == []
    other = jax.make_mesh((12,), ("c",), axis_types=(AxisType.Auto,))
    leaves = (
        jax.ShapeDtypeStruct((8, 12), jnp.float32, sharding=NamedSharding(other, P("c"))),
        "not an array",
        jax.ShapeDtypeStruct((12, 6), jnp.bfloat16),
        put((24,), P("a")),
    )
    program = SimpleNamespace(origin=SimpleNamespace(leaves=leaves, array_leaf=(True, False, True, True), mesh=MESH))
    relaid = fixes_module._relaid(program, Change("input-spec", "", "", ((), ("c",)), "x", input_index=0,
                                                   more=((1, (("a",), ("b",))),)))  # fmt: skip
    assert [(r.shape, r.dtype) for r in relaid] == [
        ((8, 12), jnp.float32),
        ((12, 6), jnp.bfloat16),
        ((24,), jnp.float32),
    ]
    assert relaid[0].sharding == NamedSharding(other, P(None, "c"))
    assert relaid[1].sharding == NamedSharding(MESH, P("a", "b"))
    assert relaid[2] is leaves[3]  # unchanged
    named = SimpleNamespace(input_paths=("x", "params['w']", "b"))
    moved = fixes_module._in_shardings_change(named, Change("input-spec", "input x as P() (a summary)", "x = 1",
                                                               whole, "x", input_index=0, more=((2, by_b),)))  # fmt: skip
    assert moved == Change(
        "input-spec",
        "input x as P() (a summary), in the jit's in_shardings",
        "jax.jit(f, in_shardings=...)  # x: NamedSharding(mesh, P()); b: NamedSharding(mesh, P(None, 'b'))",
        whole,
        "x",
        input_index=0,
        more=((2, by_b),),
    )


def megatron_mlp(x, w1, w2):
    h = jax.nn.relu(x @ w1)
    y = h @ w2
    return y


def sharded(*spec):
    return NamedSharding(MESH, P(*spec))


def test_a_jit_whose_in_shardings_fix_an_input_takes_its_fix_there():
    """Megatron's MLP (x [16,24] P('a'), w1 [24,48] P(None,'b'), w2 [48,24] P('b'): an all-reduce over 'b'
    of h @ w2's partial sums) under a jit whose in_shardings say those layouts: JAX refuses w1 and w2 laid
    out whole ("does not match the sharding on the respective arg"), so putting them whole is no fix; the
    in_shardings changed to P() for both is, and JAX's module of that jit has no collective."""
    x, w1, w2 = put((16, 24), P("a")), put((24, 48), P(None, "b")), put((48, 24), P("b"))
    fixed = jax.jit(megatron_mlp, in_shardings=(sharded("a"), sharded(None, "b"), sharded("b")))
    assert hlo_kinds(fixed, x, w1, w2) == ["all-reduce"]
    with pytest.raises(ValueError, match="does not match the sharding on the respective arg"):
        fixed.lower(x, put((24, 48), P()), put((48, 24), P()))
    changed = jax.jit(megatron_mlp, in_shardings=(sharded("a"), sharded(), sharded()))
    assert hlo_kinds(changed, x, put((24, 48), P()), put((48, 24), P())) == []
    prog = shardviz.trace(fixed, x, w1, w2)
    c = the(prog, "all-reduce")
    top = c.fixes[0]
    assert (top.kind, top.target, top.spec, top.removed) == ("input-spec", "w1", ((), ()), True)
    assert top.summary == "inputs w1 as P(), w2 as P() (keep w1 and w2 off 'b'), in the jit's in_shardings"
    assert top.code == ("jax.jit(f, in_shardings=...)  # w1: NamedSharding(mesh, P()); w2: NamedSharding(mesh, P())")
    assert [layout.spec for layout in top.program.inputs] == [(("a",), ()), ((), ()), ((), ())]
    assert top.program.collectives == ()
