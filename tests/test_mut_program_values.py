"""Each value's name and layout (program/lines/naming.py, program/values/layouts.py), on small programs made with ``jax.make_jaxpr``.

No program is compiled: the values are read from the jaxpr as ``trace`` reads a
traced program's, and the lines and names expected are counted by hand from the
functions below (``LINE`` + n is the n-th line after a function's ``def``). The
layouts expected are JAX's own: the shardings the jaxpr's types carry, or the
``NamedSharding`` a PartitionSpec makes. These tests came from mutation testing
(docs/mutation.md); the traced-program tests (test_program_*.py) check the same
rules through ``shardviz.trace``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

from shardviz.array.describe import describe
from shardviz.program.hlo import parse_sharding
from shardviz.program.lines.jaxpr_walk import walk
from shardviz.program.model import SourceListing, Value
from shardviz.program.values.layouts import ValueReader, spec_tuple

FILE = __file__


def line(function: Callable[..., Any], n: int) -> int:
    """The n-th line after ``function``'s ``def`` line."""
    return function.__code__.co_firstlineno + n


def mlp(x, w1, w2):
    h = jnp.tanh(x @ w1)
    y = h @ w2
    return y


def layers(x, ws):
    for w in ws:
        h = x @ w
        x = jnp.tanh(h)
    return x


def one_line_loop(x, ws):
    for w in ws:
        x = jnp.tanh(x @ w)
    return x


def products(x, wq, wk, wv):
    q, k, v = x @ wq, x @ wk, x @ wv
    return q * 2, k * 3, v * 4


def halves(x):
    a, b = jnp.split(x, 2)
    return a * b


def largest(x):
    top, where = jax.lax.top_k(x, 2)
    return top * 2, where + 1


pair = jax.jit(lambda t: (t * 2, t * 3))


def two_results_of_a_call(x):
    a, b = pair(x)
    return a + b


def predict(x, w):
    return jnp.tanh(x @ w)


def loss(x, w):
    pred = predict(x, w)
    return jnp.sum(pred)


def unused(x):
    z = jnp.sin(x)  # noqa: F841
    u = jnp.cos(x)  # noqa: F841
    return x * 2


def two_statements(x):
    a = x * 2; b = a + 1  # noqa: E702  # fmt: skip
    return jnp.tanh(a) + b


def inner_jit(x):
    y = jax.jit(lambda t: t * 2)(x)
    return y


def ref_step(w_ref, x):
    w = w_ref[...]
    new = w * 2
    w_ref[...] = new
    again = w_ref[...]
    return again @ x, new


def three_terms(q, k, v):
    s = q + k + v
    return s * 2


def loop_of_three_terms(a, b, c):
    for _ in range(3):
        a = a + b + c
    return a


def one_line_matmuls(x, w):
    for _ in range(3):
        x = x @ w
    return x


def product(a, b):
    y = a * b
    return y.sum()


def chained(a, b, c):
    y = jnp.einsum("ij,jk,kl->il", a, b, c)
    return y * 2


square = jax.jit(lambda t: t * t)
cube = jax.jit(lambda t: t * t * t)


def two_jitted_calls(x):
    a, b = square(x), cube(x)
    return a + b


def helper(x):
    h = jnp.tanh(x)
    return h * 3


def two_helper_calls(x):
    a, b = helper(x), helper(x * 2)
    return a + b


def two_alike_helper_calls(x):
    a, b = helper(x), helper(x)
    return a + b


def scaled_tanh(x):
    return jnp.tanh(x) * 3


def binds_inside(x):
    y = scaled_tanh(x)
    return y


def two_calls_that_bind_inside(x):
    a, b = binds_inside(x), binds_inside(x)
    return a + b


def passes_on(x):
    return scaled_tanh(x)


def passes_on_twice(x):
    return passes_on(x)


def deep_calls(x):
    y = scaled_tanh(x) + 1
    one = scaled_tanh(x)
    two = passes_on(x)
    three = passes_on_twice(x)
    return y + one + two + three


def binds_tanh(x):
    y = jnp.tanh(x)
    return y


def calls_binds_tanh(x):
    z = binds_tanh(x)
    return jnp.sum(z * 2)


def residual(x, w):
    return x + jnp.tanh(x @ w)


def residual_loop(x, w):
    for _ in range(3):
        x = residual(x, w)
    return x.sum()


def read(
    f: Callable[..., Any],
    *args: Any,
    mode: str = "none",
    mesh: Mesh | None = None,
    assignment: tuple[Any, ...] | None = None,
    single: bool = False,
    inputs: Sequence[Any] = (),
    outputs: Sequence[Any] = (),
    input_paths: Sequence[str] = (),
    output_paths: Sequence[str] = (),
    source: SourceListing | None = None,
) -> tuple[ValueReader, tuple[Value, ...]]:
    closed = jax.make_jaxpr(f)(*args)
    reader = ValueReader(
        mode=mode,
        mesh=mesh,
        assignment=assignment,
        to_mesh=None,
        single_device=single,
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        jaxpr=closed.jaxpr,
        before_partitioning=None,
        source=source,
        input_paths=input_paths,
        output_paths=output_paths,
    )
    return reader, reader.values(walk(closed))


def made(values: Sequence[Value]) -> list[Value]:
    return [v for v in values if v.role != "input"]


X = jnp.ones((4, 4))


# --- names --------------------------------------------------------------------------------


def test_a_line_names_the_value_it_hands_on_by_the_variable_it_binds() -> None:
    _, values = read(mlp, X, X, X, input_paths=("x", "w1", "w2"))
    assert [v.label for v in values[:3]] == ["x", "w1", "w2"]
    dot, tanh, out = made(values)
    assert (dot.primitive, dot.source.line, dot.label) == ("dot_general", line(mlp, 1), f"%{dot.name}")
    assert (tanh.primitive, tanh.source.line, tanh.label) == ("tanh", line(mlp, 1), "h")
    assert (out.role, out.source.line, out.label) == ("output", line(mlp, 2), "y")
    assert all(v.pass_number is None and v.passes is None and v.scope == "" for v in values)
    # an output takes its path where the program has one
    _, values = read(mlp, X, X, X, output_paths=("out",))
    assert values[-1].label == "out"
    assert [v.label for v in values[:3]] == [f"%{v.name}" for v in values[:3]]


def test_each_pass_of_a_python_loop_is_numbered_and_named() -> None:
    _, values = read(layers, X, [X, X, X])
    inner = made(values)
    assert [(v.primitive, v.source.line) for v in inner] == [
        ("dot_general", line(layers, 2)),
        ("tanh", line(layers, 3)),
    ] * 3
    assert [v.label for v in inner] == ["h", "x"] * 3
    assert [v.pass_number for v in inner] == [1, 1, 2, 2, 3, 3]
    assert {v.passes for v in inner} == {3}


def test_each_pass_of_a_one_line_loop_names_its_last_value() -> None:
    _, values = read(one_line_loop, X, [X, X, X])
    inner = made(values)
    assert [v.primitive for v in inner] == ["dot_general", "tanh"] * 3
    assert [v.label for v in inner] == [label for k in (0, 2, 4) for label in (f"%{inner[k].name}", "x")]
    assert [v.pass_number for v in inner] == [1, 1, 2, 2, 3, 3]


def test_each_pass_of_a_one_line_loop_in_a_gradient_names_what_the_next_pass_reads() -> None:
    # the forward pass also keeps 1 - tanh(x)**2 on the line, for the backward pass alone
    for f in (jax.grad, jax.value_and_grad):
        _, values = read(f(lambda ws, x: one_line_loop(x, ws).sum()), [X, X, X], X)
        forward = [v for v in made(values) if v.source.line == line(one_line_loop, 2) and "transpose" not in v.key]
        assert [v.primitive for v in forward] == ["dot_general", "tanh", "sub"] * 3
        assert [v.label for v in forward if v.label == "x"] == ["x"] * 3
        assert [v.primitive for v in forward if v.label == "x"] == ["tanh"] * 3


def test_a_one_line_loop_inside_a_jitted_call_in_a_gradient_names_what_its_next_pass_reads() -> None:
    # the loop one call down: what the call's own body reads forward is read in the body's jaxpr
    inner = jax.jit(one_line_loop)
    for f in (jax.grad, jax.value_and_grad):
        _, values = read(f(lambda ws, x: inner(x, ws).sum()), [X, X, X], X)
        tanhs = [v for v in made(values) if v.primitive == "tanh" and v.source.line == line(one_line_loop, 2)]
        assert [v.pass_number for v in tanhs] == [1, 2, 3]
        # passes 1 and 2 hand theirs to the next pass; the last pass's, handed out of the call and on to
        # the gradient alone, is not named today (docs/mutation.md)
        assert [v.label for v in tanhs[:2]] == ["x", "x"]


def test_a_tuple_of_expressions_names_each_part_in_order() -> None:
    _, values = read(products, X, X, X, X)
    dots = [v for v in values if v.primitive == "dot_general"]
    assert [v.label for v in dots] == ["q", "k", "v"]
    assert {v.source.line for v in dots} == {line(products, 1)}


def test_the_results_of_one_equation_are_named_in_order_and_are_no_loops_passes() -> None:
    # one split (one top_k) with two results: the line binds both, and no Python loop ran it twice
    for f, names in ((halves, ["a", "b"]), (largest, ["top", "where"])):
        _, values = read(f, jnp.arange(8.0))
        results = [v for v in made(values) if v.source.line == line(f, 1)]
        assert [v.label for v in results] == names
        assert [(v.pass_number, v.passes) for v in results] == [(None, None)] * 2


def test_the_results_of_one_call_are_named_in_order() -> None:
    _, values = read(two_results_of_a_call, X)
    results = [v for v in made(values) if v.primitive in ("pjit", "jit")]
    assert [v.label for v in results] == ["a", "b"]
    assert {v.source.line for v in results} == {line(two_results_of_a_call, 1)}


def test_what_a_called_function_hands_back_takes_the_name_its_call_binds() -> None:
    _, values = read(loss, X, X)
    dot, tanh, total = made(values)
    assert tanh.label == "pred"
    assert [tanh.source.line, tanh.stack[1].line] == [line(predict, 1), line(loss, 1)]
    assert dot.label == f"%{dot.name}"
    assert total.label == f"%{total.name}"  # `return jnp.sum(pred)` binds nothing


def test_the_operations_of_one_line_are_one_pass_and_a_loops_repeats_one_pass_each() -> None:
    # q + k + v: two adds that start at one column and end at two, once
    _, values = read(three_terms, X, X, X)
    adds = [v for v in made(values) if v.primitive == "add"]
    assert [v.source.line for v in adds] == [line(three_terms, 1)] * 2
    assert [(v.pass_number, v.passes) for v in adds] == [(None, None)] * 2
    assert [v.label for v in adds] == [f"%{adds[0].name}", "s"]
    # the same line in a loop of three: three passes of two adds, not six
    _, values = read(loop_of_three_terms, X, X, X)
    adds = made(values)
    assert [(v.primitive, v.pass_number, v.passes) for v in adds] == [("add", k, 3) for k in (1, 1, 2, 2, 3, 3)]
    assert [v.label for v in adds[1::2]] == ["a"] * 3
    # a one-line loop of one product: still a pass per product
    _, values = read(one_line_matmuls, X, X)
    assert [(v.pass_number, v.passes) for v in made(values)] == [(1, 3), (2, 3), (3, 3)]


def test_a_gradients_products_of_one_forward_product_are_one_pass() -> None:
    _, values = read(jax.grad(product, argnums=(0, 1)), X, X)
    on_the_line = [v for v in made(values) if v.source.line == line(product, 1)]
    # the forward a * b, then its gradient's b * g and a * g
    assert [v.primitive for v in on_the_line] == ["mul"] * 3
    assert all(v.pass_number is None and v.passes is None for v in on_the_line)


def test_one_lines_einsum_of_three_operands_is_one_pass() -> None:
    _, values = read(chained, X, X, X)
    dots = [v for v in made(values) if v.primitive == "dot_general"]
    assert len(dots) == 2 and {v.source.line for v in dots} == {line(chained, 1)}
    assert [(v.pass_number, v.passes) for v in dots] == [(None, None)] * 2
    assert dots[-1].label == "y"


def test_a_tuple_of_jitted_calls_names_each_call_and_their_bodies_run_once() -> None:
    _, values = read(two_jitted_calls, X)
    calls = [v for v in made(values) if v.source.line == line(two_jitted_calls, 1)]
    assert [(v.primitive, v.label) for v in calls] == [("jit", "a"), ("jit", "b")]
    # cube's t * t * t: two products on its one line, run once
    cubes = [v for v in made(values) if v.stack[0].function == "<lambda>" and len(v.stack) > 1]
    assert [v.primitive for v in cubes] == ["mul"] * 3  # square's one, cube's two
    assert all(v.pass_number is None for v in cubes)


def test_a_tuple_of_helper_calls_names_each_call_and_each_calls_lines() -> None:
    _, values = read(two_helper_calls, X)
    tanhs = [v for v in made(values) if v.primitive == "tanh"]
    assert [v.label for v in tanhs] == ["h", "h"]
    returned = [v for v in made(values) if v.source.line == line(helper, 2)]
    assert [v.label for v in returned] == ["a", "b"]
    # two calls on one line are no loop's two passes
    assert all(v.pass_number is None and v.passes is None for v in tanhs + returned)
    doubled = [v for v in made(values) if v.source.line == line(two_helper_calls, 1)]
    assert [v.label for v in doubled] == [f"%{doubled[0].name}"]  # x * 2 is neither a nor b
    # the same with nothing made between the calls
    _, values = read(two_alike_helper_calls, X)
    assert [v.label for v in made(values) if v.primitive == "tanh"] == ["h", "h"]
    assert [v.label for v in made(values) if v.source.line == line(helper, 2)] == ["a", "b"]


def test_what_a_called_function_hands_back_is_named_on_every_pass_of_a_loop() -> None:
    for f in (residual_loop, jax.value_and_grad(residual_loop)):
        _, values = read(f, X, X)
        returned = [v for v in made(values) if v.source.line == line(residual, 1) and "transpose" not in v.key]
        returned = [v for v in returned if v.primitive != "sub"]  # the gradient's 1 - tanh² beside tanh
        # each pass: x @ w, tanh, and the sum the loop's line binds as x
        assert [v.primitive for v in returned][:9] == ["dot_general", "tanh", "add"] * 3
        assert [v.label for v in returned[2:9:3]] == ["x"] * 3
        assert [v.pass_number for v in returned[2:9:3]] == [1, 2, 3]
        assert all(v.label == f"%{v.name}" for v in returned[:9] if v.primitive != "add")
    # a gradient alone needs no loss: the last pass's sum is dead, and nothing else takes its name
    _, values = read(jax.grad(residual_loop), X, X)
    returned = [v for v in made(values) if v.source.line == line(residual, 1) and "transpose" not in v.key]
    assert [(v.label, v.sharding_from == "dead") for v in returned if v.label == "x" or v.primitive == "add"] == [
        ("x", False),
        ("x", False),
        (f"%{returned[-1].name}", True),
    ]


def test_a_call_names_by_the_nearest_line_that_binds_a_name() -> None:
    _, values = read(deep_calls, X)
    results = [v for v in made(values) if v.source.line == line(scaled_tanh, 1) and v.primitive == "mul"]
    # y's line names its own sum; the next three calls name their results one, two and three calls out
    assert [v.label for v in results] == [f"%{results[0].name}", "one", "two", "three"]
    # a name bound one call out is kept, though the line two calls out binds another
    _, values = read(two_calls_that_bind_inside, X)
    results = [v for v in made(values) if v.source.line == line(scaled_tanh, 1) and v.primitive == "mul"]
    assert [v.label for v in results] == ["y", "y"]
    # a call's result named inside it leaves the call's line no name to give: not to the
    # gradient's 1 - tanh², made after it on the same line for the backward pass
    _, values = read(jax.grad(calls_binds_tanh), X)
    inside = [v for v in made(values) if v.source.line == line(binds_tanh, 1) and "transpose" not in v.key]
    assert [(v.primitive, v.label) for v in inside] == [("tanh", "y"), ("sub", f"%{inside[1].name}")]


def test_gradients_keep_the_jaxprs_names() -> None:
    _, values = read(jax.grad(loss), X, X)
    backward = [v for v in made(values) if v.primitive in ("mul", "dot_general", "add_any", "broadcast_in_dim")]
    assert backward and all(v.label == f"%{v.name}" for v in backward)
    assert [v.label for v in made(values) if v.primitive == "tanh"] == ["pred"]
    # a loop's backward passes too, though each pass's forward value is named after its line
    _, values = read(jax.grad(lambda ws, x: layers(x, ws).sum()), [X, X, X], X)
    backward = [v for v in made(values) if "transpose" in v.key]
    assert {v.pass_number for v in backward if v.source.line == line(layers, 2)} == {1, 2, 3}
    assert backward and all(v.label == f"%{v.name}" for v in backward)
    assert [v.label for v in made(values) if v.primitive == "tanh"] == ["x"] * 3


def test_values_nobody_reads_are_dead_unnamed_and_numbered_apart() -> None:
    _, values = read(unused, X)
    sin, cos, out = made(values)
    assert (sin.name, sin.label, sin.sharding_from, sin.layout) == ("_", "%_1", "dead", None)
    assert (cos.name, cos.label, cos.sharding_from) == ("_", "%_2", "dead")
    assert sin.note == "nothing needs it, so XLA leaves it out: it is never computed"
    assert out.label == f"%{out.name}"


def test_a_line_of_two_statements_names_nothing() -> None:
    _, values = read(two_statements, X)
    assert all(v.label == f"%{v.name}" for v in values)


def test_keys_name_inputs_by_path_and_values_by_line_primitive_and_count() -> None:
    _, values = read(layers, X, [X, X], input_paths=("x", "ws[0]", "ws[1]"))
    keys = [v.key for v in values]
    file = FILE.rsplit("/", 1)[-1]
    dot, tanh = f"{file}:{line(layers, 2)}|dot_general|", f"{file}:{line(layers, 3)}|tanh|"
    assert keys == ["in:x", "in:ws[0]", "in:ws[1]", dot, tanh, f"{dot}#1", f"{tanh}#1"]
    _, values = read(loss, X, X)
    dot = f"{file}:{line(predict, 1)}>{file}:{line(loss, 1)}|dot_general|"
    assert values[2].key == dot
    _, values = read(jax.grad(loss), X, X)
    assert values[2].key == dot + "jvp()"


def test_the_listing_line_is_the_first_frame_inside_the_listing() -> None:
    first = loss.__code__.co_firstlineno
    listing = SourceListing("loss", FILE, first, ("def loss(x, w):", "    pred = predict(x, w)", "    return ..."))
    _, values = read(loss, X, X, source=listing)
    assert [v.listing_line for v in made(values)] == [first + 1, first + 1, first + 2]
    assert [v.listing_line for v in values[:2]] == [None, None]


# --- layouts ------------------------------------------------------------------------------


def test_a_program_without_a_mesh_says_so_and_inputs_and_outputs_take_their_own_layouts() -> None:
    x_layout = describe(X)
    out_layout = describe(X + 1)
    _, values = read(mlp, X, X, X, inputs=(x_layout,), outputs=(out_layout,))
    x, w1 = values[0], values[1]
    assert (x.layout is x_layout, x.sharding_from, x.note) == (True, "argument", "")
    assert (w1.layout, w1.sharding_from, w1.note) == (None, "unknown", "the program has no mesh")
    assert (values[-1].layout is out_layout, values[-1].sharding_from) == (True, "compiled")
    tanh = values[4]
    assert (tanh.type_str, tanh.shape, tanh.dtype) == (str(jax.typeof(X)), (4, 4), "float32")
    assert (tanh.layout, tanh.sharding_from) == (None, "unknown")


def test_a_calls_output_and_its_inner_twin_share_what_either_knows() -> None:
    out_layout = describe(X + 1)
    _, values = read(inner_jit, X, outputs=(out_layout,))
    inside = [v for v in made(values) if v.primitive == "mul"]
    assert len(inside) == 1
    assert inside[0].layout is out_layout and inside[0].sharding_from == "compiled" and inside[0].note == ""


def test_a_whole_read_of_a_ref_is_laid_out_as_what_the_ref_holds_then() -> None:
    argument, result = describe(X), describe(X + 1)
    _, values = read(ref_step, jax.new_ref(X), X, inputs=(argument, argument), outputs=(describe(X + 2), result))
    reads = [v for v in values if v.primitive == "get"]
    assert [v.label for v in reads] == ["w", "again"]
    # the argument until the write, then what was written (the program's second output)
    assert (reads[0].layout is argument, reads[0].sharding_from, reads[0].note) == (True, "argument", "")
    assert (reads[1].layout is result, reads[1].sharding_from, reads[1].note) == (True, "compiled", "")
    (write,) = [v for v in values if v.primitive == "swap"]  # the write hands back the old value, unread
    assert (write.label, write.sharding_from, write.layout) == ("%_1", "dead", None)
    assert write.note == (
        "nothing reads what this swap hands back, so XLA keeps no copy of it; the write or call itself still happens"
    )
    # with nothing known of what was written, the second read stays unknown
    _, values = read(ref_step, jax.new_ref(X), X, inputs=(argument, argument))
    reads = [v for v in values if v.primitive == "get"]
    assert [v.sharding_from for v in reads] == ["argument", "unknown"]
    assert reads[1].note == "the program has no mesh"


def test_without_xlas_choices_an_auto_value_says_why() -> None:
    _, values = read(mlp, X, X, X, mode="auto", mesh=Mesh(np.array(jax.devices()[:2]), ("x",)))
    assert values[3].sharding_from == "unknown"
    assert values[3].note == (
        "XLA's layout choices could not be read for this compile (a cached executable keeps none)"
    )


def test_a_program_on_one_device_lays_every_value_on_it() -> None:
    device = jax.devices()[1]
    _, values = read(mlp, X, X, X, single=True, assignment=(device,))
    tanh = values[4]
    assert tanh.sharding_from == "single device" and tanh.note == ""
    assert tanh.layout.sharding == SingleDeviceSharding(device)
    assert tanh.layout.shape == (4, 4) and tanh.layout.dtype == "float32"
    assert values[3].layout is tanh.layout  # one description per shape, dtype and device
    _, values = read(mlp, X, X, jnp.ones((4, 2)), single=True, assignment=(device,))
    assert values[-1].layout.shape == (4, 2) and values[4].layout.shape == (4, 4)


@pytest.fixture(scope="module")
def explicit() -> Mesh:
    return jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)


def sharded(mesh: Mesh, shape: tuple[int, ...], spec: P) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(mesh, spec))


def test_explicit_values_are_laid_out_as_their_types_say(explicit: Mesh) -> None:
    x, w = sharded(explicit, (8, 4), P("x", None)), sharded(explicit, (4, 6), P(None, "y"))
    with jax.set_mesh(explicit):
        _, values = read(lambda a, b: jnp.tanh(a @ b), x, w, mode="explicit", mesh=explicit)
        typed = jax.make_jaxpr(lambda a, b: a @ b)(x, w).out_avals[0]
    dot, tanh = made(values)
    assert typed.sharding.spec == P("x", "y")  # JAX's own answer for the product
    for v in (dot, tanh):
        assert v.sharding_from == "jaxpr" and v.note == ""
        assert v.layout.sharding == NamedSharding(explicit, P("x", "y"))
        assert v.layout.spec == (("x",), ("y",))
    assert dot.layout is tanh.layout


def test_an_explicit_value_on_another_mesh_or_with_no_mesh_says_so(explicit: Mesh) -> None:
    other = jax.make_mesh((4,), ("z",), axis_types=(AxisType.Explicit,))
    x = sharded(other, (8, 4), P("z", None))
    with jax.set_mesh(other):
        _, values = read(jnp.tanh, x, mode="explicit", mesh=explicit)
    assert values[1].sharding_from == "unknown"
    assert values[1].note == "its type is on another mesh {'z': 4}"
    with jax.set_mesh(explicit):
        _, values = read(jnp.tanh, sharded(explicit, (8, 4), P("x", None)), mode="explicit", mesh=None)
    assert values[1].note == "its type in the jaxpr names no layout"


def test_a_shard_map_body_holds_blocks_not_a_global_layout(explicit: Mesh) -> None:
    body = jax.shard_map(lambda t: t * 2, mesh=explicit, in_specs=P("x"), out_specs=P("x"))
    with jax.set_mesh(explicit):
        _, values = read(body, sharded(explicit, (8, 4), P("x", None)), mode="explicit", mesh=explicit)
    inside = [v for v in values if v.primitive == "mul"]
    assert len(inside) == 1
    assert (inside[0].sharding_from, inside[0].layout) == ("manual", None)
    assert inside[0].note == "inside shard_map: each device holds its own block (its type says which axes vary)"


@pytest.fixture(scope="module")
def auto() -> tuple[ValueReader, Mesh]:
    mesh = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    reader, _ = read(mlp, X, X, X, mode="auto", mesh=mesh, assignment=tuple(mesh.devices.flat))
    return reader, mesh


def test_xlas_choices_become_a_partition_spec_where_one_says_them(auto: tuple[ValueReader, Mesh]) -> None:
    reader, mesh = auto
    replicated = reader._from_hlo(parse_sharding("{replicated}"), (8, 4), "float32")
    assert replicated[1:] == ("xla", "") and replicated[0].sharding == NamedSharding(mesh, P(None, None))
    rows = reader._from_hlo(parse_sharding("{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"), (8, 4), "float32")
    assert rows[1:] == ("xla", "") and rows[0].sharding == NamedSharding(mesh, P("x", None))
    both = reader._from_hlo(parse_sharding("{devices=[2,2]0,1,2,3}"), (8, 4), "float32")
    assert both[0].sharding == NamedSharding(mesh, P("x", "y"))
    one = reader._from_hlo(parse_sharding("{maximal device=2}"), (8, 4), "float32")
    assert one[1:] == ("xla", "") and one[0].sharding == SingleDeviceSharding(mesh.devices.flat[2])


def test_xlas_choices_no_spec_can_say_are_unknown_and_say_why(auto: tuple[ValueReader, Mesh]) -> None:
    reader, _ = auto
    uneven = parse_sharding("{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}")
    assert reader._from_hlo(uneven, (7, 4), "float32") == (
        None,
        "unknown",
        f"XLA split it unevenly, padding its blocks ({uneven.text}), which no PartitionSpec can say",
    )
    shuffled = parse_sharding("{devices=[4,1]0,3,1,2}")
    assert reader._from_hlo(shuffled, (8, 4), "float32") == (
        None,
        "unknown",
        f"XLA split it in a way no PartitionSpec over this mesh can say ({shuffled.text})",
    )
    # blocks that split evenly whatever a dimension's size (6 over 2, 7 not split)
    assert reader._from_hlo(uneven, (6, 7), "float32")[0].spec == (("x",), ())
    over_both = parse_sharding("{devices=[4,1]0,1,2,3}")
    assert reader._from_hlo(over_both, (8, 4), "float32")[0].spec == (("x", "y"), ())
    assert reader._from_hlo(over_both, (6, 4), "float32")[:2] == (None, "unknown")
    wrong_rank = parse_sharding("{devices=[2,2]0,1,2,3}")
    assert reader._from_hlo(wrong_rank, (8,), "float32")[:2] == (None, "unknown")
    beyond = parse_sharding("{maximal device=7}")
    assert reader._from_hlo(beyond, (8, 4), "float32")[:2] == (None, "unknown")
    manual = reader._from_hlo(parse_sharding("{manual}"), (8, 4), "float32")
    assert manual == (None, "manual", "XLA holds it per device (manual sharding)")


def test_xlas_choices_need_a_mesh_to_be_read_on() -> None:
    reader, _ = read(mlp, X, X, X, mode="auto", mesh=None)
    found = parse_sharding("{replicated}")
    assert reader._from_hlo(found, (8, 4), "float32") == (
        None,
        "unknown",
        "XLA chose {replicated}, but the program has no mesh to read it on",
    )


def test_a_partition_spec_becomes_one_tuple_of_axes_per_dimension() -> None:
    assert spec_tuple(P("x", ("y", "z")), 3) == (("x",), ("y", "z"), ())
    assert spec_tuple(P(None, P.UNCONSTRAINED), 2) == ((), ())
    assert spec_tuple(P(), 2) == ((), ())
