"""The Jupyter widget: one AnyWidget with flat traits, driven from Python.

Python is the single source of truth. The front end edits ``spec_text``,
``mesh_text`` and ``memory_kind``; Python resolves the edit into real JAX
objects, lays the array out again with :func:`shardviz.describe`, and sends
back ``payload`` (or ``error`` and ``error_source`` when the edit was bad,
leaving the last good picture and the user's array as they were).
"""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import Iterator
from typing import Any

import anywidget
import jax
import traitlets
from jax.sharding import AbstractMesh, Mesh, NamedSharding, PartitionSpec

from . import edits as rq
from .errors import ShardingError
from .layout import Layout, check_memory_kind, describe
from .preview import preview_message

STATIC = pathlib.Path(__file__).parent / "static"
EDITABLE = ("spec_text", "mesh_text", "memory_kind")
PYTHON_OWNED = ("payload", "error", "error_source")


def _bundle(name: str) -> pathlib.Path:
    path = STATIC / name
    if not path.exists():
        raise RuntimeError(
            f"the shardviz front end is not built ({path} is missing); run `make install` "
            "or `npm ci && npm run build` in the repository"
        )
    return path


class ShardingWidget(anywidget.AnyWidget):
    """A live picture of how an array is laid out, with editors.

    ``ShardingWidget(x)`` takes anything :func:`shardviz.describe` accepts:
    a jax.Array, a ShapeDtypeStruct with a sharding, or a Sharding with
    ``shape=``. ``mesh=``, ``spec=`` and ``memory_kind=`` start it from
    another layout (JAX objects or editor text). With no ``x``, give
    ``shape=`` and it lays out a hypothetical array (on all devices along
    one axis ``x`` unless ``mesh=`` says otherwise).
    """

    _esm = STATIC / "widget.js"
    _css = STATIC / "widget.css"

    # Synced state. The front end writes the three editor texts; Python
    # writes everything else.
    payload = traitlets.Dict().tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    error_source = traitlets.Unicode("").tag(sync=True)
    spec_text = traitlets.Unicode("").tag(sync=True)
    mesh_text = traitlets.Unicode("").tag(sync=True)
    memory_kind = traitlets.Unicode("device").tag(sync=True)

    def __init__(
        self,
        x: Any = None,
        *,
        shape: Any = None,
        dtype: Any = None,
        mesh: Any = None,
        spec: Any = None,
        memory_kind: str | None = None,
    ) -> None:
        first, sharding = self._starting_point(x, shape=shape, dtype=dtype, mesh=mesh)
        _bundle("widget.js")  # a clear message when the front end was never built
        super().__init__()
        self._original: jax.Array | None = x if isinstance(x, jax.Array) else None
        self._array: jax.Array | None = self._original
        self._shape = first.shape
        self._dtype = first.dtype
        self._sharding: Any = None
        self._mesh: rq.MeshLike | None = None
        self._spec = PartitionSpec()
        self._layout: Layout = first
        self._quiet = 0
        self._adopt(first, sharding)
        if spec is not None or memory_kind is not None or (mesh is not None and x is not None):
            try:
                self._apply_python(
                    mesh=mesh if mesh is not None else self._mesh,
                    spec=spec if spec is not None else self._spec,
                    memory_kind=memory_kind if memory_kind is not None else self._layout.memory_kind,
                )
            except ShardingError:
                self.close()  # the comm is open already; a refused widget must not linger
                raise
        self.on_msg(self._on_custom_message)

    # ------------------------------------------------------------------
    # public state

    @property
    def layout(self) -> Layout:
        """The layout now shown (the last good one while an error shows)."""
        return self._layout

    @property
    def array(self) -> jax.Array | None:
        """The user's array under the current sharding (None without an array).

        Made with ``jax.device_put`` and kept until the next edit; the array
        passed in is never changed or deleted.
        """
        return self._array

    @property
    def sharding(self) -> Any:
        return self._sharding

    @property
    def mesh(self) -> rq.MeshLike | None:
        return self._mesh

    @mesh.setter
    def mesh(self, value: Any) -> None:
        self._apply_python(mesh=value, spec=self._spec, memory_kind=self._layout.memory_kind)

    @property
    def spec(self) -> PartitionSpec:
        return self._spec

    @spec.setter
    def spec(self, value: Any) -> None:
        self._apply_python(mesh=self._mesh, spec=value, memory_kind=self._layout.memory_kind)

    # ------------------------------------------------------------------
    # set-up

    @staticmethod
    def _starting_point(x: Any, *, shape: Any, dtype: Any, mesh: Any) -> tuple[Layout, Any]:
        """The first layout and the sharding behind it."""
        if isinstance(x, jax.Array):
            return describe(x), x.sharding
        if x is not None:
            layout = describe(x, shape=shape, dtype=dtype)
            return layout, x.sharding if isinstance(x, jax.ShapeDtypeStruct) else x
        if shape is None:
            raise ShardingError("ShardingWidget needs an array, a sharding, or shape= (e.g. shape=(8, 8))")
        if mesh is None:
            mesh = jax.make_mesh((jax.device_count(),), ("x",))
        elif isinstance(mesh, str):
            mesh = rq.mesh_from_text(mesh, None, allow_virtual=True)
        elif not isinstance(mesh, (Mesh, AbstractMesh)):
            raise ShardingError(
                f"mesh= takes a Mesh, an AbstractMesh or text such as 'x=2, y=4', not a {type(mesh).__name__}"
            )
        sharding = NamedSharding(mesh, PartitionSpec())
        return describe(sharding, shape=shape, dtype=dtype), sharding

    # ------------------------------------------------------------------
    # applying requests

    def _resolve(self, mesh: Any, spec: Any, memory_kind: Any, source: str) -> rq.Target:
        if isinstance(mesh, str):
            mesh = rq.mesh_from_text(mesh, self._mesh, allow_virtual=self._original is None)
        elif mesh is not None and not isinstance(mesh, (Mesh, AbstractMesh)):
            raise rq.EditError(f"mesh must be a Mesh, an AbstractMesh or text, not a {type(mesh).__name__}", "mesh")
        if isinstance(mesh, AbstractMesh) and self._original is not None:
            raise rq.EditError("an array cannot be placed on an AbstractMesh; use a Mesh of real devices", "mesh")
        try:
            spec = rq.as_spec(spec)
        except ShardingError as err:
            raise rq.EditError(str(err), "spec") from None
        if not isinstance(memory_kind, str) or not memory_kind:
            raise rq.EditError(f"memory_kind must be a non-empty string, not {memory_kind!r}", "memory_kind")
        return rq.check_target(mesh, spec, memory_kind, self._shape, source)

    def _place(self, target: rq.Target) -> tuple[Layout, jax.Array | None]:
        """Build the layout (and array) for a target; raises, changes nothing."""
        sharding = target.sharding
        if self._original is not None and self._original.is_deleted():
            raise rq.EditError(
                "the array behind this widget has been deleted (by .delete() or by donation to a jitted "
                "function); show a live array to lay it out again",
                "spec",
            )
        try:
            if self._original is None:
                return describe(sharding, shape=self._shape, dtype=self._dtype), None
            if sharding == self._original.sharding:
                return describe(self._original), self._original
            placed = jax.device_put(self._original, sharding)
            return describe(placed), placed
        except ShardingError:
            raise
        except Exception as err:  # JAX's own refusal, in its words
            raise rq.EditError(f"JAX refused the layout: {err}", "spec") from None

    def _adopt(self, layout: Layout, sharding: Any, array: jax.Array | None = None) -> None:
        self._layout = layout
        self._sharding = sharding
        if isinstance(sharding, NamedSharding):
            self._mesh, self._spec = sharding.mesh, sharding.spec
        if array is not None or self._original is None:
            self._array = array
        payload = layout.to_json()
        with self._quietly():
            # The editors show the layout's own texts, in canonical form.
            self.spec_text = payload["spec_text"]
            self.mesh_text = payload["mesh_text"]
            self.memory_kind = layout.memory_kind
            self.payload = payload
            self.error = ""
            self.error_source = ""

    def _apply_python(self, *, mesh: Any, spec: Any, memory_kind: Any) -> None:
        """A change made from Python: raise ShardingError, change nothing."""
        target = self._resolve(mesh, spec, memory_kind, "python")
        layout, array = self._place(target)
        self._adopt(layout, target.sharding, array)

    def apply_edit(
        self, *, spec_text: str | None = None, mesh_text: str | None = None, memory_kind: str | None = None
    ) -> bool:
        """Apply an edit as the front end sends it; never raises.

        Returns True when it was applied; otherwise ``error`` says why and
        the picture, the array and the traits' last good values stay.
        """
        source = "mesh" if mesh_text is not None else "spec" if spec_text is not None else "memory_kind"
        try:
            unchanged = mesh_text is None or mesh_text == self.payload["mesh_text"]
            mesh: Any = self._mesh if unchanged else mesh_text
            spec: Any = self._spec if spec_text is None else spec_text
            kind = self._layout.memory_kind if memory_kind is None else memory_kind
            target = self._resolve(mesh, spec, kind, source)
            layout, array = self._place(target)
        except rq.EditError as err:
            self._show_error(str(err), err.source)
            return False
        except ShardingError as err:
            self._show_error(str(err), source)
            return False
        except Exception as err:  # never raise into the kernel from an edit
            self._show_error(f"{type(err).__name__}: {err}", source)
            return False
        self._adopt(layout, target.sharding, array)
        return True

    def _show_error(self, message: str, source: str) -> None:
        with self._quietly():
            self.error = message
            self.error_source = source

    @contextlib.contextmanager
    def _quietly(self) -> Iterator[None]:
        # Python's own trait writes must not be taken for user edits.
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    # ------------------------------------------------------------------
    # edits arriving from the front end (or from Python through the traits)

    def set_state(self, sync_data: dict[str, Any]) -> None:
        # Python alone writes the picture and the error; a front end that
        # sends them anyway is ignored rather than believed.
        sync_data = {k: v for k, v in sync_data.items() if k not in PYTHON_OWNED}
        edits = {k: v if isinstance(v, str) else str(v) for k, v in sync_data.items() if k in EDITABLE}
        sync_data.update(edits)
        # Several traits can arrive in one message; apply them as one edit.
        with self._quietly():
            try:
                super().set_state(sync_data)
            except Exception as err:  # a malformed message must not raise into the kernel
                self._show_error(f"the widget received an edit it cannot read: {err}", "")
                return
        if edits:
            self.apply_edit(**edits)

    @traitlets.validate("memory_kind")
    def _check_memory_kind(self, proposal: Any) -> str:
        value = proposal["value"]
        if self._quiet or not hasattr(self, "_layout"):
            return value
        # A Python assignment: refuse a bad kind before anything changes.
        if not isinstance(value, str):
            raise ShardingError(f"memory_kind must be a string such as 'pinned_host', not {value!r}")
        check_memory_kind(value, self._layout.memory_kinds)
        return value

    @traitlets.observe("spec_text", "mesh_text", "memory_kind")
    def _on_editor_trait(self, change: dict[str, Any]) -> None:
        if self._quiet:
            return
        if change["name"] == "memory_kind":
            try:
                self._apply_python(mesh=self._mesh, spec=self._spec, memory_kind=change["new"])
            except ShardingError:
                with self._quietly():  # the assignment is refused: put the old kind back
                    self.memory_kind = change["old"]
                raise
        else:
            self.apply_edit(**{change["name"]: change["new"]})

    # ------------------------------------------------------------------
    # display

    _shown_in_this_cell = False

    def _ipython_display_(self) -> None:
        # show() already displayed this widget in the running cell; the
        # returned value at the end of the cell must not add a second view.
        if self._shown_in_this_cell:
            return
        from IPython.display import publish_display_data

        bundle = self._repr_mimebundle_()
        if bundle is not None:
            data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
            publish_display_data(data, metadata)

    # ------------------------------------------------------------------
    # value previews, on demand

    def _on_custom_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("kind") != "preview":
            return
        self.send(preview_message(self._array, self._layout, content))

    def preview(self, device_id: int, dims: tuple[int, ...] | None = None) -> dict[str, Any]:
        """The bounded value preview the inspector shows for one device."""
        return preview_message(self._array, self._layout, {"device": device_id, "dims": list(dims or ())})


def show(x: Any = None, **kwargs: Any) -> ShardingWidget:
    """Display a ShardingWidget for ``x`` in the notebook and return it.

    ``shardviz.show(x)`` as the last line of a cell shows one widget, not
    two: the returned widget does not display itself again in that cell.
    """
    from IPython import get_ipython
    from IPython.display import display

    widget = ShardingWidget(x, **kwargs)
    display(widget)
    shell = get_ipython()
    if shell is not None:
        widget._shown_in_this_cell = True

        def cell_done(*_: Any) -> None:
            widget._shown_in_this_cell = False
            shell.events.unregister("post_run_cell", cell_done)

        shell.events.register("post_run_cell", cell_done)
    return widget


__all__ = ["ShardingWidget", "show"]
