"""The Flax NNX GSPMD guide's model and its Adam training step, as the guide writes them, for the tests
that trace it (the program view's collectives, the memory a device holds)."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def guide_step() -> SimpleNamespace:
    """The guide's 2x4 Auto mesh, its ``DotReluDot`` (depth 1024), an ``nnx.Optimizer`` with Adam and the
    step ``train_step(state, x, y)``, with its arguments laid out: trace it under ``jax.set_mesh(mesh)``."""
    nnx = pytest.importorskip("flax.nnx")
    import optax

    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2, devices=jax.devices()[:8])

    class DotReluDot(nnx.Module):
        def __init__(self, depth: int, rngs: nnx.Rngs):
            init_fn = nnx.initializers.lecun_normal()
            self.dot1 = nnx.Linear(
                depth, depth, kernel_init=nnx.with_partitioning(init_fn, (None, "model")), use_bias=False, rngs=rngs
            )
            self.w2 = nnx.Param(init_fn(rngs.params(), (depth, depth)), sharding=("model", None))

        def __call__(self, x):
            y = self.dot1(x)
            y = jax.nn.relu(y)
            y = jax.lax.with_sharding_constraint(y, P("data", "model"))
            z = jnp.dot(y, self.w2[...])
            return z

    @nnx.jit
    def create_sharded_model():
        model = DotReluDot(1024, rngs=nnx.Rngs(0))
        state = nnx.state(model)
        nnx.update(model, jax.lax.with_sharding_constraint(state, nnx.get_partition_spec(state)))
        return model

    with jax.set_mesh(mesh):
        model = create_sharded_model()
        optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
        data = NamedSharding(mesh, P("data", None))
        x = jax.device_put(jnp.ones((8, 1024)), data)
        y = jax.device_put(jnp.ones((8, 1024)), data)
        graphdef, state = nnx.split((model, optimizer))

    def train_step(state, x, y):
        model, optimizer = nnx.merge(graphdef, state)

        def loss_fn(model):
            return jnp.mean((model(x) - y) ** 2)

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss, nnx.state((model, optimizer))

    return SimpleNamespace(mesh=mesh, model_class=DotReluDot, train_step=train_step, state=state, x=x, y=y)
