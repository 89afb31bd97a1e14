"""Program payloads for the front-end tests, made by ``shardviz.trace`` from real compiles.

``tests/make_js_fixtures.py`` calls :func:`write_program_fixtures`, which writes

- ``program_<name>.json``: ``Program.to_json()`` of each program below (what
  ``ProgramWidget`` syncs as ``payload``);
- ``program_truth.json``: what JAX itself says about the same programs,
  read without shardviz: input and output types (``jax.typeof``), every
  collective of the compiled module with its device groups as device ids
  (the module's replica groups through the executable's device assignment),
  ``memory_analysis()`` and ``cost_analysis()``;
- ``program_value_parity.json``: for every value with a known sharding, the
  array payload Python's ``describe`` writes for an array of that shape,
  dtype and sharding; the browser lays values out from the program payload
  and must write the same bytes;
- ``program_values.json``: each program's values as Python's ``Program.values`` holds them
  (key, label, type, spec, line, ...), for the front end's decoding to be held equal to them;
- ``program_answers.json``: what the widget answers to edits of its inputs'
  specs (a good one, a bad spec, a program that fails under new shardings).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz import ProgramWidget

HOSTILE_AXIS = "<img src=x onerror=alert(1)>"
SCRIPT_AXIS = "</script>"

# --------------------------------------------------------------------------
# the programs (module-level functions, so their source can be listed)


def mlp(x, w1, w2):
    h = jnp.tanh(x @ w1)
    return h @ w2


def layer(h, p):
    w_in, w_out = p
    return h + jnp.dot(jnp.tanh(h @ w_in), w_out), None


def stack_loss(params, x):
    # The scan's body is a function of its own: its values' frames stop inside it, outside this listing.
    out, _ = jax.lax.scan(layer, x, params)
    return (out**2).mean()


def two_scans(params, x):
    # One body function, scanned on two lines: each scan's values belong under its own line.
    first, _ = jax.lax.scan(layer, x, params)
    second, _ = jax.lax.scan(layer, first, params)
    return second.sum()


def ring_body(a):
    total = jax.lax.psum(a, "y")
    shifted = jax.lax.ppermute(total, "x", perm=[(0, 1), (1, 0)])
    return shifted * 2


def make_ring(mesh: Mesh) -> Callable[..., Any]:
    def ring(a):
        out = jax.shard_map(ring_body, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", None))(a)
        return out + 1

    return ring


def make_explicit_mlp(mesh: Mesh) -> Callable[..., Any]:
    def explicit_mlp(x, w1, w2):
        h = jnp.tanh(x @ w1)
        return jnp.dot(h, w2, out_sharding=NamedSharding(mesh, P("x", None)))

    return explicit_mlp


def on_one_device(x):
    return jnp.sin(x) * 2


def hostile(a):
    return a.sum(axis=1)


def dp_loss(params, x):
    h = jnp.tanh(x @ params["w1"])
    return jnp.mean((h @ params["w2"]) ** 2)


def dp_step(params, x):
    # Data parallel: XLA combines the two gradients' all-reduces into one op of several operands.
    loss, grads = jax.value_and_grad(dp_loss)(params, x)
    return loss, jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


def split_sum(a):
    # Splitting a y-sharded dimension: the collectives run over pieces of y (XLA's sub-axes).
    return a.reshape(2, 4, 4).sum(axis=1)


def make_relayout(mesh: Mesh) -> Callable[..., Any]:
    def relayout(params):
        new = params["w1"] * 2
        return {"w1": jax.lax.with_sharding_constraint(new, NamedSharding(mesh, P(None, "y")))}

    return relayout


def dense(x, kernel):
    return x @ kernel


def helper_block(carry, layer):
    # One helper of the user's called from two lines: its line is reached through two calls.
    h = jax.nn.relu(dense(carry, layer["wi"]))
    y = dense(h, layer["wo"])
    return carry + y, None


def helper_stack(params, x):
    out, _ = jax.lax.scan(helper_block, x, params)
    return jnp.mean(out**2)


def mlp_layers(layers, x):
    # A Python loop of layers with no scopes: each layer's values and collectives are told apart by pass.
    for layer in layers:
        h = jax.nn.relu(dense(x, layer["wi"]))
        x = x + dense(h, layer["wo"])
    return x


def loss_fn(params, batch):
    pred = mlp_layers(params["layers"], batch["x"])
    with jax.named_scope("head"):
        logits = dense(pred, params["head"])
    return jnp.mean((logits - batch["y"]) ** 2)


def train_step(params, batch):
    # train_step -> loss_fn -> mlp_layers -> dense: four functions, each a source block of its own.
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    params = jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)
    return loss, params


def adam_step(params, opt, batch):
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    mu = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, opt["mu"], grads)
    nu = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, opt["nu"], grads)
    params = jax.tree.map(lambda p, m, v: p - 1e-3 * m / (jnp.sqrt(v) + 1e-8), params, mu, nu)
    return loss, params, {"mu": mu, "nu": nu}


def nested_loss(params, x):
    def layer(h, p):
        w_in, w_out = p
        return h + jnp.dot(jnp.tanh(h @ w_in), w_out), None

    out, _ = jax.lax.scan(layer, x, params)
    return (out**2).mean()


def layered(mesh: Mesh, layers: int, adam: bool = False) -> tuple[Any, ...]:
    """Arguments of ``train_step`` (or ``adam_step``) with ``layers`` layers, tensor parallel over ``model``."""

    def put(shape: tuple[int, ...], spec: P) -> jax.Array:
        return jax.device_put(jnp.ones(shape), NamedSharding(mesh, spec))

    stack = [{"wi": put((64, 256), P(None, "model")), "wo": put((256, 64), P("model", None))} for _ in range(layers)]
    params = {"layers": stack, "head": put((64, 16), P())}
    batch = {"x": put((32, 64), P("data", None)), "y": put((32, 16), P("data", None))}
    if not adam:
        return params, batch
    opt = {"mu": jax.tree.map(jnp.zeros_like, params), "nu": jax.tree.map(jnp.zeros_like, params)}
    return params, opt, batch


LAYERS, WIDTH, HIDDEN, BATCH = 24, 64, 128, 16


def programs() -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    """Each fixture's function and arguments."""
    devices = jax.devices()
    auto = (AxisType.Auto, AxisType.Auto)
    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=devices[:8], axis_types=auto)

    def put(shape: tuple[int, ...], spec: P, on: Mesh = mesh) -> jax.Array:
        return jax.device_put(jnp.ones(shape), NamedSharding(on, spec))

    def put_bf16(shape: tuple[int, ...], spec: P, on: Mesh) -> jax.Array:
        return jax.device_put(jnp.ones(shape, jnp.bfloat16), NamedSharding(on, spec))

    mlp_args = (put((16, 32), P("x", None)), put((32, 64), P(None, "y")), put((64, 32), P("y", None)))
    dm = jax.make_mesh((2, 4), ("data", "model"), devices=devices[:8], axis_types=auto)
    params = (
        put((LAYERS, WIDTH, HIDDEN), P(None, None, "model"), dm),
        put((LAYERS, HIDDEN, WIDTH), P(None, "model", None), dm),
    )
    explicit = jax.make_mesh((2, 4), ("x", "y"), devices=devices[:8], axis_types=(AxisType.Explicit,) * 2)
    # Devices not in id order: partition positions in the groups must be looked up in the mesh.
    order = [devices[i] for i in (5, 2, 7, 0, 3, 6, 1, 4)]
    permuted = Mesh(np.array(order).reshape(2, 4), ("x", "y"), axis_types=auto)
    bad = jax.make_mesh((2, 4), (HOSTILE_AXIS, SCRIPT_AXIS), devices=devices[:8], axis_types=auto)
    data = Mesh(np.asarray(devices[:8]), ("data",), axis_types=(AxisType.Auto,))
    return {
        "mlp": (mlp, mlp_args),
        "scan_grad": (jax.value_and_grad(stack_loss), (params, put((BATCH, WIDTH), P("data", None), dm))),
        "two_scans": (two_scans, (params, put((BATCH, WIDTH), P("data", None), dm))),
        "shard_map": (make_ring(explicit), (put((8, 16), P("x", "y"), explicit),)),
        "explicit": (
            make_explicit_mlp(explicit),
            (
                put((16, 32), P("x", None), explicit),
                put((32, 64), P(None, "y"), explicit),
                put((64, 32), P("y"), explicit),
            ),
        ),
        "permuted": (mlp, tuple(put(a.shape, a.sharding.spec, permuted) for a in mlp_args)),
        "single_device": (on_one_device, (jax.device_put(jnp.ones((4, 8)), devices[3]),)),
        "hostile": (hostile, (put((8, 16), P(HOSTILE_AXIS, SCRIPT_AXIS), bad),)),
        "train_step": (
            dp_step,
            (
                {"w1": put((16, 32), P(), data), "w2": put((32, 8), P(), data)},
                put((64, 16), P("data", None), data),
            ),
        ),
        # bfloat16 weights: XLA:CPU all-reduces the gradients as float32, a TPU or GPU in bfloat16
        "bf16_step": (
            dp_step,
            (
                {"w1": put_bf16((16, 32), P(), data), "w2": put_bf16((32, 8), P(), data)},
                put_bf16((64, 16), P("data", None), data),
            ),
        ),
        "sub_axes": (split_sum, (put((8, 4), P("y", None)),)),
        "relayout": (make_relayout(mesh), ({"w1": put((8, 16), P())},)),
        "helper_twice": (
            jax.grad(helper_stack),
            (
                {"wi": put((3, 16, 32), P(None, None, "model"), dm), "wo": put((3, 32, 16), P(), dm)},
                put((8, 16), P("data", None), dm),
            ),
        ),
        "layers": (train_step, layered(dm, 4)),
        "pod_step": (adam_step, layered(dm, 24, adam=True)),
        "nested": (nested_loss, (params, put((BATCH, WIDTH), P("data", None), dm))),
    }


# --------------------------------------------------------------------------
# what JAX says, read without shardviz

KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute", "collective-broadcast")
# `f32[16,32]{1,0}`: an array shape of the module's text, for its element type and bytes
_ARRAY = re.compile(r"\b(pred|bf16|f16|f32|f64|s8|s16|s32|s64|u8|u16|u32|u64)\[([\d,]*)\]")
_ELEMENT_BYTES = {"pred": 1, "bf16": 2, "f16": 2, "f32": 4, "f64": 8, "s8": 1, "s16": 2, "s32": 4, "s64": 8}
_ELEMENT_BYTES.update({"u8": 1, "u16": 2, "u32": 4, "u64": 8})


def _result_shapes(shape_text: str) -> list[tuple[str, int]]:
    """``(f32[16,32]{1,0}, f32[32,8]{1,0})`` -> each array's element type and bytes, in order."""
    out = []
    for element, dims in _ARRAY.findall(shape_text):
        count = int(np.prod([int(d) for d in dims.split(",") if d])) if dims else 1
        out.append((element, count * _ELEMENT_BYTES[element]))
    return out


# `%name = <shape or (tuple, of, shapes)> <opcode>(operands), attributes`
_INSTRUCTION = re.compile(r"= (\([^()]*\)|\S+) (" + "|".join(KINDS) + r")(-start)?\((.*)$", re.M)


def _iota_groups(text: str) -> list[list[int]]:
    """``[g,n]<=[dims]T(perm)`` (or without the transpose): the iota form of replica groups."""
    m = re.fullmatch(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
    if m is None:
        raise ValueError(f"not an iota group list: {text}")
    groups, size = int(m[1]), int(m[2])
    dims = [int(d) for d in m[3].split(",")]
    ids = np.arange(int(np.prod(dims))).reshape(dims)
    if m[4]:
        ids = ids.transpose([int(p) for p in m[4].split(",")])
    return ids.reshape(groups, size).tolist()


def _mesh_groups(text: str) -> list[list[int]]:
    """``mesh['a'=2,'b'=4] {'b'}``: partitions numbered row-major over the mesh, one group per
    coordinate of the axes left out, varying the listed axes (in the listed order)."""
    m = re.fullmatch(r"mesh\[(.*?)\](?:, device_ids=\((.*)\))? \{(.*)\}", text)
    if m is None:
        raise ValueError(f"not a mesh group list: {text}")
    axes = re.findall(r"'((?:[^'\\]|\\.)*)'=(\d+)", m[1])
    names = [name for name, _ in axes]
    grouped = [names.index(name) for name in re.findall(r"'((?:[^'\\]|\\.)*)'", m[3])]
    sizes = [int(size) for _, size in axes]
    order = np.arange(int(np.prod(sizes)))
    if m[2]:  # the mesh's devices in another order: [dims]T(perm) over an iota, or a list
        iota = re.fullmatch(r"\[([\d,]+)\](?:T\(([\d,]+)\))?", m[2])
        if iota is None:
            order = np.asarray([int(n) for n in re.findall(r"\d+", m[2])])
        else:
            dims = [int(n) for n in iota[1].split(",")]
            perm = [int(n) for n in iota[2].split(",")] if iota[2] else list(range(len(dims)))
            order = order.reshape(dims).transpose(perm).reshape(-1)
    ids = order.reshape(sizes)
    kept = [a for a in range(len(names)) if a not in grouped]
    size = int(np.prod([ids.shape[a] for a in grouped]))
    return ids.transpose(kept + grouped).reshape(-1, size).tolist()


def _list_groups(text: str) -> list[list[int]]:
    return [[int(n) for n in g.split(",") if n] for g in re.findall(r"\{([\d,]*)\}", text)]


def hlo_collectives(compiled: Any) -> list[dict[str, Any]]:
    """Every collective of the compiled module (a -start counted once, -done skipped), in module order,
    with its groups (or a permute's source-target pairs) as device ids. Groups in a form this reader
    does not know are left out (``groups: None``) rather than guessed."""
    text = compiled.as_text()
    flat = [s for s in jax.tree.leaves(compiled.input_shardings) if isinstance(s, NamedSharding)]
    order = [d.id for d in flat[0]._device_assignment] if flat else None
    found = []
    for m in _INSTRUCTION.finditer(text):
        shape, kind, rest = m[1], m[2], m[4]
        groups: list[list[int]] | None = None
        pairs: list[list[int]] | None = None
        if kind == "collective-permute":
            pm = re.search(r"source_target_pairs=(\{(?:\{[\d,]*\},?)*\})", rest)
            pairs = _list_groups(pm[1]) if pm else None
        else:
            gm = re.search(
                r"replica_groups=(\{(?:\{[\d,]*\},?)*\}|\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?|mesh\[.*?\](?:, device_ids=\(.*?\))? \{[^}]*\})",
                rest,
            )
            if gm:
                form = gm[1]
                groups = (
                    _list_groups(form)
                    if form.startswith("{")
                    else _mesh_groups(form)
                    if form.startswith("mesh")
                    else _iota_groups(form)
                )
        to_id = (lambda p: order[p]) if order else (lambda p: p)
        found.append(
            {
                "kind": kind,
                "groups": None if groups is None else [[to_id(p) for p in g] for g in groups],
                "pairs": None if pairs is None else [[to_id(p) for p in pair] for pair in pairs],
                # the module's own buffers: element types and bytes of the results (what XLA:CPU moves)
                "results": [list(r) for r in _result_shapes(shape)],
            }
        )
    return found


def jax_truth(fun: Callable[..., Any], args: tuple[Any, ...]) -> dict[str, Any]:
    compiled = jax.jit(fun).lower(*args).compile()
    outputs = jax.eval_shape(fun, *args)
    memory = compiled.memory_analysis()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    return {
        "input_types": [str(jax.typeof(a)) for a in jax.tree.leaves(args)],
        "output_types": [str(jax.typeof(o)) for o in jax.tree.leaves(outputs)],
        "collectives": hlo_collectives(compiled),
        "memory": None
        if memory is None
        else {
            "argument_bytes": memory.argument_size_in_bytes,
            "output_bytes": memory.output_size_in_bytes,
            "temp_bytes": memory.temp_size_in_bytes,
        },
        "flops": None if not cost or "flops" not in cost else float(cost["flops"]),
    }


# --------------------------------------------------------------------------
# values laid out by Python, for the browser's parity


def value_parity(prog: shardviz.Program) -> list[dict[str, Any] | None]:
    """For each value: the array payload of its layout (describe of a ShapeDtypeStruct with its sharding),
    or None where the sharding is unknown or there is no mesh."""
    mesh = prog.origin.mesh if prog.origin is not None else None
    out: list[dict[str, Any] | None] = []
    for v in prog.values:
        if v.layout is None or v.layout.mesh is None or mesh is None:
            out.append(None)
            continue
        spec = P(*(e[0] if len(e) == 1 else (e or None) for e in v.layout.spec))
        sharding = NamedSharding(mesh, spec, memory_kind=v.layout.memory_kind)
        expected = shardviz.describe(jax.ShapeDtypeStruct(v.shape, v.dtype, sharding=sharding)).to_json()
        if v.role == "intermediate":
            # The value's own layout is exactly that (inputs are real arrays: has_array and code differ).
            assert v.layout.to_json() == expected, v.name
        out.append(expected)
    return out


def python_values(prog: shardviz.Program) -> list[dict[str, Any]]:
    """Each value as the Program holds it, before any payload: what the decoded payload must say."""
    return [
        {
            "key": v.key,
            "label": v.label,
            "type_str": v.type_str,
            "spec": None if v.layout is None else [list(e) for e in v.layout.spec],
            "file": None if v.source is None else v.source.file.rsplit("/", 1)[-1],
            "line": None if v.source is None else v.source.line,
            "listing_line": v.listing_line,
            "scope": v.scope,
            "pass": v.pass_number,
            "passes": v.passes,
            "role": v.role,
            "from": v.sharding_from,
        }
        for v in prog.values
    ]


def widget_answers() -> dict[str, Any]:
    """What ProgramWidget answers to spec edits of the MLP (Auto axes) and the explicit MLP."""
    fun, args = programs()["mlp"]
    w = ProgramWidget(shardviz.trace(fun, *args))
    start = list(w.input_specs)
    w.set_state({"input_specs": ["x, y", start[1], start[2]]})
    good = {"input_specs": list(w.input_specs), "payload": w.payload, "error": w.error, "error_source": w.error_source}
    w.set_state({"input_specs": [good["input_specs"][0], "q", good["input_specs"][2]]})
    bad_spec = {"sent": [good["input_specs"][0], "q", good["input_specs"][2]], "error": w.error}
    bad_spec["error_source"] = w.error_source
    efun, eargs = programs()["explicit"]
    e = ProgramWidget(shardviz.trace(efun, *eargs))
    e.set_state({"input_specs": ["x, y", "y", "y"]})
    failing = {"sent": ["x, y", "y", "y"], "error": e.error, "error_source": e.error_source}
    return {"start": start, "good": good, "bad_spec": bad_spec, "failing": failing}


def array_moves() -> dict[str, Any]:
    """What the array widget's ``move`` says after edits (the traits it syncs), with JAX's own collectives
    of the same move for comparison (the compiled identity's module, read without shardviz)."""
    from shardviz import ShardingWidget

    devices = jax.devices()
    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=devices[:8], axis_types=(AxisType.Auto,) * 2)
    x = jax.device_put(jnp.arange(64.0).reshape(8, 8), NamedSharding(mesh, P("x", "y")))
    w = ShardingWidget(x)
    w.set_state({"spec_text": "None, None"})
    identity = jax.jit(lambda a: a, out_shardings=NamedSharding(mesh, P()))
    gathered = {
        "payload": w.payload,
        "move": w.move,
        "jax": hlo_collectives(identity.lower(x).compile()),
    }
    w.set_state({"spec_text": "x, y"})  # the way back: each device keeps a slice of what it holds
    back = {"payload": w.payload, "move": w.move}
    w.set_state({"spec_text": "y, x"})  # blocks trade places: a collective-permute
    swap = jax.jit(lambda a: a, out_shardings=NamedSharding(mesh, P("y", "x")))
    permuted = {"payload": w.payload, "move": w.move, "jax": hlo_collectives(swap.lower(x).compile())}
    w.set_state({"spec_text": "x, y"})
    w.set_state({"memory_kind": "pinned_host"})  # a host transfer, no collective
    to_host = {"payload": w.payload, "move": w.move, "block_bytes": w.array.addressable_shards[0].data.nbytes}
    w.set_state({"memory_kind": "unpinned_host"})  # from one host memory to the other
    host_to_host = {"payload": w.payload, "move": w.move, "kind": w.array.sharding.memory_kind}
    w.set_state({"memory_kind": "device"})
    w.mesh = jax.make_mesh((2, 4), ("x", "y"), devices=devices[4:12])
    elsewhere = {"payload": w.payload, "move": w.move}
    return {
        "gathered": gathered,
        "back": back,
        "elsewhere": elsewhere,
        "permuted": permuted,
        "to_host": to_host,
        "host_to_host": host_to_host,
    }


def whatif_mlp() -> shardviz.Program:
    """The MLP traced on a what-if mesh of 16 devices, more than the tests' machine has."""
    mesh = jax.sharding.AbstractMesh((4, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)

    def struct(shape: tuple[int, ...], spec: P) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(mesh, spec))

    return shardviz.trace(mlp, struct((16, 32), P("x", None)), struct((32, 64), P(None, "y")),
                          struct((64, 32), P("y", None)), mesh=mesh)  # fmt: skip


def write_program_fixtures(target: Any) -> int:
    """Writes every program fixture as compact JSON into the folder `target`; returns how many files."""
    import json

    truth: dict[str, Any] = {}
    parity: dict[str, Any] = {}
    values: dict[str, Any] = {}
    files: dict[str, Any] = {}
    for name, (fun, args) in programs().items():
        prog = shardviz.trace(fun, *args)
        files[f"program_{name}"] = prog.to_json()
        truth[name] = jax_truth(fun, args)
        parity[name] = value_parity(prog)
        values[name] = python_values(prog)
        if name == "bf16_step":  # the same step counted as XLA:CPU's module moves it (the one switch)
            files[f"program_{name}_cpu"] = prog.with_bytes("cpu").to_json()
    files["program_whatif_mlp"] = whatif_mlp().to_json()
    files["program_truth"] = truth
    files["program_value_parity"] = parity
    files["program_values"] = values
    files["program_answers"] = widget_answers()
    files["array_moves"] = array_moves()
    for name, content in files.items():
        (target / f"{name}.json").write_text(json.dumps(content, separators=(",", ":")))
    return len(files)
