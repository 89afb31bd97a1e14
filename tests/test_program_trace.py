"""shardviz.trace on fresh compiles, checked against what JAX itself says.

Collectives are checked against the semantics JAX documents (a contracting
dimension split over y is summed over y; psum over x groups the devices of
each mesh column) with groups compared as device ids taken from
``mesh.devices``; values' types against the traced jaxpr as JAX prints it;
Auto-axis intermediates against ``jax.debug.inspect_array_sharding``;
inputs and outputs against ``jax.typeof`` of the real arrays.
"""

from __future__ import annotations

import inspect
import os
import pathlib
import re
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.program import retrace

AUTO2 = (AxisType.Auto, AxisType.Auto)


def line_of(fn, snippet: str) -> int:
    """The line number of the first source line of ``fn`` containing ``snippet``."""
    lines, first = inspect.getsourcelines(fn)
    for k, text in enumerate(lines):
        if snippet in text:
            return first + k
    raise AssertionError(f"{snippet!r} not in {fn.__name__}")


def mesh_2x4(types=AUTO2, order=None):
    devices = np.asarray(jax.devices()[:8])
    if order is not None:
        devices = devices[list(order)]
    return Mesh(devices.reshape(2, 4), ("x", "y"), axis_types=types)


def put(mesh, shape, spec):
    return jax.device_put(jnp.arange(np.prod(shape), dtype=jnp.float32).reshape(shape), NamedSharding(mesh, spec))


def groups_along(mesh: Mesh, axes: tuple[str, ...]) -> set[frozenset[int]]:
    """Device-id groups that vary exactly along ``axes``, from the mesh's own device array."""
    ids = np.vectorize(lambda d: d.id)(mesh.devices)
    names = list(mesh.axis_names)
    moved = np.moveaxis(ids, [names.index(a) for a in axes], list(range(len(names) - len(axes), len(names))))
    size = int(np.prod([mesh.shape[a] for a in axes])) if axes else 1
    return {frozenset(int(i) for i in row) for row in moved.reshape(-1, size)}


def device_groups(prog, c) -> set[frozenset[int]]:
    return {frozenset(g) for g in prog.device_groups(c)}


# --------------------------------------------------------------------------
# collectives against JAX semantics


def matmul(a, b):
    c = a @ b
    return jnp.tanh(c).sum(axis=0)


@pytest.mark.parametrize("order", [None, (3, 1, 7, 5, 0, 2, 6, 4)])
def test_sharded_contracting_dim_and_reduction(order):
    """a @ b with the contracting dim split over y sums partial products over y;
    summing away x sums over x. A mesh whose devices are not in id order gives the same axes."""
    mesh = mesh_2x4(order=order)
    a, b = put(mesh, (16, 32), P("x", "y")), put(mesh, (32, 8), P("y", None))
    prog = shardviz.trace(matmul, a, b)
    by_axes = {c.axes: c for c in prog.collectives}
    assert set(by_axes) == {("y",), ("x",)}
    contract, reduce = by_axes[("y",)], by_axes[("x",)]
    assert contract.kind == reduce.kind == "all-reduce"
    # Each device holds a [16/2, 8] block of partial products.
    assert contract.result_bytes == 8 * 8 * 4 and contract.group_size == 4
    assert contract.wire_bytes == 2 * 3 * contract.result_bytes // 4
    assert device_groups(prog, contract) == groups_along(mesh, ("y",))
    assert device_groups(prog, reduce) == groups_along(mesh, ("x",))
    assert contract.source_line == line_of(matmul, "c = a @ b") == contract.listing_line
    assert reduce.source_line == line_of(matmul, "sum(axis=0)")
    assert contract.source_file == __file__ and contract.count == 1 and contract.count_exact
    assert "all-reduce(" in contract.hlo and contract.op_name.endswith("dot_general")


def test_constraint_all_gathers_over_both_axes():
    mesh = mesh_2x4()

    def f(a):
        return jax.lax.with_sharding_constraint(a * 2, NamedSharding(mesh, P()))

    prog = shardviz.trace(f, put(mesh, (16, 32), P("x", "y")))
    assert {c.kind for c in prog.collectives} == {"all-gather"}
    assert sorted(c.axes for c in prog.collectives) == [("x",), ("y",)]
    assert prog.outputs[0].spec == ((), ())
    gathered = max(prog.collectives, key=lambda c: c.result_bytes)
    assert gathered.result_bytes == 16 * 32 * 4  # the whole array lands on every device


def stack(ws, x):
    def layer(h, w):
        return jnp.tanh(h @ w), None

    return jax.lax.scan(layer, x, ws)[0]


def test_scan_counts_every_layer():
    mesh = mesh_2x4()
    ws, x = put(mesh, (5, 32, 32), P(None, "y", None)), put(mesh, (16, 32), P("x", None))
    prog = shardviz.trace(stack, ws, x)
    (c,) = prog.collectives
    assert (c.kind, c.axes, c.count, c.count_exact) == ("all-reduce", ("y",), 5, True)
    assert c.total_wire_bytes == 5 * c.wire_bytes
    assert c.source_line == line_of(stack, "h @ w")
    assert prog.totals.runs == 5
    body = [v for v in prog.values if v.bodies]
    assert body and all(v.bodies[0].primitive == "scan" and v.bodies[0].trip_count == 5 for v in body)


def shard_mapped(mesh):
    def inner(b):
        s = jax.lax.psum(b, "x")
        r = jax.lax.psum_scatter(b, "y", scatter_dimension=1, tiled=True)
        p = jax.lax.ppermute(b, "y", [(i, (i + 1) % 4) for i in range(4)])
        t = jax.lax.all_to_all(b, "y", 0, 0, tiled=True)
        q = jax.lax.psum(b, ("y", "x"))
        return s, r, p, t, q

    def f(a):
        return jax.shard_map(inner, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"), check_vma=False)(a)

    return f, inner


@pytest.mark.parametrize("order", [None, (7, 6, 5, 4, 3, 2, 1, 0), (3, 1, 7, 5, 0, 2, 6, 4)])
def test_shard_map_collectives(order):
    mesh = mesh_2x4(order=order)
    f, inner = shard_mapped(mesh)
    prog = shardviz.trace(f, put(mesh, (16, 32), P("x", "y")))
    by_line = {c.source_line: c for c in prog.collectives}
    expected = {
        'psum(b, "x")': ("all-reduce", ("x",)),
        "psum_scatter": ("reduce-scatter", ("y",)),
        "ppermute": ("collective-permute", ("y",)),
        "all_to_all": ("all-to-all", ("y",)),
        'psum(b, ("y", "x"))': ("all-reduce", ("x", "y")),  # axes in mesh order
    }
    assert len(prog.collectives) == len(expected)
    for snippet, (kind, axes) in expected.items():
        c = by_line[line_of(inner, snippet)]
        assert (c.kind, c.axes) == (kind, axes), snippet
        if kind != "collective-permute":
            assert device_groups(prog, c) == groups_along(mesh, axes), snippet
    permute = by_line[line_of(inner, "ppermute")]
    ids = prog.devices.ids
    # Every pair moves one step along y, in device ids as JAX's mesh lays them out.
    for s, t in permute.pairs:
        ms, mt = prog.assignment[s], prog.assignment[t]
        assert ms // 4 == mt // 4 and (ms + 1) % 4 == mt % 4
        assert mesh.devices.flat[ms].id == ids[ms]
    scatter = by_line[line_of(inner, "psum_scatter")]
    assert scatter.result_bytes == 8 * 2 * 4 and scatter.wire_bytes == 3 * scatter.result_bytes


def test_three_axis_mesh():
    mesh = Mesh(np.asarray(jax.devices()).reshape(2, 2, 3), ("a", "b", "c"), axis_types=(AxisType.Auto,) * 3)

    def inner(v):
        return jax.lax.psum(v, ("c", "a")), jax.lax.psum(v, "b"), jax.lax.all_gather(v, ("a", "b"), tiled=True)

    def f(v):
        spec = P("a", "b")
        return jax.shard_map(inner, mesh=mesh, in_specs=spec, out_specs=(spec, spec, P(None, "b")), check_vma=False)(v)

    prog = shardviz.trace(f, put(mesh, (12, 6), P("a", "b")))
    axes = sorted(c.axes for c in prog.collectives)
    assert axes == [("a", "b"), ("a", "c"), ("b",)]
    for c in prog.collectives:
        assert device_groups(prog, c) == groups_along(mesh, c.axes)
        assert c.group_size == int(np.prod([mesh.shape[a] for a in c.axes]))


def test_single_device_has_no_collectives():
    x = jnp.ones((4, 8))
    prog = shardviz.trace(lambda v: (v * 2).sum(), x)
    assert prog.collectives == () and prog.mesh is None and prog.num_partitions == 1
    assert prog.totals.wire_bytes == 0
    assert prog.inputs[0].type_str == str(jax.typeof(x))
    device = next(iter(x.devices())).id
    assert all(v.layout is not None and v.layout.devices[0].id == device for v in prog.values)


# --------------------------------------------------------------------------
# values


def explicit_model(x, w):
    h = jnp.dot(x, w, out_sharding=P("x", None))
    g = jnp.tanh(h) * 2

    def body(c, row):
        return c * 2 + row.sum(), c

    last, seen = jax.lax.scan(body, g, jnp.ones((3, 8)))
    halved = jax.lax.while_loop(lambda c: c.sum() > 1.0, lambda c: c / 2, last)
    chosen = jax.lax.cond(halved.sum() > 0, lambda c: c + 1, lambda c: c - 1, halved)
    return chosen, seen


def printed_types(jaxpr) -> dict[str, str]:
    """name -> short type, read from JAX's own printing of the jaxpr."""
    return dict(re.findall(r"\b([a-z]+):((?:[a-z0-9]+)\[[^\]]*\](?:\{[^}]*\})?)", str(jaxpr)))


def short(type_str: str) -> str:
    return str(type_str).replace("float32", "f32").replace("int32", "i32")


def test_explicit_values_carry_their_jaxpr_types():
    mesh = mesh_2x4(types=(AxisType.Explicit, AxisType.Explicit))
    x, w = put(mesh, (16, 32), P("x", "y")), put(mesh, (32, 8), P("y", None))
    with jax.set_mesh(mesh):
        prog = shardviz.trace(explicit_model, x, w)
        traced = jax.jit(explicit_model).trace(x, w)
    printed = printed_types(traced.jaxpr)
    assert prog.sharding_mode == "explicit"
    names = [v.name for v in prog.values]
    assert len(set(names)) == len(names) and set(names) <= set(printed)  # the rest are body parameters
    for v in prog.values:
        assert short(v.type_str) == printed[v.name], v.name
        if v.role == "intermediate":
            assert v.sharding_from == "jaxpr" and v.layout is not None
            assert v.layout.type_str == v.type_str
    dot = next(v for v in prog.values if v.primitive == "dot_general")
    assert dot.type_str == "float32[16@x,8]" and dot.spec == (("x",), ())
    assert dot.listing_line == line_of(explicit_model, "jnp.dot")
    inside = [v for v in prog.values if v.bodies]
    assert {v.primitive for v in inside} >= {"mul", "add", "div", "sub"}
    assert {v.bodies[-1].primitive for v in inside} == {"scan", "while", "cond"}
    assert all(v.layout is not None and v.layout.type_str == v.type_str for v in inside)
    assert [str(jax.typeof(a)) for a in (x, w)] == [layout.type_str for layout in prog.inputs]


def test_shard_map_bodies_are_manual():
    mesh = mesh_2x4(types=(AxisType.Explicit, AxisType.Explicit))
    f, _ = shard_mapped(mesh)
    a = put(mesh, (16, 32), P("x", "y"))
    prog = shardviz.trace(f, a)
    printed = printed_types(jax.jit(f).trace(a).jaxpr)
    inside = [v for v in prog.values if v.sharding_from == "manual"]
    assert inside and all(v.layout is None and "manual" not in v.type_str for v in inside)
    for v in prog.values:
        assert short(v.type_str) == printed[v.name]


def auto_model(a, w, probe=lambda name, v: None):
    h = a @ w
    probe("h", h)
    g = jnp.tanh(h) * 2
    probe("g", g)
    r = jax.nn.relu(g)  # a library call (custom_jvp around a jit): its output is its inner value
    probe("r", r)
    return r.sum(axis=1)


@pytest.mark.parametrize(
    ("a_spec", "w_spec", "order"),
    [
        (P("x", "y"), P("y", None), None),
        (P("x", None), P(None, "y"), None),
        (P(None, "y"), P("y", "x"), None),
        (P("x", "y"), P("y", None), (3, 1, 7, 5, 0, 2, 6, 4)),
    ],
)
def test_auto_intermediates_match_inspect_array_sharding(a_spec, w_spec, order):
    mesh = mesh_2x4(order=order)
    a, w = put(mesh, (16, 32), a_spec), put(mesh, (32, 8), w_spec)
    prog = shardviz.trace(auto_model, a, w)

    seen = {}

    def probe(name, v):
        jax.debug.inspect_array_sharding(v, callback=lambda s: seen.__setitem__(name, s))

    jax.jit(lambda a, w: auto_model(a, w, probe)).lower(a, w).compile()
    lines = {
        "h": (line_of(auto_model, "h = a @ w"), "dot_general"),
        "g": (line_of(auto_model, "g = jnp.tanh"), "mul"),
        "r": (line_of(auto_model, "r = jax.nn.relu"), "custom_jvp_call"),
    }
    for name, (line, primitive) in lines.items():
        v = next(v for v in prog.values if v.source and v.source.line == line and v.primitive == primitive)
        assert v.sharding_from == "xla" and v.layout is not None, v.note
        ours = NamedSharding(mesh, P(*(e if e else None for e in v.layout.spec)))
        assert ours.devices_indices_map(v.shape) == seen[name].devices_indices_map(v.shape), name


def column_sums(a):
    return (a * 2).sum(axis=0)


def test_outputs_equal_the_real_results():
    for types in (AUTO2, (AxisType.Explicit, AxisType.Explicit)):
        mesh = mesh_2x4(types=types)
        a = put(mesh, (16, 32), P("x", "y"))
        prog = shardviz.trace(column_sums, a)
        (out,) = prog.outputs
        real = jax.jit(column_sums)(a)
        assert out.type_str == str(jax.typeof(real))
        truth = real.sharding.devices_indices_map(real.shape)
        ours = NamedSharding(mesh, P(*(e if e else None for e in out.spec))).devices_indices_map(real.shape)
        assert ours == truth
        assert prog.output_paths == ("out",)


def test_memory_and_flops_as_jax_reports_them():
    mesh = mesh_2x4()
    a, b = put(mesh, (16, 32), P("x", "y")), put(mesh, (32, 8), P("y", None))
    prog = shardviz.trace(matmul, a, b)
    compiled = jax.jit(matmul).lower(a, b).compile()
    stats = compiled.memory_analysis()
    m = prog.with_bytes("cpu").memory  # XLA:CPU's own figures, behind the switch
    assert (m.argument_bytes, m.output_bytes, m.temp_bytes, m.alias_bytes) == (
        stats.argument_size_in_bytes,
        stats.output_size_in_bytes,
        stats.temp_size_in_bytes,
        stats.alias_size_in_bytes,
    )
    assert prog.flops == compiled.cost_analysis()["flops"]


def test_call_chain_is_the_real_python_stack():
    mesh = mesh_2x4()

    def inner(v):
        return v.sum(axis=0)

    def middle(v):
        return inner(v * 2)

    def outer(v):
        return middle(v)

    prog = shardviz.trace(outer, put(mesh, (16, 32), P("x", "y")))
    c = next(c for c in prog.collectives if c.axes == ("x",))
    lines = [(f.function.rsplit(".", 1)[-1], f.line) for f in c.stack[:3]]
    assert lines == [
        ("inner", line_of(inner, "v.sum(axis=0)")),
        ("middle", line_of(middle, "inner(v * 2)")),
        ("outer", line_of(outer, "middle(v)")),
    ]
    assert c.listing_line == line_of(outer, "middle(v)")
    assert prog.source.name.endswith("outer") and prog.source.first_line == inspect.getsourcelines(outer)[1]


def test_kwargs_scalars_and_paths():
    mesh = mesh_2x4()
    params = {"w": put(mesh, (32, 8), P("y", None)), "b": put(mesh, (8,), P())}

    def f(params, x, *, scale):
        return (x @ params["w"] + params["b"]) * scale

    x = put(mesh, (16, 32), P("x", "y"))
    prog = shardviz.trace(f, params, x, scale=2.0)
    assert prog.input_paths == ("params['b']", "params['w']", "x", "scale")
    assert prog.inputs[3].type_str == str(jax.typeof(2.0))
    assert [layout.type_str for layout in prog.inputs[:3]] == [
        str(jax.typeof(v)) for v in (params["b"], params["w"], x)
    ]


def test_jitted_function_keeps_static_arguments_and_donation():
    mesh = mesh_2x4()
    a = put(mesh, (16, 32), P("x", "y"))
    before = np.asarray(a)
    f = jax.jit(lambda v, mode: v.sum(axis=0) if mode == "sum" else v, static_argnums=1, donate_argnums=0)
    prog = shardviz.trace(f, a, "sum")
    assert prog.input_paths == ("v",) and len(prog.inputs) == 1
    assert [c.axes for c in prog.collectives] == [("x",)]
    assert not a.is_deleted() and a.sharding == NamedSharding(mesh, P("x", "y"))
    np.testing.assert_array_equal(np.asarray(a), before)


def test_shape_dtype_structs_need_no_data():
    mesh = mesh_2x4()
    a = jax.ShapeDtypeStruct((16, 32), jnp.float32, sharding=NamedSharding(mesh, P("x", "y")))
    b = jax.ShapeDtypeStruct((32, 8), jnp.float32, sharding=NamedSharding(mesh, P("y", None)))
    prog = shardviz.trace(matmul, a, b)
    assert {c.axes for c in prog.collectives} == {("x",), ("y",)}
    assert not prog.inputs[0].has_array and prog.inputs[0].spec == (("x",), ("y",))


def test_retrace_with_new_specs_equals_a_fresh_trace():
    mesh = mesh_2x4()
    a, b = put(mesh, (16, 32), P("x", "y")), put(mesh, (32, 8), P("y", None))
    prog = shardviz.trace(matmul, a, b)
    again = retrace(prog, ["x, None", P(None, "y")])
    fresh = shardviz.trace(matmul, put(mesh, (16, 32), P("x", None)), put(mesh, (32, 8), P(None, "y")))
    assert [(c.kind, c.axes, c.result_bytes) for c in again.collectives] == [
        (c.kind, c.axes, c.result_bytes) for c in fresh.collectives
    ]
    assert [layout.spec for layout in again.inputs] == [(("x",), ()), ((), ("y",))]
    kept = retrace(prog, [None, None])
    assert [c.axes for c in kept.collectives] == [c.axes for c in prog.collectives]
    assert not a.is_deleted() and a.sharding.spec == P("x", "y")


def test_values_are_immutable():
    prog = shardviz.trace(lambda v: v * 2, jnp.ones(3))
    with pytest.raises(AttributeError):
        prog.values = ()  # type: ignore[misc]
    with pytest.raises(AttributeError):
        prog.values[0].name = "z"  # type: ignore[misc]


def test_one_compile_and_no_dump_left_behind(monkeypatch, tmp_path):
    import importlib
    import tempfile

    from jax._src import stages

    calls = []
    real = stages.Lowered.compile

    def counting(self, *args, **kwargs):
        calls.append(kwargs.get("compiler_options"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(stages.Lowered, "compile", counting)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tracing = importlib.import_module("shardviz.program.compiling.trace_here")
    monkeypatch.setattr(tracing, "_dump_parent", lambda: str(tmp_path))
    mesh = mesh_2x4()
    prog = shardviz.trace(matmul, put(mesh, (16, 32), P("x", "y")), put(mesh, (32, 8), P("y", None)))
    assert len(calls) == 1 and "xla_dump_to" in calls[0]  # Auto axes: the one compile also dumps
    assert list(tmp_path.iterdir()) == []  # the dump folder is gone
    assert any(v.sharding_from == "xla" for v in prog.values)


def test_mixed_axes_read_xla_and_keep_types():
    mesh = mesh_2x4(types=(AxisType.Explicit, AxisType.Auto))
    a = put(mesh, (16, 32), P("x", "y"))
    with jax.set_mesh(mesh):
        prog = shardviz.trace(lambda v: (jnp.tanh(v) * 2).sum(axis=1), a)
    assert prog.sharding_mode == "mixed"
    assert prog.inputs[0].type_str == str(jax.typeof(a)) == "float32[16@x,32]"
    assert [c.axes for c in prog.collectives] == [("y",)]
    tanh = next(v for v in prog.values if v.primitive == "tanh")
    assert tanh.sharding_from == "xla" and tanh.spec == (("x",), ("y",))


def test_source_listing_is_none_where_python_has_no_source():
    import operator

    assert shardviz.trace(operator.neg, jnp.ones(3)).source is None
    namespace: dict = {}
    exec("def tripled(v):\n    return v * 3\n", {}, namespace)
    prog = shardviz.trace(namespace["tripled"], jnp.ones(3))
    assert prog.source is None and prog.values[-1].listing_line is None
    lam = shardviz.trace(lambda v: v + 1, jnp.ones(3)).source
    assert lam is not None and "lambda v: v + 1" in lam.lines[0]


def test_retrace_keeps_scalars_and_takes_the_payload_spec_texts():
    mesh = mesh_2x4()
    a = put(mesh, (16, 32), P("x", "y"))
    prog = shardviz.trace(lambda v, k: v.sum(axis=0) * k, a, 3.0)
    texts = [row["spec_text"] for row in prog.to_json()["inputs"]]
    assert texts == ["x, y", ""]
    again = retrace(prog, ["None, y", None])
    assert again.collectives == ()  # summing an unsplit dimension needs no communication
    assert again.inputs[0].spec == ((), ("y",)) and again.inputs[1].type_str == str(jax.typeof(3.0))
    moved = retrace(prog, texts)
    assert [c.axes for c in moved.collectives] == [c.axes for c in prog.collectives]


def test_odd_file_names_come_back_exactly():
    """Quotes, backslashes, non-ASCII and markup in a file name survive XLA's
    C-escaped source tables and reach the payload as plain text."""
    mesh = mesh_2x4()
    odd = 'we"ird\\ path é <img src=x onerror=alert(1)>.py'
    namespace: dict = {"jnp": jnp}
    exec(compile("def colsum(v):\n    return v.sum(axis=0)\n", odd, "exec"), namespace)
    prog = shardviz.trace(namespace["colsum"], put(mesh, (16, 32), P("x", "y")))
    (c,) = prog.collectives
    assert c.source_file == odd and c.source_line == 2
    payload = prog.to_json()
    assert payload["files"][payload["collectives"][0]["file"]] == odd


def _unrolled_step(layers: int):
    def forward(params, x):
        w_in, w_out = params
        for k in range(layers):
            x = x + jnp.tanh(x @ w_in[k]) @ w_out[k]
        return (x**2).mean()

    def step(params, x):
        loss, grads = jax.value_and_grad(forward)(params, x)
        return loss, jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)

    return step


def test_the_module_read_while_xla_generates_code_is_the_program_read_after_the_compile(monkeypatch):
    """trace reads the optimized module and XLA's dumps on its worker thread once XLA starts generating
    code. The Program must be the one read after the compile from the executable's own text: the same
    payload, to the byte, and the early reading must have happened."""
    import importlib
    import json

    compiling = importlib.import_module("shardviz.program.compiling.trace_here")
    mesh = mesh_2x4()
    params = (put(mesh, (12, 64, 128), P(None, "x", "y")), put(mesh, (12, 128, 64), P(None, "y", "x")))
    x = put(mesh, (32, 64), P("x", None))
    read_early = []
    real = compiling._read_module_early

    def spy(*args):
        found = real(*args)
        read_early.append(found is not None)
        return found

    monkeypatch.setattr(compiling, "_read_module_early", spy)
    early = shardviz.trace(_unrolled_step(12), params, x)
    monkeypatch.setattr(compiling, "_read_module_early", lambda *args: None)
    after = shardviz.trace(_unrolled_step(12), params, x)
    assert read_early == [True]
    assert early.memory_timeline is not None and early.collectives and early.hbm_bytes > 0
    assert json.dumps(early.to_json(), sort_keys=True) == json.dumps(after.to_json(), sort_keys=True)
    assert (early.hbm_bytes, early.matmul_flops) == (after.hbm_bytes, after.matmul_flops)


@pytest.mark.parametrize("enabled", [True, False])
def test_python_garbage_collector_is_left_as_the_user_had_it(enabled):
    """trace holds the collector while it reads a program and hands it back as it found it: on, or
    off where the user had turned it off."""
    import gc

    was = gc.isenabled()
    seen = []

    def step(a):
        seen.append(gc.isenabled())  # while tracing: JAX's own work runs with the user's setting
        return jnp.tanh(a @ a).sum()

    try:
        gc.enable() if enabled else gc.disable()
        shardviz.trace(step, jnp.ones((8, 8)))
        assert gc.isenabled() is enabled and seen == [enabled]
    finally:
        gc.enable() if was else gc.disable()


def test_the_collector_is_held_once_for_nested_and_threaded_reads():
    """Two reads overlapping (threads, or a read inside another) share one hold: the collector comes
    back on only when the last ends, and only if it was on when the first began."""
    import gc
    import importlib

    compiling = importlib.import_module("shardviz.program.compiling.trace_here")
    was = gc.isenabled()
    try:
        gc.enable()
        with compiling.collections_held():
            assert not gc.isenabled()
            with compiling.collections_held():
                assert not gc.isenabled()
            assert not gc.isenabled()
        assert gc.isenabled()
        gc.disable()
        with compiling.collections_held():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable() if was else gc.disable()


def test_a_dump_read_early_counts_only_if_no_file_grew_after_it(tmp_path):
    import importlib

    compiling = importlib.import_module("shardviz.program.compiling.trace_here")
    dumped = tmp_path / "module.cpu_after_optimizations.txt"
    dumped.write_text("HloModule m\n")
    assert compiling._read_whole({str(dumped): len("HloModule m\n")})
    dumped.write_text("HloModule m\nENTRY %main {\n")  # XLA was still writing it
    assert not compiling._read_whole({str(dumped): len("HloModule m\n")})
    assert not compiling._read_whole({str(tmp_path / "gone.txt"): 0})


def test_the_early_reading_waits_for_every_dump_and_gives_way_to_the_compile(tmp_path):
    """Nothing is read until the optimized module, the buffer assignment and the live ranges are all
    there (and, under Auto axes, the partitioner's module); a module cut short reads as nothing (the
    compile's own text is read after it instead), and an ended compile stops the waiting."""
    import importlib
    import threading

    compiling = importlib.import_module("shardviz.program.compiling.trace_here")
    ended = threading.Event()
    (tmp_path / "m.cpu_after_optimizations.txt").write_text("HloModule m\n\nENTRY %main {\n")  # cut short
    (tmp_path / "m.cpu_after_optimizations-buffer-assignment.txt").write_text("")
    ended.set()
    assert compiling._read_module_early(str(tmp_path), ended, False) is None  # the compile ended first
    ended.clear()
    waiting = threading.Timer(0.05, ended.set)
    waiting.start()
    assert compiling._read_module_early(str(tmp_path), ended, False) is None  # no live ranges: never read
    assert ended.is_set()
    ended.clear()
    (tmp_path / "m.cpu_after_optimizations-live-range.txt").write_text("")
    safety = threading.Timer(5, ended.set)  # a wrong wait ends, and shows, rather than hanging
    safety.start()
    assert compiling._read_module_early(str(tmp_path), ended, False) is None  # the cut module
    assert not ended.is_set(), "it waited for a dump it does not need"
    whole = (pathlib.Path(__file__).with_name("fixtures") / "hlo" / "matmul_contracting.hlo").read_text()
    (tmp_path / "m.cpu_after_optimizations.txt").write_text(whole)
    found = compiling._read_module_early(str(tmp_path), ended, False)
    safety.cancel()
    assert found is not None and not ended.is_set()
    reading, sizes = found
    assert [op.kind for op in reading.collective_ops] == ["all-reduce", "all-reduce"]  # as the fixture holds
    assert sizes == {str(p): p.stat().st_size for p in tmp_path.iterdir()}
    assert reading.allocations is None  # an empty buffer assignment is no memory picture


def _forked(check: Callable[[], bool]) -> bool:
    """Whether ``check()`` holds in a forked child (which exits at once, JAX untouched)."""
    pid = os.fork()
    if pid == 0:
        try:
            held = check()
        except BaseException:
            held = False
        os._exit(0 if held else 1)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_a_forked_child_starts_its_own_reading_worker_and_collector_hold(recwarn):
    """A forked child (multiprocessing's default on Linux) has none of its parent's threads: the worker
    that reads while XLA compiles must start afresh there, or work handed to it is never run, and a hold
    on the collector by a read the parent had under way must not outlive that read in the child. (JAX's
    own backend does not survive a fork, so the child asks the worker and the hold directly.)"""
    import gc
    import importlib

    compiling = importlib.import_module("shardviz.program.compiling.trace_here")
    assert compiling._in_background(lambda: "parent").result(timeout=30) == "parent"  # the worker runs here

    def fresh() -> bool:
        worked = compiling._in_background(lambda: "child").result(timeout=10) == "child"
        collecting = gc.isenabled()  # the parent's read, under way at the fork, holds nothing here
        with compiling.collections_held():
            held = not gc.isenabled()
        return worked and collecting and held and gc.isenabled()

    was = gc.isenabled()
    try:
        gc.enable()
        with compiling.collections_held():  # a read in progress when the fork happens
            assert _forked(fresh), "the child's worker or collector hold was its parent's"
        gc.disable()  # the user's own choice, no read under way: the child keeps it
        assert _forked(lambda: not gc.isenabled()), "the child turned the collector on"
    finally:
        gc.enable() if was else gc.disable()
