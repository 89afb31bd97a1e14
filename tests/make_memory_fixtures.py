"""Regenerate the memory fixtures in tests/fixtures/memory/ from real compiles on one CPU device.

    python tests/make_memory_fixtures.py [DIR]      # DIR: elsewhere than fixtures/memory

Each program below is compiled once with XLA's dumps on, and four files are written per program:
``<name>.hlo`` (``Compiled.as_text()``), ``<name>-buffer-assignment.txt`` and ``<name>-live-range.txt``
(XLA's ``*after_optimizations-*`` dumps, as shardviz reads them) and ``<name>-memory.txt``
(``memory_analysis()``'s figures). The repository path is cut from the source tables. The
expectations in tests/test_mut_program_memory.py were counted by hand from these files: after
regenerating, count them again (the programs sit at the top of this file so that their lines stay put).
"""

from __future__ import annotations

import glob
import os
import pathlib
import sys
import tempfile

import jax
import jax.numpy as jnp


def loss(w, x):
    h = jnp.tanh(x @ w)
    return jnp.sum(h * h)


def step(w, x):
    g = jax.grad(loss)(w, x)
    return w - 0.1 * g


def scanned(w, x):
    def body(c, _):
        c = jnp.tanh(c @ w)
        return c, c.sum()

    c, sums = jax.lax.scan(body, x, None, length=3)
    return c, sums * 2


OUT = pathlib.Path(__file__).parent / "fixtures" / "memory"
ROOT = str(pathlib.Path(__file__).resolve().parents[1]) + "/"


def programs() -> list[tuple[str, object, tuple[int, ...]]]:
    # name, the jitted program (the donated step writes its result over w), donated arguments
    return [("step", step, (0,)), ("scanned", scanned, ())]


def main(out: pathlib.Path = OUT) -> None:
    out.mkdir(parents=True, exist_ok=True)
    w, x = jnp.ones((8, 8)), jnp.ones((4, 8))
    for name, fun, donated in programs():
        with tempfile.TemporaryDirectory() as folder:
            compiled = (
                jax.jit(fun, donate_argnums=donated).lower(w, x).compile(compiler_options={"xla_dump_to": folder})
            )
            for kind in ("buffer-assignment", "live-range"):
                (found,) = glob.glob(os.path.join(folder, f"*after_optimizations-{kind}.txt"))
                (out / f"{name}-{kind}.txt").write_text(pathlib.Path(found).read_text())
        (out / f"{name}.hlo").write_text(compiled.as_text().replace(ROOT, ""))
        stats = compiled.memory_analysis()
        figures = ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes", "temp_size_in_bytes")
        (out / f"{name}-memory.txt").write_text("".join(f"{f} {getattr(stats, f)}\n" for f in figures))
        print("wrote", out / f"{name}.*", file=sys.stderr)


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
