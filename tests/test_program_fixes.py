"""Fixes, each traced before it is shown; the top fix is checked by compiling the changed program with
``jax.jit(...).lower(...).compile()`` and reading its HLO, not through shardviz: the collective is gone.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.compare.fixes import constraint_steps

MESH = jax.make_mesh((4, 3), ("a", "b"), axis_types=(AxisType.Auto,) * 2)


def put(shape, spec):
    return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(MESH, spec))


def as_spec(spec):
    return P(*(None if not s else s[0] if len(s) == 1 else tuple(s) for s in spec))


def hlo_kinds(fn, *args) -> list[str]:
    text = jax.jit(fn).lower(*args).compile().as_text()
    kinds = "all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute"
    return [m.group(2) for m in re.finditer(rf"^\s*(ROOT )?%\S+ = .*? ({kinds})(-start)?\(", text, re.M)]


def contraction(x, w):
    return x @ w


def sorted_rows(x):
    return jnp.sort(x, axis=0)


def constrained(y):
    return jax.lax.with_sharding_constraint(y, NamedSharding(MESH, P("b", "a")))


def in_steps(y):
    y = jax.lax.with_sharding_constraint(y, NamedSharding(MESH, P(None, ("b", "a"))))
    return jax.lax.with_sharding_constraint(y, NamedSharding(MESH, P("b", "a")))


def test_fixes_are_not_traced_until_read():
    x, w = put((8, 12), P(None, "a")), put((12, 6), P("a", None))
    prog = shardviz.trace(contraction, x, w)
    assert prog.collectives[0].finder._found == {}


def test_the_top_fix_of_a_partial_sum_removes_the_all_reduce_in_jaxs_own_module():
    """x P(None,'a') @ w P('a'): every fix unsplits the contracting dimension; compiled by JAX with the
    top fix's input specs, the module has no all-reduce."""
    x, w = put((8, 12), P(None, "a")), put((12, 6), P("a", None))
    prog = shardviz.trace(contraction, x, w)
    fixes = prog.collectives[0].fixes
    assert 1 <= len(fixes) <= 3
    top = fixes[0]
    assert top.removed and top.kind == "input-spec"
    specs = [layout.spec for layout in top.program.inputs]
    new_args = [put(s, as_spec(spec)) for s, spec in zip(((8, 12), (12, 6)), specs)]
    assert "all-reduce" not in hlo_kinds(contraction, *new_args)
    assert "jax.device_put(" in top.code
    assert top.diff is not None and top.diff.programs["changed"] is top.program
    steps = [f.step_s for f in fixes if f.removed]
    assert steps == sorted(steps)  # ranked by estimated step time


def test_the_top_fix_of_a_sort_along_a_split_dimension_removes_the_gather():
    x = put((12, 6), P("a", None))
    prog = shardviz.trace(sorted_rows, x)
    (c,) = prog.collectives
    top = c.fixes[0]
    assert top.removed and top.spec == ((), ())
    assert hlo_kinds(sorted_rows, put((12, 6), as_spec(top.spec))) == []


def test_a_fixs_step_is_the_roofline_of_the_changed_program_written_in_the_unit_that_fits():
    x = put((12, 6), P("a", None))
    prog = shardviz.trace(sorted_rows, x)
    (c,) = prog.collectives
    top = c.fixes[0]
    # By hand: after the fix each device sorts the whole f32[12,6] (288 B), reading it and writing the result,
    # 576 B of HBM at tpu-v5p's 2.765e12 B/s = 2.08e-10 s, and sends nothing: a picosecond figure, no unit slip.
    assert top.step_s == pytest.approx(576 / 2.765e12, rel=1e-6)
    assert "step 208 ps on tpu-v5p" in top.text
    assert "e-" not in top.text and "0.000" not in top.text


def test_fixes_of_a_program_no_longer_held_are_refused_by_name_not_silently_empty():
    import gc

    (c,) = shardviz.trace(sorted_rows, put((12, 6), P("a", None))).collectives
    gc.collect()
    with pytest.raises(shardviz.ShardingError, match="no longer held"):
        _ = c.fixes


def test_a_constraint_in_steps_ends_the_rematerialization_in_jaxs_own_module(capfd):
    """P('a','b') -> P('b','a') in one constraint gathers the whole array; moving one axis at a time
    (first 'a' to dimension 1, then 'b' to dimension 0) lets XLA do it with all-to-alls in place."""
    assert constraint_steps((("a",), ("b",)), (("b",), ("a",))) == (((), ("b", "a")),)
    y = put((12, 12), P("a", "b"))
    prog = shardviz.trace(constrained, y)
    assert len(prog.rematerializations) == 1
    fixes = prog.rematerialization_fixes(0)
    kinds = {f.kind: f for f in fixes}
    assert kinds["constraint"].removed
    assert kinds["constraint"].program.rematerializations == ()
    assert "with_sharding_constraint(y, NamedSharding(mesh, P(None, ('b', 'a'))))" in kinds["constraint"].code
    capfd.readouterr()
    text = jax.jit(in_steps).lower(y).compile().as_text()
    assert "Involuntary full rematerialization" not in capfd.readouterr().err
    assert not re.search(r"= f32\[12,12\]\{[\d,]*\} all-gather\(", text)  # no device holds the whole array


def doubled(x):
    return x * 2


def test_an_out_shardings_fix_keeps_the_output_as_its_line_makes_it():
    x = put((12, 12), P("a", None))
    fn = jax.jit(doubled, out_shardings=NamedSharding(MESH, P(None, "a")))
    prog = shardviz.trace(fn, x)
    fixes = {f.kind: f for f in prog.collectives[0].fixes}
    out = fixes["out-shardings"]
    assert out.removed and out.spec == (("a",), ())
    assert out.program.collectives == ()
    plain = jax.jit(doubled, out_shardings=NamedSharding(MESH, as_spec(out.spec)))
    assert hlo_kinds(plain, x) == []


def test_a_shard_map_collective_has_no_fix():
    from functools import partial

    @partial(jax.shard_map, mesh=MESH, in_specs=P("a"), out_specs=P())
    def body(block):
        return jax.lax.psum(block.sum(0), "a")

    prog = shardviz.trace(body, put((12, 6), P("a", None)))
    assert prog.collectives[0].fixes == ()


def test_explain_says_because_for_every_collective_and_lists_fixes_when_asked():
    x, w = put((8, 12), P(None, "a")), put((12, 6), P("a", None))
    prog = shardviz.trace(contraction, x, w)
    text = prog.explain()
    assert text.count("because ") == len(prog.collectives) == 1
    assert "fix:" not in text
    assert "fix: " in prog.explain(fixes=True)
    # on other hardware the fixes are ranked there, and the program's own (its payload's) stay as they were
    other = prog.explain(fixes=True, hardware="h100")
    assert "on h100 (now" in other and "on tpu-v5p" not in other
    assert set(prog.to_json()["reasons"]["fixes"]) == {"0"}
    assert all(f["hardware"] == "tpu-v5p" for f in prog.to_json()["reasons"]["fixes"]["0"])


def test_the_widgets_reason_panel_finds_tries_and_goes_back():
    from shardviz.widgets.program import ProgramWidget

    x = put((12, 6), P("a", None))
    w = ProgramWidget(shardviz.trace(sorted_rows, x))
    reasons = w.payload["reasons"]
    assert reasons["why_table"][reasons["whys"][0]]["cause"] == "whole-dimension"
    assert reasons["fixes"] == {} and reasons["back"] is False  # nothing traced until asked
    assert w.show_fixes(0)
    fixes = w.payload["reasons"]["fixes"]["0"]
    assert fixes and fixes[0]["removed"]
    assert {"line": fixes[0]["changes"][0]["line"], "kind": "all-gather"}.items() <= fixes[0]["changes"][0].items()
    assert fixes[0]["changes"][0]["after"] == 0  # vanished
    before = w.program
    assert w.try_fix(0, 0)
    assert w.program.collectives == () and w.payload["reasons"]["back"] is True
    assert w.back()
    assert w.program is before
    assert not w.apply_edit(fix="try:9:0") and "no collective 9" in w.error


def resharded(x):
    return jax.sharding.reshard(x * 2, P(None, "a"))


def test_an_explicit_reshard_is_a_layout_mismatch_and_laying_the_input_out_as_wanted_removes_it():
    """Explicit axes: x P('a') doubled, then resharded to P(None,'a'): 'a' moves from dimension 0 to 1 (an
    all-to-all). The value resharded is made from x, so x laid out P(None,'a') needs no move: JAX's module
    for that input has no collective."""
    emesh = jax.make_mesh((4, 3), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)
    x = jax.ShapeDtypeStruct((12, 12), jnp.float32, sharding=NamedSharding(emesh, P("a", None)))
    with jax.set_mesh(emesh):
        prog = shardviz.trace(resharded, x)
        (c,) = prog.collectives
        assert c.kind == "all-to-all"
        assert (c.why.cause, c.why.primitive, c.why.wanted, c.why.wanted_by) == (
            "layout-mismatch",
            "reshard",
            ((), ("a",)),
            "reshard",
        )
        top = c.fixes[0]
        assert top.removed and top.spec == ((), ("a",))
        fixed = jax.ShapeDtypeStruct((12, 12), jnp.float32, sharding=NamedSharding(emesh, as_spec(top.spec)))
        assert hlo_kinds(resharded, fixed) == []
