"""The fixes' own logic without a trace (compare/fixes.py): the steps between two layouts, the code and
summaries each change writes, a fix's text, their ranking and the finder's memo, on stand-in programs;
every figure a hand count. The traced fixes are tests/test_program_fixes.py's."""

from __future__ import annotations

import gc
import pickle
from dataclasses import replace
from types import SimpleNamespace

import pytest
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.compare import fixes as fixes_module
from shardviz.compare.fixes import (
    MOST,
    Fix,
    FixFinder,
    _Change,
    _constraint_change,
    _input_change,
    _out_change,
    _output_index,
    _partition_spec,
    _sharding_code,
    _sizes,
    _two_inputs,
    _unique,
    constraint_steps,
    find_fixes,
)


def test_constraint_steps_move_one_mesh_axis_at_a_time_leaving_out_the_layout_wanted():
    # data then model go from dimension 0 to 1: one step between, the last is the layout wanted
    assert constraint_steps((("data", "model"), ()), ((), ("data", "model"))) == ((("model",), ("data",)),)
    # x stays where it is; data moves first, then model
    made, wanted = (("x",), ("data", "model"), ()), (("x",), (), ("data", "model"))
    assert constraint_steps(made, wanted) == ((("x",), ("model",), ("data",)),)
    # an axis the layout wanted does not use is dropped; a swap passes through both axes on one dimension
    assert constraint_steps((("data",), ("model",)), ((), ("model",))) == ()
    assert constraint_steps((("data",), ("model",)), (("model",), ("data",))) == (((), ("model", "data")),)
    assert constraint_steps((("data",), ()), (("data",), ())) == ()


def test_a_spec_as_jax_writes_it_and_as_code():
    assert _partition_spec((("data",), (), ("data", "model"))) == P("data", None, ("data", "model"))
    assert _partition_spec(()) == P()
    assert _sharding_code((("data",), ())) == "NamedSharding(mesh, P('data'))"


def stand_in(inputs=("params['w']", "x"), outputs=("out",), mesh=(("data", 4), ("model", 2))):
    return SimpleNamespace(input_paths=inputs, output_paths=outputs,
                           mesh=None if mesh is None else SimpleNamespace(axis_names=tuple(n for n, _ in mesh),
                                                                          axis_sizes=tuple(s for _, s in mesh)))  # fmt: skip


def test_each_change_says_what_it_does_and_the_code_to_paste():
    program = stand_in()
    one = _input_change(program, 1, (("data",), ()), "the matmul wants it")
    assert one == _Change("input-spec", "input x as P('data') (the matmul wants it)",
                          "x = jax.device_put(x, NamedSharding(mesh, P('data')))", (("data",), ()), "x", input_index=1)  # fmt: skip
    two = _two_inputs(program, (0, ((), ("model",))), (1, (("data",),)))
    assert two.summary == "inputs params['w'] as P(None, 'model') and x as P('data')"
    assert two.code == ("params['w'] = jax.device_put(params['w'], NamedSharding(mesh, P(None, 'model'))); "
                        "x = jax.device_put(x, NamedSharding(mesh, P('data')))")  # fmt: skip
    assert (two.kind, two.spec, two.target, two.input_index, two.second_index, two.second_spec) == (
        "input-spec", ((), ("model",)), "params['w']", 0, 1, (("data",),),
    )  # fmt: skip
    out = _out_change(program, 0, (("model",),))
    assert out == _Change("out-shardings", "return out as P('model'), as its line makes it",
                          "jax.jit(f, out_shardings=NamedSharding(mesh, P('model')))", (("model",),), "out",
                          output_index=0)  # fmt: skip
    several = _out_change(stand_in(outputs=("out", "aux")), 1, (("model",),))
    assert several.code == "jax.jit(f, out_shardings=...)  # aux: NamedSharding(mesh, P('model'))"
    assert (several.target, several.output_index) == ("aux", 1)
    steps = _constraint_change(12, ((("model",), ("data",)),), ((), ("data", "model")))
    assert steps.summary == "constrain in steps at line 12: P('model', 'data') -> P(None, ('data', 'model'))"
    assert steps.code == ("y = jax.lax.with_sharding_constraint(y, NamedSharding(mesh, P('model', 'data')))"
                          "  # at line 12, before its own constraint to P(None, ('data', 'model'))")  # fmt: skip
    assert (steps.kind, steps.target, steps.constraint_line, steps.spec, steps.steps) == (
        "constraint", "line 12", 12, ((), ("data", "model")), ((("model",), ("data",)),),
    )  # fmt: skip
    two_steps = _constraint_change(3, ((("a",),), (("b",),)), ())
    assert two_steps.code.count("with_sharding_constraint") == 2 and "; y = " in two_steps.code


def test_the_output_a_reason_names_and_the_mesh_sizes():
    program = stand_in(outputs=("out", "aux"))
    assert _output_index(program, "the output aux (its line lays it out)") == 1
    assert _output_index(program, "the output out (x)") == 0
    assert _output_index(program, "output auxiliary ") is None
    assert _sizes(program) == {"data": 4, "model": 2} and _sizes(stand_in(mesh=None)) == {}


def test_changes_of_one_kind_and_code_are_kept_once_in_order():
    a, b = _Change("input-spec", "a", "x = 1", (), "x"), _Change("input-spec", "b", "x = 2", (), "x")
    same_code_other_kind = _Change("constraint", "c", "x = 1", (), "line 1")
    again = _Change("input-spec", "other summary", "x = 1", (), "y")
    assert _unique([a, b, same_code_other_kind, again, b]) == [a, b, same_code_other_kind]


def fix(removed=True, step_s=3e-3, before_s=2e-3, **changed):
    fields = dict(kind="input-spec", summary="input x as P('data')", code="x = jax.device_put(x, s)",
                  removed=removed, step_s=step_s, before_s=before_s, hardware="h100", program=None)  # fmt: skip
    fields.update(changed)
    return Fix(**fields)


def test_a_fixs_text_says_whether_it_removes_the_collective_and_what_the_step_becomes():
    assert fix().slower and not fix(step_s=2e-3).slower and not fix(step_s=None).slower
    assert not fix(before_s=None).slower and not fix(step_s=1e-3).slower
    assert fix().text == ("input x as P('data'): removes it; step 3 ms on h100 (now 2 ms), but the step is slower\n"
                          "    x = jax.device_put(x, s)")  # fmt: skip
    assert (
        fix(step_s=1e-3).text
        == "input x as P('data'): removes it; step 1 ms on h100 (now 2 ms)\n    x = jax.device_put(x, s)"
    )
    assert fix(removed=False).text == (
        "input x as P('data'): does not remove it; step 3 ms on h100 (now 2 ms)\n    x = jax.device_put(x, s)"
    )
    assert fix(step_s=None).text == "input x as P('data'): removes it\n    x = jax.device_put(x, s)"
    assert fix(before_s=None).text == "input x as P('data'): removes it\n    x = jax.device_put(x, s)"


class Changes:
    """Five proposed changes, each traced to a program whose step and whether the collective stays are
    set by hand; the one named "refused" is refused by JAX."""

    def __init__(self, names):
        self.names = names
        self.steps = {"slow": 4.0, "fast": 1.0, "kept": 0.5, "refused": 0.1, "unknown": None, "moved": 0.2}
        self.kept = {"kept"}
        self.moved = {"kept", "moved"}  # as many collectives like it as before: gone from its line, or not at all
        self.traced = []

    def install(self, monkeypatch, program, collective, hardware, remat=None):
        """Each stand-in checks it is asked about ``program``, ``collective``, ``hardware`` and ``remat``."""
        changes = [_Change("input-spec", n, f"code {n}", ((n,),), n) for n in self.names]

        def proposed(asked, of, why):
            assert (asked, of, why) == (program, collective, collective.why)
            return changes

        def step(p, hw):
            assert hw == hardware
            return 2.0 if p is program else self.steps[p.name]

        def still_there(changed, c, before):
            assert c is collective and before is program
            return changed.name in self.kept

        def count(p, c):
            assert c is collective
            return 1 if p is program or p.name in self.moved else 0

        def remat_there(changed, r):
            assert r == remat
            return changed.name == "slow"

        monkeypatch.setattr(fixes_module, "proposed_changes", proposed)

        def traced(asked, change):
            assert asked is program
            self.traced.append(change.summary)
            if change.summary == "refused":
                raise shardviz.ShardingError("refused")
            return SimpleNamespace(name=change.summary)

        monkeypatch.setattr(fixes_module, "_traced", traced)
        monkeypatch.setattr(fixes_module, "_step", step)
        monkeypatch.setattr(fixes_module, "_still_there", still_there)
        monkeypatch.setattr(fixes_module, "_count", count)
        monkeypatch.setattr(fixes_module, "_remat_there", remat_there)
        monkeypatch.setattr(fixes_module, "_diff", lambda before, after, hw: (before.name, after.name, hw))


def test_fixes_that_remove_it_come_first_fastest_first_and_a_refused_change_is_none(monkeypatch):
    program = SimpleNamespace(name="before", origin="traced")
    gather = SimpleNamespace(why="a reason")
    Changes(["slow", "kept", "fast"]).install(monkeypatch, program, gather, "h100")
    found = find_fixes(program, gather, "h100")
    assert [(f.summary, f.removed, f.step_s, f.before_s, f.hardware) for f in found] == [
        ("fast", True, 1.0, 2.0, "h100"), ("slow", True, 4.0, 2.0, "h100"), ("kept", False, 0.5, 2.0, "h100"),
    ]  # fmt: skip
    assert found[0].diff == ("before", "fast", "h100") and found[0].program.name == "fast"
    assert (found[0].kind, found[0].code, found[0].spec, found[0].target) == (
        "input-spec",
        "code fast",
        (("fast",),),
        "fast",
    )
    # a change that only moves it to another line ranks after one that takes it out, however fast
    Changes(["moved", "slow", "fast"]).install(monkeypatch, program, gather, "h100")
    assert [(f.summary, f.removed) for f in find_fixes(program, gather, "h100")] == [
        ("fast", True), ("slow", True), ("moved", True)
    ]  # fmt: skip
    # a rematerialization's fixes are judged by whether it is gone
    Changes(["slow", "kept", "fast"]).install(monkeypatch, program, gather, "h100", remat="remat 0")
    by_remat = find_fixes(program, gather, "h100", remat="remat 0")
    assert [(f.summary, f.removed) for f in by_remat] == [("kept", True), ("fast", True), ("slow", False)]


def test_at_most_three_changes_are_traced_one_refused_dropped_and_an_unknown_step_last(monkeypatch):
    changes = Changes(["refused", "unknown", "slow", "fast", "kept"])
    program = SimpleNamespace(name="before", origin="traced")
    gather = SimpleNamespace(why="a reason")
    changes.install(monkeypatch, program, gather, "tpu-v5p")
    found = find_fixes(program, gather)
    assert MOST == 3 and changes.traced == ["refused", "unknown", "slow"]
    assert [(f.summary, f.step_s, f.hardware) for f in found] == [
        ("slow", 4.0, "tpu-v5p"),
        ("unknown", None, "tpu-v5p"),
    ]
    assert find_fixes(SimpleNamespace(name="before", origin=None), SimpleNamespace(why="a reason")) == ()
    assert find_fixes(program, SimpleNamespace(why=None)) == ()
    assert len(changes.traced) == 3


def test_a_change_the_jits_in_shardings_refuse_is_moved_there_only_for_an_input_here_and_never_ends_the_search(
    monkeypatch,
):
    """JAX refuses a change because the jit's own in_shardings fix an input: an input's change is rewritten into
    those in_shardings (on a program traced here, not in a what-if child); any other change, and a rewrite
    refused too, is no fix, and the changes after it are still tried."""
    refusal = f"the argument {fixes_module._IN_SHARDINGS}"
    kinds = {
        "constraint": "constraint",
        "input": "input-spec",
        "input, refused again": "input-spec",
        "fast": "input-spec",
    }
    changes = [_Change(kind, name, f"code {name}", (), name) for name, kind in kinds.items()]
    rewritten = []

    def traced(program, change):
        if change.summary == "fast":
            return SimpleNamespace(name="fast")
        raise shardviz.ShardingError(refusal)

    def rewrite(program, change, arguments):
        rewritten.append(change.summary)
        if change.summary == "input, refused again":
            raise shardviz.ShardingError(refusal)
        return SimpleNamespace(name=f"{change.summary} in in_shardings")

    monkeypatch.setattr(fixes_module, "proposed_changes", lambda program, collective, why: changes)
    monkeypatch.setattr(fixes_module, "MOST", 4)
    monkeypatch.setattr(fixes_module, "_traced", traced)
    monkeypatch.setattr(fixes_module, "_relaid", lambda program, change: [])
    monkeypatch.setattr(fixes_module, "_rewritten", rewrite)
    monkeypatch.setattr(fixes_module, "_in_shardings_change", lambda program, change: change)
    monkeypatch.setattr(fixes_module, "_step", lambda p, hw: 1.0)
    monkeypatch.setattr(fixes_module, "_still_there", lambda changed, c, before: False)
    monkeypatch.setattr(fixes_module, "_count", lambda p, c: 0)
    monkeypatch.setattr(fixes_module, "_diff", lambda before, after, hw: None)
    gather = SimpleNamespace(why="a reason")
    here = SimpleNamespace(name="before", origin="traced", whatif=None)
    assert [f.program.name for f in find_fixes(here, gather)] == ["input in in_shardings", "fast"]
    assert rewritten == ["input", "input, refused again"]
    rewritten.clear()
    planned = SimpleNamespace(name="before", origin="traced", whatif="a what-if child's")
    assert [f.program.name for f in find_fixes(planned, gather)] == ["fast"]
    assert rewritten == []


class Held:
    """A program a finder can hold weakly: its collectives and rematerializations."""

    def __init__(self, collectives=(), rematerializations=()):
        self.collectives = collectives
        self.rematerializations = rematerializations


def test_a_finder_works_out_each_collectives_fixes_once_per_hardware(monkeypatch):
    asked = []
    gather = SimpleNamespace(name="all-gather.1", why="a reason", source=SimpleNamespace(file="m.py", line=7))
    program = Held((SimpleNamespace(name="none", why=None, source=None), gather))
    monkeypatch.setattr(fixes_module, "find_fixes",
                        lambda p, c, hw, remat=None: asked.append((p is program, c.name, hw, remat)) or (hw,))  # fmt: skip
    finder = FixFinder(program, "h100")
    assert finder.fixes_of(gather) == ("h100",) and finder.fixes_of(gather, "h100") == ("h100",)
    assert finder.fixes_of(gather, "tpu-v5p") == ("tpu-v5p",) and finder.fixes_of(gather, "tpu-v5p") == ("tpu-v5p",)
    assert asked == [(True, "all-gather.1", "h100", None), (True, "all-gather.1", "tpu-v5p", None)]
    assert finder.fixes_of(program.collectives[0]) == () and len(asked) == 2
    # the payload's keys: the finder's own hardware only
    assert finder.traced() == {"all-gather.1": ("h100",)}
    assert pickle.loads(pickle.dumps(finder)) is None


def test_a_rematerializations_fixes_are_those_of_the_collective_on_its_line(monkeypatch):
    asked = []
    held = []
    monkeypatch.setattr(fixes_module, "find_fixes",
                        lambda p, c, hw, remat=None: asked.append((c.name, hw, remat)) or held.append(p) or (c.name,))  # fmt: skip
    remat = SimpleNamespace(source_file="m.py", source_line=7)
    elsewhere = SimpleNamespace(name="other", why="a reason", source=SimpleNamespace(file="m.py", line=8))
    unexplained = SimpleNamespace(name="plain", why=None, source=SimpleNamespace(file="m.py", line=7))
    gather = SimpleNamespace(name="all-gather.1", why="a reason", source=SimpleNamespace(file="m.py", line=7))
    program = Held((elsewhere, unexplained, SimpleNamespace(name="nowhere", why="r", source=None), gather), (remat,))
    finder = FixFinder(program)
    assert finder.hardware == "tpu-v5p"
    assert finder.fixes_of_rematerialization(0) == ("all-gather.1",) and finder.fixes_of_rematerialization(0) == (
        "all-gather.1",
    )
    assert finder.fixes_of_rematerialization(0, "h100") == ("all-gather.1",)
    assert asked == [("all-gather.1", "tpu-v5p", remat), ("all-gather.1", "h100", remat)]
    assert held == [program, program]
    assert finder.fixes_of_rematerialization(1) == ()
    assert finder.traced() == {"remat 0": ("all-gather.1",)}
    # a rematerialization no explained collective gathers has no fix
    no_gather = Held((elsewhere,), (remat,))  # held here: a finder keeps its program only weakly
    alone = FixFinder(no_gather)
    assert alone.fixes_of_rematerialization(0) == () and len(asked) == 2


def test_a_finder_whose_program_is_gone_says_so():
    gather = SimpleNamespace(name="all-gather.1", why="a reason")
    program = Held((gather,), (SimpleNamespace(source_file="m.py", source_line=7),))
    finder = FixFinder(program)
    del program
    gc.collect()
    with pytest.raises(shardviz.ShardingError) as refused:
        finder.fixes_of(gather)
    assert "no longer held" in str(refused.value) and "prog.collectives[i].fixes" in str(refused.value)
    assert finder.fixes_of_rematerialization(0) == ()


def test_axes_taken_off_a_dimension_go_to_the_first_other_whole_dimension_they_divide():
    from shardviz.compare.fixes import _moved_elsewhere

    # 4-way data: dimension 1 of 12 takes it, one of 6 cannot
    assert _moved_elsewhere((("data",), ()), 0, ("data",), (8, 12), {"data": 4}) == ((), ("data",))
    assert _moved_elsewhere((("data",), ()), 0, ("data",), (8, 6), {"data": 4}) is None
    # model (4) off dimension 0 leaves data there; 6 rows do not divide by 4, 4 do
    spec = (("data", "model"), (), ())
    assert _moved_elsewhere(spec, 0, ("model",), (8, 6, 4), {"data": 2, "model": 4}) == (("data",), (), ("model",))
    # a dimension already split is not whole; an axis the mesh does not size counts as 1
    assert _moved_elsewhere((("data",), ("model",), ()), 0, ("data",), (8, 8, 8), {"data": 2}) == (
        (), ("model",), ("data",),
    )  # fmt: skip
    assert _moved_elsewhere((("pod",), ()), 0, ("pod",), (8, 3), {}) == ((), ("pod",))
    # both axes move together: 2 x 4 = 8 divides 16, not 12
    assert _moved_elsewhere((("data", "model"), (), ()), 0, ("data", "model"), (8, 12, 16), {"data": 2, "model": 4}) == (
        (), (), ("data", "model"),
    )  # fmt: skip


def why_of(cause, operands, **fields):
    from shardviz.program.why.reasons import Why

    return Why(cause, fields.pop("primitive", "dot_general"), "x @ w", operands, "a rule", **fields)


def operand(label, spec, role="operand"):
    from shardviz.program.why.reasons import OperandLayout

    return OperandLayout(label, "float32[8,12]", spec, role)


def inputs_program(paths, shapes, specs=None, outputs=("out",)):
    made = stand_in(inputs=paths, outputs=outputs, mesh=(("data", 4), ("model", 2)))
    made.inputs = tuple(SimpleNamespace(shape=s, spec=p) for s, p in zip(shapes, specs or [None] * len(shapes)))
    return made


def test_a_partial_sum_is_fixed_by_keeping_its_dimension_whole_then_on_both_operands():
    program = inputs_program(("x", "w"), ((8, 12), (12, 16)))
    why = why_of("partial-sums", (operand("x", ((), ("model",))), operand("w", (("model",), ()))),
                 operand=0, dimension=1, axes=("model",))  # fmt: skip
    changes = fixes_module.proposed_changes(program, SimpleNamespace(charged_to="", source=None), why)
    assert [(c.kind, c.summary) for c in changes] == [
        ("input-spec", "input x as P() (keep dimension 1 of x whole)"),
        ("input-spec", "inputs x as P() and w as P()"),
    ]
    assert (changes[1].input_index, changes[1].second_index) == (0, 1)


def test_a_whole_dimension_is_fixed_by_moving_its_axes_first():
    program = inputs_program(("x",), ((8, 12),))
    why = why_of("whole-dimension", (operand("x", (("data",), ())),), primitive="sort", operand=0, dimension=0,
                 axes=("data",))  # fmt: skip
    changes = fixes_module.proposed_changes(program, SimpleNamespace(charged_to="", source=None), why)
    assert [c.summary for c in changes] == [
        "input x as P(None, 'data') (split x on another dimension)",  # 12 divides by data's 4
        "input x as P() (keep dimension 0 of x whole)",
    ]


def test_no_change_is_proposed_for_a_shard_maps_own_collective_an_unknown_cause_or_no_operand():
    program = inputs_program(("x",), ((8, 12),))
    collective = SimpleNamespace(charged_to="", source=None)
    x = (operand("x", (("data",), ())),)
    assert fixes_module.proposed_changes(program, collective, why_of("shard-map", x, operand=0)) == []
    assert fixes_module.proposed_changes(program, collective, why_of("unknown", x, operand=0)) == []
    # Not even for a value made inside from an input split over the collective's axes: the user wrote it,
    # or nothing is known of why it is there.
    program.inputs = (SimpleNamespace(shape=(8, 12), spec=(("data",), ())),)
    h = (operand("h", (("data",), ())),)
    inside = {"operand": 0, "dimension": 0, "axes": ("data",), "sources": (0,), "made_at": (0, 0, 3)}
    assert fixes_module.proposed_changes(program, collective, why_of("partial-sums", h, **inside)) != []
    assert fixes_module.proposed_changes(program, collective, why_of("shard-map", h, **inside)) == []
    assert fixes_module.proposed_changes(program, collective, why_of("unknown", h, **inside)) == []
    assert fixes_module.proposed_changes(program, collective, why_of("whole-dimension", x, dimension=0)) == []


def test_a_layout_mismatch_lays_the_input_out_as_wanted_returns_the_output_as_made_and_constrains_in_steps():
    program = inputs_program(("x",), ((8, 12),), specs=[(("data", "model"), ())])
    wanted = ((), ("data", "model"))
    why = why_of("layout-mismatch", (operand("y", (("data", "model"), ())),), primitive="sharding_constraint",
                 operand=0, wanted=wanted, wanted_by="the sharding of output out (its out_shardings)")  # fmt: skip
    collective = SimpleNamespace(charged_to="", source=SimpleNamespace(line=14))
    changes = fixes_module.proposed_changes(program, collective, why)
    # y is no input, but x is laid out as y is, so x is the one laid out as wanted
    assert [c.summary for c in changes] == [
        "input x as P(None, ('data', 'model')) (lay x, which y is made from, out as it is wanted)",
        "return out as P(('data', 'model')), as its line makes it",
        "constrain in steps at line 14: P('model', 'data') -> P(None, ('data', 'model'))",
    ]
    direct = why_of("layout-mismatch", (operand("x", (("data", "model"), ())),), operand=0, wanted=wanted,
                    wanted_by="a constraint")  # fmt: skip
    assert [c.summary for c in fixes_module.proposed_changes(program, collective, direct)] == [
        "input x as P(None, ('data', 'model')) (lay x out as it is wanted)"
    ]


def test_an_arrival_names_the_input_itself_or_the_value_made_from_it_and_never_an_input_the_program_lacks():
    program = inputs_program(("x",), ((8, 12),), specs=[(("data",), ())])
    wanted = ((), ("data",))
    arriving = {"operand": 0, "wanted": wanted, "wanted_by": "a constraint", "sources": (0,)}
    itself = why_of("layout-mismatch", (operand("x", (("data",), ())),), arrival=(0, wanted), **arriving)
    assert proposed(program, itself)[0] == "input x as P(None, 'data') (lay x out as it is wanted)"
    made = why_of("layout-mismatch", (operand("y", ((), ("data",))),), arrival=(0, wanted), **arriving)
    assert proposed(program, made) == [
        "input x as P(None, 'data') (lay x out so that y, made from it, arrives as it is wanted)"
    ]
    for beyond in (1, 5):  # an input position past the program's inputs: nothing to lay out
        assert proposed(program, replace(made, arrival=(beyond, wanted))) == []


def test_a_mismatch_lays_out_another_operand_of_its_shape_or_an_input_the_operand_is_made_from():
    """The operand pointed at is made inside; another operand of its shape is an input laid out otherwise: that
    input is laid out as wanted. With none, an input laid out as the operand is and of its shape is, but only
    one the operand is made from."""
    program = inputs_program(("x", "w"), ((8, 12), (8, 12)), specs=[(("data",), ()), (("data",), ())])
    wanted = ((), ("data",))
    operands = (operand("h", (("data",), ())), operand("w", (("model",), ())))
    why = why_of("layout-mismatch", operands, operand=0, wanted=wanted, wanted_by="a constraint")
    assert proposed(program, why) == ["input w as P(None, 'data') (lay w out as it is wanted)"]
    alone = why_of("layout-mismatch", operands[:1], operand=0, wanted=wanted, wanted_by="a constraint", sources=(1,))
    assert proposed(program, alone) == ["input w as P(None, 'data') (lay w, which h is made from, out as it is wanted)"]


def proposed(program, why, charged_to="", line=None):
    collective = SimpleNamespace(charged_to=charged_to, source=None if line is None else SimpleNamespace(line=line))
    return [c.summary for c in fixes_module.proposed_changes(program, collective, why)]


def test_a_partial_sums_other_operand_changes_only_when_it_is_an_input_split_alike():
    program = inputs_program(("x", "w"), ((8, 12), (12, 16)))
    # w not split on model, and %c no input: only x's own change
    operands = (operand("x", ((), ("model",))), operand("w", ((), ())), operand("%c", (("model",), ())))
    why = why_of("partial-sums", operands, operand=0, dimension=1, axes=("model",))
    assert proposed(program, why) == ["input x as P() (keep dimension 1 of x whole)"]
    # no dimension named: nothing to keep whole or move
    x = (operand("x", (("data",), ())),)
    assert proposed(program, why_of("whole-dimension", x, operand=0, axes=("data",))) == []
    # an operand index past the operands: no operand to change
    assert proposed(program, why_of("whole-dimension", x, operand=1, dimension=0, axes=("data",))) == []


def test_a_loop_carry_and_a_result_are_laid_out_as_their_inputs_are():
    program = inputs_program(("a", "x"), ((8, 12), (8, 12)), specs=[(("model",), ()), (("data",), ())])
    wanted = ((), ("data",))
    carry = why_of("loop-carry", (operand("x", (("data",), ())),), primitive="while", operand=0, wanted=wanted,
                   wanted_by="the loop's carry")  # fmt: skip
    assert proposed(program, carry) == ["input x as P(None, 'data') (lay x out as it is wanted)"]
    # a result named like an input is no input: x, laid out as the result is made (a is not), is the one
    result = why_of("layout-mismatch", (operand("x", (("data",), ()), role="result"),), operand=0, wanted=wanted,
                    wanted_by="a constraint")  # fmt: skip
    assert proposed(program, result) == [
        "input x as P(None, 'data') (lay x, which x is made from, out as it is wanted)"
    ]
    # nothing known of the operand's layout: no input is laid out for it
    unknown = why_of("layout-mismatch", (operand("y", None),), operand=0, wanted=wanted, wanted_by="a constraint")
    assert proposed(inputs_program(("x",), ((8, 12),), specs=[None]), unknown) == []
    # an operand index past the operands: no input and no output change
    past = why_of("layout-mismatch", (operand("y", (("data",), ())),), operand=1, wanted=wanted,
                  wanted_by="the sharding of output out (its out_shardings)")  # fmt: skip
    assert proposed(program, past) == []


def test_an_output_is_returned_as_made_only_when_its_sharding_asked_and_the_collective_is_its_own():
    program = inputs_program(("x",), ((8, 12),), specs=[((), ())])
    y = (operand("y", (("data",), ())),)
    asked_by_out = why_of("layout-mismatch", y, operand=0, wanted=((), ("data",)),
                          wanted_by="the sharding of output out (its out_shardings)")  # fmt: skip
    assert proposed(program, asked_by_out) == ["return out as P('data'), as its line makes it"]
    # charged to another line's collective: that line's fix, not this one's
    assert proposed(program, asked_by_out, charged_to="m.py:3") == []
    other = why_of("layout-mismatch", y, operand=0, wanted=((), ("data",)),
                   wanted_by="the sharding of output aux (its out_shardings)")  # fmt: skip
    assert proposed(program, other) == []


def test_an_input_of_another_rank_than_the_layout_wanted_is_not_laid_out_as_it_directly():
    program = inputs_program(("x",), ((8, 12),), specs=[(("data",), ())])
    wanted = ((), (), ("data",))  # three dimensions: x, of two, is reshaped on the way
    why = why_of("layout-mismatch", (operand("x", (("data",), ())),), operand=0, wanted=wanted,
                 wanted_by="a constraint")  # fmt: skip
    assert proposed(program, why) == [
        "input x as P(None, None, 'data') (lay x, which x is made from, out as it is wanted)"
    ]


def test_a_change_of_many_inputs_names_a_few_in_its_summary_and_pastes_them_all():
    """Five inputs kept off 'b': the summary names two and counts the other three; the code sets all five."""
    from shardviz.compare.fixes import _inputs_change

    paths = [f"params[{k}]" for k in range(5)]
    program = SimpleNamespace(input_paths=paths)
    change = _inputs_change(program, [(k, ((), ())) for k in range(5)], "keep them off 'b'")
    assert change.summary == "inputs params[0] as P(), params[1] as P() and 3 more (keep them off 'b')"
    assert change.code == "; ".join(
        f"params[{k}] = jax.device_put(params[{k}], NamedSharding(mesh, P()))" for k in range(5)
    )
    assert (change.input_index, change.more) == (0, tuple((k, ((), ())) for k in range(1, 5)))
    three = _inputs_change(program, [(k, ((), ("b",))) for k in range(3)], "moved")
    assert (
        three.summary
        == "inputs params[0] as P(None, 'b'), params[1] as P(None, 'b'), params[2] as P(None, 'b') (moved)"
    )
