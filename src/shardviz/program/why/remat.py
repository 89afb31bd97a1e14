"""XLA's "[SPMD] Involuntary full rematerialization", caught while ``trace`` compiles, and placed.

XLA's SPMD partitioner logs the warning (through absl, to the process's
standard error, from C++) when it cannot move an array from one sharding to
another efficiently: every device then gathers the whole array and cuts its
new block out of it. The warning names an HLO operation and two shardings,
but no line of the user's and no spec. :func:`captured_stderr` catches what
the compile writes to file descriptor 2 (and hands it on to the real
standard error, so nothing the user would see is lost);
:func:`rematerializations` reads each warning, turns both shardings into
specs on the program's mesh, counts the whole array's bytes and ties it to
the user's line through the collective that gathers the whole array.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .. import hlo
from ..hlo.scanning import element_bits
from ..lines.frames import user_frame
from ..model import Collective, SourceLocation
from ..values import axes as _axes
from .reasons import Rematerialization, Spec

_WARNING = re.compile(
    r"\[SPMD\] Involuntary full rematerialization\. The compiler cannot go from sharding (?P<before>.+?) to "
    r"(?P<after>.+?) efficiently for HLO operation (?P<op>.+?)\. As the last resort"
)
_OPERATION = re.compile(r"%(?P<name>[\w.\-]+) = (?P<dtype>[a-z][a-z0-9]*)\[(?P<dims>[\d,]*)\]")
_OP_NAME = re.compile(r'op_name="(?P<op_name>[^"]*)"')
_FRAME = re.compile(r"stack_frame_id=(?P<id>\d+)")
_SOURCE = re.compile(r'source_file="(?P<file>[^"]*)" source_line=(?P<line>\d+)')


@contextlib.contextmanager
def captured_stderr() -> Iterator[list[str]]:
    """What the process writes to file descriptor 2 meanwhile (C++ logging included), appended to
    the list yielded once the block ends; it is written on to the real standard error too."""
    with _LOCK:
        busy, _ACTIVE[0] = _ACTIVE[0], True
    if busy:  # another thread's compile holds descriptor 2: its capture gets this one's warnings too
        yield []
        return
    try:
        with _descriptor_2_caught() as caught:
            yield caught
    finally:
        with _LOCK:
            _ACTIVE[0] = False


_LOCK = threading.Lock()
_ACTIVE = [False]


@contextlib.contextmanager
def _descriptor_2_caught() -> Iterator[list[str]]:
    caught: list[str] = []
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no descriptor 2 to borrow: nothing is caught
        yield caught
        return
    spool = _spool()
    try:
        os.dup2(spool, 2)
        yield caught
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        raw = b""
        if os.lseek(spool, 0, os.SEEK_END):  # XLA wrote something: read it back (most compiles write nothing)
            os.lseek(spool, 0, os.SEEK_SET)
            raw = b"".join(iter(lambda: os.read(spool, 1 << 16), b""))
        os.close(spool)
        if raw:
            with contextlib.suppress(OSError):
                os.write(2, raw)
        caught.append(raw.decode("utf-8", errors="replace"))


def _spool() -> int:
    """A file descriptor of an unnamed file: in memory where Linux has memfd_create, else a temporary file."""
    with contextlib.suppress(AttributeError, OSError):
        return os.memfd_create("shardviz-stderr", getattr(os, "MFD_CLOEXEC", 0))
    temporary = tempfile.TemporaryFile()
    return os.dup(temporary.fileno())  # the file lives on through the duplicate once ``temporary`` is closed


def rematerializations(
    log: str,
    module: hlo.Module,
    collectives: Sequence[Collective],
    mesh: Any,
    to_mesh: np.ndarray | None,
) -> tuple[Rematerialization, ...]:
    """Every warning in ``log``, read and placed (see the module's doc)."""
    out = []
    seen: set[str] = set()
    for match in _WARNING.finditer(log):
        if match.group(0) in seen:  # XLA may log one twice (its passes rerun the partitioner's checks)
            continue
        seen.add(match.group(0))
        found = _one(match, module, collectives, mesh, to_mesh)
        if found is not None:
            out.append(found)
    return tuple(out)


def _one(
    match: re.Match[str],
    module: hlo.Module,
    collectives: Sequence[Collective],
    mesh: Any,
    to_mesh: np.ndarray | None,
) -> Rematerialization | None:
    operation = match.group("op")
    shape_match = _OPERATION.search(operation)
    if shape_match is None:
        return None
    dtype = shape_match.group("dtype")
    local = tuple(int(d) for d in shape_match.group("dims").split(",") if d)
    try:
        before = hlo.parse_sharding(match.group("before"))
        after = hlo.parse_sharding(match.group("after"))
    except hlo.HloParseError:
        return None
    tiles = before.data_tile_dims if before.kind == "tiled" else ()
    shape = tuple(n * t for n, t in zip(local, tiles)) if len(tiles) == len(local) else local
    bits = element_bits(dtype)
    full_bytes = int(np.prod(shape, dtype=np.int64)) * bits // 8 if bits is not None else 0
    gathers = _whole_gathers(collectives, shape)
    source = _metadata_source(operation, module)
    if source is None and gathers:
        source = gathers[0].source
    related = [c for c in collectives if gathers and c.source == gathers[0].source and c.op_name == gathers[0].op_name]
    named = _OP_NAME.search(operation)
    op_name = named.group("op_name") if named else ""
    # a parameter's op_name is the argument's name; an operation's is JAX's path (jit(f)/dot_general)
    label = op_name if op_name and "/" not in op_name else ""
    if not label and gathers and gathers[0].why is not None and gathers[0].why.operands:
        why = gathers[0].why
        label = why.operands[why.operand or 0].label
    return Rematerialization(
        instruction="%" + shape_match.group("name"),
        shape=shape,
        dtype=dtype,
        before=_spec(before, len(shape), mesh, to_mesh),
        after=_spec(after, len(shape), mesh, to_mesh),
        before_text=match.group("before"),
        after_text=match.group("after"),
        full_bytes=full_bytes,
        wire_bytes=sum(c.wire_bytes * c.count for c in related),
        source_file=None if source is None else source.file,
        source_line=None if source is None else source.line,
        label=label,
        message=match.group(0),
    )


def _whole_gathers(collectives: Sequence[Collective], shape: tuple[int, ...]) -> list[Collective]:
    """The all-gathers whose result on each device is the whole array: the rematerialization's own."""
    wanted = "[" + ",".join(map(str, shape)) + "]"
    return [c for c in collectives if c.kind == "all-gather" and re.search(rf"= \w+{re.escape(wanted)}", c.hlo)]


def _metadata_source(operation: str, module: hlo.Module) -> SourceLocation | None:
    """The user's line the warning's own operation names, where its metadata has one."""
    m = _SOURCE.search(operation)
    if m is not None:
        return SourceLocation(m.group("file"), int(m.group("line")))
    m = _FRAME.search(operation)
    if m is None:
        return None
    frames = module.frames(int(m.group("id")))
    return user_frame(tuple(SourceLocation(f.file, f.line, f.column, f.function) for f in frames))


def _spec(sharding: hlo.HloSharding, rank: int, mesh: Any, to_mesh: np.ndarray | None) -> Spec | None:
    if mesh is None:
        return None
    if sharding.kind == "replicated":
        return ((),) * rank
    tiles = sharding.tile_assignment
    if sharding.kind != "tiled" or tiles is None or not set(sharding.subgroups) <= {"replicated"}:
        return None
    if len(sharding.data_tile_dims) != rank:
        return None
    names, sizes = list(mesh.axis_names), list(mesh.axis_sizes)
    return _axes.tiles_to_spec(tiles, rank, names, sizes, to_mesh)
