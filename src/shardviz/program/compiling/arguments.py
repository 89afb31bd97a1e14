"""The traced function and its arguments as the user knows them: names, paths and refusals.

Arguments are named by the function's parameters (``params['w']``, ``x``,
``args[2]``); tracers and deleted arrays are refused before anything is
traced, and a failed trace names the argument JAX could not take.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax.sharding import Mesh

from ...errors import ShardingError


def context_mesh() -> Any:
    """The concrete mesh ``jax.set_mesh`` has set here, or None."""
    try:
        mesh = jax.sharding.get_mesh()
    except Exception:
        return None
    return mesh if isinstance(mesh, Mesh) and not mesh.empty else None


def argument_paths(fun: Callable[..., Any], key_paths: Sequence[tuple[Any, ...]]) -> list[str]:
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


def check_leaves(leaves: Sequence[Any], paths: Sequence[str]) -> None:
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


def tracing_error(name: str, err: Exception, leaves: Sequence[Any], paths: Sequence[str]) -> ShardingError:
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
        f"{name} raised while tracing with arguments {argument_summary(leaves, paths)}: {type(err).__name__}: {err}"
    )


def argument_summary(leaves: Sequence[Any], paths: Sequence[str]) -> str:
    parts = []
    for leaf, path in zip(leaves, paths):
        try:
            parts.append(f"{path}: {jax.typeof(leaf)}")
        except Exception:
            parts.append(f"{path}: {type(leaf).__name__}")
    return "(" + ", ".join(parts) + ")"


def is_jitted(fun: Any) -> bool:
    return callable(getattr(fun, "trace", None)) and callable(getattr(fun, "lower", None))


def unwrapped(fun: Any) -> Any:
    while True:
        if isinstance(fun, functools.partial):
            fun = fun.func
        elif hasattr(fun, "__wrapped__"):
            fun = fun.__wrapped__
        else:
            return fun


def function_name(fun: Any) -> str:
    inner = unwrapped(fun)
    return str(getattr(inner, "__qualname__", None) or getattr(inner, "__name__", None) or type(inner).__name__)
