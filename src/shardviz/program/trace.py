"""``trace(f, *args, **kwargs)``: one compile of ``f``, read back as a Program.

The steps: check the arguments (a tracer, a deleted array), trace with
``jax.jit`` (or ``f``'s own jit), lower, and compile once. Under Auto axes
the compile also dumps XLA's module just before SPMD partitioning into a
temporary folder, removed at once; that is where the partitioner's
shardings are read (:mod:`shardviz.program.xla_shardings`). Nothing runs on
a device and nothing the user passed is changed: tracing, lowering and
compiling never donate or move a buffer.
"""

from __future__ import annotations

import functools
import glob
import inspect
import math
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

from ..array.checks import check_spec, spec_from_entries
from ..array.describe import describe
from ..array.devices import mesh_columns
from ..array.grammar import parse_spec
from ..array.layout import Layout
from ..array.model import DeviceColumns, MeshInfo
from ..errors import ShardingError
from . import axes as _axes
from . import collective_places as places
from . import hlo
from .device_bytes import count_on_device
from .frames import user_frame
from .jaxpr_walk import RESHARDING_KINDS, Redirects, constraint_redirects, user_frames, walk
from .memory import MemoryTimeline, memory_timeline
from .model import (
    AxisPiece,
    Collective,
    CollectivePart,
    LayoutChange,
    LineFlops,
    MemoryStats,
    SourceListing,
    SourceLocation,
    TraceOrigin,
)
from .program import Program
from .scopes import scope_of_op_name
from .totals import program_totals
from .values import ValueReader
from .whatif.parent import trace_in_child
from .wire import wire_bytes

# Dump only the module around the partitioner; the folder is private and removed after the compile.
_DUMP_OPTIONS = {"xla_dump_hlo_pass_re": "spmd-partitioning"}
_BEFORE_PARTITIONING = "*before_spmd-partitioning.txt"


def trace(
    fun: Callable[..., Any], *args: Any, mesh: Any = None, whatif_timeout: float = 600.0, **kwargs: Any
) -> Program:
    """``shardviz.trace``: trace, lower and compile ``fun(*args, **kwargs)`` once and read what it does.

    Without ``mesh=`` the program is compiled here, on this machine's devices
    (:func:`trace_here`). ``mesh=`` (reserved: pass ``fun``'s own ``mesh``
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


def trace_here(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Program:
    """Trace, lower and compile ``fun(*args, **kwargs)`` once in this process and read what it does.

    ``fun`` is any callable or a ``jax.jit``-wrapped one (its own static
    arguments, shardings and donations are kept; nothing is run, so nothing
    is donated). ``args`` are arrays, ``ShapeDtypeStruct``s (with shardings),
    Python scalars or NumPy arrays, in any pytree. Raises
    :class:`ShardingError` naming the argument or the failing step, with
    JAX's own message attached.
    """
    if not callable(fun):
        raise ShardingError(f"trace needs a function to trace, got a {type(fun).__name__}")
    path_leaves, tree = jax.tree_util.tree_flatten_with_path((args, kwargs))
    paths = _argument_paths(fun, [p for p, _ in path_leaves])
    leaves = [leaf for _, leaf in path_leaves]
    _check_leaves(leaves, paths)
    jitted: Any = fun if _is_jitted(fun) else jax.jit(fun)
    name = _function_name(fun)
    try:
        traced = jitted.trace(*args, **kwargs)
    except Exception as err:
        raise _tracing_error(name, err, leaves, paths) from err
    guessed_mesh = _guess_mesh(leaves, traced.jaxpr)
    read_partitioner = guessed_mesh is not None and any(t != AxisType.Explicit for t in guessed_mesh.axis_types)
    try:
        lowered = traced.lower()
    except Exception as err:
        raise ShardingError(f"{name} traced but did not lower: {type(err).__name__}: {err}") from err
    _check_compilable_meshes(lowered, name)
    try:
        compiled, dumps = _compile(lowered, read_partitioner)
    except Exception as err:
        raise ShardingError(
            f"{name} traced but did not compile for arguments {_argument_summary(leaves, paths)}: "
            f"{type(err).__name__}: {err}"
        ) from err
    kept = _kept_inputs(lowered)
    try:
        return _assemble(fun, name, tree, leaves, paths, traced, compiled, dumps, kept)
    except ShardingError:
        raise
    except Exception as err:  # shardviz's own failure, never the user's program's
        raise ShardingError(
            f"{name} compiled, but shardviz failed to read the compiled program (a bug in shardviz, not in "
            f"{name}; please report it): {type(err).__name__}: {err}"
        ) from err


def _kept_inputs(lowered: Any) -> list[int] | None:
    """The array inputs the compiled module takes as parameters, in order (JAX drops unused ones)."""
    kept = getattr(getattr(lowered, "_lowering", None), "compile_args", {}).get("kept_var_idx")
    return None if kept is None else sorted(int(k) for k in kept)


def _check_compilable_meshes(lowered: Any, name: str) -> None:
    """Refuse a module whose mesh axis names XLA's compiler aborts on.

    In jax 0.10.2 XLA aborts the whole process (a failed CHECK in its string
    unescaping) on a mesh axis name with a non-ASCII character or a
    backslash, which the module text carries escaped. A kernel must not die
    of an axis name, so such a program is refused before it is compiled.
    """
    try:
        text = lowered.as_text()
    except Exception:  # no text to read: the compile itself says what is wrong, if anything
        return
    names = hlo.declared_mesh_axis_names(text)
    odd = [n for n in dict.fromkeys(names) if b"\\" in n or any(c >= 0x80 for c in n)]
    if odd:
        shown = ", ".join(repr(n.decode("utf-8", "backslashreplace")) for n in odd)
        raise ShardingError(
            f"{name} uses the mesh axis name{'s' if len(odd) > 1 else ''} {shown}, which XLA's compiler cannot "
            "take: it aborts the process on a non-ASCII character or a backslash in an axis name (seen with "
            "jax 0.10.2); rename those axes to plain ASCII to trace it"
        )


def retrace(program: Program, specs: Sequence[Any]) -> Program:
    """Trace ``program``'s function again with new input shardings.

    ``specs`` has one entry per array input (``program.inputs`` order): a
    ``PartitionSpec``, a spec text in the widget's grammar (``"x, None"``),
    a ``Sharding``, or None to keep the input as it was. Inputs become
    ``ShapeDtypeStruct``s on the program's mesh, so no data is copied.
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
        new_leaves[i] = _placed(origin.leaves[i], spec, mesh, program.input_paths[k - 1])
    args, kwargs = jax.tree_util.tree_unflatten(origin.tree, new_leaves)
    if origin.retrace_with is not None:  # a what-if program: traced again in a child
        return origin.retrace_with(origin.fun, *args, **kwargs)
    context = origin.context_mesh
    if context is None or _context_mesh() is context:
        return trace_here(origin.fun, *args, **kwargs)
    # A body that names bare P(...) (reshard, out_sharding) needs the mesh it was traced under set again:
    # a widget's edit arrives outside the user's `with jax.set_mesh(mesh):` block.
    with jax.set_mesh(context):
        return trace_here(origin.fun, *args, **kwargs)


def _context_mesh() -> Any:
    """The concrete mesh ``jax.set_mesh`` has set here, or None."""
    try:
        mesh = jax.sharding.get_mesh()
    except Exception:
        return None
    return mesh if isinstance(mesh, Mesh) and not mesh.empty else None


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


# --------------------------------------------------------------------------
# arguments


def _argument_paths(fun: Callable[..., Any], key_paths: Sequence[tuple[Any, ...]]) -> list[str]:
    """``params['w']``, ``x``, ``args[2]``: positional arguments by parameter name where known."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [
        p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    out = []
    for path in key_paths:
        head, rest = path[0], path[1:]
        if getattr(head, "idx", 0) == 0:  # args
            i = rest[0].idx
            base = positional[i] if i < len(positional) else f"args[{i}]"
            out.append(base + jax.tree_util.keystr(rest[1:]))
        else:  # kwargs
            out.append(str(rest[0].key) + jax.tree_util.keystr(rest[1:]))
    return out


def _check_leaves(leaves: Sequence[Any], paths: Sequence[str]) -> None:
    """Refuse what JAX would trace happily but cannot be compiled for: tracers and deleted arrays."""
    for leaf, path in zip(leaves, paths):
        if isinstance(leaf, jax.core.Tracer):
            try:
                leaf.sharding  # noqa: B018 - JAX's own words about tracers
                jax_says = ""
            except Exception as err:
                jax_says = f" JAX says: {err}"
            raise ShardingError(
                f"argument {path} is a tracer ({jax.typeof(leaf)}): shardviz.trace compiles a program, "
                "so call it outside jit/grad/vmap on concrete arrays or ShapeDtypeStructs." + jax_says
            )
        if isinstance(leaf, jax.Array) and leaf.is_deleted():
            try:
                leaf.block_until_ready()
                jax_says = "the array is deleted"
            except Exception as err:
                jax_says = str(err)
            raise ShardingError(
                f"argument {path} has been deleted (by .delete() or by donation to a jitted function); "
                f"there is nothing to trace with. JAX says: {jax_says}"
            )


def _tracing_error(name: str, err: Exception, leaves: Sequence[Any], paths: Sequence[str]) -> ShardingError:
    for leaf, path in zip(leaves, paths):
        try:
            jax.typeof(leaf)
        except Exception as bad:
            return ShardingError(
                f"argument {path} is a {type(leaf).__name__}, which is not an array JAX can trace ({bad}); "
                f"pass arrays, ShapeDtypeStructs or Python scalars, or jit {name} with this argument static "
                f"(static_argnums/static_argnames) and pass the jitted function. JAX says: {err}"
            )
    return ShardingError(
        f"{name} raised while tracing with arguments {_argument_summary(leaves, paths)}: {type(err).__name__}: {err}"
    )


def _argument_summary(leaves: Sequence[Any], paths: Sequence[str]) -> str:
    parts = []
    for leaf, path in zip(leaves, paths):
        try:
            parts.append(f"{path}: {jax.typeof(leaf)}")
        except Exception:
            parts.append(f"{path}: {type(leaf).__name__}")
    return "(" + ", ".join(parts) + ")"


def _is_jitted(fun: Any) -> bool:
    return callable(getattr(fun, "trace", None)) and callable(getattr(fun, "lower", None))


def _unwrapped(fun: Any) -> Any:
    while True:
        if isinstance(fun, functools.partial):
            fun = fun.func
        elif hasattr(fun, "__wrapped__"):
            fun = fun.__wrapped__
        else:
            return fun


def _function_name(fun: Any) -> str:
    inner = _unwrapped(fun)
    return str(getattr(inner, "__qualname__", None) or getattr(inner, "__name__", None) or type(inner).__name__)


# --------------------------------------------------------------------------
# compiling


def _guess_mesh(leaves: Sequence[Any], closed_jaxpr: Any) -> Any:
    """The mesh the program runs on, before compiling: the arguments', the context's, or a shard_map's."""
    for leaf in leaves:
        sharding = getattr(leaf, "sharding", None)
        if isinstance(sharding, NamedSharding):
            return sharding.mesh
    for getter in (jax.sharding.get_mesh, jax.sharding.get_abstract_mesh):
        try:
            mesh: Any = getter()
        except Exception:
            continue
        if mesh is not None and not getattr(mesh, "empty", False) and mesh.axis_names:
            return mesh
    for eqn in _all_eqns(closed_jaxpr.jaxpr):
        for value in eqn.params.values():
            mesh = getattr(value, "mesh", None) if isinstance(value, NamedSharding) else value
            if isinstance(mesh, (Mesh, jax.sharding.AbstractMesh)) and mesh.axis_names:
                return mesh
    return None


def _all_eqns(jaxpr: Any) -> Any:
    for eqn in jaxpr.eqns:
        yield eqn
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            yield from _all_eqns(sub)


def _dump_parent() -> str | None:
    """A memory-backed folder for XLA's dump when there is one: XLA writes dozens
    of files per compile, and on a disk-backed /tmp that costs a tenth of the compile."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def _compile(lowered: Any, read_partitioner: bool) -> tuple[Any, dict[str, str]]:
    """Compile once, with XLA dumping into a private folder what shardviz reads: its buffer assignment
    and live ranges (memory over the program) and, under Auto axes, the module just before SPMD
    partitioning (the partitioner's shardings). A backend that refuses dumps compiles plainly."""
    options = {"xla_dump_hlo_pass_re": _DUMP_OPTIONS["xla_dump_hlo_pass_re"] if read_partitioner else "^$"}
    try:
        private = tempfile.TemporaryDirectory(prefix="shardviz-", dir=_dump_parent())
    except OSError:  # no folder to write in: the program is read without XLA's dumps
        return lowered.compile(), {}
    with private as folder:
        try:
            compiled = lowered.compile(compiler_options={"xla_dump_to": folder, **options})
        except Exception as err:
            if "xla_dump" not in str(err):
                raise
            return lowered.compile(), {}
        texts = {}
        patterns = {
            "before_partitioning": _BEFORE_PARTITIONING,
            "buffer_assignment": "*after_optimizations-buffer-assignment.txt",
            "live_range": "*after_optimizations-live-range.txt",
        }
        for key, pattern in patterns.items():
            if key == "before_partitioning" and not read_partitioner:
                continue
            found = sorted(glob.glob(os.path.join(folder, pattern)))
            if found:
                with open(found[0], encoding="utf-8", errors="replace") as f:
                    texts[key] = f.read()
    return compiled, texts


# --------------------------------------------------------------------------
# reading the compiled program


def _assemble(
    fun: Callable[..., Any],
    name: str,
    tree: Any,
    leaves: Sequence[Any],
    paths: Sequence[str],
    traced: Any,
    compiled: Any,
    dumps: dict[str, str],
    kept: list[int] | None = None,
) -> Program:
    module = hlo.parse_module(_compiled_text(compiled, name))
    array_leaf = _dynamic_leaves(leaves, traced)
    in_shardings = _input_shardings(compiled, [leaf for leaf, a in zip(leaves, array_leaf) if a], name)
    out_shardings = _output_shardings(compiled, traced, name)
    mesh = _program_mesh([*in_shardings, *out_shardings], leaves)
    assignment = _device_assignment([*in_shardings, *out_shardings])
    mesh_info, devices, to_mesh = _mesh_placement(mesh, assignment, module.num_partitions)
    mode = _sharding_mode(mesh_info)

    inputs = _input_layouts(leaves, array_leaf, in_shardings)
    input_paths = tuple(p for p, a in zip(paths, array_leaf) if a)
    outputs, output_paths = _output_layouts(traced, out_shardings)
    source = _source_listing(fun, name)
    reader = ValueReader(
        mode=mode,
        mesh=mesh,
        assignment=assignment,
        to_mesh=to_mesh,
        single_device=module.num_partitions == 1,
        inputs=inputs,
        outputs=outputs,
        jaxpr=traced.jaxpr.jaxpr,
        before_partitioning=dumps.get("before_partitioning"),
        source=source,
        input_paths=input_paths,
        output_paths=output_paths,
    )
    values = reader.values(walk(traced.jaxpr))
    redirects = constraint_redirects(traced.jaxpr.jaxpr)
    ops = hlo.collective_ops(module)
    arrays = _ArrayLines(module, values, input_paths, output_paths, kept, traced.jaxpr.jaxpr)
    collectives = tuple(_collective(op, module, mesh_info, to_mesh, source, redirects, arrays) for op in ops)
    collectives = places.number_passes(collectives, ops, module, lambda inst: _stack(module, inst), reader.place_passes)
    collectives = count_on_device(collectives, values)
    line_flops = _line_flops(module)
    memory = _memory(compiled)
    timeline = _timeline(dumps, module, input_paths, output_paths, kept, values, memory)
    return Program(
        name=name,
        mesh=mesh_info,
        devices=devices,
        assignment=to_mesh,
        num_partitions=module.num_partitions,
        sharding_mode=mode,
        inputs=inputs,
        input_paths=input_paths,
        outputs=outputs,
        output_paths=output_paths,
        values=values,
        collectives=collectives,
        memory=memory,
        flops=_cost(compiled, "flops"),
        bytes_accessed=_cost(compiled, "bytes accessed"),
        source=source,
        process_index=jax.process_index(),
        process_count=jax.process_count(),
        machine_devices=jax.device_count(),
        hlo_module=module.name,
        totals=program_totals(collectives, mesh_info.axis_names if mesh_info else ()),
        origin=TraceOrigin(
            fun, tree, tuple(_abstract(leaf) for leaf in leaves), tuple(array_leaf), mesh, _context_mesh()
        ),
        layout_changes=layout_changes(input_paths, inputs, output_paths, outputs),
        matmul_flops=sum(f.flops for f in line_flops),
        line_flops=line_flops,
        memory_timeline=timeline,
        hbm_bytes=hlo.hbm_bytes(module).bytes,
    )


def _timeline(
    dumps: dict[str, str],
    module: hlo.Module,
    input_paths: Sequence[str],
    output_paths: Sequence[str],
    kept: list[int] | None,
    values: Sequence[Any],
    memory: MemoryStats | None,
) -> MemoryTimeline | None:
    """Memory over the program from XLA's dumps; None where the backend wrote none (or another form)."""
    if "buffer_assignment" not in dumps or "live_range" not in dumps:
        return None
    try:
        allocations = hlo.parse_buffer_assignment(dumps["buffer_assignment"])
        live = hlo.parse_live_ranges(dumps["live_range"])
    except hlo.HloParseError:
        return None
    made = {v.label: v.stack for v in values if v.role == "output"}
    return memory_timeline(
        allocations,
        live,
        module,
        lambda inst: _stack(module, inst),
        input_paths,
        output_paths,
        kept,
        made,
        xla_peak_bytes=None if memory is None else memory.peak_bytes,
    )


def _mesh_placement(
    mesh: Any, assignment: Sequence[Any] | None, num_partitions: int
) -> tuple[MeshInfo | None, DeviceColumns | None, np.ndarray | None]:
    """The program's mesh as shardviz records it, its devices in mesh order, and each partition
    position's place in the mesh (None where neither the shardings nor the module say)."""
    if mesh is None:
        return None, None, None
    info = MeshInfo(
        tuple(str(n) for n in mesh.axis_names),
        tuple(int(s) for s in mesh.axis_sizes),
        tuple(t.name for t in mesh.axis_types),
        False,
    )
    devices = mesh_columns(mesh)
    to_mesh = None
    if assignment is not None:
        to_mesh = _axes.positions_to_mesh([d.id for d in assignment], devices.ids.tolist())
    elif num_partitions == mesh.size:
        to_mesh = np.arange(mesh.size, dtype=np.int64)
    return info, devices, to_mesh


def _compiled_text(compiled: Any, name: str) -> str:
    """The compiled module's text, where every collective is read; a ShardingError when JAX has none.

    ``Compiled.as_text()`` may raise or return None where a backend cannot
    print its executable; a program without its module would show no
    collectives, which would be a lie, so it is refused.
    """
    try:
        text = compiled.as_text()
    except Exception as err:
        raise ShardingError(
            f"{name} compiled, but JAX could not print the compiled module shardviz reads its collectives from: "
            f"{type(err).__name__}: {err}"
        ) from err
    if not text:
        raise ShardingError(
            f"{name} compiled, but JAX has no text of the compiled module on this backend "
            "(Compiled.as_text() returned nothing), and the collectives are read from it"
        )
    return str(text)


def _input_shardings(compiled: Any, dynamic: Sequence[Any], name: str) -> list[Any]:
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


def _output_shardings(compiled: Any, traced: Any, name: str) -> list[Any]:
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


def _program_mesh(shardings: Sequence[Any], leaves: Sequence[Any]) -> Mesh | None:
    for s in [*shardings, *(getattr(leaf, "sharding", None) for leaf in leaves)]:
        if isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh):
            return s.mesh
    try:  # a shard_map over the context mesh, with no sharded argument
        mesh = jax.sharding.get_mesh()
    except Exception:
        return None
    return mesh if isinstance(mesh, Mesh) and not mesh.empty else None


def _device_assignment(shardings: Sequence[Any]) -> tuple[Any, ...] | None:
    """The program's devices in partition order (every sharding of one program shares it)."""
    for s in shardings:
        if isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh):
            return tuple(s.mesh.devices.flat)
        devices = getattr(s, "_device_assignment", None)
        if devices is not None:
            return tuple(devices)
    return None


def _sharding_mode(mesh: MeshInfo | None) -> str:
    if mesh is None:
        return "none"
    kinds = set(mesh.axis_types)
    if kinds <= {"Explicit"}:
        return "explicit"
    return "auto" if "Explicit" not in kinds else "mixed"


def _dynamic_leaves(leaves: Sequence[Any], traced: Any) -> list[bool]:
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


def _input_layouts(leaves: Sequence[Any], array_leaf: Sequence[bool], shardings: Sequence[Any]) -> tuple[Layout, ...]:
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


def _output_layouts(traced: Any, shardings: Sequence[Any]) -> tuple[tuple[Layout, ...], tuple[str, ...]]:
    infos = jax.tree_util.tree_flatten_with_path(traced.out_info)[0]
    layouts = []
    paths = []
    for (path, info), sharding in zip(infos, shardings):
        layouts.append(_layout_of(jax.ShapeDtypeStruct(info.shape, info.dtype, sharding=sharding)))
        paths.append("out" + jax.tree_util.keystr(path))
    return tuple(layouts), tuple(paths)


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


def _abstract(leaf: Any) -> Any:
    """A leaf as retrace keeps it: arrays as ShapeDtypeStructs (no buffer kept alive)."""
    if isinstance(leaf, jax.Array):
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=leaf.sharding, weak_type=leaf.weak_type)
    if isinstance(leaf, np.ndarray):
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype)
    return leaf


# --------------------------------------------------------------------------
# collectives, memory, cost, source


def _collective(
    op: hlo.CollectiveOp,
    module: hlo.Module,
    mesh: MeshInfo | None,
    to_mesh: np.ndarray | None,
    source: SourceListing | None,
    redirects: Redirects,
    arrays: _ArrayLines | None = None,
) -> Collective:
    axes: tuple[str, ...] | None = None
    pieces: tuple[AxisPiece, ...] | None = None
    if mesh is not None and to_mesh is not None:
        if op.kind == "collective-permute":
            axes = _axes.pair_axes(op.pairs, mesh.axis_names, mesh.axis_sizes, to_mesh)
        else:
            axes = _axes.group_axes(op.groups, mesh.axis_names, mesh.axis_sizes, to_mesh)
            if axes is None:
                found = _axes.group_pieces(op.groups, mesh.axis_names, mesh.axis_sizes, to_mesh)
                pieces = None if found is None else tuple(AxisPiece(*p) for p in found)
    group_size = _group_size(op)
    result_bytes = op.result.byte_size
    meta = op.inst.metadata
    stack = _stack(module, op.inst)
    if not stack and meta.source_file and meta.source_line is not None:
        stack = (SourceLocation(meta.source_file, meta.source_line),)
    mine = user_frame(stack)
    charged_to, charged_role = "", ""
    if mine is None and arrays is not None:  # XLA's own: laying out an output, or taking in an input
        charge = arrays.charge(op)
        if charge is not None:
            charged_role, charged_to, array_stack = charge
            stack = array_stack + stack
            mine = user_frame(stack)
    note = ""
    moved = redirects.get((mine.file, mine.line)) if mine is not None else None
    if mine is not None and moved is not None and op.kind in RESHARDING_KINDS:
        note = (
            f"XLA's metadata names line {mine.line} ({_primitive_of(meta.op_name)}), whose result the "
            f"with_sharding_constraint on line {moved[0].line} re-lays out: shown on the constraint's line"
        )
        stack = moved + stack
        mine = moved[0]
    parts = _parts(op, module, group_size, source, stack)
    return Collective(
        kind=op.kind,
        name=op.inst.name,
        axes=axes,
        group_size=group_size,
        groups=op.groups,
        groups_form=op.groups_form,
        pairs=op.pairs,
        result_bytes=result_bytes,
        operand_count=op.operand_count,
        count=op.count,
        count_exact=op.count_exact,
        wire_bytes=sum(p.wire_bytes for p in parts)
        if parts
        else wire_bytes(op.kind, result_bytes, group_size, op.pairs),
        source=mine,
        stack=stack,
        listing_line=source.line_of(stack) if source else None,
        op_name=meta.op_name or "",
        hlo=op.inst.text,
        channel_id=op.channel_id,
        pieces=pieces,
        parts=parts,
        note=note,
        scope=scope_of_op_name(meta.op_name or ""),
        charged_to=charged_to,
        charged_role=charged_role,
    )


class _ArrayLines:
    """The outputs and inputs a collective with no line of the user's may belong to, and their lines:
    an output's is where its value is made, an input's where it is first read."""

    def __init__(
        self,
        module: hlo.Module,
        values: Sequence[Any],
        input_paths: Sequence[str],
        output_paths: Sequence[str],
        kept: list[int] | None,
        jaxpr: Any,
    ) -> None:
        self.module = module
        self.input_paths = input_paths
        self.output_paths = output_paths
        self.kept = kept if kept is not None else list(range(len(input_paths)))
        self.made = {v.label: v.stack for v in values if v.role == "output"}
        self.jaxpr = jaxpr
        self._users: dict[str, list[Any]] | None = None

    def charge(self, op: hlo.CollectiveOp) -> tuple[str, str, tuple[SourceLocation, ...]] | None:
        if self._users is None:
            self._users = places.entry_users(self.module)
        found = places.layout_charge(self.module, op, self._users)
        if found is None:
            return None
        role, k = found
        if role == "output":
            if k >= len(self.output_paths):
                return None
            path = self.output_paths[k]
            return role, path, tuple(self.made.get(path, ()))
        if k >= len(self.kept) or self.kept[k] >= len(self.input_paths):
            return None
        index = self.kept[k]
        return role, self.input_paths[index], _first_reader(self.jaxpr, index)


def _first_reader(jaxpr: Any, index: int) -> tuple[SourceLocation, ...]:
    """The user's frames of the first equation that reads input ``index`` (none when nothing does)."""
    if index >= len(jaxpr.invars):
        return ()
    var = jaxpr.invars[index]
    for eqn in jaxpr.eqns:
        if any(v is var for v in eqn.invars):
            return user_frames(eqn.source_info)
    return ()


def _group_size(op: hlo.CollectiveOp) -> int:
    """Devices in one group (a collective-permute's: those its pairs connect; one where every device keeps its own)."""
    if op.kind == "collective-permute" and all(s == t for s, t in op.pairs):
        return 1
    return max((len(g) for g in op.groups), default=1)


def _stack(module: hlo.Module, inst: hlo.Instruction) -> tuple[SourceLocation, ...]:
    frames = module.frames(inst.metadata.stack_frame_id)
    return tuple(SourceLocation(f.file, f.line, f.column, f.function) for f in frames)


def _line_flops(module: hlo.Module) -> tuple[LineFlops, ...]:
    """Each dot's flops on the user's line that causes it (as collectives take theirs), largest first."""
    by_line: dict[tuple[str, int] | None, LineFlops] = {}
    for dot in hlo.dot_flops(module)[0]:
        stack = _stack(module, dot.inst)
        meta = dot.inst.metadata
        if not stack and meta.source_file and meta.source_line is not None:
            stack = (SourceLocation(meta.source_file, meta.source_line),)
        mine = user_frame(stack)
        key = None if mine is None else (mine.file, mine.line)
        before = by_line.get(key)
        by_line[key] = LineFlops(mine if before is None else before.source, dot.flops + (before.flops if before else 0))
    return tuple(sorted(by_line.values(), key=lambda f: -f.flops))


def _primitive_of(op_name: str | None) -> str:
    """``jit(f)/transpose(jvp())/dot_general`` -> ``dot_general``."""
    return (op_name or "").rsplit("/", 1)[-1]


def _parts(
    op: hlo.CollectiveOp,
    module: hlo.Module,
    group_size: int,
    source: SourceListing | None,
    own_stack: tuple[SourceLocation, ...],
) -> tuple[CollectivePart, ...]:
    """Each operand of a combined collective with its bytes and the line that made it.

    The operand's producer (followed through tuples, copies and bitcasts to
    the first instruction with a stack) names the line; an operand with no
    such producer keeps the collective's own stack. An all-to-all's operands
    are pieces of one array, not merged collectives, so it is never split.
    """
    leaves = op.result.tuple_shapes if op.result.is_tuple else ()
    if op.operand_count < 2 or op.kind == "all-to-all" or len(leaves) != op.operand_count:
        return ()
    computation = module.by_name.get(op.computation)
    operands = op.inst.operands
    out = []
    for index, (operand, shape) in enumerate(zip(operands, leaves)):
        stack: tuple[SourceLocation, ...] = ()
        op_name = ""
        if operands.count(operand) > 1:  # one value merged twice: only the reader of each result can tell them apart
            stack, op_name = _tuple_reader_origin(module, computation, op.inst.name, index)
        if not stack:
            stack, op_name = _producer_origin(module, computation, operand)
        if not stack:
            stack, op_name = own_stack, op.inst.metadata.op_name or ""
        mine = user_frame(stack)
        size = shape.byte_size
        out.append(
            CollectivePart(
                operand=operand,
                result_bytes=size,
                wire_bytes=wire_bytes(op.kind, size, group_size, op.pairs),
                source=mine,
                stack=stack,
                listing_line=source.line_of(stack) if source else None,
                op_name=op_name,
                scope=scope_of_op_name(op_name),
            )
        )
    return tuple(out)


def _tuple_reader_origin(
    module: hlo.Module, computation: hlo.Computation | None, tuple_name: str, index: int
) -> tuple[tuple[SourceLocation, ...], str]:
    """The stack and op_name of the ``get-tuple-element`` that reads result ``index`` of a combined collective.

    XLA's combiner gives each of those readers the metadata of the collective
    it replaced, so when one producer feeds several operands (common
    subexpressions merged: ``x.sum()`` and ``x.mean()``), the reader still
    names each original's line.
    """
    if computation is None:
        return (), ""
    for inst in computation.instructions:
        if inst.opcode == "get-tuple-element" and inst.operands == (tuple_name,) and inst.attr("index") == str(index):
            stack = _stack(module, inst)
            if stack:
                return stack, inst.metadata.op_name or ""
    return (), ""


def _producer_origin(
    module: hlo.Module, computation: hlo.Computation | None, name: str, limit: int = 32
) -> tuple[tuple[SourceLocation, ...], str]:
    """The stack and op_name of the first instruction with a stack on the way back from ``name``
    (through tuples, copies, bitcasts): the instruction that made the operand."""
    if computation is None:
        return (), ""
    pending: list[str] = [name]
    seen: set[str] = set()
    while pending and len(seen) < limit:
        current = pending.pop(0)
        if current in seen or current not in computation.by_name:
            continue
        seen.add(current)
        inst = computation.by_name[current]
        stack = _stack(module, inst)
        if stack:
            return stack, inst.metadata.op_name or ""
        pending.extend(inst.operands)
    return (), ""


def _memory(compiled: Any) -> MemoryStats | None:
    try:
        stats = compiled.memory_analysis()
    except Exception:  # best-effort in JAX: some backends raise
        return None
    if stats is None:
        return None

    def get(name: str) -> int:
        return int(getattr(stats, name, 0) or 0)

    peak = getattr(stats, "peak_memory_in_bytes", None)
    return MemoryStats(
        argument_bytes=get("argument_size_in_bytes"),
        output_bytes=get("output_size_in_bytes"),
        temp_bytes=get("temp_size_in_bytes"),
        alias_bytes=get("alias_size_in_bytes"),
        generated_code_bytes=get("generated_code_size_in_bytes"),
        peak_bytes=int(peak) if peak is not None else None,
        host_argument_bytes=get("host_argument_size_in_bytes"),
        host_output_bytes=get("host_output_size_in_bytes"),
        host_temp_bytes=get("host_temp_size_in_bytes"),
        host_alias_bytes=get("host_alias_size_in_bytes"),
    )


def _cost(compiled: Any, key: str) -> float | None:
    try:
        cost = compiled.cost_analysis()
    except Exception:  # best-effort in JAX
        return None
    if isinstance(cost, (list, tuple)):  # older JAX: one dict per device program
        cost = cost[0] if cost else None
    if not isinstance(cost, dict) or key not in cost:
        return None
    try:
        value = float(cost[key])
    except (TypeError, ValueError):  # a backend's odd entry is no figure
        return None
    return value if math.isfinite(value) else None


def _source_listing(fun: Any, name: str) -> SourceListing | None:
    inner = _unwrapped(fun)
    code = getattr(inner, "__code__", None)
    try:
        lines, first = inspect.getsourcelines(inner)
    except (OSError, TypeError):  # a builtin, the REPL, exec'd text
        return None
    file = code.co_filename if code is not None else inspect.getsourcefile(inner)
    if not file:
        return None
    return SourceListing(name=name, file=file, first_line=max(1, first), lines=tuple(s.rstrip("\n") for s in lines))
