"""Where a program's devices sit on the hardware: slices, their torus, and each mesh axis's place on it.

A TPU slice is a torus of chips (``topology``, e.g. ``(16, 16, 24)``);
slices are joined by the data-centre network. A mesh made with
``jax.make_mesh`` or ``jax.experimental.mesh_utils.create_device_mesh``
lays its axes onto the slice's torus: the last axis (the most
communication-intensive by JAX's convention) first, each onto whole torus
dimensions whose sizes multiply to the axis's size (as many dimensions as
possible), and, where no set of whole dimensions fits, onto parts of
dimensions (``allow_split_physical_axes``), the later axis taking the minor
part. :func:`axis_layout` makes that choice the way JAX's
``_create_device_mesh_for_nd_torus`` does (tests/test_plan_topology.py
compares them), so an axis longer than a torus dimension folds over several.

A program larger than one slice runs on several slices in mesh order:
consecutive blocks of ``slice_chips`` mesh positions, the leading mesh axes
split across slices as ``create_hybrid_device_mesh`` splits them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

# --------------------------------------------------------------------------
# slice shapes


def slice_shape(chips: int, pod: Sequence[int]) -> tuple[int, ...] | None:
    """The slice of ``chips`` chips on a pod of shape ``pod``: the most even shape (smallest largest
    dimension, then the next) with each dimension, smallest first, within the pod's. This gives
    Google's published shapes (v5p 4x4x8, 8x16x16, 16x16x24; v5e 4x8, 8x16): docs/planning.md."""
    limits = sorted(pod)
    best: tuple[int, ...] | None = None
    for dims in _factorizations(chips, len(limits)):
        if all(d <= lim for d, lim in zip(dims, limits)) and (best is None or dims[::-1] < best[::-1]):
            best = dims
    return best


def _factorizations(n: int, parts: int) -> list[tuple[int, ...]]:
    """Every way to write ``n`` as a product of ``parts`` factors, each tuple ascending."""
    if parts == 1:
        return [(n,)]
    out: list[tuple[int, ...]] = []
    for first in range(1, math.isqrt(n) + 1 if parts == 2 else n + 1):
        if n % first == 0:
            out.extend((first, *rest) for rest in _factorizations(n // first, parts - 1) if rest[0] >= first)
    return out


@dataclass(frozen=True)
class Slices:
    """How many slices a program takes, and the torus of each."""

    count: int
    topology: tuple[int, ...]

    @property
    def chips(self) -> int:
        return math.prod(self.topology)


def slices_for(devices: int, pod: Sequence[int], max_chips: int | None, topology: Sequence[int] | None) -> Slices:
    """The slices ``devices`` chips take: the named ``topology`` (repeated if the program is a
    multiple of it), else one slice if it fits in ``max_chips``, else the fewest equal slices
    that do (each of the largest size that divides the program)."""
    if topology is not None:
        per = math.prod(topology)
        if devices % per:
            raise ValueError(f"a slice of {per} chips ({'x'.join(map(str, topology))})")
        return Slices(devices // per, tuple(topology))
    limit = devices if max_chips is None else min(devices, max_chips)
    for chips in range(limit, 1, -1):
        shape = slice_shape(chips, pod) if devices % chips == 0 else None
        if shape is not None:
            return Slices(devices // chips, shape)
    return Slices(devices, (1,) * max(len(pod), 1))  # no divisor fits: a chip per slice


# --------------------------------------------------------------------------
# mesh axes onto the torus (create_device_mesh's choice)


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out + ([n] if n > 1 else [])


def _split_candidates(torus: Sequence[int], used: Sequence[int], size: int) -> set[tuple[int, ...]]:
    """Every way to spread ``size`` over what is left of the torus's dimensions, prime by prime
    (a dimension offers each prime as often as it divides what is left of it)."""
    room = [t // u for t, u in zip(torus, used)]
    primes = _prime_factors(size)
    per_prime = []
    for prime in sorted(set(primes)):
        holders = [p for p, r in enumerate(room) for _ in range(_prime_factors(r).count(prime))]
        per_prime.append((prime, set(itertools.combinations(holders, primes.count(prime)))))
    out = set()
    for pick in itertools.product(*(choices for _, choices in per_prime)):
        result = [1] * len(torus)
        for (prime, _), dims in zip(per_prime, pick):
            for p in dims:
                result[p] *= prime
        out.add(tuple(result))
    return out


def _preference(candidate: tuple[int, ...], torus: Sequence[int], used: Sequence[int]) -> tuple:
    """JAX's order of preference: whole dimensions (their product, then their count), then the
    dimensions already shared with other axes, then the larger tuple."""
    whole = [c for c, t in zip(candidate, torus) if c == t]
    shared = [c for c, u in zip(candidate, used) if u > 1]
    return (math.prod(whole), sum(1 for c in whole if c > 1), math.prod(shared), candidate)


def _split_layout(torus: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
    """Each axis, last first, on parts of the dimensions. Every axis finds a place: the primes left in
    the torus are exactly those of the axes still to place."""
    assignment = np.ones((len(torus), len(sizes)), dtype=np.int64)
    for axis in reversed(range(len(sizes))):
        used = [int(v) for v in assignment.prod(axis=1)]
        candidates = _split_candidates(torus, used, sizes[axis])
        assignment[:, axis] = max(candidates, key=lambda c: _preference(c, torus, used))
    return assignment


def _whole_layout(torus: Sequence[int], sizes: Sequence[int]) -> np.ndarray | None:
    """Each axis, last first, on the first set of whole remaining dimensions (as many as possible)
    whose sizes multiply to its size; None where some axis finds none."""
    free = list(torus)
    assignment = np.ones((len(torus), len(sizes)), dtype=np.int64)
    for axis in reversed(range(len(sizes))):
        chosen = next(
            (
                dims
                for count in range(len(free), 0, -1)
                for dims in itertools.combinations(range(len(free)), count)
                if math.prod(free[p] for p in dims) == sizes[axis]
            ),
            None,
        )
        if chosen is None:
            if sizes[axis] > 1:
                return None
            continue
        for p in chosen:
            assignment[p, axis] = torus[p]
            free[p] = 0
    return assignment


def axis_layout(torus: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
    """``assignment[p, l]``: the part of torus dimension ``p`` that logical axis ``l`` takes (1: none),
    as ``create_device_mesh(..., allow_split_physical_axes=True)`` chooses; each row multiplies to
    the dimension's size, each column to the axis's size."""
    if math.prod(torus) != math.prod(sizes):
        raise ValueError(f"a mesh of {math.prod(sizes)} devices on a torus of {math.prod(torus)}")
    whole = _whole_layout(torus, sizes)
    return whole if whole is not None else _split_layout(torus, sizes)


def physical_positions(torus: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
    """For each position of a logical mesh of ``sizes`` on ``torus``: its chip's flat index on the
    torus (an array of shape ``sizes``). A torus dimension shared by several axes gives the later
    axis its minor part, as JAX's ``_generate_logical_mesh`` does."""
    layout = axis_layout(torus, sizes)
    rows, cols = layout.shape
    chips = np.arange(math.prod(torus)).reshape(tuple(int(v) for v in layout.reshape(-1)))
    order = sorted(range(rows * cols), key=lambda i: (i % cols, i // cols))
    return chips.transpose(order).reshape(tuple(sizes))


# --------------------------------------------------------------------------
# a program's positions on slices


def per_slice_shape(mesh_sizes: Sequence[int], slices: int) -> tuple[int, ...]:
    """The part of the mesh inside one slice when ``slices`` slices take consecutive blocks of mesh
    positions: the leading axes split across slices (all of the first ones, a factor of the next).
    A split that is no box of the mesh gives the slice one flat axis."""
    left, shape = slices, list(mesh_sizes)
    for i, size in enumerate(shape):
        if left == 1:
            break
        if left % size == 0:
            shape[i], left = 1, left // size
        elif size % left == 0:
            shape[i], left = size // left, 1
        else:
            return (math.prod(mesh_sizes) // slices,)
    return tuple(shape) if left == 1 else (math.prod(mesh_sizes) // slices,)


@dataclass(frozen=True)
class Placement:
    """Each mesh position's slice and chip coordinates on the slice's torus."""

    slices: Slices
    mesh_sizes: tuple[int, ...]

    @cached_property
    def _chip_of_local(self) -> np.ndarray:
        local = per_slice_shape(self.mesh_sizes, self.slices.count)
        return physical_positions(self.slices.topology, local).reshape(-1)

    def slice_of(self, position: int) -> int:
        return position // self.slices.chips

    def coords(self, position: int) -> tuple[int, ...]:
        chip = int(self._chip_of_local[position % self.slices.chips])
        return tuple(int(c) for c in np.unravel_index(chip, self.slices.topology))
