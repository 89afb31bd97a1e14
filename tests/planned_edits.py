"""Front-end edits the robustness tests build from a structure, and what they mean.

The fuzz test draws what an edit *means* (spec entries, mesh axes, a memory
kind) and writes it as text the way a user might, with varied spacing,
quoting and wrapping. Its expected result is then built from that structure
with JAX's own classes (``Mesh``, ``PartitionSpec``, ``NamedSharding``) and
JAX's verdict (``jax.device_put``), never with shardviz's grammar, so a parse
that went wrong shows up as a difference from JAX.

The few rules shardviz adds to JAX's are stated here, each once:

- an axis name may not be empty (JAX accepts ``''``); a name holding both
  kinds of quote cannot be written in the editors, so built edits leave such
  names out;
- an axis size is written in ASCII digits and is at least 1;
- an edit's text is at most ``MAX_TEXT`` characters;
- a mesh for an array uses at most this machine's devices; one with as many
  devices as the current mesh keeps its devices in mesh order, any other takes
  the machine's first devices in id order;
- a mesh edit carries the spec over with ``shardviz.adapt_spec`` (tested on its
  own in test_widget.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

import jax
import numpy as np
from hypothesis import strategies as st
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

import shardviz

MAX_TEXT = 2000
# A name the test writes bare: a Python identifier that is not a word the
# spec grammar gives a meaning to. Anything else is written in quotes.
BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RESERVED = ("None", "P", "PartitionSpec")
AXIS_TYPE_WORDS = {"auto": AxisType.Auto, "explicit": AxisType.Explicit, "manual": AxisType.Manual}
# Size texts that are not a whole number of at least 1, and hold no separator.
BAD_SIZES = ("0", "00", "-1", "2.0", "²", "two", "1e1", "0x2", "½")


def writable(name: str) -> bool:
    """A name can be written in the editors unless it holds both kinds of quote."""
    return not ("'" in name and '"' in name)


@st.composite
def name_text(draw: Any, name: str) -> str:
    if BARE.fullmatch(name) and name not in RESERVED and draw(st.booleans()):
        return name
    quote = draw(st.sampled_from([q for q in ("'", '"') if q not in name]))
    return f"{quote}{name}{quote}"


def spaces() -> st.SearchStrategy[str]:
    return st.sampled_from(["", " ", "  ", "\t"])


@dataclass(frozen=True)
class Model:
    """What the widget should show: JAX objects the test built itself."""

    mesh: Mesh
    spec: PartitionSpec
    memory_kind: str
    # The spec the user set, where a mesh edit cut ``spec`` from it (docs/local-engine.md): a later
    # mesh edit starts again from it, so it comes back where it fits.
    asked: PartitionSpec | None = None

    @property
    def sharding(self) -> NamedSharding:
        return NamedSharding(self.mesh, self.spec, memory_kind=self.memory_kind)

    def on_mesh(self, mesh: Mesh, shape: tuple[int, ...]) -> Model:
        """What a mesh edit to ``mesh`` shows: the spec the user set, renamed and cut to fit."""
        wanted = self.spec if self.asked is None else self.asked
        spec = shardviz.adapt_spec(wanted, shape, self.mesh, mesh).spec
        asked = _renamed(wanted, tuple(self.mesh.axis_names), tuple(mesh.axis_names))
        kept = None if entries(asked, len(shape)) == entries(spec, len(shape)) else asked
        return Model(mesh, spec, self.memory_kind, kept)


def entries(spec: PartitionSpec, rank: int) -> tuple[tuple[str, ...], ...]:
    """Each dimension's axes, ``None`` and a bare name written alike."""
    out = []
    for k in range(rank):
        entry = spec[k] if k < len(spec) else None
        out.append(() if entry is None else (entry,) if isinstance(entry, str) else tuple(entry))
    return tuple(out)


def _renamed(spec: PartitionSpec, old: tuple[str, ...], new: tuple[str, ...]) -> PartitionSpec:
    """A rename, as documented: with as many axes as before, the axis at a position whose name changed
    takes the new name, where the old name is not in the new mesh and the new name not in the old."""
    if len(old) != len(new):
        return spec
    names = {a: b for a, b in zip(old, new) if a != b and a not in new and b not in old}
    out = []
    for entry in spec:
        if entry is None:
            out.append(None)
        elif isinstance(entry, str):
            out.append(names.get(entry, entry))
        else:
            out.append(tuple(names.get(a, a) for a in entry))
    return PartitionSpec(*out)


@dataclass(frozen=True)
class Planned:
    """An edit built from a structure: the trait, its text, and the model after it (None: refused)."""

    trait: str
    text: str
    after: Model | None
    why: str  # for a refusal: the rule or JAX's complaint; for an acceptance: ""


SOURCE = {"spec_text": "spec", "mesh_text": "mesh", "memory_kind": "memory_kind"}


def jax_verdict(array: jax.Array, model: Model) -> str:
    """ "" when JAX places ``array`` under the model's sharding, else JAX's complaint."""
    try:
        jax.device_put(array, model.sharding)
    except Exception as err:  # JAX's refusal, whatever its type
        return f"JAX: {type(err).__name__}: {str(err)[:200]}"
    return ""


def judge(trait: str, text: str, array: jax.Array, after: Model, rule: str = "") -> Planned:
    if not rule and len(text) > MAX_TEXT:
        rule = f"longer than {MAX_TEXT} characters"
    if not rule:
        rule = jax_verdict(array, after)
    return Planned(trait, text, None if rule else after, rule)


@st.composite
def spec_edit(draw: Any, model: Model, array: jax.Array, names: st.SearchStrategy[str]) -> Planned:
    """Spec entries over the mesh's names (mostly) and any others, written out."""
    mesh_names = [str(n) for n in model.mesh.axis_names]
    pool = st.one_of(st.sampled_from(mesh_names), st.sampled_from(mesh_names), names).filter(writable)
    entries = draw(st.lists(st.one_of(st.none(), st.lists(pool, min_size=1, max_size=3)), max_size=3))
    texts = []
    for entry in entries:
        if entry is None:
            texts.append(draw(st.sampled_from(["None", "()"])))
        elif len(entry) == 1 and draw(st.booleans()):
            texts.append(draw(name_text(entry[0])))
        else:
            sep = draw(spaces())
            inner = ("," + sep).join(draw(name_text(n)) for n in entry)
            texts.append("(" + inner + draw(st.sampled_from(["", ","])) + ")")
    body = ("," + draw(spaces())).join(texts)
    if draw(st.booleans()):
        body = draw(st.sampled_from(["P", "PartitionSpec"])) + "(" + body + ")"
    text = draw(spaces()) + body + draw(spaces())
    spec = PartitionSpec(*(None if e is None else tuple(e) for e in entries))
    empty = any(n == "" for e in entries if e for n in e)
    return judge("spec_text", text, array, replace(model, spec=spec, asked=None), "an empty axis name" if empty else "")


@st.composite
def mesh_edit(draw: Any, model: Model, array: jax.Array, names: st.SearchStrategy[str]) -> Planned:
    """Mesh axes (name, size, type), written out; sizes sometimes not whole numbers."""
    axes = draw(
        st.lists(
            st.tuples(
                st.one_of(st.sampled_from(["x", "y", "z", "data", "model"]), names).filter(writable),
                st.one_of(
                    st.integers(1, 12).map(str), st.integers(1, 4).map(lambda n: f"0{n}"), st.sampled_from(BAD_SIZES)
                ),
                st.sampled_from(["", "auto", "explicit", "manual", "Auto", "EXPLICIT", "bogus"]),
            ),
            min_size=1,
            max_size=4,
        )
    )
    parts = []
    for name, size, kind in axes:
        eq = draw(spaces()) + "=" + draw(spaces())
        parts.append(draw(name_text(name)) + eq + size + (f":{kind}" if kind else ""))
    text = draw(spaces()) + ("," + draw(spaces())).join(parts) + draw(spaces())

    def refused(rule: str) -> Planned:
        return Planned("mesh_text", text, None, rule)

    axis_names = [n for n, _, _ in axes]
    if any(n == "" for n in axis_names):
        return refused("an empty axis name")
    if len(set(axis_names)) != len(axis_names):
        return refused("an axis name twice")
    if any(not re.fullmatch(r"[0-9]+", s) or int(s) < 1 for _, s, _ in axes):
        return refused("a size that is not a whole number of at least 1")
    if any(k and k.lower() not in AXIS_TYPE_WORDS for _, _, k in axes):
        return refused("an unknown axis type")
    if len(text) > MAX_TEXT:
        return refused(f"longer than {MAX_TEXT} characters")
    sizes = tuple(int(s) for _, s, _ in axes)
    count = math.prod(sizes)
    if count > len(jax.devices()):
        return refused(f"{count} devices on a machine of {len(jax.devices())}")
    if count == model.mesh.devices.size:
        devices = model.mesh.devices.reshape(sizes)  # the same devices, in mesh order
    else:
        devices = np.array(jax.devices()[:count]).reshape(sizes)  # the machine's first devices
    types = tuple(AXIS_TYPE_WORDS[k.lower()] if k else AxisType.Explicit for _, _, k in axes)
    try:
        mesh = Mesh(devices, tuple(axis_names), axis_types=types)
    except Exception as err:
        return refused(f"JAX: {type(err).__name__}: {err}")
    return judge("mesh_text", text, array, model.on_mesh(mesh, array.shape))


@st.composite
def memory_kind_edit(draw: Any, model: Model, array: jax.Array) -> Planned:
    kind = draw(
        st.one_of(
            st.sampled_from(["device", "pinned_host", "unpinned_host", "hbm", "", "<b>", "Device", " device"]),
            st.text(max_size=12),
        )
    )
    return judge("memory_kind", kind, array, replace(model, memory_kind=kind))
