"""A program's inputs and outputs: which leaves it takes as arrays, their shardings, their layouts.

Shardings come from the compiled program where JAX can say them, else from
the arguments themselves; layouts are described once per distinct sharding,
shape and dtype; an output laid out unlike the input it stands for is found
by the keys its path shares with the input's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import jax

from ...array.describe import describe
from ...array.layout import Layout
from ...errors import ShardingError
from ..model import (
    LayoutChange,
)


def input_shardings(compiled: Any, dynamic: Sequence[Any], name: str) -> list[Any]:
    """One sharding per array input: the compiled program's, or else the arguments' own.

    When JAX cannot say the compiled program's input shardings, arguments
    that are arrays or placed ``ShapeDtypeStruct``s still carry theirs (a
    jitted program takes its arrays as they are laid out, or JAX refuses
    to compile it); a NumPy array or Python scalar has none to fall back on.
    """
    try:
        return jax.tree_util.tree_leaves(compiled.input_shardings)
    except Exception as err:
        own = [getattr(leaf, "sharding", None) for leaf in dynamic]
        if all(isinstance(s, jax.sharding.Sharding) for s in own):
            return own
        raise ShardingError(
            f"{name} compiled, but JAX could not say its input shardings ({type(err).__name__}: {err}), and not "
            "every argument is an array or ShapeDtypeStruct with its own sharding to read instead"
        ) from err


def output_shardings(compiled: Any, traced: Any, name: str) -> list[Any]:
    """One sharding per output leaf of the traced function.

    A function that writes to a ``Ref`` argument (``w_ref[...] += ...``, as
    the training cookbook's steps do) compiles to more results than it
    returns: the refs' new values follow the outputs, and JAX's own
    ``output_shardings`` then fails to fit them to the output tree. The
    outputs' shardings are the leading ones of the executable's list.
    """
    try:
        return jax.tree_util.tree_leaves(compiled.output_shardings)
    except Exception as err:
        flat = getattr(getattr(compiled, "_executable", None), "_out_shardings", None)
        wanted = traced.out_tree.num_leaves if hasattr(traced, "out_tree") else None
        if flat is None or wanted is None or len(flat) < wanted:
            raise ShardingError(
                f"{name} compiled, but JAX could not say its output shardings "
                f"({type(err).__name__}: {err}), and shardviz found no other record of them"
            ) from err
        return list(flat[:wanted])


def dynamic_leaves(leaves: Sequence[Any], traced: Any) -> list[bool]:
    """Which user leaves the program takes as arrays (a jitted ``f`` may hold some static).

    JAX drops static arguments from the traced signature but keeps the order,
    so the traced inputs are matched to the leaves in order by shape and dtype.
    """
    infos = jax.tree_util.tree_leaves(traced.args_info)
    if len(infos) == len(leaves):
        return [True] * len(leaves)
    out = [False] * len(leaves)
    k = 0
    for i, leaf in enumerate(leaves):
        if k == len(infos):
            break
        try:
            aval = jax.typeof(leaf)
        except Exception:
            continue
        if aval.shape == infos[k].shape and aval.dtype == infos[k].dtype:
            out[i] = True
            k += 1
    return out


def input_layouts(leaves: Sequence[Any], array_leaf: Sequence[bool], shardings: Sequence[Any]) -> tuple[Layout, ...]:
    out = []
    dynamic = [leaf for leaf, a in zip(leaves, array_leaf) if a]
    for leaf, sharding in zip(dynamic, shardings):
        if isinstance(leaf, jax.Array) or (isinstance(leaf, jax.ShapeDtypeStruct) and leaf.sharding is not None):
            out.append(_layout_of(leaf))
            continue
        # NumPy arrays, Python scalars, unplaced structs: where the program puts them.
        aval = jax.typeof(leaf)
        layout = _layout_of(jax.ShapeDtypeStruct(aval.shape, aval.dtype, sharding=sharding))
        out.append(replace(layout, type_str=str(aval)) if layout.type_str != str(aval) else layout)
    return tuple(out)


def output_layouts(traced: Any, shardings: Sequence[Any]) -> tuple[Layout, ...]:
    """Each output's layout as compiled, in ``traced.out_info``'s leaf order."""
    infos = jax.tree_util.tree_leaves(traced.out_info)
    return tuple(
        _layout_of(jax.ShapeDtypeStruct(info.shape, info.dtype, sharding=sharding))
        for info, sharding in zip(infos, shardings)
    )


def output_paths(traced: Any) -> tuple[str, ...]:
    """Each output's path in what the function returns: ``out[0]``, ``out['loss']``."""
    return tuple(
        "out" + jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(traced.out_info)[0]
    )


@functools.lru_cache(maxsize=1024)
def _cached_layout(kind: str, sharding: Any, shape: tuple[int, ...], dtype: Any, type_str: str) -> Layout:
    struct = jax.ShapeDtypeStruct(shape, dtype, sharding=sharding)
    layout = describe(struct)
    return replace(layout, has_array=True, type_str=type_str) if kind == "array" else layout


def _layout_of(leaf: Any) -> Layout:
    """One layout per distinct sharding, shape and dtype: a step's parameters and optimizer state share a few.

    An array's layout is its struct's, marked as having an array; a sharding that cannot be
    hashed is described on its own."""
    kind = "array" if isinstance(leaf, jax.Array) else "struct"
    try:
        return _cached_layout(kind, leaf.sharding, tuple(leaf.shape), leaf.dtype, str(jax.typeof(leaf)))
    except TypeError:  # an unhashable sharding
        return describe(leaf)


_KEY = re.compile(r"\[[^\]]*\]|\.[A-Za-z_]\w*")


def layout_changes(
    input_paths: Sequence[str], inputs: Sequence[Layout], output_paths: Sequence[str], outputs: Sequence[Layout]
) -> tuple[LayoutChange, ...]:
    """Outputs laid out unlike the input they stand for.

    An output stands for the one input of its shape and dtype whose path
    ends with the longest run of the same keys (``out[1]['w1']`` and
    ``params['w1']``); a tie or no common key pairs it with nothing.
    """
    keyed = [(_KEY.findall(p), layout) for p, layout in zip(input_paths, inputs)]
    out = []
    for path, layout in zip(output_paths, outputs):
        keys = _KEY.findall(path)
        best, matches = 0, []
        for (their_keys, theirs), their_path in zip(keyed, input_paths):
            if theirs.shape != layout.shape or theirs.dtype != layout.dtype:
                continue
            common = _common_suffix(keys, their_keys)
            if common > best:
                best, matches = common, [(their_path, theirs)]
            elif common == best and common:
                matches.append((their_path, theirs))
        if len(matches) != 1:
            continue
        their_path, theirs = matches[0]
        if theirs.mesh is None or layout.mesh is None:
            continue
        if theirs.spec != layout.spec or theirs.memory_kind != layout.memory_kind:
            out.append(LayoutChange(path, their_path, theirs.spec, layout.spec, theirs.memory_kind, layout.memory_kind))
    return tuple(out)


def _common_suffix(a: Sequence[str], b: Sequence[str]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n
