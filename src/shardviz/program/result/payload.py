"""Serialise a program into the payload a front end draws (docs/program-payload.md).

The mesh and its devices are sent once, as the array payload sends them;
each value carries only its shape, dtype, spec and memory kind (rows of a
shared ``types`` table), from which the front end lays it out itself.
Values are columns, grouped by source line in ``lines``; collectives carry
their device groups as partition positions, run-encoded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...array.devices import memory_kinds
from ...array.grammar import format_spec
from ...array.payload import device_columns_payload, kinds_payload, mesh_payload
from ...array.runs import encode_runs
from ...text.files import file_label
from ..lines.frames import is_user_file
from ..lines.scopes import is_gradient
from ..lines.source_blocks import Blocks
from ..lines.sources import line_text
from ..memory.device_bytes import counted_dtype, other_total
from ..memory.timeline_payload import memory_timeline_payload, xla_memory
from ..memory.wire import FORMULAS
from ..model import ROLES, Collective, CollectivePart, ProgramData, SourceLocation, Value
from .value_keys import encode_keys

PROGRAM_PAYLOAD_VERSION = 2  # 2: values' keys became indices into key_stems (docs/program-payload.md)
HLO_TEXT_LIMIT = 2000  # characters of a collective's instruction text; longer is cut and flagged


class _Table:
    """Interns rows: the payload sends each distinct one once and refers to it by index."""

    def __init__(self) -> None:
        self.rows: list[Any] = []
        self.index: dict[str, int] = {}

    def __call__(self, row: Any, key: str | None = None) -> int:
        k = repr(row) if key is None else key
        if k not in self.index:
            self.index[k] = len(self.rows)
            self.rows.append(row)
        return self.index[k]


def program_payload(program: ProgramData) -> dict[str, Any]:
    """The payload of ``program`` (docs/program-payload.md)."""
    return _Writer(program).payload()


def retrace_payload(program: ProgramData) -> dict[str, Any]:
    """Whether an edit of the inputs' specs can trace the program again (``retrace``), and why not
    (``retrace_reason``): only a Program that remembers how it was traced (its origin) can be."""
    if program.origin is not None:
        return {"retrace": True, "retrace_reason": ""}
    if program.whatif is not None:
        reason = (
            "this what-if program does not remember the function and arguments it was traced with, so its "
            "inputs cannot be laid out anew here; call shardviz.trace(..., mesh=...) with the new shardings"
        )
    else:
        reason = (
            "this program was not made by shardviz.trace in this session (it does not remember the function "
            "and arguments it was traced with), so its inputs cannot be laid out anew here"
        )
    return {"retrace": False, "retrace_reason": reason}


def _located(source: SourceLocation | None) -> tuple[str | None, int | None]:
    return (None, None) if source is None else (source.file, source.line)


class _Writer:
    """Writes one program's payload: shared tables, value columns, lines, collectives."""

    def __init__(self, program: ProgramData) -> None:
        self.program = program
        self.files = _Table()
        self.types = _Table()
        self.primitives = _Table()
        self.origins = _Table()
        self.notes = _Table()
        self.bodies = _Table()
        self.group_sets = _Table()
        self.stacks = _Table()
        self.texts: dict[tuple[int, int], str] = {}
        self.line_groups: dict[tuple[int | None, int | None], dict[str, Any]] = {}
        self.line_numbers: dict[tuple[int | None, int | None], int] = {}
        self.chains: list[tuple[SourceLocation, ...]] = []

    def payload(self) -> dict[str, Any]:
        program = self.program
        # Values first, then collectives: line groups are numbered in that order.
        values = self.value_columns()
        key_stems, values["key_stem"] = encode_keys(v.key or v.name for v in program.values)
        collectives = [self.collective(i, c) for i, c in enumerate(program.collectives)]
        # Memory groups and steps name lines too: before the line groups are sent.
        memory_timeline = memory_timeline_payload(program.memory_timeline, self.memory_line)
        view = self.source_view()
        totals = program.totals
        return {
            "kind": "program",
            "version": PROGRAM_PAYLOAD_VERSION,
            "name": program.name,
            "hlo_module": program.hlo_module,
            "sharding_mode": program.sharding_mode,
            "num_partitions": program.num_partitions,
            "process_index": program.process_index,
            "process_count": program.process_count,
            **self.mesh_and_devices(),
            "source": self.source(),
            **self.inputs_and_outputs(),
            "values": values,
            "lines": list(self.line_groups.values()),
            "collectives": collectives,
            "group_sets": self.group_sets.rows,
            "totals": {
                "wire_bytes": totals.wire_bytes,
                "runs": totals.runs,
                "by_axis": [[t.key, t.wire_bytes, t.collectives, t.runs] for t in totals.by_axis],
                "by_kind": [[t.key, t.wire_bytes, t.collectives, t.runs] for t in totals.by_kind],
                "by_line": [[t.key, t.wire_bytes, t.collectives, t.runs] for t in totals.by_line],
                "other_wire_bytes": other_total(program),
            },
            "memory": None if xla_memory(program) is None else dict(vars(xla_memory(program))),
            "flops": program.flops,
            "matmul_flops": program.matmul_flops,
            "bytes_accessed": program.bytes_accessed,
            "files": self.files.rows,
            # how a user knows each file: a notebook cell as In [3], a module by its name
            "file_labels": [file_label(f) for f in self.files.rows],
            "stacks": self.stacks.rows,
            "line_texts": [[f, line, text] for (f, line), text in self.texts.items() if text],
            "types": self.types.rows,
            "key_stems": key_stems,
            "primitives": self.primitives.rows,
            "origins": self.origins.rows,
            "notes": self.notes.rows,
            "bodies": self.bodies.rows,
            "roles": list(ROLES),
            "wire_formulas": dict(FORMULAS),
            # added within version 1 (docs/program-payload.md): the source view's blocks, memory over the program
            **view,
            "memory_timeline": memory_timeline,
            "bytes_from": program.bytes_from,
            "whatif": None if program.whatif is None else program.whatif.to_json(),
            **retrace_payload(program),
        }

    # ------------------------------------------------------------------
    # the shared tables

    def file_index(self, file: str | None) -> int | None:
        return None if file is None else self.files(file)

    def remember_text(self, file: str | None, line: int | None) -> None:
        if file is not None and line is not None:
            key = (self.files(file), line)
            if key not in self.texts:
                self.texts[key] = line_text(file, line)

    def stack_index(self, stack: tuple[SourceLocation, ...]) -> int:
        """The user's own frames of a call chain, innermost first: ``[file, line, function]`` each.

        The chain ends at the traced function's own line: what lies beyond is where ``trace`` was called.
        """
        listing = self.program.source
        chain = []
        for f in stack:
            if is_user_file(f.file):
                chain.append(f)
                if listing is not None and listing.contains(f.file, f.line):
                    break
        for f in chain:
            self.remember_text(f.file, f.line)
        rows = [[self.files(f.file), f.line, f.function.rsplit(".", 1)[-1]] for f in chain]
        return self.stacks(rows) if chain else -1

    def type_index(self, layout: Any, shape: tuple[int, ...], dtype: str, type_str: str) -> int:
        row: dict[str, Any]
        if layout is None:
            row = {"shape": list(shape), "dtype": dtype, "spec": None, "memory_kind": None, "type_str": type_str}
        else:
            row = {
                "shape": list(layout.shape),
                "dtype": layout.dtype,
                "itemsize": layout.itemsize,
                "spec": [list(axes) for axes in layout.spec],
                "memory_kind": layout.memory_kind,
                "type_str": type_str,
            }
            if layout.mesh is None:  # one device (or another mesh-less sharding): name its devices
                row["devices"] = encode_runs(layout.columns.ids)
        return self.types(row)

    def body_index(self, value: Value) -> int:
        parent = -1
        for body in value.bodies:
            file, line = _located(body.source)
            row = {
                "primitive": body.primitive,
                "trip_count": body.trip_count,
                "file": self.file_index(file),
                "line": line,
                "parent": parent,
            }
            parent = self.bodies(row)
        return parent

    def line_group(self, source: SourceLocation | None, listing_line: int | None) -> tuple[int, dict[str, Any]]:
        file, line = _located(source)
        key = (self.file_index(file), line)
        if key not in self.line_groups:
            self.remember_text(file, line)
            self.line_numbers[key] = len(self.line_groups)
            self.line_groups[key] = {
                "file": key[0],
                "line": line,
                "listing_line": listing_line,
                "values": [],
                "collectives": [],
                "parts": [],
                "wire_bytes": 0,
            }
        return self.line_numbers[key], self.line_groups[key]

    # ------------------------------------------------------------------
    # the parts of the payload

    def value_columns(self) -> dict[str, list[Any]]:
        """Values, as columns; lines group them by the user's line."""
        names = (
            "name",
            "label",
            "role",
            "primitive",
            "type",
            "from",
            "note",
            "body",
            "stack",
            "line",
            "listing_line",
            "scope",
            "pass",
            "passes",
            "backward",
        )
        columns: dict[str, list[Any]] = {k: [] for k in names}
        for i, v in enumerate(self.program.values):
            # Tables fill in this order (the payload's indices follow it).
            row = {
                "name": v.name,
                "label": v.label or v.name,
                "stack": self.stack_index(v.stack),
                "role": ROLES.index(v.role),
                "primitive": -1 if v.primitive is None else self.primitives(v.primitive),
                "type": self.type_index(v.layout, v.shape, v.dtype, v.type_str),
                "from": self.origins(v.sharding_from),
                "note": self.notes(v.note),
                "body": self.body_index(v),
                "listing_line": v.listing_line,
                "scope": v.scope,
                "pass": v.pass_number,
                "passes": v.passes,
                "backward": is_gradient(v.key),
            }
            row["line"], group = self.line_group(v.source, v.listing_line)
            group["values"].append(i)
            for key in names:
                columns[key].append(row[key])
        return columns

    def collective(self, i: int, c: Collective) -> dict[str, Any]:
        """Collective ``i``'s row, placed on its line; a combined one's bytes on its operands' lines."""
        _, group = self.line_group(c.source, c.listing_line)
        group["collectives"].append(i)
        row = _collective_row(c, self.file_index, self.group_sets, self.program.bytes_from)
        row["stack"] = self.stack_index(c.stack)
        self.chains.append(c.stack)
        if not c.parts:
            group["wire_bytes"] += c.total_wire_bytes
        for k, part in enumerate(c.parts):
            _, home = self.line_group(part.source, part.listing_line)
            home["parts"].append([i, k])
            home["wire_bytes"] += part.wire_bytes * c.count
            row["parts"][k]["stack"] = self.stack_index(part.stack)
            self.chains.append(part.stack)
        return row

    def memory_line(self, source: SourceLocation | None) -> int:
        """The ``lines`` entry of a memory group's or a step's line (-1 for none)."""
        if source is None:
            return -1
        listing = self.program.source
        return self.line_group(source, source.line if listing and listing.contains(source.file, source.line) else None)[
            0
        ]

    def source_view(self) -> dict[str, Any]:
        """Each function of the user's the program runs, as its own block, and the calls between them."""
        listing = self.program.source
        blocks = Blocks()

        def last(frame: SourceLocation) -> bool:
            return listing is not None and listing.contains(frame.file, frame.line)

        for v in self.program.values:
            blocks.add_chain(v.stack, last)
        for stack in self.chains:
            blocks.add_chain(stack, last)
        for b in blocks.blocks:
            self.files(b.file)
        return {
            "functions": [
                {"name": b.name, "file": self.files(b.file), "first_line": b.first_line, "lines": list(b.lines)}
                for b in blocks.blocks
            ],
            "calls": sorted(
                [caller, line, callee] for (caller, line), callees in blocks.calls.items() for callee in callees
            ),
        }

    def mesh_and_devices(self) -> dict[str, Any]:
        program = self.program
        mesh, devices = program.mesh, program.devices
        return {
            "mesh": None if mesh is None else mesh_payload(mesh),
            "machine_devices": program.machine_devices,
            # The same device columns as the array payload's (docs/payload.md), so
            # the front end lays any value out with the array view's engine.
            "devices": None
            if devices is None
            else {"count": len(devices.ids), "id": encode_runs(devices.ids), **device_columns_payload(devices)},
            "kinds": [] if devices is None else kinds_payload(devices),
            "memory_kinds": [] if devices is None else list(memory_kinds(devices)),
            "assignment": None if program.assignment is None else encode_runs(np.asarray(program.assignment)),
        }

    def source(self) -> dict[str, Any] | None:
        listing = self.program.source
        if listing is None:
            return None
        return {
            "name": listing.name,
            "file": self.files(listing.file),
            "first_line": listing.first_line,
            "lines": list(listing.lines),
        }

    def inputs_and_outputs(self) -> dict[str, Any]:
        program = self.program

        def type_of(layout: Any) -> int:
            return self.type_index(layout, layout.shape, layout.dtype, layout.type_str)

        return {
            "inputs": [
                {
                    "path": path,
                    "type": type_of(layout),
                    # what an input's spec editor starts from, in the array widget's grammar
                    "spec_text": format_spec(layout.spec),
                    # a real array was passed (not a ShapeDtypeStruct): its layout is where the data is
                    "real": layout.has_array,
                }
                for path, layout in zip(program.input_paths, program.inputs)
            ],
            "layout_changes": [
                {
                    "output": c.output,
                    "input": c.input,
                    "before": [list(axes) for axes in c.before],
                    "after": [list(axes) for axes in c.after],
                    "before_memory_kind": c.before_memory_kind,
                    "after_memory_kind": c.after_memory_kind,
                }
                for c in program.layout_changes
            ],
            "outputs": [
                {"path": path, "type": type_of(layout)} for path, layout in zip(program.output_paths, program.outputs)
            ],
        }


def _counts(item: Collective | CollectivePart, count: int, bytes_from: str) -> dict[str, Any]:
    """The dtype the row's bytes count in, and the other count's figures where they differ."""
    shown, other = (item.on_cpu, item.on_device) if bytes_from == "cpu" else (item.on_device, item.on_cpu)
    differs = shown is not None and other is not None and shown.result_bytes != other.result_bytes
    return {
        "dtype": counted_dtype(item, bytes_from),
        "other": {"dtype": other.dtype, "wire_bytes": other.wire_bytes, "total_wire_bytes": other.wire_bytes * count}
        if differs and other is not None
        else None,
    }


def _collective_row(c: Collective, file_index: Any, group_sets: _Table, bytes_from: str) -> dict[str, Any]:
    flat = np.asarray([p for g in c.groups for p in g], dtype=np.int64)
    row: dict[str, Any] = {
        "form": c.groups_form,
        "sizes": encode_runs(np.asarray([len(g) for g in c.groups], dtype=np.int64)),
        "positions": encode_runs(flat),
    }
    if c.pairs:
        row["sources"] = encode_runs(np.asarray([s for s, _ in c.pairs], dtype=np.int64))
        row["targets"] = encode_runs(np.asarray([t for _, t in c.pairs], dtype=np.int64))
    text = c.hlo if len(c.hlo) <= HLO_TEXT_LIMIT else c.hlo[:HLO_TEXT_LIMIT]
    return {
        "kind": c.kind,
        "name": c.name,
        "axes": None if c.axes is None else list(c.axes),
        "group_size": c.group_size,
        "groups": group_sets(row),
        "result_bytes": c.result_bytes,
        "operand_count": c.operand_count,
        "count": c.count,
        "count_exact": c.count_exact,
        "wire_bytes": c.wire_bytes,
        "total_wire_bytes": c.total_wire_bytes,
        "file": file_index(c.source.file if c.source else None),
        "line": c.source.line if c.source else None,
        "listing_line": c.listing_line,
        "op_name": c.op_name,
        "hlo": text,
        "hlo_truncated": len(c.hlo) > HLO_TEXT_LIMIT,
        "channel_id": c.channel_id,
        "axes_label": c.axes_label,
        "note": c.note,
        "scope": c.scope,
        "pass": c.pass_number,
        "passes": c.passes,
        "backward": is_gradient(c.op_name),
        "charged_to": c.charged_to,
        "charged_role": c.charged_role,
        "where_label": c.where_label,
        "parts": [
            {
                "operand": p.operand,
                "result_bytes": p.result_bytes,
                "wire_bytes": p.wire_bytes,
                "total_wire_bytes": p.wire_bytes * c.count,
                "file": file_index(p.source.file if p.source else None),
                "line": p.source.line if p.source else None,
                "listing_line": p.listing_line,
                "scope": p.scope,
                "pass": p.pass_number,
                "passes": p.passes,
                "backward": is_gradient(p.op_name),
                "where_label": p.where_label,
                **_counts(p, c.count, bytes_from),
            }
            for p in c.parts
        ],
        **_counts(c, c.count, bytes_from),
    }
