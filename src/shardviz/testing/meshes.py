"""Meshes for tests: built from a shape and axis names, or the test skipped where the devices are too few."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, Mesh

from ..errors import ShardingError

__all__ = ["entered", "mesh_or_skip", "too_few_devices"]

AXIS_TYPES = {"explicit": AxisType.Explicit, "auto": AxisType.Auto}


def too_few_devices(needed: int, have: int) -> str:
    """Why a test is skipped, and how to get more devices."""
    return (
        f"the mesh needs {needed} devices and this process has {have}: simulate more on CPU in conftest.py, "
        f"before JAX starts, with jax.config.update('jax_num_cpu_devices', {needed}) "
        f"(or run with XLA_FLAGS=--xla_force_host_platform_device_count={needed})"
    )


def mesh_or_skip(shape: Sequence[int] | int, names: Sequence[str] | str, *, axis_types: str = "explicit") -> Mesh:
    """A mesh of the first devices, ``shape`` by ``names``; skips the calling test (pytest's skip) when the
    process has fewer devices than the mesh needs."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    names = (names,) if isinstance(names, str) else tuple(names)
    if len(shape) != len(names) or not all(isinstance(n, int) and n > 0 for n in shape):
        raise ShardingError(
            f"a test mesh is a shape of positive sizes and one name per axis, e.g. ((4, 2), ('data', 'model')), "
            f"not {shape!r} and {names!r}"
        )
    kind = AXIS_TYPES.get(str(axis_types).lower())
    if kind is None:
        raise ShardingError(f"axis_types is 'explicit' or 'auto', not {axis_types!r}")
    needed, have = math.prod(shape), jax.device_count()
    if needed > have:
        import pytest  # only a test asks for a mesh it may skip

        pytest.skip(too_few_devices(needed, have))
    devices = np.asarray(jax.devices()[:needed]).reshape(shape)
    return Mesh(devices, names, axis_types=(kind,) * len(shape))


@contextlib.contextmanager
def entered(mesh: Mesh) -> Iterator[Any]:
    """``jax.set_mesh(mesh)`` for the block, as training code written for a mesh context expects."""
    with jax.set_mesh(mesh):
        yield mesh
