"""Edit cases for the browser engine's parity tests, answered by the real Python engine.

``python tests/make_engine_parity_fixtures.py js/fixtures/parity`` (``make test-js``
runs it with 12 simulated CPU devices, before Vitest). Seeded: the same seed writes
the same cases. Each case is a starting payload (made by Python from real JAX
objects), an edit as the front end sends it, and what the Python widget answered:
the new payload and notice, or the refusal and its control. js/engine/array/parity.test.ts
checks the local engine against every case, byte for byte.

Starting states: real arrays on real meshes over the 12 devices (any subset, any
order), what-if layouts on real meshes, AbstractMesh what-ifs up to 8,960 devices
(Auto, Explicit and Manual axes, some with a named platform), single-device arrays,
and weak-typed layouts. Each is edited along a chain of random edits (spec, mesh,
memory kind, or several at once), valid and not, so later edits start from payloads
that edits made.

A case is labelled with what only a kernel can judge (docs/local-engine.md):

- ``devices``: a mesh with another number of devices that Python builds from this
  machine's devices (the payload does not list them). A what-if on an
  AbstractMesh stays virtual for any mesh, so its edits are never labelled so;
- ``manual``: a real array placed on a mesh with Manual axes (JAX alone knows
  whether ``device_put`` takes it);
- ``memory``: a real array moved to another memory kind (left to a live kernel;
  a saved page computes it, and that answer must equal Python's).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import random
import sys
import time
from typing import Any

import jax

# 12 simulated devices, set before JAX starts its backend (tests/conftest.py has set it when pytest imports this).
if (
    "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", "")
    and jax.config.jax_num_cpu_devices != 12
):
    jax.config.update("jax_num_cpu_devices", 12)

import jax.numpy as jnp
import numpy as np
from jax.sharding import AbstractMesh, AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz import ShardingError, ShardingWidget, describe
from shardviz.array.grammar import parse_mesh

SEED = 20240614
MIN_CASES = 2000

# Axis names: plain ones mostly, and ones that need quoting, escaping or care in the DOM.
PLAIN_NAMES = ("x", "y", "z", "data", "model", "X", "Y", "a", "b", "c", "expert", "seq")
ODD_NAMES = (
    "<b>bold</b>",
    "</script>",
    "o'k",
    'say "hi"',
    "both'\"",
    "naïve",
    "数据",
    "with space",
    "None",
    "P",
    "back\\slash",
    "tab\there",
    "emoji😀",
    "a,b",
    "=",
    "(",
    "x:y",
    "\u00a0nbsp",
    "zero\u200bwidth",
    "ctl\x07",
)
DTYPES = ("float32", "bfloat16", "int8", "int32", "bool", "float16", "uint16", "float8_e4m3fn", "int4", "complex64")
MEMORY_KINDS = ("device", "pinned_host", "unpinned_host")
PLATFORMS = (None, None, "tpu", "gpu")
ABSTRACT_SIZES = (1, 2, 3, 4, 5, 7, 8, 16, 32, 35, 64, 128, 256)
MAX_ABSTRACT_DEVICES = 8960
AXIS_TYPES = (AxisType.Explicit, AxisType.Auto, AxisType.Manual)


# ----------------------------------------------------------------------
# random meshes, specs and shapes


def factorizations(n: int, parts: int) -> list[tuple[int, ...]]:
    if parts == 1:
        return [(n,)]
    return [(f, *rest) for f in range(1, n + 1) if n % f == 0 for rest in factorizations(n // f, parts - 1)]


def axis_names(rng: random.Random, count: int) -> tuple[str, ...]:
    pool = list(PLAIN_NAMES) + (list(ODD_NAMES) if rng.random() < 0.25 else [])
    return tuple(rng.sample(pool, count))


def axis_types(rng: random.Random, count: int, manual: bool = True) -> tuple[AxisType, ...]:
    weights = (5, 3, 1 if manual else 0)
    return tuple(rng.choices(AXIS_TYPES, weights=weights, k=count))


def random_spec(rng: random.Random, names: tuple[str, ...], rank: int) -> P:
    free = list(names)
    entries: list[Any] = []
    for _ in range(rng.randint(0, rank)):
        kind = rng.choice(("none", "one", "one", "tuple"))
        if kind == "one" and free:
            entries.append(free.pop(rng.randrange(len(free))))
        elif kind == "tuple" and len(free) >= 2:
            picked = rng.sample(free, rng.randint(2, len(free)))
            for a in picked:
                free.remove(a)
            entries.append(tuple(picked))
        else:
            entries.append(None)
    return P(*entries)


def fitting_shape(rng: random.Random, sizes: dict[str, int], spec: P, rank: int) -> tuple[int, ...]:
    """A shape the spec divides; now and then one dimension past 2^31 (one only: a block's bytes stay below 2^53)."""
    huge = rng.randrange(rank) if rank and rng.random() < 0.1 else -1
    shape = []
    for d, entry in enumerate(padded(spec, rank)):
        cuts = math.prod(sizes[a] for a in axes_of(entry))
        shape.append(cuts * (2**33 if d == huge else rng.choice((0, 1, 1, 2, 3, 4, 6, 8))))
    return tuple(shape)


def real_mesh(rng: random.Random, manual: bool = True) -> Mesh:
    devices = jax.devices()
    n = rng.choice((1, 2, 3, 4, 6, 8, 8, 12, 12))
    axes = rng.randint(1, 4)
    sizes = rng.choice(factorizations(n, axes))
    if rng.random() < 0.5:
        chosen = list(range(n))  # the machine's first devices, in order
    else:
        chosen = rng.sample(range(len(devices)), n)
    grid = np.array([devices[i] for i in chosen]).reshape(sizes)
    return Mesh(grid, axis_names(rng, axes), axis_types=axis_types(rng, axes, manual))


def abstract_mesh(rng: random.Random) -> AbstractMesh:
    axes = rng.randint(1, 4)
    sizes: list[int] = []
    for _ in range(axes):
        room = MAX_ABSTRACT_DEVICES // max(1, math.prod(sizes))
        sizes.append(rng.choice([s for s in ABSTRACT_SIZES if s <= room] or [1]))
    if rng.random() < 0.15:  # the largest planned machine: 8,960 devices
        sizes = rng.choice([[8960], [35, 256], [35, 16, 16], [5, 7, 16, 16]])
        axes = len(sizes)
    return AbstractMesh(tuple(sizes), axis_names(rng, axes), axis_types=axis_types(rng, axes))


# ----------------------------------------------------------------------
# starting states, as widgets


def start_widget(rng: random.Random) -> ShardingWidget:
    roll = rng.random()
    dtype = rng.choice(DTYPES)
    name = rng.choice((None, "x", "params", "w_1", "activations"))
    if roll < 0.40:
        return real_array_widget(rng, dtype, name)
    if roll < 0.62:
        mesh: Mesh | AbstractMesh = real_mesh(rng)
        platform = None
    elif roll < 0.93:
        mesh = abstract_mesh(rng)
        platform = rng.choice(PLATFORMS)
    elif roll < 0.97:
        device = jax.devices()[rng.randrange(len(jax.devices()))]
        shape = tuple(rng.choice((1, 2, 4, 8)) for _ in range(rng.randint(0, 3)))
        x = jax.device_put(jnp.zeros(shape, dtype), device)
        return ShardingWidget(x, name=name)
    else:
        # A weak-typed scalar's Layout, shown as a what-if.
        mesh = real_mesh(rng, manual=False)
        x = jax.device_put(1.0, NamedSharding(mesh, P()))
        return ShardingWidget(describe(x), name=name)
    rank = rng.randint(0, 4)
    spec = random_spec(rng, tuple(mesh.axis_names), rank)
    shape = fitting_shape(rng, dict(zip(mesh.axis_names, mesh.axis_sizes)), spec, rank)
    kind = rng.choice(MEMORY_KINDS)
    memory = None if isinstance(mesh, AbstractMesh) and kind == "device" else kind
    sharding = NamedSharding(mesh, spec, memory_kind=memory)
    return ShardingWidget(sharding, shape=shape, dtype=dtype, platform=platform, name=name)


def real_array_widget(rng: random.Random, dtype: str, name: str | None) -> ShardingWidget:
    for _attempt in range(20):
        mesh = real_mesh(rng, manual=rng.random() < 0.3)
        rank = rng.randint(0, 4)
        spec = random_spec(rng, tuple(mesh.axis_names), rank)
        sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
        shape = tuple(min(n, 48) for n in fitting_shape(rng, sizes, spec, rank))
        shape = tuple(n - n % math.prod(sizes[a] for a in axes_of(e)) for n, e in zip(shape, padded(spec, rank)))
        sharding = NamedSharding(mesh, spec, memory_kind=rng.choice(MEMORY_KINDS))
        try:
            x = jax.device_put(jnp.zeros(shape, dtype), sharding)
        except Exception:  # JAX cannot place some layouts on Manual axes: draw another
            continue
        return ShardingWidget(x, name=name)
    raise RuntimeError("no real array could be placed in 20 attempts")


def axes_of(entry: Any) -> tuple[str, ...]:
    return () if entry is None else entry if isinstance(entry, tuple) else (entry,)


def padded(spec: P, rank: int) -> list[Any]:
    return list(spec) + [None] * (rank - len(spec))


# ----------------------------------------------------------------------
# edit texts, as a user might type them


def quote(rng: random.Random, name: str) -> str:
    if "'" not in name and rng.random() < 0.5:
        return f"'{name}'"
    if '"' not in name:
        return f'"{name}"'
    return f"'{name}'"


def name_token(rng: random.Random, name: str) -> str:
    bare_ok = name and all(c not in " \t\n()=,:'\"\u00a0\u200b" for c in name) and name not in ("None", "P")
    return name if bare_ok and rng.random() < 0.7 else quote(rng, name)


def spec_text(rng: random.Random, entries: list[Any]) -> str:
    parts = []
    for entry in entries:
        axes = axes_of(entry)
        if not axes:
            parts.append(rng.choice(("None", "None", "()")))
        elif len(axes) == 1 and rng.random() < 0.85:
            parts.append(name_token(rng, axes[0]))
        else:
            sep = rng.choice((", ", ",", " , "))
            parts.append("(" + sep.join(name_token(rng, a) for a in axes) + rng.choice(("", ",")) + ")")
    text = rng.choice((", ", ",", " ,  ")).join(parts)
    if rng.random() < 0.3:
        text = f"{rng.choice(('P', 'PartitionSpec'))}({text})"
    if rng.random() < 0.1:
        text = " " + text + rng.choice(("  ", "\t", "\n"))
    return text


def corrupt(rng: random.Random, text: str) -> str:
    how = rng.randrange(7)
    if how == 0 and text:
        i = rng.randrange(len(text))
        return text[:i] + text[i + 1 :]
    if how == 1:
        i = rng.randrange(len(text) + 1)
        return text[:i] + rng.choice("(),=:'\"") + text[i:]
    if how == 2:
        return text + rng.choice((",,", "(", ")", " )", "=", ":"))
    if how == 3:
        return rng.choice(
            ("P(", "P(x", "PartitionSpec(x, y", "(x, None)", "(None)", "x y", "x,,y", "'unclosed", "😀, 数据 'open😀😀")
        )
    if how == 4:
        return "x" * rng.choice((1999, 2000, 2001, 2500))
    if how == 5:
        return rng.choice(("", "   ", "P()", "None", "''", "(,)", "((x))", "x=2"))
    return text.replace(",", rng.choice((";", " ", "|")), 1)


def spec_edit(rng: random.Random, payload: dict[str, Any]) -> str:
    mesh = payload["mesh"]
    names = list(mesh["names"]) if mesh else []
    sizes = dict(zip(names, mesh["sizes"])) if mesh else {}
    shape = payload["shape"]
    rank = len(shape)
    roll = rng.random()
    if roll < 0.5 and names:  # a spec that fits
        free = list(names)
        entries: list[Any] = []
        for extent in shape:
            divides = [a for a in free if extent % sizes[a] == 0]
            pick = rng.sample(divides, min(len(divides), rng.choice((0, 1, 1, 2))))
            product, kept = 1, []
            for a in pick:
                if extent % (product * sizes[a]) == 0:
                    kept.append(a)
                    product *= sizes[a]
            for a in kept:
                free.remove(a)
            entries.append(tuple(kept) if len(kept) > 1 else kept[0] if kept else None)
        while entries and entries[-1] is None and rng.random() < 0.7:
            entries.pop()
        return spec_text(rng, entries)
    if roll < 0.8:  # any axes, perhaps unknown, repeated, too many or indivisible
        pool = names + rng.sample(list(PLAIN_NAMES + ODD_NAMES), 2) + ["", "None"]
        entries = []
        for _ in range(rng.randint(0, rank + 1)):
            k = rng.choice((0, 1, 1, 2))
            entries.append(None if k == 0 else rng.choice(pool) if k == 1 else tuple(rng.sample(pool, 2)))
        return spec_text(rng, entries)
    return corrupt(rng, spec_text(rng, [rng.choice(names) if names else "x"]))


def mesh_text(rng: random.Random, names: list[str], sizes: list[int], types: list[str]) -> str:
    parts = []
    for name, size, axis_type in zip(names, sizes, types):
        suffix = (
            ""
            if axis_type == "Explicit" and rng.random() < 0.8
            else ":" + rng.choice((axis_type.lower(), axis_type.upper(), axis_type))
        )
        size_text = str(size) if rng.random() < 0.95 else "0" + str(size)
        parts.append(f"{name_token(rng, name)}{rng.choice(('=', ' = '))}{size_text}{suffix}")
    return rng.choice((", ", ",", " ,")).join(parts)


def mesh_edit(rng: random.Random, payload: dict[str, Any]) -> str:
    mesh = payload["mesh"]
    count = payload["devices"]["count"]
    old_names = list(mesh["names"]) if mesh else []
    roll = rng.random()
    if roll < 0.5:  # the same devices, reshaped (names kept, renamed in place, or new)
        axes = rng.randint(1, 4)
        sizes = list(rng.choice(factorizations(count, axes)))
        style = rng.random()
        if style < 0.4 and len(old_names) == axes:
            names = list(old_names)
        elif style < 0.6 and len(old_names) == axes:
            names = [n if rng.random() < 0.5 else f"{n}2" for n in old_names]
        else:
            names = list(axis_names(rng, axes))
        types = [t.name for t in axis_types(rng, axes)]
        return mesh_text(rng, names, sizes, types)
    if roll < 0.55 and mesh:  # the very text the payload shows
        return str(payload["mesh_text"])
    if roll < 0.8:  # another number of devices: fewer, as many as the machine, or more
        target = rng.choice((1, 2, 3, 4, 6, 8, 12, 16, 24, 64, 512, 4096, 8960))
        axes = rng.randint(1, 3)
        sizes = list(rng.choice(factorizations(target, axes)))
        names = list(axis_names(rng, axes))
        return mesh_text(rng, names, sizes, [t.name for t in axis_types(rng, axes)])
    how = rng.randrange(6)
    if how == 0:
        return ", ".join(f"a{i}=1" for i in range(rng.choice((16, 17, 20))))
    if how == 1:
        return rng.choice(("x=1024, y=1024", "x=1024, y=1025", "x=99999999999999999999, y=2", "big=1048577"))
    if how == 2:
        return rng.choice(("x=0", "x=-1", "x=2.5", "x=²", "x=two", "x", "x=", "=2", "x=2 y=4", "x=2,x=4", "😀=2, 'y=4"))
    if how == 3:
        return rng.choice(("x=2:fast", "x=2:", "x=4:AUTO, y=2:Manual", "x=2:auto:auto", "'x'=2, ''=1"))
    if how == 4:
        return rng.choice(("", "  ", "x=2,", "x=2,,y=4", "(x=2)", "x=8, y=1:explicit"))
    return corrupt(rng, mesh_text(rng, ["x", "y"], [2, count // 2 or 1], ["Explicit", "Auto"]))


def memory_edit(rng: random.Random, payload: dict[str, Any]) -> str:
    if rng.random() < 0.8:
        return rng.choice([*payload["memory_kinds"], "device"])
    return rng.choice(("", "hbm", "Device", "pinned host", "<b>host</b>", "unpinned_host "))


def random_edit(rng: random.Random, payload: dict[str, Any]) -> dict[str, str]:
    roll = rng.random()
    if roll < 0.4:
        return {"spec_text": spec_edit(rng, payload)}
    if roll < 0.75:
        return {"mesh_text": mesh_edit(rng, payload)}
    if roll < 0.9:
        return {"memory_kind": memory_edit(rng, payload)}
    edit = {"spec_text": spec_edit(rng, payload), "mesh_text": mesh_edit(rng, payload)}
    if rng.random() < 0.5:
        edit["memory_kind"] = memory_edit(rng, payload)
    if rng.random() < 0.3:
        del edit[rng.choice(("spec_text", "mesh_text"))]
    return edit


# ----------------------------------------------------------------------
# what only a kernel can judge


def needed_devices(payload: dict[str, Any], edit: dict[str, str]) -> int | None:
    """Devices the edit's mesh text asks for when Python would build a new mesh for it, else None."""
    text = edit.get("mesh_text")
    if text is None or (payload["mesh"] is not None and text == payload["mesh_text"]):
        return None
    try:
        request = parse_mesh(text)
    except ShardingError:
        return None
    return math.prod(request.sizes)


def kernel_label(payload: dict[str, Any], edit: dict[str, str], answer: dict[str, Any]) -> str | None:
    needed = needed_devices(payload, edit)
    virtual = payload["mesh"] is not None and payload["mesh"]["abstract"]  # a what-if stays virtual: no devices to take
    other_devices = (
        not virtual and needed is not None and (payload["mesh"] is None or needed != payload["devices"]["count"])
    )
    if other_devices and needed is not None and needed <= payload["machine_devices"]:
        return "devices"
    if not payload["has_array"]:
        return None
    refused_by_jax = "error" in answer and answer["error"]["message"].startswith("JAX refused to place")
    if "error" in answer and not refused_by_jax:
        return None  # a check refused it, as the local engine's checks do
    target_types = answer["payload"]["mesh"]["types"] if "payload" in answer else target_mesh_types(payload, edit)
    if "Manual" in target_types:
        return "manual"
    kind = edit.get("memory_kind", payload["memory_kind"])
    return "memory" if kind != payload["memory_kind"] else None


def target_mesh_types(payload: dict[str, Any], edit: dict[str, str]) -> list[str]:
    text = edit.get("mesh_text")
    if text is None or text == payload["mesh_text"]:
        return list(payload["mesh"]["types"])
    return list(parse_mesh(text).types)


# ----------------------------------------------------------------------
# running the widget


def widget_answer(widget: ShardingWidget, edit: dict[str, str]) -> dict[str, Any]:
    """Apply the edit as the front end delivers it and read back what Python answered."""
    widget.set_state(dict(edit))
    if widget.error:
        assert widget.error_source in ("spec", "mesh", "memory_kind"), (widget.error_source, widget.error)
        return {"error": {"message": widget.error, "source": widget.error_source}}
    return {"payload": dict(widget.payload), "notice": widget.notice}


class Table:
    """Payloads stored once, referred to by index."""

    def __init__(self) -> None:
        self.rows: list[Any] = []
        self.index: dict[str, int] = {}

    def add(self, payload: dict[str, Any]) -> int:
        key = json.dumps(payload)
        if key not in self.index:
            self.index[key] = len(self.rows)
            self.rows.append(payload)
        return self.index[key]


def stored(answer: dict[str, Any], table: Table) -> dict[str, Any]:
    if "payload" in answer:
        return {"payload": table.add(answer["payload"]), "notice": answer["notice"]}
    return answer


def make_cases(seed: int, count: int) -> dict[str, Any]:
    rng = random.Random(seed)
    table = Table()
    cases: list[dict[str, Any]] = []
    while len(cases) < count:
        widget = start_widget(rng)
        meshes_shown = [widget.payload["mesh_text"]]
        for _step in range(rng.randint(3, 9)):
            before = dict(widget.payload)
            # Now and then back to a mesh shown before: a spec a mesh edit cut comes back whole.
            back = rng.random() < 0.15 and before["mesh"] is not None
            edit = {"mesh_text": rng.choice(meshes_shown)} if back else random_edit(rng, before)
            answer = widget_answer(widget, edit)
            label = kernel_label(before, edit, answer)
            case: dict[str, Any] = {
                "id": len(cases),
                "start": table.add(before),
                "edit": edit,
                "python": stored(answer, table),
                "kernel_only": label,
            }
            cases.append(case)
            meshes_shown.append(widget.payload["mesh_text"])
    return {
        "seed": seed,
        "machine_devices": jax.device_count(),
        "payloads": table.rows,
        "cases": cases,
        "python_text": python_text(),
    }


# Characters whose repr or whitespace status the engine's messages depend on: C0 and C1
# controls, Latin-1 (no-break space, soft hyphen), format and separator characters, a
# private-use and an astral one, quotes and backslashes. (Characters assigned after the
# Unicode version of Python's database are left out: the browser's may be newer.)
SPECIAL_CHARS = (
    "\u034f\u061c\u115f\u180e\u200b\u200d\u200e\u2028\u2029\u202f\u205f\u2060\u3000\ufeff\ue000\U0001f600\U000e0001"
)
TEXTS = ("o'k", 'say "hi"', "both'\"", "back\\slash", "tab\tnew\nline\r", "naïve 数据 😀", " pad \u3000", "")


def python_text() -> dict[str, list[list[str]]]:
    """Python's repr and strip of characters and strings, for the engine's own (js/engine/array/pytext.ts)."""
    chars = [chr(c) for c in range(0x250)] + list(SPECIAL_CHARS)
    texts = chars + list(TEXTS)
    return {"repr": [[t, repr(t)] for t in texts], "strip": [[t, t.strip()] for t in texts]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", nargs="?", default="js/fixtures/parity", help="folder for cases.json")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--cases", type=int, default=2400)
    args = parser.parse_args(argv)
    if args.cases < MIN_CASES:
        parser.error(f"--cases must be at least {MIN_CASES}")
    started = time.perf_counter()
    data = make_cases(args.seed, args.cases)
    target = pathlib.Path(args.target)
    target.mkdir(parents=True, exist_ok=True)
    (target / "cases.json").write_text(json.dumps(data, separators=(",", ":")))
    labels: dict[str, int] = {}
    for case in data["cases"]:
        outcome = "refused" if "error" in case["python"] else "applied"
        key = f"{outcome}/{case['kernel_only'] or 'local'}"
        labels[key] = labels.get(key, 0) + 1
    summary = ", ".join(f"{k} {v}" for k, v in sorted(labels.items()))
    took = time.perf_counter() - started
    print(f"wrote {len(data['cases'])} cases ({len(data['payloads'])} payloads) to {target} in {took:.0f} s: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
