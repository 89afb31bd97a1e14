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
from ..memory_guard import Placement, check_room, ways_to_fit
from ..text.ranges import compress_ids
from . import edits as rq
from .checks import entry_axes, spec_repr
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
    # The spec the user set, where a mesh edit cut ``spec`` from it (axes the mesh lacked or that
    # no longer divided their dimension); None when ``spec`` is the user's own. A later mesh edit
    # starts again from it, so a spec comes back whole where it fits again.
    asked_spec: PartitionSpec | None = None

    @functools.cached_property
    def payload(self) -> dict[str, Any]:
        asked = None if self.asked_spec is None else spec_entries(self.asked_spec, len(self.shape))
        return layout_payload(self.layout, array_name=self.array_name, user_spec=asked)

    @property
    def user_spec(self) -> PartitionSpec:
        """The spec the user set (``spec`` unless a mesh edit cut it)."""
        return self.spec if self.asked_spec is None else self.asked_spec

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
        Returns the new state and a notice: ``""``, or what else the edit did (the
        spec the user set carried over to a new mesh, the machine's devices a mesh
        on fewer of them takes).
        """
        new_mesh = self._resolve_mesh(mesh)
        try:
            new_spec = self.spec if spec is None else rq.as_spec(spec)
        except ShardingError as err:
            raise rq.EditError(str(err), "spec") from None
        kind = self.layout.memory_kind if memory_kind is None else memory_kind
        if not isinstance(kind, str) or not kind:
            raise rq.EditError(f"memory_kind must be a non-empty string, not {kind!r}", "memory_kind")
        asked = new_spec if spec is not None else self.user_spec
        notice = ""
        if adapt and mesh is not None and spec is None and new_mesh is not None and new_mesh != self.mesh:
            new_spec, notice = self._carried(new_mesh)
            asked = rq.renamed_spec(asked, self.mesh, new_mesh)
        target = rq.check_target(new_mesh, new_spec, kind, self.shape, source)
        layout, array = self._place(target, source if source in ("mesh", "memory_kind") else "spec")
        rank = len(self.shape)
        kept = None if spec_entries(asked, rank) == spec_entries(target.spec, rank) else asked
        state = replace(self, layout=layout, array=array, mesh=target.mesh, spec=target.spec, asked_spec=kept)
        if mesh is not None:
            notice = " ".join(filter(None, [notice, state._devices_taken(self)]))
        return state, notice

    def _carried(self, new_mesh: Any) -> tuple[PartitionSpec, str]:
        """The spec the user set carried over to ``new_mesh``, and the notice saying how."""
        asked = self.user_spec
        adapted = rq.adapt_spec(asked, self.shape, self.mesh, new_mesh)
        if self.asked_spec is None:
            if not adapted.changes:
                return self.spec, ""
            return adapted.spec, "The spec changed with the mesh: " + "; ".join(adapted.changes) + "."
        said = spec_repr(tuple(trimmed(rq.renamed_spec(asked, self.mesh, new_mesh))))
        if adapted.changes:
            return adapted.spec, f"The spec you set, {said}, fits this mesh only in part: " + "; ".join(
                adapted.changes
            ) + "."
        return adapted.spec, f"The spec is {said} again, as you set it: it fits this mesh."

    def _devices_taken(self, before: ArrayState) -> str:
        """What a mesh edit onto fewer of the machine's devices than it has did, in a sentence."""
        mesh = self.mesh
        count = self.layout.device_count
        if not isinstance(mesh, Mesh) or count >= self.layout.machine_devices or count == before.layout.device_count:
            return ""
        what = "the array was copied onto them" if self.original is not None else "a what-if layout, no array placed"
        ids = compress_ids(self.layout.columns.ids)
        return f"This mesh takes {count} of the machine's {self.layout.machine_devices} devices ({ids}): {what}."

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
        self._check_room(target, control)
        try:
            placed = jax.device_put(source, sharding)
        except Exception as err:  # JAX's own refusal, in its words (some of JAX's say nothing)
            words = str(err) or f"{type(err).__name__} with no message"
            raise rq.EditError(f"JAX refused to place the array there: {words}", control) from None
        return describe(placed), placed

    def _check_room(self, target: rq.Target, control: str) -> None:
        """Refuse a placement that needs more memory than there is, before any buffer is made."""
        assert self.original is not None
        name = repr(self.array_name) if self.array_name else "the array"
        placement = Placement(target.sharding, self.shape, self.original.dtype, name=name)
        try:
            check_room([placement], action=f"Placing {name} on {spec_repr(tuple(trimmed(target.spec)))}")
        except ShardingError as err:
            # What would fit is worked out only for a refusal: it lays the array out again.
            said = " ".join(filter(None, [str(err), _fit_hint(target, placement)]))
            raise rq.EditError(said, control) from None


def _fit_hint(target: rq.Target, placement: Placement) -> str:
    """What would fit instead: a spec splitting the array enough ways, with one to type where an
    unused mesh axis does it alone."""
    if not placement.on_host:
        return "A spec that splits the array over more devices needs less on each."
    ways = ways_to_fit(placement)
    if ways <= 1:
        return ""
    entries = list(target.spec) + [None] * (len(placement.shape) - len(tuple(target.spec)))
    used = {str(a) for e in entries for a in entry_axes(e)}
    sizes = dict(zip((str(n) for n in target.mesh.axis_names), (int(s) for s in target.mesh.axis_sizes)))
    for axis, size in sorted(sizes.items(), key=lambda kv: kv[1]):
        if axis in used or size < ways:
            continue
        for d, n in enumerate(placement.shape):
            if not entry_axes(entries[d]) and n % size == 0:
                suggestion = list(entries)
                suggestion[d] = axis
                said = spec_repr(tuple(trimmed(PartitionSpec(*suggestion))))
                return f"A spec that splits it at least {ways} ways would fit, such as {said}."
    return f"A spec that splits it at least {ways} ways would fit."


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


def spec_entries(spec: Any, rank: int) -> tuple[tuple[str, ...], ...]:
    """A spec as one tuple of axis names per dimension, padded to ``rank``."""
    entries = tuple(tuple(str(a) for a in entry_axes(e)) for e in spec)
    return entries + ((),) * (rank - len(entries))


def trimmed(spec: PartitionSpec) -> PartitionSpec:
    """``spec`` without trailing unsplit dimensions (as the browser, which sees them padded, writes it)."""
    entries = list(spec)
    while entries and not entry_axes(entries[-1]):
        entries.pop()
    return PartitionSpec(*entries)
