"""The array view's states: a layout, the array placed under it, and how an
edit moves from one state to the next.

Each state is immutable. An edit resolves the request into real JAX objects
(:mod:`.edits`), places the user's array there with ``jax.device_put`` (the
array passed in is never changed or deleted) and lays it out again; a mesh
edit that no longer fits the spec carries the spec over
(:func:`.edits.adapt_spec`) and says what it changed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

import jax
from jax.sharding import AbstractMesh, Mesh, NamedSharding, PartitionSpec

from ..errors import ShardingError
from . import edits as rq
from .describe import describe
from .layout import Layout
from .payload import layout_payload


@dataclass(frozen=True, eq=False)
class ArrayState:
    """What the array view shows. ``original`` is the user's array (None for a what-if)."""

    original: jax.Array | None
    layout: Layout
    array: jax.Array | None
    mesh: rq.MeshLike | None
    spec: PartitionSpec
    array_name: str | None = None
    platform: str | None = None

    @functools.cached_property
    def payload(self) -> dict[str, Any]:
        return layout_payload(self.layout, array_name=self.array_name)

    @property
    def sharding(self) -> Any:
        return self.layout.sharding

    @property
    def shape(self) -> tuple[int, ...]:
        return self.layout.shape

    def edited(
        self,
        *,
        mesh: Any = None,
        spec: Any = None,
        memory_kind: Any = None,
        source: str,
        adapt: bool = True,
    ) -> tuple[ArrayState, str]:
        """The state after a request; ``None`` keeps a part as it is.

        Raises EditError naming the control at fault; ``self`` is unchanged.
        Returns the new state and a notice (``""`` unless the spec was adapted).
        """
        new_mesh = self._resolve_mesh(mesh)
        try:
            new_spec = self.spec if spec is None else rq.as_spec(spec)
        except ShardingError as err:
            raise rq.EditError(str(err), "spec") from None
        kind = self.layout.memory_kind if memory_kind is None else memory_kind
        if not isinstance(kind, str) or not kind:
            raise rq.EditError(f"memory_kind must be a non-empty string, not {kind!r}", "memory_kind")
        notice = ""
        if adapt and mesh is not None and spec is None and new_mesh is not None and new_mesh is not self.mesh:
            adapted = rq.adapt_spec(new_spec, self.shape, self.mesh, new_mesh)
            if adapted.changes:
                new_spec = adapted.spec
                notice = "The spec changed with the mesh: " + "; ".join(adapted.changes) + "."
        target = rq.check_target(new_mesh, new_spec, kind, self.shape, source)
        layout, array = self._place(target, source if source in ("mesh", "memory_kind") else "spec")
        state = replace(self, layout=layout, array=array, mesh=target.mesh, spec=target.spec)
        return state, notice

    def _resolve_mesh(self, mesh: Any) -> rq.MeshLike | None:
        if mesh is None:
            return self.mesh
        if isinstance(mesh, str):
            if self.mesh is not None and mesh == self.payload["mesh_text"]:
                return self.mesh  # the same text: keep the very mesh (and its device order)
            mesh = rq.mesh_from_text(mesh, self.mesh, allow_virtual=self.original is None)
        elif not isinstance(mesh, (Mesh, AbstractMesh)):
            raise rq.EditError(f"mesh must be a Mesh, an AbstractMesh or text, not a {type(mesh).__name__}", "mesh")
        if isinstance(mesh, AbstractMesh) and self.original is not None:
            raise rq.EditError("an array cannot be placed on an AbstractMesh; use a Mesh of real devices", "mesh")
        return mesh

    def _place(self, target: rq.Target, control: str) -> tuple[Layout, jax.Array | None]:
        """Build the layout (and array) for a target; raises, changes nothing.

        A refusal blames ``control``: the editor whose edit asked for this target.
        """
        sharding = target.sharding
        original = self.original
        if original is not None and (original.is_deleted() or (self.array is not None and self.array.is_deleted())):
            raise rq.EditError(
                "the array behind this widget has been deleted (by .delete() or by donation to a jitted "
                "function); show a live array to lay it out again",
                control,
            )
        if original is None:
            return describe(sharding, shape=self.shape, dtype=self.layout.dtype, platform=self.platform), None
        if sharding == original.sharding:
            return describe(original), original
        # From the array as it is now: one edit changes one thing (the mesh
        # or the memory kind), which JAX can always move in one device_put.
        source = self.array if self.array is not None else original
        try:
            placed = jax.device_put(source, sharding)
        except Exception as err:  # JAX's own refusal, in its words (some of JAX's say nothing)
            words = str(err) or f"{type(err).__name__} with no message"
            raise rq.EditError(f"JAX refused to place the array there: {words}", control) from None
        return describe(placed), placed


def start_state(
    x: Any = None,
    *,
    shape: Any = None,
    dtype: Any = None,
    mesh: Any = None,
    platform: str | None = None,
    array_name: str | None = None,
) -> ArrayState:
    """The first state of an array view for ``x`` (anything ``describe`` takes), or a
    hypothetical array of ``shape`` on ``mesh`` (all devices along ``x`` by default)."""
    if isinstance(x, jax.Array):
        layout = describe(x)
        original: jax.Array | None = x
    elif isinstance(x, Layout):
        if shape is not None or dtype is not None or platform is not None:
            raise ShardingError("a Layout is already laid out; shape=, dtype= and platform= do not apply")
        # The array behind a Layout (if any) is not part of it: edit it as a what-if.
        layout = replace(x, has_array=False)
        original = None
    elif x is not None:
        layout = describe(x, shape=shape, dtype=dtype, platform=platform)
        original = None
    else:
        if shape is None:
            raise ShardingError("an array view needs an array, a Layout, a sharding, or shape= (e.g. shape=(8, 8))")
        if mesh is None:
            mesh = jax.make_mesh((jax.device_count(),), ("x",))
        elif isinstance(mesh, str):
            mesh = rq.mesh_from_text(mesh, None, allow_virtual=True)
        elif not isinstance(mesh, (Mesh, AbstractMesh)):
            raise ShardingError(
                f"mesh= takes a Mesh, an AbstractMesh or text such as 'x=2, y=4', not a {type(mesh).__name__}"
            )
        layout = describe(NamedSharding(mesh, PartitionSpec()), shape=shape, dtype=dtype, platform=platform)
        original = None
    sharding = layout.sharding
    named = isinstance(sharding, NamedSharding)
    return ArrayState(
        original=original,
        layout=layout,
        array=original,
        mesh=sharding.mesh if named else None,
        spec=sharding.spec if named else PartitionSpec(),
        array_name=array_name,
        platform=platform if layout.is_virtual else None,
    )
