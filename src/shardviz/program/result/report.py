"""The terminal report of a program: ``print(prog)``.

Inputs and outputs with their types, the collectives line by line (kind,
axes, bytes per run x runs), totals per mesh axis as bars, and memory per
device. Fits 80 columns (any ``width`` >= 60); colour only marks the axis
bars, in the widget's axis colours, and ``NO_COLOR`` turns it off.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

from ...array.checks import spec_from_entries, spec_repr
from ...array.layout import Layout
from ...text import ansi
from ...text.files import file_label
from ...text.lines import clip as _fit
from ...text.lines import flow_after as _flow
from ...text.ranges import format_bytes
from ..lines.frames import is_user_file
from ..lines.sources import line_text
from ..memory.device_bytes import counted_dtype, other_total, short_dtype
from ..memory.timeline import MemoryGroup, MemoryTimeline
from ..model import Collective, CollectivePart, LayoutChange, ProgramData, SourceLocation

MIN_WIDTH = 60
BAR_WIDTH = 28


def render_program(program: ProgramData, *, width: int | None = None, color: bool | None = None) -> str:
    """The report, at most ``width`` columns (the terminal's when None); ``color`` as in render_text."""
    cols = shutil.get_terminal_size((80, 24)).columns if width is None else int(width)
    cols = max(MIN_WIDTH, cols)
    use_color = ansi.color_enabled(color)
    true_color = ansi.truecolor() if use_color else False
    lines: list[str] = []
    lines += _header(program, cols)
    lines += _arrays("inputs", program.input_paths, program.inputs, cols, program.sharding_mode)
    lines += _arrays("outputs", program.output_paths, program.outputs, cols, program.sharding_mode)
    lines += _layout_changes(program.layout_changes, cols)
    lines += _collectives(program, cols)
    lines += _rematerializations(program, cols)
    lines += _axis_totals(program, cols, use_color, true_color)
    lines += _memory(program, cols)
    return "\n".join(lines)


def _header(program: ProgramData, width: int) -> list[str]:
    mesh = program.mesh
    if mesh is None:
        where = "no mesh (one device)" if program.num_partitions == 1 else f"{program.num_partitions} partitions"
    else:
        axes = " ".join(f"{n}={s}" for n, s in zip(mesh.axis_names, mesh.axis_sizes))
        kinds = sorted(set(mesh.axis_types))
        where = f"mesh {axes} ({', '.join(kinds)}), {plural(program.num_partitions, 'device')}"
    lines = [*_flow("program", [program.name, f"({program.hlo_module})"], width, sep=""), _fit(where, width)]
    if program.process_count > 1:
        lines.append(f"process {program.process_index} of {program.process_count}")
    mode = {
        "explicit": "shardings from the jaxpr's types",
        "auto": "shardings as XLA's partitioner chose them",
        "mixed": "shardings as XLA's partitioner chose them",
        "none": "",
    }[program.sharding_mode]
    known = sum(1 for v in program.values if v.layout is not None)
    parts = [f"{plural(len(program.values), 'value')}, {known} with a known layout"] + ([mode] if mode else [])
    lines += _flow("", parts, width, sep="; ")
    return lines


def spec_text(spec: tuple[tuple[str, ...], ...]) -> str:
    """``P('x', None)``, ``P(('x', 'y'))``: trailing unpartitioned dimensions left out, as JAX prints."""
    entries = list(spec)
    while entries and not entries[-1]:
        entries.pop()
    return spec_repr(tuple(spec_from_entries(entries))) if entries else "replicated"


def _arrays(title: str, paths: tuple[str, ...], layouts: tuple[Layout, ...], width: int, mode: str) -> list[str]:
    if not layouts:
        return ["", f"{title}: none"]
    out = ["", title]
    name_width = min(max(len(p) for p in paths), width // 3)
    for path, layout in zip(paths, layouts):
        text = layout.type_str
        if layout.mesh is None:
            text += f"  {layout.sharding_name}"
        elif mode != "explicit":
            text += f"  {spec_text(layout.spec)}"
        if len(path) <= name_width:
            out.append(_fit(f"  {path:<{name_width}}  {text}", width))
        else:  # a long path gets a line of its own
            out += [_fit(f"  {path}", width), _fit(f"  {'':<{name_width}}  {text}", width)]
    return out


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 collective run``, ``3 collective runs``."""
    return f"{count} {word if count == 1 else many or word + 's'}"


def _layout_changes(changes: tuple[LayoutChange, ...], width: int) -> list[str]:
    if not changes:
        return []
    out = ["", *_flow("", ["outputs laid out unlike the input they stand for (the next call moves them back):"], width)]
    for c in changes:
        before, after = spec_text(c.before), spec_text(c.after)
        if c.before_memory_kind != c.after_memory_kind:
            before, after = f"{before} in {c.before_memory_kind}", f"{after} in {c.after_memory_kind}"
        out += _flow("  ", [f"{c.output} {after}, but {c.input} is {before}"], width)
    return out


Charge = tuple[Collective, CollectivePart | None]


def _charges(program: ProgramData) -> Iterator[tuple[SourceLocation | None, Charge]]:
    """Each collective on its line; a combined one's operands each on their own."""
    for c in program.collectives:
        if c.parts:
            for part in c.parts:
                yield part.source, (c, part)
        else:
            yield c.source, (c, None)


def _sent(charge: Charge) -> int:
    c, part = charge
    return c.total_wire_bytes if part is None else part.wire_bytes * c.count


def _other_count(program: ProgramData, c: Collective, part: CollectivePart | None) -> str:
    """The row's bytes as the other count has them, where they differ: a note under the row."""
    item = c if part is None else part
    if item.on_device is None or item.on_cpu is None or item.on_device.result_bytes == item.on_cpu.result_bytes:
        return ""
    if program.bytes_from == "cpu":
        return f"{short_dtype(item.on_device.dtype)} on the device: {format_bytes(item.on_device.wire_bytes * c.count)}"
    return f"{short_dtype(item.on_cpu.dtype)} in XLA:CPU's module: {format_bytes(item.on_cpu.wire_bytes * c.count)}"


def _counting(program: ProgramData) -> str:
    """How the rows count bytes, where the two counts differ."""
    if not any(c.widened for c in program.collectives):
        return ""
    if program.bytes_from == "cpu":
        return ", as XLA:CPU's module moves them (bf16/f16 as f32; program.with_bytes('device'): as a TPU or GPU)"
    return ", in the program's dtypes (XLA:CPU's module moves bf16/f16 as f32: program.with_bytes('cpu'))"


def _collectives(program: ProgramData, width: int) -> list[str]:
    if not program.collectives:
        return ["", "collectives: none"]
    head = "collectives per line: bytes one device sends (ring estimates) x runs per call" + _counting(program)
    out = ["", *_flow("", [head], width)]
    axes_width = max(4, min(14, width - 58))
    by_line: dict[tuple[str, int], list[Charge]] = {}
    where: dict[tuple[str, int], SourceLocation] = {}
    for source, charge in _charges(program):
        key = ("", 0) if source is None else (source.file, source.line)
        by_line.setdefault(key, []).append(charge)
        if source is not None:
            where.setdefault(key, source)
    ordered = sorted(by_line.items(), key=lambda kv: -sum(_sent(ch) for ch in kv[1]))
    for key, members in ordered:
        out += _line_head(where.get(key), members, width)
        callers = {_caller(where.get(key), ch) for ch in members}
        for group in pass_groups(sorted(members, key=lambda ch: -_sent(ch)), program.bytes_from):
            c, part = group[0]
            passes = len(group)
            runs = f"x{c.count * passes}" + ("" if c.count_exact else "+")
            sent = c.wire_bytes if part is None else part.wire_bytes
            # An axes label never cut: one too long for its column goes whole on a line of its own.
            axes = c.axes_label if len(c.axes_label) <= axes_width else ""
            dtype = _fit(short_dtype(counted_dtype(c if part is None else part, program.bytes_from)), 4)
            row = (
                f"    {c.kind:<18} {axes:<{axes_width}} {dtype:>4} {format_bytes(sent):>9} {runs:>6}"
                f"  = {format_bytes(sent * c.count * passes):>9}"
            )
            out.append(_fit(row, width))
            if not axes:
                out += _under_row([f"over {c.axes_label}"], width)
            if passes > 1:
                out += _under_row([_passes_text(group, sent * c.count)], width)
            else:
                told_apart = c.where_label if part is None else _part_where(c, part)
                if told_apart:
                    out += _under_row([told_apart], width)
            other = _other_count(program, c, part)
            if part is not None:
                numbers = [next(i for i, p in enumerate(g.parts) if p is q) + 1 for g, q in group if q is not None]
                names = sorted({g.name for g, _ in group})
                which = "operand" if len(numbers) == 1 else "operands"
                together = (
                    f"{which} {', '.join(map(str, numbers))} of {len(c.parts)} of {', '.join(names)}: "
                    "they travel together"
                )
                out += _under_row([together + (f"; {other}" if other else "")], width)
            elif other:
                out += _under_row([other], width)
            caller = _caller(where.get(key), (c, part))
            if len(callers) > 1 and caller is not None:
                via = f"via {file_label(caller.file)}:{caller.line}  {line_text(caller.file, caller.line)}"
                out += _under_row([via], width)
            if c.note:
                out += _under_row([c.note], width)
            why = c.why if part is None else part.why
            if why is not None:
                out += _under_row([why.text], width)
    if any(not c.count_exact for c in program.collectives):
        out += _flow("  ", ["x3+: at least that many (a loop with no known trip count, or a branch)"], width)
    if any(c.axes is None and c.pieces is None for c in program.collectives):
        out += _flow("  ", ["?: the groups span no set of mesh axes or pieces of them (see .groups)"], width)
    return out


def pass_groups(members: list[Charge], bytes_from: str = "device") -> list[list[Charge]]:
    """A line's collectives, those of a loop's passes that do the same thing (kind, axes, bytes, runs,
    element type, layer and reason alike, each of its own pass) in one group; every other alone."""
    groups: dict[tuple[object, ...], list[Charge]] = {}
    order: list[tuple[object, ...]] = []
    for k, (c, part) in enumerate(members):
        item = c if part is None else part
        why = item.why
        key: tuple[object, ...] = (
            c.kind,
            c.axes_label,
            item.wire_bytes,
            c.count,
            c.count_exact,
            counted_dtype(item, bytes_from),
            item.scope,
            c.charged_to,
            c.note,
            part is None,
            None if why is None else (why.cause, why.primitive, why.dimension, why.axes),
            item.passes,
        )
        if item.pass_number is None or item.passes is None:
            key = ("alone", k)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append((c, part))
    out: list[list[Charge]] = []
    for key in order:
        group = groups[key]
        numbers = [(c if p is None else p).pass_number for c, p in group]
        if len(set(numbers)) != len(numbers):  # two of one pass: not one thing done per pass
            out.extend([m] for m in group)
        else:
            out.append(group)
    return out


def _passes_text(group: list[Charge], each: int) -> str:
    """``in each of 4 passes (1-4 of 4), 5.2 MiB each``."""
    numbers = sorted((c if p is None else p).pass_number or 0 for c, p in group)
    of = (group[0][0] if group[0][1] is None else group[0][1]).passes
    span = (
        f"{numbers[0]}\u2013{numbers[-1]}"
        if numbers == list(range(numbers[0], numbers[-1] + 1))
        else ", ".join(map(str, numbers))
    )
    return f"{format_bytes(each)} in each of {len(group)} passes (passes {span} of {of})"


def _rematerializations(program: ProgramData, width: int) -> list[str]:
    remats = getattr(program, "rematerializations", ())
    if not remats:
        return []
    out = ["", *_flow("", [f"involuntary full rematerialization (XLA's SPMD warning): {len(remats)}"], width)]
    for r in remats:
        out += _flow("  ", [r.text + f"; its collectives send {format_bytes(r.wire_bytes)} per device"], width)
    return out


def _part_where(c: Collective, part: CollectivePart) -> str:
    """A combined collective's operand: its own scope and pass (the collective's own op_name names several)."""
    return part.where_label


def _caller(source: SourceLocation | None, charge: Charge) -> SourceLocation | None:
    """The user's line that called the function ``source`` is in, on this charge's stack.

    One helper (a ``dense(x, w)`` of your own) called from several lines puts
    all their collectives on its one line; the caller tells them apart.
    """
    c, part = charge
    stack = c.stack if part is None else part.stack
    if source is None or source not in stack:
        return None
    return next((f for f in stack[stack.index(source) + 1 :] if is_user_file(f.file)), None)


def _under_row(parts: list[str], width: int, indent: str = "      ") -> list[str]:
    """A note under a collective's row, every wrapped line kept under the row (not back at the line head)."""
    return [indent + line for line in _flow("", parts, max(20, width - len(indent)))]


def _line_head(source: SourceLocation | None, members: list[Charge], width: int) -> list[str]:
    """``In [3]:5 (loss_fn)  h = relu(x @ w)`` and, for a line reached through calls, the chain."""
    if source is None:
        if all(c.charged_to and part is None for c, part in members):
            return _flow(
                "  ", ["(no line of yours: XLA lays out outputs and takes in inputs as their shardings ask)"], width
            )
        stack = members[0][0].stack if members[0][1] is None else members[0][1].stack
        if stack:
            inner = stack[0]
            return _flow(
                "  ", [f"(no line of yours: innermost {file_label(inner.file)}:{inner.line}, a library's)"], width
            )
        return ["  (no source line)"]
    function = source.function.rsplit(".", 1)[-1]
    head = f"  {file_label(source.file)}:{source.line}" + (f" ({function})" if function else "")
    code = line_text(source.file, source.line)
    if code and len(head) + 2 + len(code) <= width:
        return [f"{head}  {code}"]
    return [_fit(head, width)] + ([_fit(f"      {code}", width)] if code else [])


TOP_GROUPS = 6


def memory_lines(timeline: MemoryTimeline, width: int, top: int = TOP_GROUPS) -> list[str]:
    """The peak of memory over the program and the largest groups live then, one per line."""
    where = timeline.step_sources[timeline.peak_step] if timeline.step_sources else None
    at = f" ({file_label(where.file)}:{where.line})" if where is not None else ""
    head = (
        f"peak {format_bytes(timeline.peak_bytes)} per device at step {timeline.peak_step + 1} of "
        f"{len(timeline.steps)}{at}: the bytes live then, arguments and outputs as held, from XLA's buffer "
        "live ranges (the figure fits and assert_fits use); live then:"
    )
    out = _flow("", [head], width)
    groups = ", ".join(f"{name} {format_bytes(n)}" for name, n in timeline.bytes_by_category() if n)
    if groups:
        out += _flow("  ", [f"by group: {groups}"], width)
    live = timeline.at_peak
    for group, n in live[:top]:
        out += _flow("  ", [f"{format_bytes(n):>9}  {group_text(group)}"], width)
    rest = live[top:]
    if rest:
        out += _flow("  ", [f"{format_bytes(sum(n for _, n in rest)):>9}  {plural(len(rest), 'more group')}"], width)
    return out


def group_text(group: MemoryGroup) -> str:
    """``argument params['w1']``, ``saved h, In [3]:5 (layers_0)``: what a memory group is and where it is made."""
    kind = {"saved": "kept for the backward pass:"}.get(group.kind, group.kind)
    text = f"{kind} {group.label}" + (f" {group.type_str}" if group.type_str and group.kind != "argument" else "")
    if group.source is not None:
        text += f", {file_label(group.source.file)}:{group.source.line}"
    if group.scope:
        text += f" ({group.scope})"
    return text


def _axis_totals(program: ProgramData, width: int, use_color: bool, true_color: bool) -> list[str]:
    totals = program.totals
    if not program.collectives:
        return []
    runs = plural(totals.runs, "collective run")
    summary = f"total per call: {format_bytes(totals.wire_bytes)} sent per device in {runs}"
    other = other_total(program)
    if other is not None:
        where = "on the device" if program.bytes_from == "cpu" else "in XLA:CPU's module"
        summary += f" ({where}: {format_bytes(other)})"
    out = ["", *_flow("", [summary], width)]
    rows = [t for t in totals.by_axis]
    if not rows:
        return out
    out += _flow("", ["per mesh axis (a collective over several axes counts toward each)"], width)
    top = max(t.wire_bytes for t in rows) or 1
    name_width = min(max(len(t.key) for t in rows), 12)
    names = program.mesh.axis_names if program.mesh else ()
    bar_width = max(8, min(BAR_WIDTH, width - name_width - 16))
    for t in rows:
        filled = round(bar_width * t.wire_bytes / top) if t.wire_bytes else 0
        bar = "█" * filled
        if use_color and bar and t.key in names:
            bar = ansi.ink(bar, ansi.axis_rgb(names.index(t.key)), true_color=true_color)
        pad = " " * (bar_width - filled)
        out.append(f"  {_fit(t.key, name_width):<{name_width}} {bar}{pad} {format_bytes(t.wire_bytes):>9}")
    return out


def _memory(program: ProgramData, width: int) -> list[str]:
    m = program.memory
    timeline = program.memory_timeline
    out = [""]
    if m is None:
        out.append("memory per device: not reported by JAX for this backend")
    else:
        parts = [
            f"arguments {format_bytes(m.argument_bytes)}",
            f"outputs {format_bytes(m.output_bytes)}",
            f"temporaries at most {format_bytes(m.temp_bytes)}"
            if timeline is not None
            else f"scratch set aside {format_bytes(m.temp_bytes)}",
            f"aliased {format_bytes(m.alias_bytes)}",
        ]
        if timeline is None and m.peak_bytes is not None:
            parts.append(f"peak live {format_bytes(m.peak_bytes)}")
        out += _flow("memory per device:", parts, width)
        if timeline is None and m.peak_bytes is not None and m.peak_bytes < m.temp_bytes:
            why = (
                "temporaries is the scratch space XLA sets aside; peak live is the most its schedule holds at "
                "once (arguments, outputs and temporaries together), so it can be the smaller: not every "
                "temporary is alive at the same time"
            )
            out += _flow("  ", [why], width)
    if timeline is not None:
        out += memory_lines(timeline, width)
    flops = "not reported" if program.flops is None else f"{program.flops:.4g}"
    counted = program.matmul_flops
    if counted is not None and (program.flops is None or counted > program.flops * 1.01):
        flops += f" (XLA's cost analysis, a loop's body once; its matrix multiplies, loops counted: {counted:.4g})"
    out.append(_fit(f"flops per device: {flops}", width))
    return out
