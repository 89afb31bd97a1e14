"""``shardviz.trace``: trace a program here, or on a what-if mesh in a child process; ``retrace``.

Without ``mesh=`` the program is compiled once in this process
(:mod:`.compiling`); with ``mesh=`` the what-if step (:mod:`.whatif`) compiles
it in a child Python with one simulated CPU device per mesh device. ``retrace``
traces a Program's function again with new input shardings, the way it was
first traced.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..array.checks import check_spec, spec_from_entries
from ..array.grammar import parse_spec
from ..errors import ShardingError
from .compiling.arguments import context_mesh
from .compiling.trace_here import trace_here
from .program import Program
from .whatif.parent import trace_in_child


def trace(
    fun: Callable[..., Any], *args: Any, mesh: Any = None, whatif_timeout: float = 600.0, **kwargs: Any
) -> Program:
    """``shardviz.trace``: trace, lower and compile ``fun(*args, **kwargs)`` once and read what it does.

    Without ``mesh=`` the program is compiled here, on this machine's devices
    (:func:`.compiling.trace_here`). ``mesh=`` (reserved: pass ``fun``'s own ``mesh``
    with functools.partial) takes a ``jax.sharding.AbstractMesh`` of up to
    8,192 devices: the program is compiled in a child process with that many
    simulated CPU devices (at most ``whatif_timeout`` seconds) and read back;
    its devices are virtual and ``program.whatif`` says how it was made
    (docs/planning.md).
    """
    if mesh is None:
        return trace_here(fun, *args, **kwargs)
    if not callable(fun):
        raise ShardingError(f"trace needs a function to trace, got a {type(fun).__name__}")
    again = functools.partial(trace, mesh=mesh, whatif_timeout=whatif_timeout)
    return trace_in_child(fun, args, kwargs, mesh, whatif_timeout, retrace_with=again)


def retrace(program: Program, specs: Sequence[Any], *, refs_as_shapes: bool = False) -> Program:
    """Trace ``program``'s function again with new input shardings.

    ``specs`` has one entry per array input (``program.inputs`` order): a
    ``PartitionSpec``, a spec text in the widget's grammar (``"x, None"``),
    a ``Sharding``, or None to keep the input as it was. Inputs become
    ``ShapeDtypeStruct``s on the program's mesh, so no data is copied. A
    ``Ref`` input laid out anew is refused (its data would be lost), unless
    ``refs_as_shapes``: then it becomes a ``ShapeDtypeStruct(..., is_ref=True)``,
    enough to compile (the fixes trace a change only to read its module).
    """
    origin = program.origin
    if origin is None:
        raise ShardingError("this program was not made by shardviz.trace; there is nothing to trace again")
    array_count = sum(origin.array_leaf)
    if len(specs) != array_count:
        raise ShardingError(f"retrace needs {array_count} specs (one per array input), got {len(specs)}")
    mesh = origin.mesh
    new_leaves = list(origin.leaves)
    k = 0
    for i, is_array in enumerate(origin.array_leaf):
        if not is_array:
            continue
        spec, k = specs[k], k + 1
        if spec is None:
            continue
        leaf = origin.leaves[i]
        if refs_as_shapes and isinstance(leaf, jax.Ref):
            aval = jax.typeof(leaf)
            leaf = jax.ShapeDtypeStruct(aval.shape, aval.dtype, sharding=leaf.sharding, is_ref=True)
        new_leaves[i] = _placed(leaf, spec, mesh, program.input_paths[k - 1])
    args, kwargs = jax.tree_util.tree_unflatten(origin.tree, new_leaves)
    if origin.retrace_with is not None:  # a what-if program: traced again in a child
        return origin.retrace_with(origin.fun, *args, **kwargs)
    context = origin.context_mesh
    if context is None or context_mesh() is context:
        return trace_here(origin.fun, *args, **kwargs)
    # A body that names bare P(...) (reshard, out_sharding) needs the mesh it was traced under set again:
    # a widget's edit arrives outside the user's `with jax.set_mesh(mesh):` block.
    with jax.set_mesh(context):
        return trace_here(origin.fun, *args, **kwargs)


def ref_refusal(path: str) -> str:
    """Why a ``Ref`` input cannot be laid out anew by tracing again."""
    return (
        f"{path} is a Ref (jax.ref.new_ref): laying it out anew needs a new Ref holding its data, and tracing "
        "again copies no data; lay the array out on the new spec before jax.ref.new_ref, then trace again"
    )


def _placed(leaf: Any, spec: Any, mesh: Mesh | None, path: str) -> jax.ShapeDtypeStruct:
    if isinstance(leaf, jax.Ref):  # a ShapeDtypeStruct in its place would not be written to
        raise ShardingError(ref_refusal(path))
    if isinstance(spec, jax.sharding.Sharding):
        sharding = spec
    else:
        if mesh is None:
            raise ShardingError(f"{path}: the program has no mesh to lay a spec out on")
        if isinstance(spec, str):
            entries = parse_spec(spec)
            spec = spec_from_entries(entries)
        if not isinstance(spec, PartitionSpec):
            raise ShardingError(f"{path}: expected a PartitionSpec, spec text or Sharding, got {type(spec).__name__}")
        try:
            check_spec(mesh, spec, tuple(jax.typeof(leaf).shape))
        except ShardingError as err:
            raise ShardingError(f"{path}: {err}") from None
        memory_kind = getattr(getattr(leaf, "sharding", None), "memory_kind", None)
        try:
            sharding = NamedSharding(mesh, spec, memory_kind=memory_kind)
        except Exception as err:  # JAX's own refusal, in its words
            raise ShardingError(f"{path}: JAX refuses {spec} on this mesh: {err}") from None
    if isinstance(leaf, jax.ShapeDtypeStruct):  # keeps is_ref: a what-if trace's Ref state has no data to copy
        return leaf.update(sharding=sharding)
    aval = jax.typeof(leaf)  # arrays and Python scalars alike
    return jax.ShapeDtypeStruct(aval.shape, aval.dtype, sharding=sharding, weak_type=aval.weak_type)
