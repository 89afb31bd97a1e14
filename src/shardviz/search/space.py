"""The space a search explores: meshes that factor the devices, and each parameter's strategy on them.

A mesh has up to three named axes of ``data`` (the batch, parameters
replicated), ``fsdp`` (the batch and each parameter's largest dimension,
ZeRO-3), ``sequence`` (where the step's activations are ``[batch, seq,
...]``: their sequence dimension, parameters replicated) and ``model``
(tensor parallelism as Megatron pairs it, experts on stacked expert
weights). Each candidate is written as rules text (``GLOB =
SPEC``, the tree view's rules engine), so it can be read and reused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import jax
import numpy as np

from ..errors import ShardingError
from ..plan.hardware import Hardware
from ..tree.paths import path_segments

AXES = ("data", "fsdp", "sequence", "model")
MOST_AXES = 3  # axes longer than 1 in one mesh
BATCH_AXES = ("data", "fsdp")  # the axes that split the batch's leading dimension
EXPERT_WORDS = ("expert", "moe")
OUT_WORDS = ("out", "wo", "o_proj", "down", "w2", "fc2", "proj_out", "dense_out")


@dataclass(frozen=True)
class Leaf:
    """One array argument: its dotted path (as the rules engine matches it), shape and bytes."""

    path: str
    shape: tuple[int, ...]
    itemsize: int
    role: str  # "param", "batch" or "optimizer"
    argnum: int

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.itemsize


@dataclass(frozen=True)
class Strategy:
    """How a candidate lays out one leaf: the mesh axes of each dimension, and what it is."""

    leaf: Leaf
    dims: tuple[tuple[str, ...], ...]  # per dimension, the mesh axes splitting it
    kind: str  # "replicated", "fsdp", "tensor-in", "tensor-out", "expert", "batch", "zero-1"

    def split(self, sizes: dict[str, int]) -> int:
        return math.prod(sizes[a] for d in self.dims for a in d)


@dataclass(frozen=True)
class Plan:
    """One candidate of a search: a mesh, each leaf's strategy, and the rules text that lays it out."""

    name: str
    axes: tuple[tuple[str, int], ...]  # (axis name, size) in mesh order
    strategies: tuple[Strategy, ...]
    optimizer: str  # "with its parameter" or "zero-1"

    @property
    def sizes(self) -> dict[str, int]:
        return {**{a: 1 for a in AXES}, **dict(self.axes)}

    @property
    def rules(self) -> str:
        lines = []
        for s in self.strategies:
            if any(s.dims):
                spec = ", ".join("None" if not d else d[0] if len(d) == 1 else "(" + ", ".join(d) + ")" for d in s.dims)
                lines.append(f"{s.leaf.path} = {spec}")
        return "\n".join(lines)

    @property
    def tensor_devices(self) -> int:
        return self.sizes["model"]

    def device_bytes(self) -> int:
        """The arguments' bytes per device, from their shapes and this plan's splits."""
        sizes = self.sizes
        return sum(-(-s.leaf.nbytes // s.split(sizes)) for s in self.strategies)


def leaves_of(args: Sequence[object], params: Sequence[int], optimizer: Sequence[int]) -> list[Leaf]:
    """Every ShapeDtypeStruct (or array) of ``args`` with its dotted path and role."""
    flat, _ = jax.tree_util.tree_flatten_with_path(tuple(args))
    arrays = [(p, x) for p, x in flat if hasattr(x, "shape") and hasattr(x, "dtype")]
    texts = path_segments([p for p, _ in arrays])
    out = []
    for (_, x), segments in zip(arrays, texts):
        argnum = int(segments[0])
        role = "param" if argnum in params else "optimizer" if argnum in optimizer else "batch"
        out.append(Leaf(".".join(segments), tuple(int(d) for d in x.shape), np.dtype(x.dtype).itemsize, role, argnum))
    return out


def factorizations(devices: int, hw: Hardware) -> list[tuple[int, int, int]]:
    """(data, fsdp, model) sizes whose product is ``devices``; on GPUs the model axis stays inside a node."""
    return [(d, f, m) for d, f, _, m in mesh_sizes(devices, hw, sequence=False)]


def mesh_sizes(devices: int, hw: Hardware, *, sequence: bool) -> list[tuple[int, int, int, int]]:
    """(data, fsdp, sequence, model) sizes whose product is ``devices``, at most three of them past
    1, ``sequence`` 1 unless the step has a sequence dimension; on GPUs ``model`` stays inside a node."""
    out = []
    for model in _divisors(devices):
        if hw.switch and hw.node_size and (model > hw.node_size or hw.node_size % model):
            continue
        rest = devices // model
        for seq in _divisors(rest) if sequence else [1]:
            for fsdp in _divisors(rest // seq):
                sizes = (rest // seq // fsdp, fsdp, seq, model)
                if sum(n > 1 for n in sizes) <= MOST_AXES:
                    out.append(sizes)
    return out


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def mesh_orders(sizes: dict[str, int], hw: Hardware) -> list[tuple[tuple[str, int], ...]]:
    """The orders a mesh of these sizes is tried in: on a TPU's torus the last axis takes whole
    dimensions first, so ``model`` last and ``fsdp`` last are both tried; on GPUs the model axis is
    last (inside a node, NVLink)."""
    named = [a for a in AXES if sizes[a] > 1] or ["data"]
    orders = [tuple(named)]
    if not hw.switch and sizes["fsdp"] > 1 and sizes["model"] > 1:
        swapped = [a for a in named if a != "fsdp"]
        swapped.insert(swapped.index("model") + 1, "fsdp")
        orders.append(tuple(swapped))
    return [tuple((a, sizes[a]) for a in order) for order in orders]


def sequence_length(leaves: Sequence[Leaf]) -> int | None:
    """The step's sequence length: the second dimension of its largest batch argument of shape
    ``[batch, seq, ...]`` (three dimensions or more); None where it has none."""
    shaped = [leaf for leaf in leaves if leaf.role == "batch" and len(leaf.shape) >= 3]
    return max(shaped, key=lambda leaf: leaf.nbytes).shape[1] if shaped else None


def residual_width(leaves: Sequence[Leaf]) -> int | None:
    """The dimension the parameters' matrices meet on (d_model): the batch's feature dimension where
    a matrix has it, else the one most matrices share (the smaller on a tie: d_ff and the vocabulary
    are wider)."""
    counts: dict[int, int] = {}
    for leaf in leaves:
        if leaf.role == "param" and len(leaf.shape) >= 2:
            for d in leaf.shape[-2:]:
                counts[d] = counts.get(d, 0) + 1
    features = [leaf.shape[-1] for leaf in leaves if leaf.role == "batch" and len(leaf.shape) >= 2]
    shared = [d for d in features if d in counts]
    if shared:
        return shared[0]
    return max(counts, key=lambda d: (counts[d], -d), default=None)


def _is_out_projection(leaf: Leaf, width: int | None) -> bool:
    rows, cols = leaf.shape[-2], leaf.shape[-1]
    if rows != cols:
        return cols == width
    name = leaf.path.rsplit(".", 1)[-1].lower()
    return any(w in name for w in OUT_WORDS)


def _fsdp_dim(shape: Sequence[int], taken: set[int], size: int) -> int | None:
    """The largest dimension not taken that ``size`` divides."""
    free = [i for i in range(len(shape)) if i not in taken and shape[i] % size == 0 and shape[i] >= size]
    return max(free, key=lambda i: (shape[i], -i), default=None)


def param_strategy(leaf: Leaf, sizes: dict[str, int], width: int | None) -> Strategy:
    """A parameter on a mesh: experts over ``model`` for stacked expert weights, Megatron's split on
    ``model`` (an in-projection on its output dimension, an out-projection on its input one), FSDP
    over ``fsdp`` on the largest dimension left; replicated where nothing divides."""
    dims: list[list[str]] = [[] for _ in leaf.shape]
    kind = "replicated"
    model, fsdp = sizes["model"], sizes["fsdp"]
    taken: set[int] = set()
    if model > 1 and len(leaf.shape) >= 2:
        expert = len(leaf.shape) >= 3 and any(w in leaf.path.lower() for w in EXPERT_WORDS)
        if expert and leaf.shape[0] % model == 0:
            dims[0].append("model")
            taken.add(0)
            kind = "expert"
        elif not expert:
            out = _is_out_projection(leaf, width)
            dim = len(leaf.shape) - (2 if out else 1)
            if leaf.shape[dim] % model == 0:
                dims[dim].append("model")
                taken.add(dim)
                kind = "tensor-out" if out else "tensor-in"
    if fsdp > 1:
        largest = _fsdp_dim(leaf.shape, taken, fsdp)
        if largest is not None:
            dims[largest].append("fsdp")
            kind = "fsdp" if kind == "replicated" else kind + "+fsdp"
    return Strategy(leaf, tuple(tuple(d) for d in dims), kind)


def batch_strategy(leaf: Leaf, sizes: dict[str, int], seq_len: int | None = None) -> Strategy | None:
    """The batch's leading dimension over ``data`` and ``fsdp``, and its sequence dimension (the
    second, of length ``seq_len``) over ``sequence``; None where either does not divide."""
    axes = tuple(a for a in BATCH_AXES if sizes[a] > 1)
    split = math.prod(sizes[a] for a in axes)
    if not leaf.shape:
        return Strategy(leaf, (), "replicated")
    if leaf.shape[0] % split:
        return None
    dims: list[tuple[str, ...]] = [axes, *(() for _ in leaf.shape[1:])]
    if sizes["sequence"] > 1 and len(leaf.shape) >= 2 and leaf.shape[1] == seq_len:
        if leaf.shape[1] % sizes["sequence"]:
            return None
        dims[1] = ("sequence",)
    return Strategy(leaf, tuple(dims), "batch")


def optimizer_strategy(leaf: Leaf, params: Sequence[Strategy], sizes: dict[str, int], zero1: bool) -> Strategy:
    """An optimizer-state leaf with its parameter's layout (matched by shape and path tail), or under
    ZeRO-1 its largest dimension over ``data`` as well."""
    tail = leaf.path.rsplit(".", 1)[-1]
    same = [p for p in params if p.leaf.shape == leaf.shape]
    match = next((p for p in same if p.leaf.path.rsplit(".", 1)[-1] == tail), same[0] if same else None)
    dims = [list(d) for d in match.dims] if match is not None else [[] for _ in leaf.shape]
    kind = "with its parameter"
    if zero1 and sizes["data"] > 1 and leaf.shape:
        split = {i: math.prod(sizes[a] for a in d) for i, d in enumerate(dims)}
        free = [i for i in range(len(leaf.shape)) if (leaf.shape[i] // split[i]) % sizes["data"] == 0]
        if free:
            dim = max(free, key=lambda i: leaf.shape[i] // split[i])
            dims[dim].insert(0, "data")
            kind = "zero-1"
    return Strategy(leaf, tuple(tuple(d) for d in dims), kind)


@dataclass(frozen=True)
class Pruned:
    """A candidate dropped before tracing, and why."""

    name: str
    axes: tuple[tuple[str, int], ...]
    reason: str


def plans(leaves: Sequence[Leaf], devices: int, hw: Hardware) -> tuple[list[Plan], list[Pruned]]:
    """Every candidate of the space, and those that cannot be laid out (a batch that does not split)."""
    width = residual_width(leaves)
    has_optimizer = any(leaf.role == "optimizer" for leaf in leaves)
    out: list[Plan] = []
    dropped: list[Pruned] = []
    seq_len = sequence_length(leaves)
    for data, fsdp, seq, model in mesh_sizes(devices, hw, sequence=seq_len is not None):
        for axes in mesh_orders({"data": data, "fsdp": fsdp, "sequence": seq, "model": model}, hw):
            sizes = {**{a: 1 for a in AXES}, **dict(axes)}
            base = "-".join(f"{a}{n}" for a, n in axes)
            params = [param_strategy(leaf, sizes, width) for leaf in leaves if leaf.role == "param"]
            batches = [batch_strategy(leaf, sizes, seq_len) for leaf in leaves if leaf.role == "batch"]
            if any(b is None for b in batches):
                bad = next(leaf for leaf, b in zip([x for x in leaves if x.role == "batch"], batches) if b is None)
                over = f"{sizes['data'] * sizes['fsdp']} devices"
                if sizes["sequence"] > 1:
                    over += f" and its sequence over {sizes['sequence']}"
                dropped.append(Pruned(base, axes, f"the batch {bad.path} {list(bad.shape)} does not split over "
                                                  f"{over}"))  # fmt: skip
                continue
            variants = [False, True] if has_optimizer and sizes["data"] > 1 else [False]
            for zero1 in variants:
                opts = [optimizer_strategy(x, params, sizes, zero1) for x in leaves if x.role == "optimizer"]
                by_path = {s.leaf.path: s for s in [*params, *[b for b in batches if b], *opts]}
                ordered = tuple(by_path[x.path] for x in leaves)
                name = base + (" zero-1" if zero1 else "")
                out.append(Plan(name, axes, ordered, "zero-1" if zero1 else "with its parameter"))
    if not out and not dropped:
        raise ShardingError(f"no mesh factors {devices} devices on {hw.name}")
    return out, dropped


def logical_rules_of(
    plan: Plan, names: dict[str, tuple[str | None, ...]]
) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    """The plan as logical-axis rules (each logical name to the mesh axes its dimensions take), or
    None where no rules say it: a name on two layouts, or a split dimension with no name."""
    found: dict[str, tuple[str, ...]] = {}
    for s in plan.strategies:
        leaf_names = names.get(s.leaf.path)
        if leaf_names is None or len(leaf_names) != len(s.dims):
            if any(s.dims):
                return None
            continue
        for name, axes in zip(leaf_names, s.dims):
            if name is None:
                if axes:
                    return None
                continue
            if found.setdefault(name, axes) != axes:
                return None
    return tuple(found.items())
