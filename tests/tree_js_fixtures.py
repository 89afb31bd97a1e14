"""Tree payloads for the front-end tests, made by the real tree engine from real JAX objects.

``tests/make_js_fixtures.py`` calls :func:`tree_fixtures` (payloads the view
draws) and :func:`leaf_parity_cases` (what ``TreeLayout.leaf_layout(i).to_json()``
says for leaves, which the browser's leaf engine must reproduce byte for byte),
and :func:`glob_cases` (``fnmatch.fnmatchcase`` answers for the leaf filter).

Seeded: the same seed writes the same cases.
"""

from __future__ import annotations

import fnmatch
import math
import random
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AbstractMesh, AxisType, Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.array.edits import EditError
from shardviz.tree.describe import describe_tree
from shardviz.tree.paths import path_segments
from shardviz.tree.rules import apply_rules, parse_rules
from shardviz.widgets.tree import TreeState

HOSTILE_KEY = "<img src=x onerror=alert(1)>"
SCRIPT_KEY = "</script><b>x</b>"


class AdamState(NamedTuple):  # optax's ScaleByAdamState, built by hand (optax is not installed)
    count: Any
    mu: Any
    nu: Any


def widget_payload(tree: Any, rules: str = "") -> dict[str, Any]:
    """The payload the TreeWidget syncs (the tree payload plus rules_text and code), without a widget."""
    state = TreeState(original=tree, rules_text="", applied=None, tree_layout=describe_tree(tree))
    if rules:
        state, _ = state.with_rules(rules)
    return state.payload


# --------------------------------------------------------------------------
# the trees the view draws


def concrete_tree() -> Any:
    """Real arrays on a 2x4 mesh of 8 devices: mixed dtypes, a pinned_host leaf, a counter on one device."""
    mesh = jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])

    def put(shape: tuple[int, ...], spec: P, dtype: Any = jnp.float32, kind: str | None = None) -> jax.Array:
        return jax.device_put(jnp.ones(shape, dtype), NamedSharding(mesh, spec, memory_kind=kind))

    layers = [
        {
            "attn": {"wq": put((64, 64), P(None, "model"), jnp.bfloat16), "wo": put((64, 64), P("model", None))},
            "mlp": {"w": put((64, 256), P("data", "model")), "b": put((256,), P())},
        }
        for _ in range(3)
    ]
    params = {"embed": put((512, 64), P()), "layers": layers, "final_norm": put((64,), P(), kind="pinned_host")}
    count = jax.device_put(jnp.zeros((), jnp.int32), SingleDeviceSharding(jax.devices()[0]))
    state = AdamState(count, jax.tree.map(jnp.zeros_like, params), jax.tree.map(jnp.zeros_like, params))
    return {"params": params, "opt_state": state, "lr": 0.001, "schedule": None}


CONCRETE_RULES = "params.layers.*.mlp.w = data, model\nparams.embed = None, model\n"


def what_if_tree(layers: int = 333) -> Any:
    """A decoder's bfloat16 parameters and float32 Adam state as ShapeDtypeStructs on 16x16x16 virtual devices.

    333 layers of 10 leaves, three times over, plus the embedding, the final
    norm and Adam's counter: 10,000 leaves.
    """
    mesh = AbstractMesh((16, 16, 16), ("data", "model", "seq"), axis_types=(AxisType.Explicit,) * 3)
    d, f = 8192, 28672
    layer = (
        ("attention.query.kernel", (d, d), P("data", "model")),
        ("attention.key.kernel", (d, 1024), P("data", None)),
        ("attention.value.kernel", (d, 1024), P("data", None)),
        ("attention.out.kernel", (d, d), P("model", "data")),
        ("mlp.gate.kernel", (d, f), P("data", "model")),
        ("mlp.up.kernel", (d, f), P("data", "model")),
        ("mlp.down.kernel", (f, d), P("model", "data")),
        ("pre_attention_norm.scale", (d,), P()),
        ("pre_mlp_norm.scale", (d,), P()),
        ("mlp.up.bias", (f,), P("model")),
    )

    def sds(shape: tuple[int, ...], spec: P, dtype: Any) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, spec))

    def params(dtype: Any) -> dict[str, Any]:
        blocks = []
        for _ in range(layers):
            block: dict[str, Any] = {}
            for name, shape, spec in layer:
                node = block
                *heads, last = name.split(".")
                for head in heads:
                    node = node.setdefault(head, {})
                node[last] = sds(shape, spec, dtype)
            blocks.append(block)
        return {
            "embed": sds((128256, d), P(None, "model"), dtype),
            "layers": blocks,
            "final_norm": sds((d,), P(), dtype),
        }

    count = sds((), P(), jnp.int32)
    return {"params": params(jnp.bfloat16), "opt_state": AdamState(count, params(jnp.float32), params(jnp.float32))}


WHAT_IF_RULES = "*layers.*.mlp.*.kernel = (data, seq), model\n*embed = model, data\n"


def multi_mesh_tree() -> Any:
    """Two meshes of 8 devices (other shapes and orders), a leaf outside both, Auto axes, hostile keys."""
    devices = jax.devices()
    first = jax.make_mesh((2, 4), ("x", "y"), devices=devices[:8])
    order = [devices[i] for i in (4, 5, 6, 7, 11, 10, 9, 8)]
    second = Mesh(np.array(order).reshape(2, 2, 2), ("a", "b", "c"), axis_types=(AxisType.Auto,) * 3)
    return {
        "first": jax.device_put(jnp.zeros((8, 16)), NamedSharding(first, P("x", "y"))),
        "second": {
            "w": jax.device_put(jnp.zeros((4, 4, 6), jnp.bfloat16), NamedSharding(second, P("a", "b"))),
            "keys": jax.device_put(jax.random.split(jax.random.key(0), 8), NamedSharding(second, P(("a", "b", "c")))),
        },
        HOSTILE_KEY: {SCRIPT_KEY: jax.device_put(jnp.zeros((2, 8)), NamedSharding(first, P(None, "y")))},
        "dotted.key": jax.device_put(jnp.asarray(1.5), NamedSharding(first, P())),  # weakly typed
        "outside": jax.device_put(jnp.zeros((3,), jnp.int8), SingleDeviceSharding(devices[11])),
    }


def flax_logical_tree() -> Any:
    """Flax Linen's logical-rules guide: kernels named ("embed", "hidden") and back, laid out by its
    rules on a 2x4 mesh of real devices."""
    import flax.linen as nn

    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2, devices=jax.devices()[:8])
    rules = (("batch", "data"), ("hidden", "model"), ("embed", None))

    class DotReluDot(nn.Module):
        @nn.compact
        def __call__(self, x):
            init = nn.initializers.xavier_normal()
            w1 = self.param("W1", nn.with_logical_partitioning(init, ("embed", "hidden")), (x.shape[-1], 64))
            w2 = self.param("W2", nn.with_logical_partitioning(init, ("hidden", "embed")), (64, x.shape[-1]))
            return jax.nn.relu(x @ w1) @ w2

    x = jnp.ones((8, 32))
    abstract = jax.eval_shape(DotReluDot().init, jax.random.key(0), x)
    shardings = nn.logical_to_mesh_sharding(nn.get_partition_spec(abstract), mesh, rules)
    return jax.jit(DotReluDot().init, out_shardings=shardings)(jax.random.key(0), x)


def logical_truth(tree: Any) -> dict[str, str]:
    """Each Flax box's path and its names beside the mesh axes JAX laid its array out on (``sharding.spec``)."""
    import flax.linen as nn

    boxes = jax.tree_util.tree_flatten_with_path(tree, is_leaf=lambda x: isinstance(x, nn.LogicallyPartitioned))[0]
    out = {}
    for path, box in boxes:
        array = box.value
        spec = list(array.sharding.spec) + [None] * (array.ndim - len(array.sharding.spec))
        axes = ["-" if e is None else e if isinstance(e, str) else "+".join(e) for e in spec]
        key = ".".join(path_segments([path])[0]) + ".value"
        out[key] = ", ".join(f"{n} -> {a}" for n, a in zip(box.names, axes) if n is not None)
    return out


def tree_fixtures() -> dict[str, dict[str, Any]]:
    payloads = {
        "tree_concrete": widget_payload(concrete_tree(), CONCRETE_RULES),
        "tree_concrete_plain": widget_payload(concrete_tree()),
        "tree_whatif_4096": widget_payload(what_if_tree(), WHAT_IF_RULES),
        "tree_whatif_4096_plain": widget_payload(what_if_tree()),
        "tree_multi_mesh": widget_payload(multi_mesh_tree()),
        "tree_empty": widget_payload({}),
        "tree_flax_logical": widget_payload(flax_logical_tree()),
    }
    payloads["tree_rules_error"] = rules_error(concrete_tree(), CONCRETE_RULES, CONCRETE_RULES + "params.*.b = nope\n")
    return payloads


def rules_error(tree: Any, good: str, bad: str) -> dict[str, Any]:
    """What the widget says about a bad rules edit: its error and source, the text it keeps."""
    state = TreeState(original=tree, rules_text="", applied=None, tree_layout=describe_tree(tree))
    state, _ = state.with_rules(good)
    try:
        state.with_rules(bad)
    except EditError as err:
        return {"rules_text": bad, "kept": state.rules_text, "error": str(err), "error_source": err.source}
    raise AssertionError(f"the rules {bad!r} were accepted")


# --------------------------------------------------------------------------
# leaf parity: the browser lays out a leaf from the tree payload alone


DTYPES = (jnp.float32, jnp.bfloat16, jnp.int8, jnp.int32, jnp.float16, jnp.bool_, jnp.uint32)
NAMES = ("data", "model", "fsdp", "x", "y", "z", "1", "w")


def random_mesh(rng: random.Random, devices: list[Any] | None, count: int, allow_manual: bool) -> Any:
    """A mesh of `count` devices with 1-3 axes: real over `devices` (in their order) or abstract."""
    sizes = factorise(rng, count, rng.randint(1, 3))
    names = tuple(rng.sample(NAMES, len(sizes)))
    kinds = [AxisType.Explicit, AxisType.Auto] + ([AxisType.Manual] if allow_manual else [])
    types = tuple(rng.choice(kinds) for _ in sizes)
    if devices is None:
        return AbstractMesh(tuple(sizes), names, axis_types=types)
    return Mesh(np.array(devices).reshape(sizes), names, axis_types=types)


def factorise(rng: random.Random, n: int, parts: int) -> list[int]:
    sizes = []
    rest = n
    for _ in range(parts - 1):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = rng.choice(divisors)
        sizes.append(d)
        rest //= d
    sizes.append(rest)
    return sizes


def random_spec(rng: random.Random, mesh: Any, rank: int) -> tuple[P, list[int]]:
    """A spec over the mesh's axes and the block counts it puts on each dimension."""
    free = list(mesh.axis_names)
    rng.shuffle(free)
    entries: list[Any] = []
    blocks = []
    size = dict(zip(mesh.axis_names, mesh.axis_sizes))
    for _ in range(rank):
        take = rng.choice([0, 0, 1, 1, 2]) if free else 0
        axes = [free.pop() for _ in range(min(take, len(free)))]
        entries.append(None if not axes else axes[0] if len(axes) == 1 else tuple(axes))
        blocks.append(math.prod(size[a] for a in axes))
    while entries and entries[-1] is None and rng.random() < 0.5:
        entries.pop()  # a spec shorter than the rank
        blocks.pop()
    return P(*entries), blocks + [1] * (rank - len(blocks))


def random_leaf(rng: random.Random, mesh: Any, real: bool) -> Any:
    rank = rng.randint(0, 3)
    spec, blocks = random_spec(rng, mesh, rank)
    shape = tuple(b * rng.choice([1, 2, 3]) for b in blocks)
    dtype = rng.choice(DTYPES)
    kinds = ["device", "pinned_host"] if real else ["device", "pinned_host", "unpinned_host"]
    kind = rng.choice([*kinds, "device", "device"])
    sharding = NamedSharding(mesh, spec, memory_kind=None if kind == "device" and rng.random() < 0.5 else kind)
    if not real:
        return jax.ShapeDtypeStruct(shape, dtype, sharding=sharding)
    return jax.device_put(jnp.zeros(shape, dtype), sharding)


def random_tree(rng: random.Random) -> Any:
    choice = rng.random()
    all_devices = jax.devices()
    if choice < 0.5:  # real arrays over a subset of the 12 devices, in any order
        count = rng.choice([1, 2, 4, 6, 8, 12])
        picked = rng.sample(all_devices, count)
        meshes = [random_mesh(rng, picked, count, allow_manual=False)]
        if rng.random() < 0.4:
            other = rng.sample(all_devices, count)
            meshes.append(random_mesh(rng, other, count, allow_manual=False))
        real = rng.random() < 0.7
    else:  # what-if on virtual devices, up to 8,960
        count = rng.choice([8, 64, 512, 4096, 8960])
        meshes = [random_mesh(rng, None, count, allow_manual=True)]
        if rng.random() < 0.3:
            meshes.append(random_mesh(rng, None, count, allow_manual=True))
        real = False
    tree: dict[str, Any] = {}
    for i in range(rng.randint(1, 8)):
        key = rng.choice(["w", "b", "scale", "kernel", "a.b", HOSTILE_KEY]) + str(i)
        tree[key] = random_leaf(rng, rng.choice(meshes), real)
    if rng.random() < 0.3:
        tree["step"] = 3
    return tree


def leaf_parity_cases(seed: int = 20261123, trees: int = 160) -> dict[str, Any]:
    """Tree payloads, and for each array leaf, ``leaf_layout(i).to_json()`` or null (no mesh: the kernel's)."""
    rng = random.Random(seed)
    named = {
        "concrete": concrete_tree(),
        "multi_mesh": multi_mesh_tree(),
        "what_if_small": what_if_tree(layers=2),
    }
    cases = []
    for name, tree in [*named.items(), *((f"random_{k}", random_tree(rng)) for k in range(trees))]:
        tl = shardviz.describe_tree(tree)
        payload = tl.to_json()
        expected: list[Any] = []
        for i in range(tl.leaf_count):
            g = int(tl.leaf_group[i])
            if g < 0:
                expected.append(None)
            elif tl.groups[g].mesh is None:
                # What the kernel answers the front end's leaf_layout message with.
                expected.append({"kernel": tl.groups[g].sharding_name, "payload": tl.leaf_layout(i).to_json()})
            else:
                expected.append(tl.leaf_layout(i).to_json())
        cases.append({"name": name, "tree": payload, "leaves": expected})
    return {"seed": seed, "cases": cases}


def glob_cases() -> list[list[Any]]:
    """``[pattern, path, fnmatchcase(path, pattern)]`` for the leaf filter's glob mode."""
    paths = [
        "params.layers.0.mlp.w",
        "params.layers.10.attn.wq",
        "opt_state.mu.layers.3.mlp.b",
        "params.embed",
        "a.b",
        "a[b]",
        "a*b",
        "x?y",
        "caf\u00e9.w",
        "",
        "Params.Embed",
        "layers.1.w",
        "mlp-up.w",
        "emoji.\U0001f600",
    ]
    patterns = [
        "*",
        "params.*",
        "*.w",
        "*layers.*.w",
        "params.layers.?.mlp.w",
        "params.layers.[0-9].*",
        "params.layers.[!0].*",
        "*embed",
        "a[[]b]",
        "a[*]b",
        "x[?]y",
        "a.b",
        "a?b",
        "caf?.w",
        "params.Embed",
        "[",
        "a[",
        "[]]",
        "*mlp*",
        "layers.[1-3].w",
        "opt_state.*.b",
        "[a-c]*",
        "*.[!w]",
        "mlp-*",
        "*-up.?",
        "emoji.?",
        "[a-]*",
        "[!-a]*",
        "[z-a]*",
        "[!z-a]*",
        "(a|b)*",
        "*.{w}",
    ]
    return [[pattern, path, fnmatch.fnmatchcase(path, pattern)] for pattern in patterns for path in paths]


# --------------------------------------------------------------------------
# rules parity: the browser answers a rules edit from the tree payload alone


FIXED_RULES = (
    "",
    "   \n# only a comment\n",
    "foo",
    " = x",
    "*.w = (x",
    "a[bc = None",
    "a[z-a] = None",
    "*embed* = nope",
    "*",
)


def random_rules(rng: random.Random, tree: Any) -> str:
    """Rules a user might type for ``tree``: globs from its paths, specs over its meshes' axes, and mistakes."""
    layout = describe_tree(tree)
    arrays = [i for i, g in enumerate(layout.leaf_group.tolist()) if g >= 0]
    axes = sorted({a for m in layout.meshes for a in m.info.axis_names}) or ["x"]
    lines = []
    for _ in range(rng.randint(1, 4)):
        leaf = rng.choice(arrays) if arrays else None
        segments = list(layout.segments[leaf]) if leaf is not None else ["w"]
        if segments and rng.random() < 0.4:
            segments[rng.randrange(len(segments))] = "*"
        glob = ("/" if rng.random() < 0.25 else ".").join(segments) or "*"
        if rng.random() < 0.15:
            glob = "*" + glob[-2:]
        fitting = leaf is not None and rng.random() < 0.7
        spec = _fitting_spec(rng, layout, leaf) if fitting else _any_spec(rng, axes)
        lines.append(f"{glob} = {spec}")
        if rng.random() < 0.1:
            lines.append("# " + glob)
    return "\n".join(lines) + rng.choice(["", "\n"])


def _fitting_spec(rng: random.Random, layout: Any, leaf: int) -> str:
    """A spec that fits leaf ``leaf`` on its own mesh (any axis that divides each dimension, each axis once)."""
    group = layout.groups[int(layout.leaf_group[leaf])]
    if group.mesh is None:
        return "None"
    mesh = layout.meshes[group.mesh].info
    free = list(zip(mesh.axis_names, mesh.axis_sizes))
    rng.shuffle(free)
    entries = []
    for n in layout.shapes[leaf]:
        fits = [(a, k) for a, k in free if n % k == 0]
        if fits and rng.random() < 0.7:
            a, k = rng.choice(fits)
            free.remove((a, k))
            entries.append(a)
        else:
            entries.append("None")
    while entries and entries[-1] == "None" and rng.random() < 0.5:
        entries.pop()
    return ", ".join(entries) if entries else rng.choice(["None", "P()"])


def _any_spec(rng: random.Random, axes: list[str]) -> str:
    entries = []
    for _ in range(rng.choice([0, 1, 1, 2, 2, 3])):
        pick = rng.random()
        if pick < 0.3:
            entries.append("None")
        elif pick < 0.8:
            entries.append(rng.choice(axes))
        elif pick < 0.95:
            entries.append("(" + ", ".join(rng.sample(axes, min(2, len(axes)))) + ")")
        else:
            entries.append("nope")
    return ", ".join(entries) if entries else rng.choice(["None", "P()"])


def rules_answer(tree: Any, text: str, name: str | None) -> dict[str, Any]:
    """What TreeState.with_rules answers: the payload and notice, or the refusal."""
    state = TreeState(original=tree, rules_text="", applied=None, tree_layout=describe_tree(tree), tree_name=name)
    try:
        after, notice = state.with_rules(text)
    except EditError as err:
        return {"status": "refused", "message": str(err), "source": err.source}
    return {"status": "applied", "payload": after.payload, "notice": notice}


def off_mesh_match(tree: Any, text: str) -> bool:
    """True when a rule matches a leaf off every mesh: its answer needs JAX (the browser may leave it to the kernel)."""
    try:
        rules = parse_rules(text)
    except Exception:
        return False
    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    arrays = [(p, x) for p, x in flat if isinstance(x, (jax.Array, jax.ShapeDtypeStruct))]
    for segments, (_, x) in zip(path_segments([p for p, _ in arrays]), arrays):
        for rule in rules:
            path = ("/" if "/" in rule.glob else ".").join(segments)
            if fnmatch.fnmatchcase(path, rule.glob):
                if not isinstance(x.sharding, NamedSharding):
                    return True
                break
    return False


def rules_parity_cases(seed: int = 20261125, trees: int = 80) -> dict[str, Any]:
    """Tree payloads with no rules, and for rules texts, what Python's TreeState answers."""
    rng = random.Random(seed)
    named = {
        "concrete": (concrete_tree(), [CONCRETE_RULES, "params/layers/*/mlp/w = data, model", "*mlp.b = model",
                                      "params.embed = model\nparams.embed = data", "*.w = data, model, None"]),
        "multi_mesh": (multi_mesh_tree(), ["first = y, x", "second.* = c", "outside = None", "dotted.key = None"]),
        "what_if_small": (what_if_tree(layers=2), [WHAT_IF_RULES, "*kernel = seq", "*scale = (data, model)"]),
    }  # fmt: skip
    cases = []
    for name, (tree, texts) in named.items():
        texts = [*texts, *FIXED_RULES, *(random_rules(rng, tree) for _ in range(6))]
        cases.append(_rules_case(name, tree, texts, rng))
    for k in range(trees):
        tree = random_tree(rng)
        cases.append(_rules_case(f"random_{k}", tree, [random_rules(rng, tree) for _ in range(5)], rng))
    return {"seed": seed, "cases": cases}


def _rules_case(name: str, tree: Any, texts: list[str], rng: random.Random) -> dict[str, Any]:
    tree_name = rng.choice([None, "params", "state"])
    base = rules_answer(tree, "", tree_name)["payload"]
    edits = [
        {"rules_text": t, "kernel_may_answer": off_mesh_match(tree, t), **rules_answer(tree, t, tree_name)}
        for t in texts
    ]
    return {"name": name, "original": base, "edits": edits}


def jax_truth(tree: Any) -> dict[str, Any]:
    """What JAX says about a tree, for the front end's decoding tests (never shardviz's output).

    Paths from JAX's key objects, types from ``jax.typeof`` (Python type names
    for other leaves), and per device the bytes of each memory kind and what
    it holds: from ``addressable_shards`` for real arrays, from
    ``shard_shape`` on every virtual device for what-if ones.
    """
    flat, _ = jax.tree_util.tree_flatten_with_path(tree, is_leaf=lambda x: x is None)
    paths, types = [], []
    per_device: dict[int, dict[str, int]] = {}
    holds: dict[int, list[list[Any]]] = {}
    # Virtual devices each hold one shard of every what-if leaf: added to all of them at the end.
    virtual_count = 0
    virtual_bytes: dict[str, int] = {}
    virtual_holds: list[list[Any]] = []
    for key_path, x in flat:
        path = ".".join(str(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))) for k in key_path)
        paths.append(path)
        if not isinstance(x, (jax.Array, jax.ShapeDtypeStruct)):
            types.append("None" if x is None else type(x).__name__)
            continue
        types.append(str(jax.typeof(x)))
        kind = x.sharding.memory_kind or "device"
        if not isinstance(x, jax.Array):
            size = math.prod(x.sharding.shard_shape(x.shape)) * x.dtype.itemsize
            virtual_count = math.prod(x.sharding.mesh.axis_sizes)
            virtual_bytes[kind] = virtual_bytes.get(kind, 0) + size
            virtual_holds.append([path, size])
            continue
        for shard in x.addressable_shards:
            kinds = per_device.setdefault(shard.device.id, {})
            kinds[kind] = kinds.get(kind, 0) + shard.data.nbytes
            holds.setdefault(shard.device.id, []).append([path, shard.data.nbytes])
    for device in range(virtual_count):
        per_device[device] = dict(virtual_bytes)
    devices = sorted(per_device)
    sample = devices[:: max(1, len(devices) // 4)]  # a few devices' lists (10,000 leaves each on a pod)
    if virtual_count:
        holds = {d: virtual_holds for d in sample}
    return {
        "paths": paths,
        "types": types,
        "device_bytes": {str(d): v for d, v in sorted(per_device.items())},
        "holdings": {str(d): holds[d] for d in sample},
    }


def write_tree_fixtures(target: Any) -> int:
    """Writes every tree fixture as compact JSON into the folder `target`; returns how many."""
    import json

    truth = {
        "tree_concrete": jax_truth(apply_rules(concrete_tree(), CONCRETE_RULES).tree),
        "tree_concrete_plain": jax_truth(concrete_tree()),
        "tree_multi_mesh": jax_truth(multi_mesh_tree()),
        "tree_whatif_4096_plain": jax_truth(what_if_tree()),
        "tree_empty": jax_truth({}),
    }
    files = {
        **tree_fixtures(),
        "tree_leaf_parity": leaf_parity_cases(),
        "tree_rules_parity": rules_parity_cases(),
        "tree_glob_cases": {"cases": glob_cases()},
        "tree_truth": truth,
        "tree_logical_truth": logical_truth(flax_logical_tree()),
    }
    for name, content in files.items():
        (target / f"{name}.json").write_text(json.dumps(content, separators=(",", ":")))
    return len(files)
