"""``assert_layout``: an array laid out as a test expects, shown side by side when it is not."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec, Sharding

from ..api import render_text
from ..array.checks import spec_partitions
from ..array.describe import describe
from ..array.grammar import parse_spec
from ..array.layout import Layout
from ..errors import ShardingError
from .errors import FailurePage, LayoutMismatch
from .messages import side_by_side

Spec = tuple[tuple[str, ...], ...]

# jax.typeof's grammar: float32[8@x,4], bfloat16<host>[8@(x,y)], int8[], and a trailing {V:x, U:(a,b), R:y}
# naming varying manual, unreduced and reduced axes. A leading dtype may be left out: [8@x,4].
_TYPE = re.compile(
    r"\s*(?P<dtype>[A-Za-z_][A-Za-z0-9_]*)?(?:<(?P<memory>[^<>]*)>)?"
    r"\[(?P<dims>[^\[\]]*)\]\s*(?:\{(?P<marks>[^{}]*)\})?\s*"
)
_MARK = re.compile(r"\s*(?P<kind>[VUR])\s*:\s*(?:\((?P<many>[^()]*)\)|(?P<one>[^\s,()]+))\s*")
_MARKS = re.compile(r"\{([^{}]*)\}\s*$")
MARK_NAMES = {"V": "varying manual axes", "U": "unreduced axes", "R": "reduced axes"}
_DIM = re.compile(r"\s*(?P<size>[0-9]+)\s*(?:@\s*(?:\((?P<many>[^()]*)\)|(?P<one>[^\s,()@]+)))?\s*")
_MEMORY = re.compile(r"<([^<>]*)>\[")


@dataclass(frozen=True)
class Expected:
    """A layout as the test wrote it: every part it names (None where it names none)."""

    text: str
    dtype: str | None
    memory: str | None  # the <...> annotation of the type string, "" for none; None: not checked
    shape: tuple[int, ...] | None
    spec: Spec
    marks: dict[str, frozenset[str]]  # V, U, R -> axes (empty where the expectation names none)


def assert_layout(
    x: Any, expected: str | PartitionSpec | Layout, *, shape: Sequence[int] | None = None, dtype: Any = None
) -> Layout:
    """Check that ``x`` is laid out as ``expected``; return its :class:`~shardviz.Layout`.

    ``x`` is a jax.Array, a ShapeDtypeStruct with a sharding, a Layout, or a
    Sharding (with ``shape=``/``dtype=``, or taking them from an expected type
    string). ``expected`` is a ``jax.typeof``-style type string
    (``"float32[8@x,4]"``, ``"bfloat16<host>[8@(x,y)]"``, ``"[8@x,4]"`` to
    leave the dtype out), a ``PartitionSpec`` or spec text (``"P('x', None)"``,
    ``"x, None"``), or another Layout. Type strings are compared part by part
    (dtype, memory, sizes, axes per dimension), so they also hold on Auto
    axes, whose ``jax.typeof`` leaves the sharding out.

    Raises :class:`LayoutMismatch` (an AssertionError) naming each differing
    dimension, with the expected and the actual picture; ``ShardingError``
    for an expected layout that names an axis the mesh lacks or cannot be
    laid out.
    """
    __tracebackhide__ = True
    wanted = expectation(expected)
    if isinstance(x, Sharding) and shape is None and wanted.shape is not None:
        shape = wanted.shape
        dtype = dtype if dtype is not None else wanted.dtype
    actual = describe(x, shape=shape, dtype=dtype)
    check_axes(wanted, actual.mesh.axis_names if actual.mesh is not None else ())
    found = differences(wanted, actual)
    if found:
        page = FailurePage(
            budget=f"laid out as {wanted.text}",
            figure=f"laid out as {typed_text(actual)}",
            columns=("what differs",),
            rows=tuple((d,) for d in found),
            marked=(True,) * len(found),
        )
        expected_layout = _expected_layout(wanted, actual)
        raise LayoutMismatch(_message(wanted, actual, found), subject=actual, expected=expected_layout, page=page)
    return actual


def typed_text(layout: Layout) -> str:
    """The layout in jax.typeof's grammar with every mesh axis shown (Auto ones too)."""
    memory = _MEMORY.search(layout.type_str)
    dims = ",".join(f"{n}{_at(axes)}" for n, axes in zip(layout.shape, layout.spec))
    return f"{layout.dtype}{f'<{memory.group(1)}>' if memory else ''}[{dims}]{marks_text(layout_marks(layout))}"


def layout_marks(layout: LaidOut) -> dict[str, frozenset[str]]:
    """The varying (V), unreduced (U) and reduced (R) axes of a layout: its type string's, and its sharding's."""
    found = _MARKS.search(layout.type_str)
    marks = _read_marks(found.group(1), layout.type_str) if found else no_marks()
    spec = getattr(layout.sharding, "spec", None)
    for kind, attribute in (("U", "unreduced"), ("R", "reduced")):
        marks[kind] = marks[kind] | frozenset(getattr(spec, attribute, None) or ())
    return marks


def marks_text(marks: dict[str, frozenset[str]]) -> str:
    """``{U:tp}``, ``{V:x, U:(a,b)}``; empty for none (axes in name order)."""
    parts = []
    for kind in MARK_NAMES:
        axes = sorted(marks.get(kind, ()))
        if axes:
            parts.append(f"{kind}:{axes[0]}" if len(axes) == 1 else f"{kind}:({','.join(axes)})")
    return f"{{{', '.join(parts)}}}" if parts else ""


def no_marks() -> dict[str, frozenset[str]]:
    return {kind: frozenset() for kind in MARK_NAMES}


def _read_marks(text: str, whole: str) -> dict[str, frozenset[str]]:
    marks = no_marks()
    for piece in text.split(",") if "(" not in text else _split_dims(text):
        if not piece.strip():
            continue
        mark = _MARK.fullmatch(piece)
        if not mark:
            raise ShardingError(
                f"cannot read {piece.strip()!r} in the type string {whole.strip()!r}: the braces hold "
                "V:, U: or R: and axes, e.g. {U:tp} or {V:(data,model)}"
            )
        axes = (mark.group("one"),) if mark.group("one") else (mark.group("many") or "").split(",")
        marks[mark.group("kind")] |= frozenset(a.strip() for a in axes if a.strip())
    return marks


def _at(axes: tuple[str, ...]) -> str:
    if not axes:
        return ""
    return f"@{axes[0]}" if len(axes) == 1 else f"@({','.join(axes)})"


# ---------------------------------------------------------------------------- reading the expectation


def expectation(expected: Any) -> Expected:
    """A layout as a test wrote it (type string, spec, PartitionSpec or Layout), read part by part."""
    if isinstance(expected, Layout):
        memory = _MEMORY.search(expected.type_str)
        return Expected(
            typed_text(expected),
            expected.dtype,
            memory.group(1) if memory else "",
            expected.shape,
            expected.spec,
            layout_marks(expected),
        )
    if isinstance(expected, PartitionSpec):
        marks = no_marks()
        marks["U"], marks["R"] = frozenset(expected.unreduced), frozenset(expected.reduced)
        return Expected(str(expected), None, None, None, _spec_entries(expected), marks)
    if not isinstance(expected, str):
        raise ShardingError(
            "the expected layout must be a type string such as 'float32[8@x,4]', a PartitionSpec or spec text "
            f"such as \"P('x', None)\", or a Layout, not {type(expected).__name__}"
        )
    if "[" in expected:  # spec text never has brackets; a type string always does
        return _type_string(expected)
    entries = parse_spec(expected)
    return Expected(expected.strip(), None, None, None, tuple(entry or () for entry in entries), no_marks())


def _type_string(text: str) -> Expected:
    match = _TYPE.fullmatch(text)
    if not match:
        raise ShardingError(
            f"cannot read the type string {text.strip()!r}: write it as jax.typeof prints it, "
            "e.g. 'float32[8@x,4]' or 'bfloat16<host>[8@(x,y),16]'"
        )
    dtype = match.group("dtype")
    if dtype is not None:
        try:
            dtype = jnp.dtype(dtype).name
        except TypeError:
            raise ShardingError(f"the type string {text.strip()!r} names no dtype JAX knows: {dtype!r}") from None
    sizes: list[int] = []
    spec: list[tuple[str, ...]] = []
    dims = match.group("dims")
    for k, piece in enumerate(_split_dims(dims) if dims.strip() else []):
        dim = _DIM.fullmatch(piece)
        if not dim:
            raise ShardingError(
                f"cannot read dimension {k} ({piece.strip()!r}) of the type string {text.strip()!r}: "
                "write a size, optionally @axis or @(axis,axis)"
            )
        sizes.append(int(dim.group("size")))
        if dim.group("one"):
            spec.append((dim.group("one"),))
        else:
            spec.append(tuple(a.strip() for a in (dim.group("many") or "").split(",") if a.strip()))
    marks = _read_marks(match.group("marks") or "", text)
    return Expected(text.strip(), dtype, match.group("memory") or "", tuple(sizes), tuple(spec), marks)


def _split_dims(dims: str) -> list[str]:
    """``8@(x,y),4`` -> ``["8@(x,y)", "4"]``: commas inside parentheses stay."""
    pieces, depth, start = [], 0, 0
    for k, c in enumerate(dims):
        depth += c == "("
        depth -= c == ")"
        if c == "," and depth == 0:
            pieces.append(dims[start:k])
            start = k + 1
    pieces.append(dims[start:])
    return pieces


def _spec_entries(spec: PartitionSpec) -> Spec:
    out: list[tuple[str, ...]] = []
    for k, entry in enumerate(spec_partitions(spec)):  # iterating a spec with unreduced or reduced axes raises
        if entry is None:
            out.append(())
        elif isinstance(entry, str):
            out.append((entry,))
        elif isinstance(entry, tuple) and all(isinstance(a, str) for a in entry):
            out.append(entry)
        else:
            raise ShardingError(
                f"entry {k} of the expected PartitionSpec is {entry!r}: name mesh axes (or None); "
                "an unconstrained entry says nothing to check"
            )
    return tuple(out)


def check_axes(wanted: Expected, names: Sequence[str]) -> None:
    """Refuse an expectation that names an axis the mesh lacks, or one axis twice."""
    for kind, marked in wanted.marks.items():
        for axis in sorted(marked - set(names)):
            raise ShardingError(
                f"the expected layout {wanted.text!r} names {axis!r} among its {MARK_NAMES[kind]}, "
                f"which is no axis of the array's mesh (axes: {' '.join(names) or 'none'})"
            )
    seen: set[str] = set()
    for k, axes in enumerate(wanted.spec):
        for axis in axes:
            if axis not in names:
                mesh = " ".join(names) if names else "none: the array sits on one device"
                raise ShardingError(
                    f"the expected layout {wanted.text!r} splits dimension {k} by {axis!r}, "
                    f"which is no axis of the array's mesh (axes: {mesh})"
                )
            if axis in seen:
                raise ShardingError(f"the expected layout {wanted.text!r} uses the mesh axis {axis!r} twice")
            seen.add(axis)


# ---------------------------------------------------------------------------- comparing


def _axes_text(axes: frozenset[str]) -> str:
    return ", ".join(sorted(axes)) or "none"


def _split(axes: tuple[str, ...]) -> str:
    return f"split by {','.join(axes)}" if axes else "not split"


class LaidOut(Protocol):
    """What a comparison reads of an actual layout: a Layout, or one leaf of a tree."""

    @property
    def dtype(self) -> str: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def spec(self) -> Spec: ...
    @property
    def type_str(self) -> str: ...
    @property
    def memory_kind(self) -> str: ...
    @property
    def sharding(self) -> Any: ...


def differences(wanted: Expected, actual: LaidOut) -> list[str]:
    """Each part of ``actual`` that differs from ``wanted``, as a sentence (``dim 0: expected split by x, ...``)."""
    out = []
    if wanted.dtype is not None and wanted.dtype != actual.dtype:
        out.append(f"dtype: expected {wanted.dtype}, actually {actual.dtype}")
    if wanted.memory is not None:
        memory = _MEMORY.search(actual.type_str)
        have = memory.group(1) if memory else ""
        if have != wanted.memory:
            out.append(
                f"memory: expected {f'<{wanted.memory}>' if wanted.memory else 'device memory'}, "
                f"actually {actual.memory_kind}"
            )
    have = layout_marks(actual)
    for kind, name in MARK_NAMES.items():
        if wanted.marks[kind] != have[kind]:
            out.append(
                f"{name} ({kind}:): expected {_axes_text(wanted.marks[kind])}, actually {_axes_text(have[kind])}"
            )
    rank = len(actual.shape)
    if wanted.shape is not None and len(wanted.shape) != rank:
        out.append(f"rank: expected {len(wanted.shape)} dimensions, actually {rank} (shape {actual.shape})")
        return out
    if len(wanted.spec) > rank:
        out.append(f"rank: the expected spec has {len(wanted.spec)} entries, the array only {rank} dimensions")
        return out
    spec = wanted.spec + ((),) * (rank - len(wanted.spec))  # a short spec leaves the last dimensions whole
    for k in range(rank):
        parts = []
        if wanted.shape is not None and wanted.shape[k] != actual.shape[k]:
            parts.append(f"size {wanted.shape[k]} expected, actually {actual.shape[k]}")
        if spec[k] != actual.spec[k]:
            parts.append(f"expected {_split(spec[k])}, actually {_split(actual.spec[k])}")
        if parts:
            out.append(f"dim {k}: " + "; ".join(parts))
    return out


def _expected_layout(wanted: Expected, actual: Layout) -> Layout | str:
    """The expected layout on the array's mesh, or why it cannot be laid out there."""
    mesh = getattr(actual.sharding, "mesh", None)
    if not isinstance(actual.sharding, NamedSharding) or mesh is None:
        return "(drawn only for a NamedSharding: the array's sharding names no mesh)"
    shape = wanted.shape if wanted.shape is not None else actual.shape
    spec = wanted.spec + ((),) * (len(shape) - len(wanted.spec))
    entries = [None if not axes else axes[0] if len(axes) == 1 else axes for axes in spec]
    try:
        sharding = NamedSharding(mesh, PartitionSpec(*entries))
        return describe(sharding, shape=shape, dtype=wanted.dtype or actual.dtype)
    except (ShardingError, ValueError, TypeError) as err:
        return f"(the expected layout cannot be laid out on this mesh: {err})"


def _message(wanted: Expected, actual: Layout, differences: list[str]) -> str:
    lines = [
        f"the array is laid out as {typed_text(actual)}, not as expected {wanted.text}",
        *(f"  {d}" for d in differences),
        "",
    ]
    half = 58
    expected = _expected_layout(wanted, actual)
    expected_text = expected if isinstance(expected, str) else render_text(expected, width=half, color=False)
    actual_text = render_text(actual, width=half, color=False)
    lines += side_by_side("expected:", expected_text, "actual:", actual_text)
    lines += ["", f"if the actual layout is intended, expect {typed_text(actual)!r}"]
    return "\n".join(lines)


__all__ = [
    "Expected",
    "LaidOut",
    "assert_layout",
    "check_axes",
    "differences",
    "expectation",
    "layout_marks",
    "marks_text",
    "no_marks",
    "typed_text",
]
