"""``assert_layout``: an array laid out as a test expects, shown side by side when it is not."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec, Sharding

from ..api import render_text
from ..engine.describe import describe
from ..engine.grammar import parse_spec
from ..engine.layout import Layout
from ..errors import ShardingError
from .errors import LayoutMismatch
from .messages import side_by_side

Spec = tuple[tuple[str, ...], ...]

# jax.typeof's grammar: float32[8@x,4], bfloat16<host>[8@(x,y)], int8[] (a trailing {...}, e.g. varying
# manual axes, is read and ignored). A leading dtype may be left out: [8@x,4] checks the dimensions only.
_TYPE = re.compile(
    r"\s*(?P<dtype>[A-Za-z_][A-Za-z0-9_]*)?(?:<(?P<memory>[^<>]*)>)?"
    r"\[(?P<dims>[^\[\]]*)\]\s*(?:\{[^{}]*\})?\s*"
)
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
    wanted = _expected(expected)
    if isinstance(x, Sharding) and shape is None and wanted.shape is not None:
        shape = wanted.shape
        dtype = dtype if dtype is not None else wanted.dtype
    actual = describe(x, shape=shape, dtype=dtype)
    _check_axes(wanted, actual)
    differences = _differences(wanted, actual)
    if differences:
        raise LayoutMismatch(_message(wanted, actual, differences), subject=actual)
    return actual


def typed_text(layout: Layout) -> str:
    """The layout in jax.typeof's grammar with every mesh axis shown (Auto ones too)."""
    memory = _MEMORY.search(layout.type_str)
    dims = ",".join(f"{n}{_at(axes)}" for n, axes in zip(layout.shape, layout.spec))
    return f"{layout.dtype}{f'<{memory.group(1)}>' if memory else ''}[{dims}]"


def _at(axes: tuple[str, ...]) -> str:
    if not axes:
        return ""
    return f"@{axes[0]}" if len(axes) == 1 else f"@({','.join(axes)})"


# ---------------------------------------------------------------------------- reading the expectation


def _expected(expected: Any) -> Expected:
    if isinstance(expected, Layout):
        memory = _MEMORY.search(expected.type_str)
        return Expected(
            typed_text(expected), expected.dtype, memory.group(1) if memory else "", expected.shape, expected.spec
        )
    if isinstance(expected, PartitionSpec):
        return Expected(str(expected), None, None, None, _spec_entries(expected))
    if not isinstance(expected, str):
        raise ShardingError(
            "the expected layout must be a type string such as 'float32[8@x,4]', a PartitionSpec or spec text "
            f"such as \"P('x', None)\", or a Layout, not {type(expected).__name__}"
        )
    if "[" in expected:  # spec text never has brackets; a type string always does
        return _type_string(expected)
    entries = parse_spec(expected)
    return Expected(expected.strip(), None, None, None, tuple(entry or () for entry in entries))


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
    return Expected(text.strip(), dtype, match.group("memory") or "", tuple(sizes), tuple(spec))


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
    for k, entry in enumerate(spec):
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


def _check_axes(wanted: Expected, actual: Layout) -> None:
    names = actual.mesh.axis_names if actual.mesh is not None else ()
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


def _split(axes: tuple[str, ...]) -> str:
    return f"split by {','.join(axes)}" if axes else "not split"


def _differences(wanted: Expected, actual: Layout) -> list[str]:
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


def _expected_picture(wanted: Expected, actual: Layout, width: int) -> str:
    mesh = getattr(actual.sharding, "mesh", None)
    if not isinstance(actual.sharding, NamedSharding) or mesh is None:
        return "(drawn only for a NamedSharding: the array's sharding names no mesh)"
    shape = wanted.shape if wanted.shape is not None else actual.shape
    spec = wanted.spec + ((),) * (len(shape) - len(wanted.spec))
    entries = [None if not axes else axes[0] if len(axes) == 1 else axes for axes in spec]
    try:
        sharding = NamedSharding(mesh, PartitionSpec(*entries))
        layout = describe(sharding, shape=shape, dtype=wanted.dtype or actual.dtype)
    except (ShardingError, ValueError, TypeError) as err:
        return f"(the expected layout cannot be laid out on this mesh: {err})"
    return render_text(layout, width=width, color=False)


def _message(wanted: Expected, actual: Layout, differences: list[str]) -> str:
    lines = [
        f"the array is laid out as {typed_text(actual)}, not as expected {wanted.text}",
        *(f"  {d}" for d in differences),
        "",
    ]
    half = 58
    expected_text = _expected_picture(wanted, actual, half)
    actual_text = render_text(actual, width=half, color=False)
    lines += side_by_side("expected:", expected_text, "actual:", actual_text)
    return "\n".join(lines)


__all__ = ["assert_layout", "typed_text"]
