"""The array view's widget: a live picture of one layout, with editors.

It names the controls the front end edits (``spec_text``, ``mesh_text``,
``memory_kind``) and turns each edit into a step of
:class:`~shardviz.array.placement.ArrayState`; its answer also carries
``move``, what the last edit cost. The shared base does the rest (the edit
protocol, error policy, display).
"""

from __future__ import annotations

from typing import Any

import jax
from jax.sharding import PartitionSpec

from ..array.checks import check_memory_kind
from ..array.edits import MeshLike
from ..array.layout import Layout
from ..array.moves import resharding
from ..array.placement import ArrayState, start_state
from ..errors import ShardingError
from ..program.program import Program
from ..program.trace import trace
from .base import ViewWidget
from .naming import caller_name
from .preview import preview_message


class ShardingWidget(ViewWidget[ArrayState]):
    """A live picture of how an array is laid out, with editors.

    ``ShardingWidget(x)`` takes anything :func:`shardviz.describe` accepts
    (a jax.Array, a ShapeDtypeStruct with a sharding, a Sharding with
    ``shape=``, or a Layout). ``mesh=``, ``spec=`` and ``memory_kind=`` start
    it from another layout (JAX objects or editor text). With no ``x``, give
    ``shape=`` and it lays out a hypothetical array (on all devices along one
    axis ``x`` unless ``mesh=`` says otherwise); ``platform=`` names the
    platform of a what-if AbstractMesh. ``name=`` is the array's variable
    name for "copy code" (found in the caller's namespace when not given).
    """

    CONTROLS = ("spec_text", "mesh_text", "memory_kind")
    _last_move: Program | None = None
    # What the last edit cost to move the array there (see ``last_move``), as the answer's ``move``.
    _move: dict[str, Any] = {}  # noqa: RUF012 (replaced, never mutated)

    def __init__(
        self,
        x: Any = None,
        *,
        shape: Any = None,
        dtype: Any = None,
        mesh: Any = None,
        spec: Any = None,
        memory_kind: str | None = None,
        platform: str | None = None,
        name: str | None = None,
    ) -> None:
        if name is None and isinstance(x, jax.Array):
            name = caller_name(x)
        state = start_state(
            x, shape=shape, dtype=dtype, mesh=None if x is not None else mesh, platform=platform, array_name=name
        )
        if spec is not None or memory_kind is not None or (mesh is not None and x is not None):
            state, _ = state.edited(mesh=mesh, spec=spec, memory_kind=memory_kind, source="python", adapt=False)
        super().__init__(state)

    # ------------------------------------------------------------------
    # public state

    @property
    def layout(self) -> Layout:
        """The layout now shown (the last good one while an error shows)."""
        return self.state.layout

    @property
    def array(self) -> jax.Array | None:
        """The user's array under the current sharding (None without an array).

        Made with ``jax.device_put`` and kept until the next edit; the array
        passed in is never changed or deleted.
        """
        return self.state.array

    @property
    def last_move(self) -> Program | None:
        """The program that moved the array to its current layout in the last edit:
        ``jax.jit(lambda a: a, out_shardings=new)`` on the previous array, traced.
        None before any edit, without an array, or when no single program does it.
        Past 2,048 CPU devices it is compiled in a child process (XLA:CPU compiles
        for no more in one), over the same mesh positions: its ``whatif`` says so
        and its devices are the child's."""
        return self._last_move

    @property
    def move(self) -> dict[str, Any]:
        """What the last edit cost to move the array there, as the front end shows it."""
        return dict(self._read("move") or {})

    @property
    def spec_text(self) -> str:
        return str(self._text("spec_text"))

    @spec_text.setter
    def spec_text(self, text: str) -> None:
        self.apply_edit(spec_text=text)  # as the front end's edit: a refusal shows, nothing raises

    @property
    def mesh_text(self) -> str:
        return str(self._text("mesh_text"))

    @mesh_text.setter
    def mesh_text(self, text: str) -> None:
        self.apply_edit(mesh_text=text)

    @property
    def memory_kind(self) -> str:
        return str(self._text("memory_kind"))

    @memory_kind.setter
    def memory_kind(self, kind: str) -> None:
        # A Python assignment: a bad kind raises before anything changes.
        if not isinstance(kind, str):
            raise ShardingError(f"memory_kind must be a string such as 'pinned_host', not {kind!r}")
        check_memory_kind(kind, self.layout.memory_kinds)
        self._assign(lambda s: s.edited(memory_kind=kind, source="python"))

    @property
    def sharding(self) -> Any:
        return self.state.sharding

    @property
    def mesh(self) -> MeshLike | None:
        return self.state.mesh

    @mesh.setter
    def mesh(self, value: Any) -> None:
        self._assign(lambda s: s.edited(mesh=value, source="python"))

    @property
    def spec(self) -> PartitionSpec:
        return self.state.spec

    @spec.setter
    def spec(self, value: Any) -> None:
        self._assign(lambda s: s.edited(spec=value, source="python"))

    # ------------------------------------------------------------------
    # the view's part of the base's protocol

    def _editor_texts(self, state: ArrayState) -> dict[str, Any]:
        payload = state.payload
        return {
            "spec_text": payload["spec_text"],
            "mesh_text": payload["mesh_text"],
            "memory_kind": payload["memory_kind"],
        }

    def _edit_source(self, edits: dict[str, Any]) -> str:
        return "mesh" if "mesh_text" in edits else "spec" if "spec_text" in edits else "memory_kind"

    def _edit(self, state: ArrayState, edits: dict[str, Any]) -> tuple[ArrayState, str]:
        return state.edited(
            mesh=edits.get("mesh_text"),
            spec=edits.get("spec_text"),
            memory_kind=edits.get("memory_kind"),
            source=self._edit_source(edits),
        )

    def _accepted(self, before: ArrayState, after: ArrayState) -> None:
        self._last_move, self._move = resharding(before, after, trace=trace, elsewhere=_trace_in_child)

    def _extras(self) -> dict[str, Any]:
        return {"move": self._move}

    def _answer(self, content: dict[str, Any]) -> dict[str, Any] | None:
        if content.get("kind") != "preview":
            return None
        return preview_message(self.array, self.layout, content)

    # ------------------------------------------------------------------
    # value previews, on demand

    def preview(self, device_id: int, dims: tuple[int, ...] | None = None) -> dict[str, Any]:
        """The bounded value preview the inspector shows for one device."""
        return preview_message(self.array, self.layout, {"device": device_id, "dims": list(dims or ())})


# A move XLA:CPU cannot compile in the kernel (past 2,048 devices) is compiled in a child
# process with that many CPU devices, waited for at most this long.
MOVE_CHILD_TIMEOUT_S = 120.0


def _trace_in_child(fun: Any, args: tuple[Any, ...], mesh: Any) -> Program:
    return trace(fun, *args, mesh=mesh, whatif_timeout=MOVE_CHILD_TIMEOUT_S)


__all__ = ["ShardingWidget", "resharding"]
