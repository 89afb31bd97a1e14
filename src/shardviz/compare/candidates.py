"""A candidate plan: a mesh and the shardings of the step's arguments on it.

The shardings come in one of three forms, turned here into the step's
arguments as ``jax.ShapeDtypeStruct``s laid out on the candidate's mesh (the
what-if trace's input):

- a pytree of ``PartitionSpec``s (or ``None`` for replicated) with the
  structure of the arguments, or a prefix of it;
- rules text, ``GLOB = SPEC`` one per line (the tree view's rules engine,
  :func:`shardviz.tree.rules.apply_rules`), applied to the arguments; a
  leaf no rule matches is replicated;
- :class:`LogicalRules`: logical-axis rules (``("embed", "fsdp")``) and each
  leaf's logical names, turned into rules text;
- a function of the mesh returning any of those, or the arguments
  themselves (``ShapeDtypeStruct``s with their shardings on that mesh).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
from jax.sharding import AbstractMesh, Mesh, NamedSharding, PartitionSpec

from ..errors import ShardingError
from ..tree.logical import Names, logical_names, parse_logical_rules, spec_for
from ..tree.paths import path_segments
from ..tree.rules import apply_rules

Shardings = Any  # a specs pytree, rules text, LogicalRules, or a function of the mesh returning one (or the arguments)


@dataclass(frozen=True)
class LogicalRules:
    """A candidate's shardings as logical-axis rules, the form MaxText and Flax write: ``rules``
    pairs ``(logical name, mesh axis or axes or None)``, the first of a name winning; ``names`` each
    argument leaf's logical names: a mapping of dotted path (as rules text matches it, e.g.
    ``0.layers.w_in``) to one name or None per dimension, or a tree laid out like the arguments
    holding Flax's boxes (``nn.LogicallyPartitioned``, NNX variables), whose names are read."""

    rules: Any
    names: Any

    def names_by_path(self) -> dict[str, Names]:
        if isinstance(self.names, dict) and all(isinstance(k, str) for k in self.names):
            return {k: tuple(v) for k, v in self.names.items()}
        found = logical_names(tuple(self.names) if isinstance(self.names, list) else self.names)
        return {k.removesuffix(".value"): v for k, v in found.items()}

    def rules_text(self, args: Any) -> str:
        """The rules as ``GLOB = SPEC`` text for ``args``: each named leaf's dimensions on the mesh
        axes its names map to; a leaf with no names is replicated."""
        pairs = parse_logical_rules(self.rules)
        names = self.names_by_path()
        flat = jax.tree_util.tree_flatten_with_path(args)[0]
        paths = [".".join(seg) for seg in path_segments([p for p, _ in flat])]
        lines = []
        for path, (_, leaf) in zip(paths, flat):
            found = names.get(path)
            if found is None or not hasattr(leaf, "shape"):
                continue
            if len(found) != len(leaf.shape):
                raise ShardingError(f"logical names {found!r} of {path} do not match its {len(leaf.shape)} dimensions")
            spec = spec_for(found, pairs)
            if any(spec):
                lines.append(f"{path} = " + ", ".join(_entry(axes) for axes in spec))
        return "\n".join(lines)


def _entry(axes: tuple[str, ...]) -> str:
    return "None" if not axes else axes[0] if len(axes) == 1 else "(" + ", ".join(axes) + ")"


@dataclass(frozen=True)
class Candidate:
    """One plan to compare: ``name``, the ``mesh`` (a ``Mesh`` or ``AbstractMesh``) and the
    ``shardings`` of the step's arguments on it (specs, rules text, or a function of the mesh)."""

    name: str
    mesh: Mesh | AbstractMesh
    shardings: Shardings = None

    @property
    def abstract_mesh(self) -> AbstractMesh:
        return self.mesh.abstract_mesh if isinstance(self.mesh, Mesh) else self.mesh

    @property
    def mesh_label(self) -> str:
        mesh = self.abstract_mesh
        return " x ".join(f"{name}={size}" for name, size in zip(mesh.axis_names, mesh.axis_sizes))


def as_candidate(item: Any, index: int) -> Candidate:
    """A :class:`Candidate` from one entry of ``compare``'s candidates: a Candidate, or a
    ``(name, mesh, shardings)`` / ``(mesh, shardings)`` tuple."""
    if isinstance(item, Candidate):
        found = item
    elif isinstance(item, tuple) and len(item) == 3 and isinstance(item[0], str):
        found = Candidate(*item)
    elif isinstance(item, tuple) and len(item) == 2:
        found = Candidate(f"#{index + 1}", item[0], item[1])
    else:
        raise ShardingError(
            f"candidate {index + 1} is a {type(item).__name__}; a candidate is shardviz.compare.Candidate(name, mesh, "
            "shardings), (name, mesh, shardings) or (mesh, shardings)"
        )
    if not isinstance(found.mesh, (Mesh, AbstractMesh)):
        raise ShardingError(
            f"candidate {found.name!r}: its mesh is a {type(found.mesh).__name__}, not a jax.sharding.Mesh or "
            "AbstractMesh"
        )
    return found


def _is_spec(x: Any) -> bool:
    return x is None or isinstance(x, PartitionSpec)


def _without_sharding(args: Any) -> Any:
    """The arguments with every ShapeDtypeStruct's sharding dropped (the candidate gives them anew)."""

    def plain(x: Any) -> Any:
        if isinstance(x, jax.ShapeDtypeStruct):
            return jax.ShapeDtypeStruct(x.shape, x.dtype, weak_type=x.weak_type, is_ref=x.is_ref)
        return x

    return jax.tree.map(plain, args)


def _with_specs(args: Any, specs: Any, mesh: AbstractMesh, name: str) -> Any:
    """``args`` laid out by a pytree of specs (a prefix of the arguments' structure)."""

    def lay_out(spec: Any, subtree: Any) -> Any:
        sharding = NamedSharding(mesh, spec if spec is not None else PartitionSpec())

        def one(x: Any) -> Any:
            if not isinstance(x, jax.ShapeDtypeStruct):
                return x
            return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding, weak_type=x.weak_type, is_ref=x.is_ref)

        return jax.tree.map(one, subtree)

    try:
        return jax.tree.map(lay_out, specs, args, is_leaf=_is_spec)
    except (ValueError, TypeError) as err:
        raise ShardingError(f"candidate {name!r}: its specs do not match the step's arguments: {err}") from None


def _with_rules(args: Any, text: str, mesh: AbstractMesh, name: str) -> Any:
    """``args`` laid out by rules text; leaves no rule matches are replicated on ``mesh``."""
    try:
        applied = apply_rules(args, text, mesh=mesh)
    except ShardingError as err:
        raise ShardingError(f"candidate {name!r}: rules {err}") from None
    originals = jax.tree.leaves(args)
    laid = jax.tree.leaves(applied.tree)

    def kept(original: Any, new: Any) -> Any:
        if not isinstance(new, jax.ShapeDtypeStruct):
            return new
        sharding = new.sharding if isinstance(new.sharding, NamedSharding) else NamedSharding(mesh, PartitionSpec())
        return jax.ShapeDtypeStruct(new.shape, new.dtype, sharding=sharding, weak_type=new.weak_type,
                                    is_ref=original.is_ref)  # fmt: skip

    return jax.tree.unflatten(jax.tree.structure(args), [kept(o, n) for o, n in zip(originals, laid)])


def _holds_structs(x: Any) -> bool:
    return any(isinstance(leaf, jax.ShapeDtypeStruct) for leaf in jax.tree.leaves(x))


def resolve_arguments(candidate: Candidate, args: tuple[Any, ...] | None) -> tuple[Any, ...]:
    """The step's positional arguments laid out as ``candidate`` says, on its abstract mesh."""
    mesh = candidate.abstract_mesh
    shardings = candidate.shardings
    if callable(shardings):
        try:
            shardings = shardings(mesh)
        except ShardingError:
            raise
        except Exception as err:
            raise ShardingError(
                f"candidate {candidate.name!r}: its shardings function raised {type(err).__name__}: {err}"
            ) from None
        if _holds_structs(shardings) and not isinstance(shardings, str):
            return tuple(shardings) if isinstance(shardings, (tuple, list)) else (shardings,)
    if args is None:
        raise ShardingError(
            f"candidate {candidate.name!r} gives shardings but no arguments: pass compare(..., args=(...)) of "
            "jax.ShapeDtypeStructs, or give a function of the mesh that returns the arguments"
        )
    plain = _without_sharding(tuple(args))
    if isinstance(shardings, LogicalRules):
        try:
            shardings = shardings.rules_text(plain)
        except ShardingError as err:
            raise ShardingError(f"candidate {candidate.name!r}: {err}") from None
    if isinstance(shardings, str):
        return tuple(_with_rules(plain, shardings, mesh, candidate.name))
    return tuple(_with_specs(plain, shardings, mesh, candidate.name))
