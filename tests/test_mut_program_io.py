"""A program's inputs and outputs (program/values/inputs_outputs.py) on stand-ins for JAX's compiled and traced
programs: which leaves it takes as arrays, their shardings when JAX cannot say them, their layouts, and
the outputs laid out unlike the input they stand for.

The stand-ins carry only what the module reads (``input_shardings``, ``args_info``, ``out_info``, ...);
the expected shardings, paths and types are what JAX itself says (``jax.typeof``, ``keystr``) or
the arguments themselves. These tests came from mutation testing (docs/mutation.md); the traced-program
tests (test_program_trace.py, test_program_compiled_failures.py) check the same on real programs.
Nothing is compiled.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

from shardviz.errors import ShardingError
from shardviz.program.model import LayoutChange
from shardviz.program.values.inputs_outputs import (
    _layout_of,
    dynamic_leaves,
    input_layouts,
    input_shardings,
    layout_changes,
    output_layouts,
    output_paths,
    output_shardings,
)


class Unanswered:
    """A compiled program whose JAX cannot say its input or output shardings."""

    def __init__(self, flat: Any = None) -> None:
        if flat is not None:
            self._executable = SimpleNamespace(_out_shardings=flat)

    @property
    def input_shardings(self) -> Any:
        raise ValueError("no shardings here")

    @property
    def output_shardings(self) -> Any:
        raise KeyError("refs")


@pytest.fixture(scope="module")
def explicit() -> jax.sharding.Mesh:
    return jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)


def test_the_compiled_programs_input_shardings_come_flat_in_argument_order() -> None:
    a, b, c = (SingleDeviceSharding(d) for d in jax.devices()[:3])
    compiled = SimpleNamespace(input_shardings=((a, {"w": b, "v": c}), {}))
    assert input_shardings(compiled, [], "f") == [a, c, b]  # a dict's leaves come by sorted key


def test_unanswered_input_shardings_are_the_arguments_own_or_refused_by_name() -> None:
    x = jax.device_put(jnp.ones(4), jax.devices()[1])
    struct = jax.ShapeDtypeStruct((2,), jnp.float32, sharding=SingleDeviceSharding(jax.devices()[2]))
    assert input_shardings(Unanswered(), [x, struct], "step") == [x.sharding, struct.sharding]
    with pytest.raises(ShardingError) as refused:
        input_shardings(Unanswered(), [x, np.ones(4)], "step")
    assert str(refused.value) == (
        "step compiled, but JAX could not say its input shardings (ValueError: no shardings here), and not "
        "every argument is an array or ShapeDtypeStruct with its own sharding to read instead"
    )
    assert isinstance(refused.value.__cause__, ValueError)


def test_unanswered_output_shardings_are_the_leading_ones_of_the_executables_list() -> None:
    a, b, c = (SingleDeviceSharding(d) for d in jax.devices()[:3])
    traced = SimpleNamespace(out_tree=jax.tree_util.tree_structure((0, 0)))
    assert output_shardings(Unanswered([a, b, c]), traced, "step") == [a, b]  # c is a ref's new value
    assert output_shardings(Unanswered((a, b)), traced, "step") == [a, b]
    answered = SimpleNamespace(output_shardings={"loss": a, "grads": [b, c]})
    assert output_shardings(answered, traced, "step") == [b, c, a]


@pytest.mark.parametrize(
    ("compiled", "traced"),
    [
        (Unanswered(), SimpleNamespace(out_tree=jax.tree_util.tree_structure((0, 0)))),  # no list at all
        (Unanswered([None]), SimpleNamespace(out_tree=jax.tree_util.tree_structure((0, 0)))),  # too short
        (Unanswered([None, None]), SimpleNamespace()),  # no output tree to count
    ],
)
def test_unanswered_output_shardings_with_no_record_of_them_are_refused_by_name(compiled: Any, traced: Any) -> None:
    with pytest.raises(ShardingError) as refused:
        output_shardings(compiled, traced, "step")
    assert str(refused.value) == (
        "step compiled, but JAX could not say its output shardings (KeyError: 'refs'), "
        "and shardviz found no other record of them"
    )
    assert isinstance(refused.value.__cause__, KeyError)


def infos(*shapes_and_dtypes: tuple[tuple[int, ...], Any]) -> SimpleNamespace:
    return SimpleNamespace(args_info=[jax.ShapeDtypeStruct(s, d) for s, d in shapes_and_dtypes])


def test_every_leaf_is_an_array_input_when_the_trace_kept_them_all() -> None:
    assert dynamic_leaves(["relu", 3], infos(((4,), jnp.float32), ((), jnp.int32))) == [True, True]


def test_static_leaves_are_told_from_array_inputs_by_shape_and_dtype_in_order() -> None:
    x, y = np.ones((4, 2), np.float32), np.ones(3, np.int32)
    traced = infos(((4, 2), jnp.float32), ((3,), jnp.int32))
    # a static activation name (no JAX type), a static size, then the two arrays
    assert dynamic_leaves(["relu", 3, x, y], traced) == [False, False, True, True]
    # the same shape in another dtype is no match; matching stops once every input is found
    assert dynamic_leaves([x.astype(np.int32), x, y, y], traced) == [False, True, True, False]
    # an input matched out of order is not taken: the trace keeps the arguments' order
    assert dynamic_leaves([y, x, 2, 5], traced) == [False, True, False, False]


def test_an_input_layout_is_the_arrays_own_or_where_the_program_puts_a_leaf_without_one(explicit: Any) -> None:
    rows, whole = NamedSharding(explicit, P("x", None)), NamedSharding(explicit, P())
    array = jax.device_put(jnp.ones((4, 4)), rows)
    struct = jax.ShapeDtypeStruct((4, 4), jnp.float32, sharding=rows)
    plain = np.ones((4, 4), np.float32)
    layouts = input_layouts([array, 3, struct, plain, 2.0], [True, False, True, True, True], [rows, rows, rows, whole])
    assert [layout.has_array for layout in layouts] == [True, False, False, False]
    # the arrays' types as JAX says them: a NumPy array and a Python float carry no sharding in theirs
    assert [layout.type_str for layout in layouts] == [
        str(jax.typeof(array)),
        str(jax.typeof(struct)),
        str(jax.typeof(plain)),
        str(jax.typeof(2.0)),
    ]
    assert [layout.type_str for layout in layouts] == ["float32[4@x,4]", "float32[4@x,4]", "float32[4,4]", "~float32[]"]
    assert [layout.sharding for layout in layouts] == [rows, rows, rows, whole]
    assert [layout.shape for layout in layouts] == [(4, 4), (4, 4), (4, 4), ()]


def test_an_unplaced_struct_is_laid_out_where_the_program_puts_it(explicit: Any) -> None:
    cols = NamedSharding(explicit, P(None, "y"))
    (layout,) = input_layouts([jax.ShapeDtypeStruct((2, 6), jnp.int32)], [True], [cols])
    assert (layout.sharding, layout.spec, layout.dtype, layout.has_array) == (cols, ((), ("y",)), "int32", False)
    assert layout.type_str == "int32[2,6]"


def test_layouts_are_described_once_per_sharding_shape_and_dtype(explicit: Any) -> None:
    rows = NamedSharding(explicit, P("x", None))
    a = jax.device_put(jnp.ones((4, 4)), rows)
    b = jax.device_put(jnp.zeros((4, 4)), rows)
    assert _layout_of(a) is _layout_of(b)
    assert _layout_of(a) is not _layout_of(jax.ShapeDtypeStruct((4, 4), jnp.float32, sharding=rows))


def test_a_sharding_that_cannot_be_hashed_is_described_on_its_own(explicit: Any) -> None:
    class Unhashable(NamedSharding):
        __hash__ = None  # type: ignore[assignment]

    struct = jax.ShapeDtypeStruct((4, 4), jnp.float32, sharding=Unhashable(explicit, P("x")))
    with pytest.raises(ShardingError, match="unhashable type: 'Unhashable'"):
        _layout_of(struct)  # describe() itself says what is wrong with it


def test_outputs_are_named_by_their_paths_under_out_and_laid_out_as_compiled() -> None:
    one, two = (SingleDeviceSharding(d) for d in jax.devices()[:2])
    traced = SimpleNamespace(
        out_info={"loss": jax.ShapeDtypeStruct((), jnp.float32), "grads": [jax.ShapeDtypeStruct((3, 2), jnp.int8)]}
    )
    assert output_paths(traced) == ("out['grads'][0]", "out['loss']")
    layouts = output_layouts(traced, [one, two])
    assert [(layout.shape, layout.dtype, layout.sharding) for layout in layouts] == [
        ((3, 2), "int8", one),
        ((), "float32", two),
    ]
    assert [layout.has_array for layout in layouts] == [False, False]
    assert output_paths(SimpleNamespace(out_info=jax.ShapeDtypeStruct((2,), jnp.float32))) == ("out",)


@dataclass(frozen=True)
class Laid:
    """The parts of a Layout that layout_changes compares."""

    spec: tuple[tuple[str, ...], ...]
    shape: tuple[int, ...] = (8, 8)
    dtype: str = "float32"
    mesh: Any = "mesh"
    memory_kind: str = "device"


ROWS, COLS = (("x",), ()), ((), ("x",))


def changes(inputs: dict[str, Laid], outputs: dict[str, Laid]) -> tuple[LayoutChange, ...]:
    return layout_changes(list(inputs), list(inputs.values()), list(outputs), list(outputs.values()))  # type: ignore[arg-type]


def test_an_output_stands_for_the_input_whose_path_ends_with_the_longest_run_of_its_keys() -> None:
    inputs = {"params['w1']": Laid(ROWS), "params['w2']": Laid(ROWS), "x": Laid(ROWS)}
    assert changes(inputs, {"out[1]['w1']": Laid(COLS), "out[1]['w2']": Laid(ROWS)}) == (
        LayoutChange("out[1]['w1']", "params['w1']", ROWS, COLS, "device", "device"),
    )
    # keys are item keys and attributes alike; the longer run wins over a shorter one
    inputs = {"state.params['w']": Laid(ROWS), "grads['w']": Laid(COLS)}
    assert changes(inputs, {"out.params['w']": Laid(COLS)}) == (
        LayoutChange("out.params['w']", "state.params['w']", ROWS, COLS, "device", "device"),
    )


def test_an_output_with_no_key_in_common_or_a_tie_stands_for_no_input() -> None:
    assert changes({"x": Laid(ROWS)}, {"out": Laid(COLS)}) == ()
    assert changes({"a[0]": Laid(ROWS), "b[0]": Laid(ROWS)}, {"out[0]": Laid(COLS)}) == ()
    # the tie is between the longest runs only
    assert changes({"a['w'][0]": Laid(ROWS), "b[0]": Laid(COLS)}, {"out['w'][0]": Laid(COLS)}) == (
        LayoutChange("out['w'][0]", "a['w'][0]", ROWS, COLS, "device", "device"),
    )


def test_an_output_stands_only_for_an_input_of_its_shape_and_dtype() -> None:
    outputs = {"out['w']": Laid(COLS)}
    assert changes({"p['w']": Laid(ROWS, shape=(8, 4))}, outputs) == ()
    assert changes({"p['w']": Laid(ROWS, dtype="bfloat16")}, outputs) == ()
    # the other input of the same key but another shape leaves the one that fits unrivalled
    both = {"p['w']": Laid(ROWS, shape=(8, 4)), "q['w']": Laid(ROWS)}
    assert changes(both, outputs) == (LayoutChange("out['w']", "q['w']", ROWS, COLS, "device", "device"),)


def test_a_change_of_spec_or_memory_kind_is_told_on_a_mesh_only() -> None:
    inputs = {"p['w']": Laid(ROWS)}
    assert changes(inputs, {"out['w']": Laid(ROWS)}) == ()
    assert changes(inputs, {"out['w']": Laid(ROWS, memory_kind="pinned_host")}) == (
        LayoutChange("out['w']", "p['w']", ROWS, ROWS, "device", "pinned_host"),
    )
    assert changes(inputs, {"out['w']": Laid(COLS, mesh=None)}) == ()
    assert changes({"p['w']": Laid(ROWS, mesh=None)}, {"out['w']": Laid(COLS)}) == ()


def test_a_static_scalar_before_the_arrays_is_not_taken_for_a_later_input() -> None:
    x, y, z = np.ones((4, 2), np.float32), np.ones(3, np.int32), np.float32(1.0)
    traced = infos(((4, 2), jnp.float32), ((3,), jnp.int32), ((), jnp.float32))
    # 7.0 is a float32 scalar like z, but the trace takes x, y and z in that order
    assert dynamic_leaves([x, "relu", 7.0, y, z], traced) == [True, False, False, True, True]


def test_the_longer_run_of_keys_wins_however_the_paths_differ_before_it() -> None:
    # out['x']['y'] ends like both; state['z']['x']['y'] shares two keys, other['y'] one
    inputs = {"state['z']['x']['y']": Laid(ROWS), "other['y']": Laid(ROWS)}
    assert changes(inputs, {"out['x']['y']": Laid(COLS)}) == (
        LayoutChange("out['x']['y']", "state['z']['x']['y']", ROWS, COLS, "device", "device"),
    )
    inputs = {"p['x']['y']": Laid(ROWS), "q['y']": Laid(ROWS)}
    assert changes(inputs, {"out[1]['x']['y']": Laid(COLS)}) == (
        LayoutChange("out[1]['x']['y']", "p['x']['y']", ROWS, COLS, "device", "device"),
    )


def test_an_output_that_stands_for_no_input_leaves_the_next_outputs_checked() -> None:
    inputs = {"a[0]": Laid(ROWS), "b[0]": Laid(ROWS), "p['w']": Laid(ROWS)}
    outputs = {"out[0]": Laid(COLS), "out['w']": Laid(COLS)}  # the first ties
    assert changes(inputs, outputs) == (LayoutChange("out['w']", "p['w']", ROWS, COLS, "device", "device"),)
    outputs = {"out['v']": Laid(COLS, mesh=None), "out['w']": Laid(COLS)}  # the first is on no mesh
    inputs = {"p['v']": Laid(ROWS), "p['w']": Laid(ROWS)}
    assert changes(inputs, outputs) == (LayoutChange("out['w']", "p['w']", ROWS, COLS, "device", "device"),)


def test_leaves_without_a_sharding_of_their_own_share_one_description_where_their_types_agree() -> None:
    auto = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    rows = NamedSharding(auto, P("x", None))
    a, b = np.ones((4, 4), np.float32), np.zeros((4, 4), np.float32)
    first, second = input_layouts([a, b], [True, True], [rows, rows])
    assert first.type_str == str(jax.typeof(a)) == "float32[4,4]"  # Auto axes: the type names no sharding
    assert first is second
