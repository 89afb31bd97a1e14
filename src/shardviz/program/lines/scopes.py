"""Name scopes as users wrote them, read from JAX's name stacks and XLA's ``op_name``.

``jax.named_scope("layers_2")``, a Flax module path (``MLP/Dense_1``) and
``jax.named_call`` all land in the name stack JAX keeps per equation, and XLA
copies it into each instruction's ``op_name``:
``jit(step)/transpose(jvp(layers_2))/attn/dot_general``. What the user wrote is
the scopes; the rest is JAX's: the traced function's ``jit(...)``, transforms
wrapped around a scope (``jvp``, ``transpose``, ``vmap``), the loop and call
machinery (``while/body``, ``closed_call``, ``checkpoint``), and the primitive
at the end. :func:`scope_of_op_name` keeps the scopes: ``layers_2/attn``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

# Transforms JAX wraps around the scopes they apply to: ``transpose(jvp(layers_0))`` is scope layers_0.
_TRANSFORM = re.compile(r"^(jvp|transpose|vmap|vjp|linearize|pmap|xmap|batch|jacfwd|jacrev|grad)\((.*)\)$", re.S)
# JAX's own components of a name stack: control flow, calls and rematerialisation, never a user's scope.
_MACHINERY = frozenset(
    {
        "while",
        "body",
        "cond",
        "closed_call",
        "core_call",
        "checkpoint",
        "remat",
        "remat2",
        "rematted_computation",
        "pjit",
        "custom_jvp_call",
        "custom_vjp_call",
        "custom_vjp_call_jaxpr",
        "shard_map",
        "scan",
    }
)
_BRANCH = re.compile(r"^branch_\d+(_fun)?$")
_CALL = re.compile(r"^(jit|pjit|xla_call|named_call)\((.*)\)$", re.S)


def split_top_level(text: str) -> list[str]:
    """``a/b(c/d)/e`` -> ``['a', 'b(c/d)', 'e']``: slashes inside parentheses stay."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif ch == "/" and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p]


def _scopes(components: Iterable[str]) -> list[str]:
    out: list[str] = []
    for component in components:
        inner = component
        match = _TRANSFORM.match(inner)
        while match is not None:
            inner = match.group(2)
            match = _TRANSFORM.match(inner)
        if inner != component:  # a transform's argument is a name stack of its own
            out += _scopes(split_top_level(inner))
            continue
        if not inner or inner in _MACHINERY or _BRANCH.match(inner) or _CALL.match(inner):
            continue
        if out and out[-1] == inner:  # rematerialisation repeats the scope it recomputes
            continue
        out.append(inner)
    return out


@lru_cache(maxsize=4096)
def scope_of_name_stack(name_stack: str) -> str:
    """An equation's name stack (``transpose(jvp(outer))/inner``) -> ``outer/inner``."""
    return "/".join(_scopes(split_top_level(name_stack)))


@lru_cache(maxsize=4096)
def scope_of_op_name(op_name: str) -> str:
    """XLA's ``op_name`` (``jit(f)/jvp(layers_0)/dot_general``) -> ``layers_0``.

    The traced function's own ``jit(f)`` leads and the primitive ends it; a
    combined instruction's ``(a:b:c)`` names several operations and has no one scope.
    """
    if not op_name or (op_name.endswith(")") and "(" in op_name and ":" in op_name.rsplit("/", 1)[-1]):
        return ""
    parts = split_top_level(op_name)
    if parts and _CALL.match(parts[0]):
        parts = parts[1:]
    return "/".join(_scopes(parts[:-1]))


def scope_of_components(components: Sequence[str]) -> str:
    """A name stack already split at its slashes (what :mod:`.jaxpr_walk` keeps)."""
    return scope_of_name_stack("/".join(components))


def is_gradient(text: str) -> bool:
    """Whether a name stack or op_name is a transpose's: a backward-pass value or instruction."""
    return "transpose(" in text
