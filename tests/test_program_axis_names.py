"""Mesh axis names XLA's compiler cannot read back abort the whole process; trace refuses them first.

The first test shows the abort on JAX itself (in a child process), so the guard
is known to be needed; once JAX stops aborting, it fails and the guard can go.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz import ShardingWidget

ODD = ("naïve", "back\\slash", "数据")


@pytest.mark.parametrize("name", ODD)
def test_jax_aborts_the_process_when_it_compiles_such_a_mesh(name):
    child = textwrap.dedent(
        f"""
        import jax, numpy as np
        jax.config.update("jax_num_cpu_devices", 4)
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ({name!r}, "y"))
        a = jax.device_put(np.zeros((4, 4), np.float32), NamedSharding(mesh, P({name!r})))
        jax.jit(lambda x: x * 2).lower(a).compile()
        print("compiled")
        """
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert done.returncode < 0 and "compiled" not in done.stdout  # killed by a signal (SIGABRT)


def odd_mesh(name: str) -> Mesh:
    return Mesh(np.array(jax.devices()[:4]).reshape(2, 2), (name, "y"))


@pytest.mark.parametrize("name", ODD)
def test_trace_refuses_the_name_instead_of_aborting(name):
    a = jax.device_put(jnp.ones((4, 4)), NamedSharding(odd_mesh(name), P(name)))
    with pytest.raises(shardviz.ShardingError, match=r"mesh axis name .* rename those axes to plain ASCII"):
        shardviz.trace(lambda x: x * 2, a)
    assert not a.is_deleted()


def test_the_name_is_found_in_out_shardings_and_constraints():
    plain = jax.device_put(jnp.ones((4, 4)), NamedSharding(odd_mesh("x"), P("x")))
    odd = NamedSharding(odd_mesh("naïve"), P(None, "naïve"))
    with pytest.raises(shardviz.ShardingError, match="naïve"):
        shardviz.trace(jax.jit(lambda x: x, out_shardings=odd), plain)
    with pytest.raises(shardviz.ShardingError, match="naïve"):
        shardviz.trace(lambda x: jax.lax.with_sharding_constraint(x * 2, odd), plain)
    with pytest.raises(shardviz.ShardingError, match="naïve"):
        shardviz.trace(jax.jit(lambda x: x * 2, in_shardings=odd), np.ones((4, 4), np.float32))


def test_plain_odd_names_still_compile():
    # Quotes, spaces and brackets are fine for XLA; only the names above are refused.
    name = 'say "hi" (a,b)'
    a = jax.device_put(jnp.ones((4, 4)), NamedSharding(odd_mesh(name), P(name)))
    prog = shardviz.trace(lambda x: jnp.sum(x), a)
    compiled = jax.jit(lambda x: jnp.sum(x)).lower(a).compile().as_text()
    assert [c.kind for c in prog.collectives] == ["all-reduce"] and " all-reduce(" in compiled
    assert prog.collectives[0].axes == (name,)


def test_a_re_mesh_onto_such_a_name_says_why_it_has_no_move():
    x = jax.device_put(jnp.ones((4, 4)), NamedSharding(odd_mesh("x"), P("x")))
    w = ShardingWidget(x)
    w.mesh = odd_mesh("naïve")
    assert w.error == "" and w.last_move is None
    assert "naïve" in w.move["error"] and "plain ASCII" in w.move["error"]
    assert w.array is not None and w.array.sharding.mesh.axis_names == ("naïve", "y")
