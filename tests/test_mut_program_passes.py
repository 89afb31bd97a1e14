"""How a Python loop's passes are told apart, and what a line's scope and text are, worked by hand.

program/lines/passes.py numbers passes from the order values come out in; these tests
give it orders written out here and the passes a reader counts from them. The
scopes are JAX's name stacks and XLA's op_names as they print them
(``jit(step)/transpose(jvp(layers_2))/attn/dot_general``). These tests came from
mutation testing (docs/mutation.md): each pins an answer the traced-program tests
reach only through many other steps; they need no JAX backend.
"""

from __future__ import annotations

from pathlib import Path

import jax

from shardviz.program.lines.frames import user_frame
from shardviz.program.lines.passes import (
    Pass,
    count_scan_trips,
    is_scan_trip,
    number_in_order,
    passes_of,
    place,
    run_numbers,
    total_passes,
    user_chain,
)
from shardviz.program.lines.scopes import is_gradient, scope_of_components, scope_of_op_name, split_top_level
from shardviz.program.lines.sources import expression_columns, line_text
from shardviz.program.model import Body, SourceLocation

MINE = __file__  # a test file is the user's own code
JAXS = str(Path(jax.__file__).resolve().parent / "_src" / "core.py")

A = (((MINE, 10),), "", False, None)  # line 10 of the loop's body
B = (((MINE, 11),), "", False, None)  # line 11, the next line of the body
C = (((MINE, 30), (MINE, 10)), "", False, None)  # line 30 of a function that line 10 calls
A_GRAD = (((MINE, 10),), "", True, None)  # line 10's backward pass


def frame(line: int, file: str = MINE) -> SourceLocation:
    return SourceLocation(file, line, 0, "f")


# --- the user's frames ------------------------------------------------------------------


def test_the_users_frame_is_the_innermost_of_their_own_files() -> None:
    stack = (frame(5, JAXS), frame(12), frame(40))
    assert user_frame(stack) == frame(12)
    assert user_frame((frame(5, JAXS),)) is None
    assert user_frame(()) is None
    assert user_chain(stack) == ((MINE, 12), (MINE, 40))
    assert user_chain((frame(5, JAXS),)) == ()


def test_a_lines_text_is_read_without_its_indentation(tmp_path: Path) -> None:
    source = tmp_path / "step.py"
    source.write_text("def step(x):\n    h = x @ w   \n    return h\n")
    assert line_text(str(source), 2) == "h = x @ w"
    assert line_text(str(source), 3) == "return h"
    assert line_text(str(tmp_path / "missing.py"), 1) == ""


def test_a_tuple_of_expressions_columns_are_counted_in_bytes_with_the_indentation(tmp_path: Path) -> None:
    source = tmp_path / "block.py"
    lines = [
        "def block(x):",
        "    q, k = x @ wq, f(x)",  # x @ wq at bytes 11-17, f(x) at 19-23
        "    a, b = f('\u00e9'), g(x)",  # the quoted letter takes two bytes: f('..') at 11-18, g(x) at 20-24
        "    a, b = split(x)",
        "    a, b = x, y, z",
        "    a, *b = x, y",
        "    a, b = x, *y",
        "    y = f(x)",
        "    a, b = [x, y]",
        "    if x: a, b = x, y",
    ]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    file = str(source)
    assert expression_columns(file, 2) == ((11, 17), (19, 23))
    assert expression_columns(file, 3) == ((11, 18), (20, 24))
    assert [expression_columns(file, n) for n in (4, 5, 6, 7, 8, 10)] == [None] * 6
    assert expression_columns(file, 9) == ((12, 13), (15, 16))


# --- scopes -------------------------------------------------------------------------------


def test_a_name_stack_splits_only_at_slashes_outside_parentheses() -> None:
    assert split_top_level("a/b(c/d)/e") == ["a", "b(c/d)", "e"]
    assert split_top_level("f((a/b))/c") == ["f((a/b))", "c"]
    assert split_top_level("f((a)/b)/c") == ["f((a)/b)", "c"]
    assert split_top_level("a//b/") == ["a", "b"]
    assert split_top_level("(a/b)") == ["(a/b)"]
    assert split_top_level("") == []
    # a stray closing parenthesis does not hide the slashes after it
    assert split_top_level("x)/y/z") == ["x)", "y", "z"]


def test_a_scope_is_what_the_user_named_without_jaxs_transforms_and_machinery() -> None:
    assert scope_of_components(["jit(step)", "transpose(jvp(layers_2))", "attn"]) == "layers_2/attn"
    assert scope_of_components(["vmap(transpose(jvp(a)))"]) == "a"
    assert scope_of_components(["jvp(outer/inner)", "x"]) == "outer/inner/x"
    assert scope_of_components(["outer", "transpose(jvp(inner))"]) == "outer/inner"
    assert scope_of_components(["jvp()", "x"]) == "x"
    loop = ["while", "body", "layers_0", "cond", "branch_1_fun", "branch_0", "closed_call", "checkpoint"]
    assert scope_of_components([*loop, "rematted_computation", "layers_0", "mlp"]) == "layers_0/mlp"
    assert scope_of_components(["pjit(g)", "named_call(h)", "xla_call(k)", "scan", "shard_map", "remat"]) == ""
    # a repeat right after itself is rematerialisation's; one with another scope between is the user's
    assert scope_of_components(["a", "b", "a"]) == "a/b/a"
    # only JAX's exact words are machinery
    assert scope_of_components(["branch_x", "mybranch_1", "branch_1_funx", "my_scan"]) == (
        "branch_x/mybranch_1/branch_1_funx/my_scan"
    )


def test_an_op_names_scope_drops_the_traced_function_and_the_primitive() -> None:
    assert scope_of_op_name("jit(step)/transpose(jvp(layers_2))/attn/dot_general") == "layers_2/attn"
    assert scope_of_op_name("jit(f)/while/body/DotReluDot_1/dot_general") == "DotReluDot_1"
    assert scope_of_op_name("jit(f)/add") == ""
    assert scope_of_op_name("") == ""


def test_a_gradient_is_a_transposes_value() -> None:
    assert is_gradient("jit(f)/transpose(jvp(a))/dot_general")
    assert not is_gradient("jit(f)/jvp(a)/dot_general")
    assert not is_gradient("transpose")


# --- places and runs -----------------------------------------------------------------------


def test_a_place_is_the_users_chain_scope_and_direction() -> None:
    stack = (frame(3, JAXS), frame(10), frame(20))
    chain = ((MINE, 10), (MINE, 20))
    assert place(stack, "layers_0", "jvp(layers_0)/dot_general") == (chain, "layers_0", False, None)
    assert place(stack, "", "transpose(jvp(a))/dot_general", extra=7) == (chain, "", True, 7)
    assert place((frame(3, JAXS),), "", "dot_general") is None
    assert place(stack, "", "checkpoint/rematted_computation/dot_general") is None


def test_a_place_met_again_after_another_line_of_the_loop_starts_its_next_run() -> None:
    # A, a function A's line calls, A again (the same run), B, A (the second pass), -, B
    places = [A, C, A, B, A, None, B]
    assert run_numbers(places) == [0, 0, 0, 0, 1, None, 1]
    assert run_numbers([A, None, A, A]) == [0, None, 0, 0]
    assert run_numbers([A, B, A, B, A]) == [0, 0, 1, 1, 2]
    assert run_numbers([A, None, B, A]) == [0, None, 0, 1]  # past a position with no place, B still breaks the run
    assert run_numbers([]) == []


def test_a_one_line_loop_repeating_its_operations_at_the_same_columns_is_one_run_per_repeat() -> None:
    dot, tanh, add = ("dot_general", 9), ("tanh", 4), ("add", 2)
    assert run_numbers([A, A, A, A], [dot, tanh, dot, tanh]) == [0, 0, 1, 1]
    assert run_numbers([A, A, A], [dot, dot, dot]) == [0, 1, 2]
    assert run_numbers([A, A, A, A], [dot, tanh, dot, add]) == [0, 0, 0, 0]
    assert run_numbers([A, A, A], [dot, tanh, dot]) == [0, 0, 0]
    assert run_numbers([A], [dot]) == [0]
    # a repeated run, another line, then a run that does not repeat: the third pass
    places = [A, A, A, A, B, A, A]
    assert run_numbers(places, [dot, tanh, dot, tanh, add, dot, tanh]) == [0, 0, 1, 1, 0, 2, 2]
    # two runs that each do not repeat keep their numbers
    assert run_numbers([A, A, B, A, A], [dot, tanh, add, dot, tanh]) == [0, 0, 0, 1, 1]
    assert run_numbers([None, A], [dot, dot]) == [None, 0]


def test_a_backward_place_splits_into_no_more_passes_than_its_forward_twin_ran() -> None:
    # one forward product a * b, and its gradient: one product per operand at the same place
    mul = ("mul", 5)
    assert run_numbers([A, A_GRAD, A_GRAD], [mul, mul, mul]) == [0, 0, 0]
    # a one-line loop of three passes, and its backward pass repeating one product per pass
    assert run_numbers([A] * 3 + [A_GRAD] * 3, [mul] * 6) == [0, 1, 2, 0, 1, 2]
    # two passes forward; the backward's four products are two per pass, not four passes
    assert run_numbers([A] * 2 + [A_GRAD] * 4, [mul] * 6) == [0, 1, 0, 0, 1, 1]
    # a gradient with no forward twin of its own repeats as it likes
    assert run_numbers([A_GRAD, A_GRAD], [mul, mul]) == [0, 1]
    # the forward twin counts wherever it comes, and with the same extra only
    assert run_numbers([A_GRAD, A_GRAD, A], [mul, mul, mul]) == [0, 0, 0]
    seven, seven_grad = (A[0], "", False, 7), (A[0], "", True, 7)
    assert run_numbers([seven, seven_grad, seven_grad], [mul] * 3) == [0, 0, 0]
    assert run_numbers([A, seven_grad, seven_grad], [mul] * 3) == [0, 0, 1]
    # a forward line met on two runs (another line between) is two passes however each run repeats
    assert run_numbers([A, B, A, B, A_GRAD, A_GRAD], [mul, "tanh"] * 2 + [mul, mul]) == [0, 0, 1, 1, 0, 1]
    # a loop of other lines: three forward runs, three backward runs of two products each
    B_GRAD = (B[0], "", True, None)
    places = [A, B, A, B, A, B, B_GRAD, A_GRAD, A_GRAD, B_GRAD, A_GRAD, A_GRAD, B_GRAD, A_GRAD, A_GRAD]
    signatures = [mul, "tanh"] * 3 + ["sub", mul, mul] * 3
    assert run_numbers(places, signatures)[6:] == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_two_calls_on_one_line_are_no_passes_but_a_loops_calls_are() -> None:
    # a, b = f(x), f(y): line 30 of f runs under two calls of line 10, with line 10's own value between
    at_8, at_16 = ((10, 8, 10, 14),), ((10, 16, 10, 22),)
    places = [C, A, C]
    assert run_numbers(places, calls=[at_8, (), at_16]) == [0, 0, 0]
    assert run_numbers(places) == [0, 0, 1]
    # for ...: x = f(x * 2): the same call on every pass, line 10's product between (whose own
    # passes its repeats tell apart: f's lines are line 10's callees)
    assert run_numbers([A, C, A, C, A, C], [("mul", 1), ("tanh", 2)] * 3, [(), at_8] * 3) == [0, 0, 1, 1, 2, 2]
    # both calls inside a loop of two passes that runs line 11 too
    places = [C, C, B, C, C, B]
    assert run_numbers(places, calls=[at_8, at_16, (), at_8, at_16, ()]) == [0, 0, 0, 1, 1, 1]


def test_passes_count_forward_from_the_first_and_backward_from_the_last() -> None:
    passes, counts = passes_of([A, A, A_GRAD, A_GRAD, B], [0, 1, 0, 1, 0])
    assert passes == [Pass(1, 2), Pass(2, 2), Pass(2, 2), Pass(1, 2), None]
    assert counts == {A: 2, A_GRAD: 2, B: 1}
    # a backward line that ran one pass fewer says its forward twin's count
    passes, counts = passes_of([A, A, A, A_GRAD, A_GRAD], [0, 1, 2, 0, 1])
    assert passes[3:] == [Pass(2, 3), Pass(1, 3)]
    assert passes_of([None, A], [None, None])[0] == [None, None]
    # a position without a run has no pass, though its place ran twice elsewhere
    assert passes_of([A, A, A], [0, 1, None])[0] == [Pass(1, 2), Pass(2, 2), None]
    # a place's count is its highest run, in whatever order the runs come
    assert passes_of([A, A], [1, 0])[1] == {A: 2}
    assert passes_of([A, A], [0, 2], ["dot", "dot"])[1] == {A: 3}


def test_runs_count_as_passes_only_when_none_adds_a_kind_of_operation() -> None:
    places = [A, A, A, B, B]
    runs = [0, 0, 1, 0, 1]
    # A's second pass skips the add (a gradient not needed); B's second does something else
    passes, counts = passes_of(places, runs, ["dot", "add", "dot", "dot", "tanh"])
    assert passes == [Pass(1, 2), Pass(1, 2), Pass(2, 2), None, None]
    assert counts == {A: 2, B: 1}
    # the same places without signatures are two passes each
    assert passes_of(places, runs)[1] == {A: 2, B: 2}
    # the widest run may come last
    assert passes_of([A, A, A], [0, 1, 1], ["dot", "dot", "add"])[1] == {A: 2}


def test_a_backward_place_says_the_larger_of_its_own_and_its_forward_twins_passes() -> None:
    assert total_passes(A_GRAD, {A_GRAD: 2, A: 3}) == 3
    assert total_passes(A_GRAD, {A: 3}) == 3
    assert total_passes(A_GRAD, {A_GRAD: 4, A: 3}) == 4
    assert total_passes(A, {A: 3, A_GRAD: 5}) == 3
    assert total_passes(B, {}) == 1
    assert total_passes(A_GRAD, {A_GRAD: 1}) == 1  # a backward line whose forward line ran no passes


def test_a_line_of_a_scan_body_runs_once_per_trip_unless_a_python_loop_numbers_it() -> None:
    scan5, scan2 = Body("scan", 5, None), Body("scan", 2, None)
    D = (((MINE, 12),), "", False, None)
    E = (((MINE, 13),), "", False, None)
    F = (((MINE, 14),), "", False, None)
    G = (((MINE, 15),), "", False, None)
    bodies = [[Body("while", None, None)], [scan5], [scan5], [scan5, scan2], [Body("scan", 1, None)], [], [scan5]]
    bodies += [[scan2], [scan5]]
    places = [C, A, B, D, E, A_GRAD, None, F, G]
    place_passes = {B: 3, G: 2}
    # a loop of two trips counts; a line that a Python loop already numbers twice keeps its passes
    assert count_scan_trips(bodies, places, place_passes) == frozenset({A, F})
    assert place_passes == {A: 5, B: 3, F: 2, G: 2}
    unknown = {A: 1}
    assert count_scan_trips([[Body("scan", None, None)]], [A], unknown) == frozenset()
    assert unknown == {A: 1}
    assert is_scan_trip(A, frozenset({A}), 2)
    assert not is_scan_trip(A, frozenset({A}), 1)
    assert not is_scan_trip(B, frozenset({A}), 2)


def test_collectives_of_one_place_split_evenly_over_the_passes_in_schedule_order() -> None:
    positions = [(3, 0), (1, 0), (4, 0), (2, 0)]
    assert number_in_order(positions, 2, backward=False) == [Pass(2, 2), Pass(1, 2), Pass(2, 2), Pass(1, 2)]
    assert number_in_order(positions, 2, backward=True) == [Pass(1, 2), Pass(2, 2), Pass(1, 2), Pass(2, 2)]
    assert number_in_order(positions, 4, backward=False, of=5) == [Pass(3, 5), Pass(1, 5), Pass(4, 5), Pass(2, 5)]
    assert number_in_order(positions, 2, backward=False, of=1) == [Pass(2, 2), Pass(1, 2), Pass(2, 2), Pass(1, 2)]
    assert all(type(p.number) is int for p in number_in_order(positions, 2, backward=False) or ())
    assert number_in_order(positions, 1, backward=False) is None
    assert number_in_order(positions[:3], 2, backward=False) is None
