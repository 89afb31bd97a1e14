"""XLA's "[SPMD] Involuntary full rematerialization", caught while trace compiles and placed on its line.

The real case: ``with_sharding_constraint`` of a [12,12] float32 array laid out P('a','b') on a 4x3 mesh
(12 devices), asked for as P('b','a'). XLA cannot trade the two splits in place: it gathers the whole
array on every device (over 'b', then over 'a') and cuts the new blocks out of it.
"""

from __future__ import annotations

import json
import re

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.testing import RematerializationFound, assert_no_rematerialization, collectives_record
from shardviz.testing.snapshot_diff import compare_records

MESH = jax.make_mesh((4, 3), ("a", "b"), axis_types=(AxisType.Auto,) * 2)
Y = jax.ShapeDtypeStruct((12, 12), jnp.float32, sharding=NamedSharding(MESH, P("a", "b")))


def swapped(y):
    return jax.lax.with_sharding_constraint(y, NamedSharding(MESH, P("b", "a")))


def kept(y):
    return jax.lax.with_sharding_constraint(y * 2, NamedSharding(MESH, P("a", "b")))


SWAP_LINE = swapped.__code__.co_firstlineno + 1


@pytest.fixture(scope="module")
def prog():
    return shardviz.trace(swapped, Y)


def test_the_whole_array_is_gathered_on_every_device_in_jaxs_own_module():
    """The premise, from JAX's compiled module alone: an all-gather whose result is the whole f32[12,12]."""
    text = jax.jit(swapped).lower(Y).compile().as_text()
    assert re.search(r"= f32\[12,12\]\{[\d,]*\} all-gather\(", text)


def swapped_bf16_product(y):
    z = jnp.sin(y) * 2  # XLA:CPU widens this to f32 and gathers the f32 copy
    return jax.lax.with_sharding_constraint(z, NamedSharding(MESH, P("b", "a")))


def test_a_bf16_rematerialization_counts_the_bytes_a_device_moves_in_bf16():
    """XLA:CPU gathers a bf16 array as f32: the module's all-gathers are f32[3,12] and f32[12,12]. A TPU or
    GPU moves bf16, and the rematerialization's bytes are counted so."""
    y = jax.ShapeDtypeStruct((12, 12), jnp.bfloat16, sharding=NamedSharding(MESH, P("a", "b")))
    text = jax.jit(swapped_bf16_product).lower(y).compile().as_text()
    assert re.search(r"= f32\[12,12\]\{[\d,]*\} all-gather\(", text)  # the premise: the CPU module's f32 gather
    prog = shardviz.trace(swapped_bf16_product, y)
    (r,) = prog.rematerializations
    assert r.dtype == "bf16" and r.shape == (12, 12)
    assert r.full_bytes == 12 * 12 * 2  # the whole bf16 array: 288 B
    # By hand, 2 B an element: each device holds 3x4; the gather over 'b' (3) makes 3x12 = 72 B and sends 2/3
    # of it (48 B); the gather over 'a' (4) makes the whole 288 B and sends 3/4 of it (216 B). In f32: 528 B.
    assert r.wire_bytes == 48 + 216
    assert sorted(c.wire_bytes for c in prog.collectives) == [48, 216]
    assert {c.on_device.dtype for c in prog.collectives} == {"bfloat16"}
    assert sorted(c.on_cpu.wire_bytes for c in prog.collectives) == [96, 432]  # the module's own f32 bytes


def test_the_rematerialization_is_caught_with_both_specs_its_line_and_bytes(prog):
    (r,) = prog.rematerializations
    assert r.before == (("a",), ("b",)) and r.after == (("b",), ("a",))
    assert r.shape == (12, 12) and r.dtype == "f32"
    assert r.full_bytes == 12 * 12 * 4  # the whole array each device holds: 576 B
    # By hand: each device holds 3x4; the gather over 'b' (3 devices) makes 3x12 = 144 B, sending 2/3 of
    # it (96 B); the gather over 'a' (4) makes the whole 12x12 = 576 B, sending 3/4 of it (432 B).
    assert r.wire_bytes == 96 + 432
    assert (r.source_file, r.source_line) == (__file__, SWAP_LINE)
    assert r.label == "y"
    assert "Involuntary full rematerialization" in r.message
    assert r.text.startswith(f"involuntary full rematerialization at test_program_remat.py:{SWAP_LINE}")


def test_xlas_warning_still_reaches_standard_error(capfd):
    shardviz.trace(swapped, Y)
    assert "Involuntary full rematerialization" in capfd.readouterr().err


def test_a_constraint_xla_can_meet_in_place_is_no_rematerialization():
    assert shardviz.trace(kept, Y).rematerializations == ()


def test_the_report_flags_it(prog):
    report = prog.render(width=240)
    assert "involuntary full rematerialization (XLA's SPMD warning): 1" in report
    assert "from P('a', 'b') to P('b', 'a')" in report


def test_the_assertion_fails_naming_the_line_the_array_and_both_specs(prog):
    with pytest.raises(RematerializationFound) as caught:
        assert_no_rematerialization(prog)
    message = str(caught.value)
    assert f"test_program_remat.py:{SWAP_LINE}" in message
    assert "y [12,12] from P('a', 'b') to P('b', 'a')" in message
    assert "576 B" in message and "528 B" in message
    assert assert_no_rematerialization(shardviz.trace(kept, Y)).name == "kept"


def test_a_snapshot_records_it_and_a_new_one_fails(prog, tmp_path):
    record = collectives_record(prog, base=tmp_path)
    (entry,) = record["rematerializations"]
    assert entry["shape"] == "f32[12,12]"
    assert (entry["from"], entry["to"], entry["bytes"]) == ("P('a', 'b')", "P('b', 'a')", 576)
    assert entry["where"].endswith(f"test_program_remat.py:{SWAP_LINE}")
    json.dumps(record)  # the snapshot file is JSON
    before = dict(record, rematerializations=[])
    changes = compare_records(before, record).failing(strict=False)
    assert len(changes) == 1 and "rematerialization is new" in changes[0].text
    assert compare_records(record, before).failing(strict=False) == []  # gone: passes (less traffic)


def test_a_what_if_childs_rematerialization_is_caught_there_and_its_fix_traced_there():
    """The same constraint on a what-if 4x3 mesh, compiled in a child with 12 simulated devices: the
    child catches XLA's warning, and the fix (the input laid out as wanted) is traced in a child too."""
    from jax.sharding import AbstractMesh

    from plan_functions import swapped_blocks

    mesh = AbstractMesh((4, 3), ("a", "b"), axis_types=(AxisType.Auto,) * 2)
    y = jax.ShapeDtypeStruct((12, 12), jnp.float32, sharding=NamedSharding(mesh, P("a", "b")))
    prog = shardviz.trace(swapped_blocks, y, mesh=mesh)
    assert prog.whatif is not None
    (r,) = prog.rematerializations
    assert (r.before, r.after, r.full_bytes, r.wire_bytes) == ((("a",), ("b",)), (("b",), ("a",)), 576, 528)
    fixes = prog.rematerialization_fixes(0)
    assert fixes and fixes[0].removed and fixes[0].program.whatif is not None
    # The constraint in steps is rebuilt in a child too: through P(None, ('b', 'a')) one axis moves at a time
    # (the child's module has all-to-alls and a collective-permute), and no whole array is gathered.
    (steps,) = [f for f in fixes if f.kind == "constraint"]
    assert steps.removed and steps.program.whatif is not None and steps.program.rematerializations == ()
    assert "all-gather" not in {c.kind for c in steps.program.collectives}
    assert steps.code.startswith("y = jax.lax.with_sharding_constraint(y, NamedSharding(mesh, P(None, ('b', 'a'))))")
