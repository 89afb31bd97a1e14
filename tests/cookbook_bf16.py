"""The JAX training cookbook's step in bfloat16, at the cookbook's own sizes, for the tests.

Written for these tests after docs/the-training-cookbook.py in jax-ml/jax
(the figures are the cookbook's: 4 layers, model width 512, MLP 2048, 8 heads
of 128, a vocabulary of 256, sequences of 128, 16 per batch, weights in
bfloat16 stored FSDP over one ``fsdp`` axis of 8, Explicit axes, train state
in ``Ref``s written by a hand-written Adam). Module-level, so a what-if child
can import it by reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


@jax.tree_util.register_static
@dataclass(frozen=True)
class Sizes:
    layers: int = 4
    width: int = 512
    mlp: int = 2048
    heads: int = 8
    head: int = 128
    vocab: int = 256
    seq: int = 128
    batch: int = 16
    lr: float = 1e-4
    b1: float = 0.9
    b2: float = 0.999


# Each weight's stored spec, by name: FSDP over the one axis, as the cookbook's Config says.
SPECS = {
    "embedding": P(None, None),
    "pos_embed": P(None, None),
    "qkv": P(None, "fsdp", None, None),
    "att_out": P("fsdp", None, None),
    "mlp_in": P("fsdp", None),
    "mlp_out": P(None, "fsdp"),
    "out_kernel": P("fsdp", None),
}
ACT_SEQ = P("fsdp", None, None)
ACT_ATT = P("fsdp", None, None, None, None)


def shapes(s: Sizes) -> dict:
    """Each weight's global shape, in the train state's tree."""
    layer = {
        "qkv": (3, s.width, s.heads, s.head),
        "att_out": (s.heads, s.head, s.width),
        "mlp_in": (s.width, s.mlp),
        "mlp_out": (s.mlp, s.width),
    }
    return {
        "embedding": (s.vocab, s.width),
        "pos_embed": (s.seq, s.width),
        "layers": [dict(layer) for _ in range(s.layers)],
        "out_kernel": (s.width, s.vocab),
    }


def specs(s: Sizes) -> dict:
    return {
        "embedding": SPECS["embedding"],
        "pos_embed": SPECS["pos_embed"],
        "layers": [{k: SPECS[k] for k in ("qkv", "att_out", "mlp_in", "mlp_out")} for _ in range(s.layers)],
        "out_kernel": SPECS["out_kernel"],
    }


def rms(x):
    return x * jax.lax.rsqrt(jnp.mean(x**2, axis=-1, keepdims=True) + 1e-6)


def apply(s: Sizes, params: dict, tokens):
    h = params["embedding"].at[tokens].get(out_sharding=ACT_SEQ)
    h = h + params["pos_embed"]
    for blk in params["layers"]:
        skip = h
        qkv = jnp.einsum("bsd,cdkh->bsckh", h, blk["qkv"], out_sharding=ACT_ATT)
        att = jax.nn.dot_product_attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], is_causal=True)
        h = rms(jnp.einsum("bskh,khd->bsd", att, blk["att_out"], out_sharding=ACT_SEQ) + skip)
        skip = h
        up = jax.nn.gelu(jnp.einsum("bsd,dh->bsh", h, blk["mlp_in"], out_sharding=ACT_SEQ))
        h = rms(jnp.einsum("bsh,hd->bsd", up, blk["mlp_out"], out_sharding=ACT_SEQ) + skip)
    return jnp.einsum("bsd,dl->bsl", h, params["out_kernel"], out_sharding=ACT_SEQ)


def init_params(s: Sizes) -> dict:
    """Weights drawn on their stored specs (He-normal; the position table starts at zero)."""
    keys = iter(jax.random.split(jax.random.key(0), 4 + 4 * s.layers))
    he = jax.nn.initializers.he_normal(1, 1)
    spec_of = specs(s)
    shape_of = shapes(s)

    def draw(shape, spec):
        return he(next(keys), shape, jnp.bfloat16, spec)

    params = jax.tree.map(draw, shape_of, spec_of, is_leaf=lambda x: isinstance(x, tuple))
    params["pos_embed"] = jnp.zeros(shape_of["pos_embed"], jnp.bfloat16, out_sharding=spec_of["pos_embed"])
    return params


@jax.jit
def init_train_state(s: Sizes) -> dict:
    """Parameters and, per parameter, Adam's moments in its dtype and a step count (``jnp.array(0)``)."""
    params = init_params(s)
    opt = jax.tree.map(lambda p: {"mu": jnp.zeros_like(p), "nu": jnp.zeros_like(p), "count": jnp.array(0)}, params)
    return {"params": params, "opt": opt}


def adam(s: Sizes, param, grad, state: dict) -> None:
    state["mu"][...] = s.b1 * state["mu"][...] + (1 - s.b1) * grad
    state["nu"][...] = s.b2 * state["nu"][...] + (1 - s.b2) * grad**2
    state["count"][...] += 1
    mu_hat = state["mu"][...] / (1 - s.b1 ** state["count"][...])
    nu_hat = state["nu"][...] / (1 - s.b2 ** state["count"][...])
    param[...] -= s.lr * mu_hat / (jnp.sqrt(nu_hat) + 1e-8)


def train_step(s: Sizes, state: dict, batch: dict) -> dict:
    def loss_fn(params):
        logits = apply(s, params, batch["observed_ids"])
        labels = jax.nn.one_hot(batch["target_ids"], s.vocab)
        return -(labels * jax.nn.log_softmax(logits)).sum(axis=-1).mean()

    params = jax.tree.map(jax.ref.get, state["params"])
    loss, grads = jax.value_and_grad(loss_fn)(params)
    is_moments = lambda x: isinstance(x, dict) and "mu" in x  # noqa: E731
    jax.tree.map(partial(adam, s), state["params"], grads, state["opt"], is_leaf=is_moments)
    return {"train_loss": loss}


jitted_train_step = jax.jit(train_step)


def sgd_step(s: Sizes, params: dict, batch: dict) -> dict:
    """The same model's step written without Refs: the new weights returned (plain SGD)."""

    def loss_fn(params):
        logits = apply(s, params, batch["observed_ids"])
        labels = jax.nn.one_hot(batch["target_ids"], s.vocab)
        return -(labels * jax.nn.log_softmax(logits)).sum(axis=-1).mean()

    grads = jax.grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - s.lr * g, params, grads)


def abstract_state(s: Sizes, mesh) -> dict:
    """The train state on ``mesh`` (an AbstractMesh will do) as Refs with no data: the init
    function's shapes under ``use_abstract_mesh``, each made a Ref (``is_ref=True``)."""
    with jax.sharding.use_abstract_mesh(getattr(mesh, "abstract_mesh", mesh)):
        state = jax.eval_shape(init_train_state, s)
    return jax.tree.map(lambda a: a.update(is_ref=True), state)


def abstract_batch(s: Sizes, mesh) -> dict:
    ids = jax.ShapeDtypeStruct((s.batch, s.seq), jnp.int32, sharding=NamedSharding(mesh, P("fsdp", None)))
    return {"observed_ids": ids, "target_ids": ids}
