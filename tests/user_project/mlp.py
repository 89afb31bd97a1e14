"""A small MLP trained with FSDP and tensor parallelism on a ("fsdp", "tp") mesh.

Every weight is stored split over ``fsdp`` and gathered for the step; the
hidden dimension is split over ``tp``, so the second matmul of each block
all-reduces over ``tp``. The batch is split over ``fsdp`` (data parallelism).
"""

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, reshard
from jax.sharding import PartitionSpec as P

LAYERS = 2
D_MODEL = 256
D_HIDDEN = 1024
BATCH = 64

# How each parameter is stored, in shardviz's rules (the model view's grammar).
RULES = """
layers.*.w_in = fsdp, tp
layers.*.b_in = tp
layers.*.w_out = tp, fsdp
"""

SPECS = {"w_in": P("fsdp", "tp"), "b_in": P("tp"), "w_out": P("tp", "fsdp")}


def init(key, mesh, layers=LAYERS):
    keys = jax.random.split(key, layers)
    params = {"layers": [init_layer(k) for k in keys]}
    shardings = {"layers": [{name: NamedSharding(mesh, spec) for name, spec in SPECS.items()}] * layers}
    return jax.device_put(params, shardings)


def init_layer(key):
    k_in, k_out = jax.random.split(key)
    return {
        "w_in": jax.random.normal(k_in, (D_MODEL, D_HIDDEN)) * 0.02,
        "b_in": jnp.zeros((D_HIDDEN,)),
        "w_out": jax.random.normal(k_out, (D_HIDDEN, D_MODEL)) * 0.02,
    }


def batch(mesh):
    data = NamedSharding(mesh, P("fsdp", None))  # the batch split over fsdp
    x = jax.device_put(jnp.ones((BATCH, D_MODEL)), data)
    y = jax.device_put(jnp.zeros((BATCH, D_MODEL)), data)
    return x, y


def mlp_block(layer, x):
    w_in = reshard(layer["w_in"], P(None, "tp"))  # FSDP: gather the weight over fsdp
    w_out = reshard(layer["w_out"], P("tp", None))
    h = jax.nn.relu(x @ w_in + layer["b_in"])
    return jnp.matmul(h, w_out, out_sharding=jax.typeof(x).sharding)  # a partial sum over tp: all-reduce


def forward(params, x):
    for i, layer in enumerate(params["layers"]):
        with jax.named_scope(f"layer_{i}"):
            x = x + mlp_block(layer, x)
    return x


def loss_fn(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    params = jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads)
    return params, loss
