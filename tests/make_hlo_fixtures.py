"""Regenerate the HLO fixtures in tests/fixtures/hlo/ from real compiles.

    python tests/make_hlo_fixtures.py [DIR]      # 8 simulated CPU devices; DIR: elsewhere than fixtures/hlo

Each program below is compiled once on a 2x4 mesh (x, y) of Auto axes and
its compiled text (``Compiled.as_text()``) written to ``<name>.hlo``;
``before_partitioning.hlo`` is the module XLA dumps just before SPMD
partitioning. The repository path is cut from the source tables so the
files read the same on any machine. The expectations in
tests/test_program_hlo.py were read from these files by hand: after
regenerating, read them again (the programs sit at the top of this file so
that their line numbers stay put).
"""

from __future__ import annotations

import glob
import os
import pathlib
import sys
import tempfile

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def matmul_contracting(a, b):
    c = a @ b  # a contracting dimension split over y: an all-reduce over y
    return jnp.tanh(c).sum(axis=0)  # summing away x: an all-reduce over x


def scan_grad(ws, x):
    def layer(h, w):
        return jnp.tanh(h @ w), None

    def loss(ws, x):
        return jax.lax.scan(layer, x, ws)[0].sum()

    return jax.grad(loss)(ws, x)


def reshard_transpose(a):
    return jax.lax.with_sharding_constraint(a * 2, NamedSharding(MESH, P("y", "x")))


def shard_map_collectives(a):
    def inner(b):
        s = jax.lax.psum(b, "x")
        r = jax.lax.psum_scatter(b, "y", scatter_dimension=1, tiled=True)
        p = jax.lax.ppermute(b, "y", [(i, (i + 1) % 4) for i in range(4)])
        t = jax.lax.all_to_all(b, "y", 0, 0, tiled=True)
        g = jax.lax.all_gather(b, "x", tiled=True)
        q = jax.lax.psum(b, ("x", "y"))
        return s, r, p, t, g, q

    return jax.shard_map(inner, mesh=MESH, in_specs=P("x", "y"), out_specs=P("x", "y"), check_vma=False)(a)


def combined_grad(params, x):
    def loss(p, x):
        return ((jnp.tanh(x @ p["w1"]) @ p["w2"] + p["b"]) ** 2).sum()

    return jax.grad(loss)(params, x)


def nested_scan(ws, x):
    def outer(c, wo):
        def inner(h, w):
            return jnp.tanh(h @ w), None

        return jax.lax.scan(inner, c, wo)[0], None

    return jax.lax.scan(outer, x, ws)[0]


def cond_branches(x, w, flag):
    return jax.lax.cond(flag, lambda: (x @ w).sum(), lambda: x.sum())


def fori_unknown(x, w, n):
    return jax.lax.fori_loop(0, n, lambda i, h: jnp.tanh(h @ w), x)


MESH = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
OUT = pathlib.Path(__file__).with_name("fixtures") / "hlo"
ROOT = str(pathlib.Path(__file__).resolve().parent.parent) + os.sep


def put(shape, spec):
    return jax.device_put(jnp.ones(shape), NamedSharding(MESH, spec))


def programs():
    rep = P()
    yield "matmul_contracting", matmul_contracting, (put((16, 32), P("x", "y")), put((32, 8), P("y", None)))
    yield "scan_grad", scan_grad, (put((6, 32, 32), P(None, "y", None)), put((16, 32), P("x", None)))
    yield "reshard_transpose", reshard_transpose, (put((16, 32), P("x", "y")),)
    yield "shard_map_collectives", shard_map_collectives, (put((16, 32), P("x", "y")),)
    params = {"w1": put((8, 8), rep), "w2": put((8, 4), rep), "b": put((4,), rep)}
    yield "combined_grad", combined_grad, (params, put((16, 8), P(("x", "y"), None)))
    yield "nested_scan", nested_scan, (put((3, 5, 32, 32), P(None, None, "y", None)), put((16, 32), P("x", None)))
    yield "cond_branches", cond_branches, (put((16, 32), P("x", None)), put((32, 8), P("y", None)), True)
    yield "fori_unknown", fori_unknown, (put((16, 32), P("x", None)), put((32, 32), P("y", None)), 5)


# CPU compiles emit no async pairs: this module is written by hand in the
# shape GPU compiles print them, then read and printed by XLA's own parser
# and printer, so the fixture is in XLA's syntax (async-start/-done wrapping
# a reduce-scatter comes back as reduce-scatter-start/-done).
ASYNC_MODULE = """\
HloModule async_collectives, entry_computation_layout={(f32[8]{0})->(f32[32]{0}, f32[8]{0}, f32[8]{0}, f32[2]{0})}, \
num_partitions=4

FileNames
1 "model.py"

FunctionNames
1 "step"

FileLocations
1 {file_name_id=1 function_name_id=1 line=10 end_line=10 column=4 end_column=4}
2 {file_name_id=1 function_name_id=1 line=11 end_line=11 column=4 end_column=4}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=1}

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(%x, %y)
}

%async_reduce_scatter (p: f32[8]) -> f32[2] {
  %p = f32[8]{0} parameter(0)
  ROOT %rs = f32[2]{0} reduce-scatter(%p), channel_id=4, replica_groups=[1,4]<=[4], use_global_device_ids=true, \
dimensions={0}, to_apply=%add, metadata={op_name="jit(step)/reduce_scatter" stack_frame_id=2}
}

ENTRY %main (param: f32[8]) -> (f32[32], f32[8], f32[8], f32[2]) {
  %param = f32[8]{0} parameter(0)
  %all-gather-start = (f32[8]{0}, f32[32]{0}) all-gather-start(%param), channel_id=1, replica_groups={{0,1,2,3}}, \
dimensions={0}, use_global_device_ids=true, metadata={op_name="jit(step)/all_gather" stack_frame_id=1}
  %all-gather-done = f32[32]{0} all-gather-done(%all-gather-start)
  %all-reduce-start = f32[8]{0} all-reduce-start(%param), channel_id=2, replica_groups={{0,1},{2,3}}, \
use_global_device_ids=true, to_apply=%add
  %all-reduce-done = f32[8]{0} all-reduce-done(%all-reduce-start)
  %collective-permute-start = (f32[8]{0}, f32[8]{0}, u32[], u32[]) collective-permute-start(%param), channel_id=3, \
source_target_pairs={{0,1},{1,0},{2,3},{3,2}}
  %collective-permute-done = f32[8]{0} collective-permute-done(%collective-permute-start)
  %reduce-scatter-start = ((f32[8]{0}), f32[2]{0}) async-start(%param), calls=%async_reduce_scatter
  %reduce-scatter-done = f32[2]{0} async-done(%reduce-scatter-start), calls=%async_reduce_scatter
  ROOT %out = (f32[32]{0}, f32[8]{0}, f32[8]{0}, f32[2]{0}) tuple(%all-gather-done, %all-reduce-done, \
%collective-permute-done, %reduce-scatter-done)
}
"""


# A -start whose -done is not in the module (a module cut before the -done, or one read
# mid-pipeline): the -start's tuple is (operands..., results...), flat for one operand and
# nested for several, and the result is read from its second half.
ASYNC_START_ONLY_MODULE = """\
HloModule async_start_only, num_partitions=4

ENTRY %main (a: f32[8], b: f32[4]) -> ((f32[8], f32[32]), ((f32[8], f32[4]), (f32[32], f32[16])), \
(f32[8], f32[8], u32[], u32[])) {
  %a = f32[8]{0} parameter(0)
  %b = f32[4]{0} parameter(1)
  %all-gather-start = (f32[8]{0}, f32[32]{0}) all-gather-start(%a), channel_id=1, replica_groups={{0,1,2,3}}, \
dimensions={0}, use_global_device_ids=true
  %all-gather-start.1 = ((f32[8]{0}, f32[4]{0}), (f32[32]{0}, f32[16]{0})) all-gather-start(%a, %b), channel_id=2, \
replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true
  %collective-permute-start = (f32[8]{0}, f32[8]{0}, u32[], u32[]) collective-permute-start(%a), channel_id=3, \
source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  ROOT %out = ((f32[8]{0}, f32[32]{0}), ((f32[8]{0}, f32[4]{0}), (f32[32]{0}, f32[16]{0})), \
(f32[8]{0}, f32[8]{0}, u32[], u32[])) tuple(%all-gather-start, %all-gather-start.1, %collective-permute-start)
}
"""


def portable(text: str) -> str:
    return text.replace(ROOT, "")


def main(out: pathlib.Path = OUT) -> None:
    assert jax.device_count() == 8, jax.device_count()
    out.mkdir(parents=True, exist_ok=True)
    for name, fun, args in programs():
        compiled = jax.jit(fun).lower(*args).compile()
        (out / f"{name}.hlo").write_text(portable(compiled.as_text()))
        print("wrote", out / f"{name}.hlo", file=sys.stderr)
    # The module just before SPMD partitioning: shardings on every instruction.
    with tempfile.TemporaryDirectory() as folder:
        lowered = jax.jit(scan_grad).lower(put((6, 32, 32), P(None, "y", None)), put((16, 32), P("x", None)))
        lowered.compile(compiler_options={"xla_dump_to": folder, "xla_dump_hlo_pass_re": "spmd-partitioning"})
        (found,) = glob.glob(os.path.join(folder, "*before_spmd-partitioning.txt"))
        (out / "before_partitioning.hlo").write_text(portable(pathlib.Path(found).read_text()))
    print("wrote", out / "before_partitioning.hlo", file=sys.stderr)
    from jaxlib import _hlo

    for name, text in (("async_collectives", ASYNC_MODULE), ("async_start_only", ASYNC_START_ONLY_MODULE)):
        (out / f"{name}.hlo").write_text(_hlo.hlo_module_from_text(text).to_string())
        print("wrote", out / f"{name}.hlo", file=sys.stderr)


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
