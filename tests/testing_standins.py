"""Hand-made programs for the fast tests of ``shardviz.testing`` (tests/test_mut_testing_*.py).

A real trace compiles a program (a second or more on a shared machine); these
build the ``ProgramData`` a trace would return from collectives written out by
hand, so the assertions' arithmetic and messages are checked against counts
done on paper, in milliseconds. Only the fields the assertions read are real;
the rest are empty.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from shardviz.array.model import MeshInfo
from shardviz.program.model import BytesIn, Collective, CollectivePart, ProgramData, SourceLocation

__all__ = ["collective", "part", "program", "source", "write_model"]


# the user's model both the budget and the snapshot tests read: one collective per line 2 to 5
CODE = [
    "def loss(x, w):",
    "    h = gather(w)  # wide",
    "    g = reduce(x)",
    "    a = combined(x)",
    "    c = more(x)",
]
MESH = {"data": 4, "model": 2}


def write_model(folder: Path, lines: list[str], name: str = "model.py") -> str:
    """A source file of ``lines`` (line 1 first) whose text the messages quote; its path."""
    path = folder / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def source(file: str, line: int, function: str = "loss") -> SourceLocation:
    return SourceLocation(file, line, 0, function)


def collective(
    kind: str,
    axes: tuple[str, ...] | None,
    wire_bytes: int,
    *,
    group_size: int = 4,
    count: int = 1,
    exact: bool = True,
    at: SourceLocation | None = None,
    stack: tuple[SourceLocation, ...] = (),
    name: str = "",
    parts: tuple[CollectivePart, ...] = (),
    scope: str = "",
    on_device: BytesIn | None = None,
    on_cpu: BytesIn | None = None,
) -> Collective:
    return Collective(
        kind=kind,
        name=name or f"{kind}.{wire_bytes}.{count}",
        axes=axes,
        group_size=group_size,
        groups=(),
        groups_form="",
        pairs=(),
        result_bytes=wire_bytes,
        operand_count=max(len(parts), 1),
        count=count,
        count_exact=exact,
        wire_bytes=wire_bytes,
        source=at,
        stack=stack,
        listing_line=None,
        op_name="",
        hlo="",
        channel_id=None,
        parts=parts,
        scope=scope,
        on_device=on_device,
        on_cpu=on_cpu,
    )


def part(wire_bytes: int, at: SourceLocation | None, *, scope: str = "", dtype: str = "") -> CollectivePart:
    on_device = BytesIn(dtype, wire_bytes, wire_bytes) if dtype else None
    return CollectivePart(
        operand=f"p{wire_bytes}",
        result_bytes=wire_bytes,
        wire_bytes=wire_bytes,
        source=at,
        stack=(),
        listing_line=None,
        scope=scope,
        on_device=on_device,
    )


def program(
    collectives: tuple[Collective, ...] | list[Collective],
    *,
    total: int,
    mesh: dict[str, int] | None = None,
    name: str = "step",
    bytes_from: str = "device",
    kind: type[ProgramData] = ProgramData,
) -> ProgramData:
    """A program of ``collectives`` whose ``totals.wire_bytes`` is ``total``, counted by hand by the test."""
    info = None
    if mesh is not None:
        info = MeshInfo(tuple(mesh), tuple(mesh.values()), ("explicit",) * len(mesh), False)
    return kind(
        name=name,
        mesh=info,
        devices=None,
        assignment=None,
        num_partitions=1,
        sharding_mode="explicit" if mesh else "none",
        inputs=(),
        input_paths=(),
        outputs=(),
        output_paths=(),
        values=(),
        collectives=tuple(collectives),
        memory=None,
        flops=None,
        bytes_accessed=None,
        source=None,
        process_index=0,
        process_count=1,
        machine_devices=8,
        hlo_module="m",
        totals=SimpleNamespace(wire_bytes=total),  # type: ignore[arg-type]
        bytes_from=bytes_from,
    )
