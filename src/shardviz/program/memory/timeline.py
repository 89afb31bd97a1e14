"""Memory over the program, per device: bytes live at each step of the compiled schedule, the
peak, and what is live then, grouped the way users think of it.

Read from XLA's own buffer assignment and live ranges (:mod:`.hlo.liveness`):
every value XLA places in memory has an allocation, an offset and its first
and last step in the flattened schedule (loop bodies in place, listed once).
The bytes live at a step are the sizes of the buffers live then, a buffer
that several values share (a loop's carry, an output written over a donated
argument) counted once. Groups:

- ``argument``: an input, by its path (``params['w1']``, ``state['mu'][0]``);
  a donated argument whose buffer an output reuses is counted here, once;
- ``output``: an output XLA writes into a buffer of its own, by its path;
- ``saved``: a value made in the forward pass and still live when the
  backward pass begins (activations kept for the gradient), by line and name;
- ``temporary``: any other value, by the line that makes it and its name.

Counted as the device holds them (``device``, :mod:`.dtypes`): each
buffer in its value's program dtype, XLA:CPU's float converts folded into
the values they copy. A backward-pass buffer the shape of an input the step
updates is the "gradient of" that input; a variable too small for a buffer
never names it. Each group has a planner's category (parameters and inputs,
optimizer state, gradients, saved activations, temporaries, outputs).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .. import hlo
from ..lines.frames import user_frame
from ..lines.scopes import is_gradient, scope_of_op_name
from ..lines.sources import bound_names, line_text
from ..model import MemoryStats, SourceLocation
from .dtypes import DeviceSizes
from .liveness import Allocation, LiveRanges

KINDS = ("argument", "output", "saved", "temporary")


@dataclass(frozen=True)
class MemoryGroup:
    """Buffers a user thinks of as one thing: an argument, an output, a line's value."""

    kind: str  # one of KINDS
    label: str  # the path of an argument or output; the value's name for the others
    source: SourceLocation | None  # the line that makes it (an output's: where its value is made)
    scope: str
    peak_bytes: int  # bytes of this group live at the program's peak
    most_bytes: int  # the most bytes of this group live at any one step
    type_str: str = field(
        default="", compare=False
    )  # its first buffer's shape and element type per device, as held: bf16[4096,2048]

    @property
    def category(self) -> str:
        """What a planner budgets it as: parameters, optimizer state, inputs, gradients, saved
        activations, temporaries or outputs."""
        if self.kind == "argument":
            return "optimizer state" if is_optimizer_state(self.label) else "parameters and inputs"
        if self.label.startswith("gradient of "):
            return "gradients"
        return {"saved": "saved activations", "output": "outputs"}.get(self.kind, "temporaries")

    @property
    def family(self) -> str:
        """An argument's top-level name (``state['mu']`` for ``state['mu'][0]``), else the label."""
        if self.kind != "argument":
            return self.label
        base, sep, rest = self.label.partition("[")
        if not sep:
            return base
        key = rest.split("]", 1)[0]
        return f"{base}[{key}]" if rest.count("[") or rest.count("]") > 1 else base


@dataclass(frozen=True)
class LiveBuffer:
    """One buffer's life: the group it belongs to, its first and last step (both live) and its size."""

    group: int
    start: int
    end: int
    bytes: int


@dataclass(frozen=True)
class MemoryTimeline:
    """Bytes live per device at each step of the compiled program, and what is live at the peak."""

    steps: tuple[str, ...]  # the instruction run at each step (loop bodies listed once, in place)
    step_bytes: tuple[int, ...]
    step_sources: tuple[SourceLocation | None, ...]  # the user's line each step's instruction comes from
    peak_bytes: int
    peak_step: int
    groups: tuple[MemoryGroup, ...]
    buffers: tuple[LiveBuffer, ...]
    backward_step: int | None  # the first step of the backward pass, if the program has one
    xla_peak_bytes: int | None = None  # memory_analysis()'s peak_memory_in_bytes, for comparison

    def live_at(self, step: int) -> list[tuple[MemoryGroup, int]]:
        """Groups live at ``step`` with their bytes then, most first."""
        by_group: dict[int, int] = {}
        for b in self.buffers:
            if b.start <= step <= b.end:
                by_group[b.group] = by_group.get(b.group, 0) + b.bytes
        return sorted(((self.groups[g], n) for g, n in by_group.items()), key=lambda gn: -gn[1])

    @property
    def at_peak(self) -> list[tuple[MemoryGroup, int]]:
        return self.live_at(self.peak_step)

    def bytes_by_category(self, step: int | None = None) -> list[tuple[str, int]]:
        """Bytes live at ``step`` (the peak when None) per planner's group (:attr:`MemoryGroup.category`),
        most first."""
        out: dict[str, int] = {}
        for group, n in self.live_at(self.peak_step if step is None else step):
            out[group.category] = out.get(group.category, 0) + n
        return sorted(out.items(), key=lambda kv: -kv[1])

    def bytes_by_kind(self, step: int | None = None) -> dict[str, int]:
        """Bytes live at ``step`` (the peak when None) per kind of group."""
        out = dict.fromkeys(KINDS, 0)
        for group, n in self.live_at(self.peak_step if step is None else step):
            out[group.kind] += n
        return out


@dataclass(frozen=True)
class _Context:
    stack_of: Callable[[hlo.Instruction], tuple[SourceLocation, ...]]
    input_paths: Sequence[str]
    output_paths: Sequence[str]
    kept: Sequence[int]  # the array input each entry parameter is
    results: Mapping[str, int]  # an entry result's instruction -> its output index
    made: Mapping[str, tuple[SourceLocation, ...]]  # an output's path -> where its value is made
    # each array input's path, its shape and element type per device (``bf16``): what a gradient is of
    inputs: Sequence[tuple[str, tuple[int, ...], str]] = ()
    # (file, line, name) -> the most elements per device a value of that name on that line has
    named_elements: Mapping[tuple[str, int, str], int] | None = None
    # inputs the program gives back a new value of (an output of their shape, or written in place):
    # what a training step takes a gradient of
    updated: frozenset[str] = frozenset()
    # a fusion's name -> the user's operations its body computes, in order (from their metadata)
    fused_ops: Mapping[str, tuple[str, ...]] | None = None


def memory_timeline(
    allocations: Sequence[Allocation],
    live: LiveRanges,
    module: hlo.Module,
    stack_of: Callable[[hlo.Instruction], tuple[SourceLocation, ...]],
    input_paths: Sequence[str],
    output_paths: Sequence[str],
    kept: Sequence[int] | None,
    made: Mapping[str, tuple[SourceLocation, ...]],
    xla_peak_bytes: int | None = None,
    device: DeviceSizes | None = None,
    inputs: Sequence[tuple[str, tuple[int, ...], str]] = (),
    named_elements: Mapping[tuple[str, int, str], int] | None = None,
    output_shapes: Sequence[tuple[int, ...]] = (),
) -> MemoryTimeline:
    """The timeline of one compiled program from its buffer assignment and live ranges; with
    ``device``, each buffer in the program's dtypes and XLA:CPU's float converts folded into
    their inputs (:mod:`.dtypes`), as a TPU or GPU holds them."""
    context = _Context(
        stack_of,
        input_paths,
        output_paths,
        kept or list(range(len(input_paths))),
        _results(module),
        made,
        inputs,
        named_elements,
        _updated(allocations, input_paths, kept, inputs, output_shapes),
        _fused_ops(module),
    )
    types = _value_types(allocations, device)
    instructions = {inst.name: inst for _, inst in module.instructions()}
    steps = live.steps
    end = max(len(steps) - 1, 0)
    backward = _backward_start(steps, instructions)
    groups: dict[tuple[object, ...], int] = {}
    group_rows: list[tuple[str, str, SourceLocation | None, str, str]] = []
    placed: list[tuple[Allocation, list[str], int, int, int]] = []
    folds: list[tuple[str, int, int]] = []  # a folded value's target and its span
    for allocation in allocations:
        if allocation.thread_local or allocation.constant:
            continue  # thread-local scratch is not in the schedule; constants live in the executable
        foldable = {} if device is None or allocation.live_out else device.folded
        for members, start, stop, size in _slots(allocation, live, end, device, foldable, folds):
            placed.append((allocation, members, start, stop, size))
    # a folded value's life is its input's too, before the input is told saved or temporary
    spans = [[start, stop] for _, _, start, stop, _ in placed]
    buffer_of = {m: k for k, (_, members, _, _, _) in enumerate(placed) for m in members}
    _fold(spans, buffer_of, folds, {} if device is None else device.folded)
    buffers: list[LiveBuffer] = []
    for (allocation, members, _, _, size), (start, stop) in zip(placed, spans):
        # A result names the buffer it is in; else a loop's carry (what the loop writes), else the first.
        value = next(
            (m for m in members if m in context.results),
            next((m for m in members if _opcode(instructions, m) == "while"), members[0]),
        )
        type_str = types.get(value, "")
        kind, label, source, scope = _group_of(
            allocation, value, instructions, context, (start, stop), backward, type_str
        )
        key = (kind, label, None if source is None else (source.file, source.line), scope, type_str)
        if key not in groups:
            groups[key] = len(group_rows)
            group_rows.append((kind, label, source, scope, type_str))
        buffers.append(LiveBuffer(groups[key], start, stop, size))
    step_bytes = _step_bytes(buffers, len(steps))
    peak_step = max(range(len(step_bytes)), key=lambda k: step_bytes[k]) if step_bytes else 0
    peak = step_bytes[peak_step] if step_bytes else 0
    at_peak, most = _held_by_group(buffers, len(group_rows), peak_step, len(steps))
    return MemoryTimeline(
        steps=tuple(steps),
        step_bytes=tuple(step_bytes),
        step_sources=tuple(user_frame(stack_of(instructions[s])) if s in instructions else None for s in steps),
        peak_bytes=peak,
        peak_step=peak_step,
        groups=tuple(
            MemoryGroup(kind, label, source, scope, at_peak[g], most[g], type_str)
            for g, (kind, label, source, scope, type_str) in enumerate(group_rows)
        ),
        buffers=tuple(buffers),
        backward_step=backward,
        xla_peak_bytes=xla_peak_bytes,
    )


def device_memory(xla: MemoryStats | None, timeline: MemoryTimeline) -> MemoryStats:
    """``Program.memory`` as the device holds it, from the timeline in the program's dtypes: arguments
    and outputs as held (an output written over a donated argument counted as the argument),
    temporaries the most live at once besides them, the peak the timeline's."""
    own: dict[str, int] = dict.fromkeys(KINDS, 0)
    for b in timeline.buffers:
        own[timeline.groups[b.group].kind] += b.bytes
    scratch = [b for b in timeline.buffers if timeline.groups[b.group].kind in ("saved", "temporary")]
    temp = max(_step_bytes(scratch, len(timeline.steps)) or [0])
    alias = 0 if xla is None else xla.alias_bytes
    return MemoryStats(
        argument_bytes=own["argument"],
        output_bytes=own["output"] + alias,
        temp_bytes=temp,
        alias_bytes=alias,
        generated_code_bytes=0 if xla is None else xla.generated_code_bytes,
        peak_bytes=timeline.peak_bytes,
        host_argument_bytes=0 if xla is None else xla.host_argument_bytes,
        host_output_bytes=0 if xla is None else xla.host_output_bytes,
        host_temp_bytes=0 if xla is None else xla.host_temp_bytes,
        host_alias_bytes=0 if xla is None else xla.host_alias_bytes,
    )


def _held_by_group(
    buffers: Sequence[LiveBuffer], groups: int, peak_step: int, steps: int
) -> tuple[list[int], list[int]]:
    """What each group holds at the peak step, and the most it holds at any step."""
    at_peak = [0] * groups
    most = [0] * groups
    per_group_steps: dict[int, list[LiveBuffer]] = {}
    for b in buffers:
        per_group_steps.setdefault(b.group, []).append(b)
        if b.start <= peak_step <= b.end:
            at_peak[b.group] += b.bytes
    for g, held in per_group_steps.items():
        most[g] = max(_step_bytes(held, steps) or [0])
    return at_peak, most


def _fold(
    spans: list[list[int]],
    buffer_of: Mapping[str, int],
    folds: Sequence[tuple[str, int, int]],
    folded: Mapping[str, str],
) -> None:
    """Each folded value's span given to the buffer of the value it is the same data as."""
    for target, start, stop in folds:
        for _ in range(16):  # a convert of a convert: to the first value that has a buffer
            if target in buffer_of or target not in folded:
                break
            target = folded[target]
        k = buffer_of.get(target)
        if k is not None:
            spans[k] = [min(spans[k][0], start), max(spans[k][1], stop)]


def _slots(
    allocation: Allocation,
    live: LiveRanges,
    end: int,
    device: DeviceSizes | None = None,
    foldable: Mapping[str, str] | None = None,
    folds: list[tuple[str, int, int]] | None = None,
) -> list[tuple[list[str], int, int, int]]:
    """``(value, first step, last step, bytes)`` per stretch of one place in the allocation.

    Values at one offset whose lives overlap share a buffer (a loop carry and
    the loop's result, an output over a donated argument): one stretch, as
    large as the largest of them, named by the first. With ``device``, sizes
    are the device's, and a value in ``foldable`` makes no stretch: its span
    goes to ``folds`` with the value whose buffer holds it.
    """
    by_offset: dict[int, list[tuple[int, int, int, str]]] = {}
    for v in allocation.values:
        if v.shape.startswith("("):
            continue  # a tuple's table of pointers, not its data
        span = live.ranges.get(v.name)
        if span is None:
            if allocation.parameter is None:
                continue  # not live in the entry's schedule (a value of a called computation's own)
            span = (0, end)
        if foldable and v.name in foldable and folds is not None:
            folds.append((foldable[v.name], span[0], span[1]))
            continue
        size = v.size if device is None else device.size(v.name, v.size)
        by_offset.setdefault(v.offset, []).append((span[0], span[1], size, v.name))
    out: list[tuple[list[str], int, int, int]] = []
    for members in by_offset.values():
        members.sort()
        start, stop, size, name = members[0]
        names = [name]
        for s, e, n, other in members[1:]:
            if s <= stop:
                stop, size = max(stop, e), max(size, n)
                names.append(other)
            else:
                out.append((names, start, stop, size))
                start, stop, size, names = s, e, n, [other]
        out.append((names, start, stop, size))
    if allocation.parameter is not None:  # an argument is live from the call's start to its end
        out = [(names, 0, max(stop, end), size) for names, _, stop, size in out]
    return out


def _step_bytes(buffers: Sequence[LiveBuffer], steps: int) -> list[int]:
    diff = [0] * (steps + 1)
    for b in buffers:
        if b.start >= steps:
            continue
        diff[b.start] += b.bytes
        diff[min(b.end, steps - 1) + 1] -= b.bytes
    out, running = [], 0
    for k in range(steps):
        running += diff[k]
        out.append(running)
    return out


_HANDS_ON = frozenset({"get-tuple-element", "bitcast", "copy", "tuple", "reshape"})


def _backward_start(steps: Sequence[str], instructions: Mapping[str, hlo.Instruction]) -> int | None:
    """The first step of the backward pass: a gradient's instruction reading what the forward pass made
    (a gradient's own constants, a seed of ones, can be scheduled long before)."""
    for k, name in enumerate(steps):
        inst = instructions.get(name)
        if inst is None or not is_gradient(_op_name(inst)):
            continue
        read = list(inst.operands)
        for operand in inst.operands:  # a rematerialization reads its inputs through a barrier's tuple
            held = instructions.get(operand)
            if held is not None and held.opcode == "tuple":
                read += held.operands
        for operand in read:
            made = _maker(operand, instructions)
            if made is not None and not _op_name(made) and made.opcode not in ("parameter", "constant"):
                made = _first_named(made.name, instructions)  # through XLA:CPU's converts of bf16 values
            if made is not None and made.opcode not in ("parameter", "constant") and _op_name(made):
                if not is_gradient(_op_name(made)):
                    return k
    return None


def _maker(name: str, instructions: Mapping[str, hlo.Instruction]) -> hlo.Instruction | None:
    """The instruction that made a value, followed back through tuples, copies and the like."""
    inst = instructions.get(name)
    taken: int | None = None  # the element a get-tuple-element took, for the tuple it took it from
    for _ in range(8):
        if inst is None or inst.opcode not in _HANDS_ON or not inst.operands or _op_name(inst):
            return inst
        element = taken if inst.opcode == "tuple" and taken is not None and taken < len(inst.operands) else 0
        index = inst.attr("index") if inst.opcode == "get-tuple-element" else None
        taken = int(index) if index is not None and index.isdigit() else None
        inst = instructions.get(inst.operands[element])
    return inst


def _opcode(instructions: Mapping[str, hlo.Instruction], value: str) -> str:
    inst = instructions.get(value.split("{", 1)[0])
    return "" if inst is None else inst.opcode


def _op_name(inst: hlo.Instruction | None) -> str:
    return "" if inst is None else inst.metadata.op_name or ""


def _results(module: hlo.Module) -> dict[str, int]:
    """The value (``name{index}``) each output of the entry computation is, by output index."""
    root = module.entry.root
    if root is None:
        return {}
    by_name = module.entry.by_name
    operands = root.operands if root.opcode == "tuple" else (root.name,)
    out: dict[str, int] = {}
    for k, name in enumerate(operands):
        index: list[str] = []
        inst = by_name.get(name)
        for _ in range(8):  # through get-tuple-element (of a loop or a tuple) and bitcasts
            if inst is None:
                break
            if inst.opcode == "get-tuple-element" and inst.operands:
                index.insert(0, inst.attr("index") or "0")
                inst = by_name.get(inst.operands[0])
            elif inst.opcode == "tuple" and index:
                inst = by_name.get(inst.operands[int(index.pop(0))])
            elif inst.opcode == "bitcast" and inst.operands:
                inst = by_name.get(inst.operands[0])
            else:
                break
        if inst is not None:
            out.setdefault(f"{inst.name}{{{','.join(index)}}}", k)
    return out


_OPTIMIZER_KEYS = re.compile(
    r"(?:^|[\[.'\"])(opt|opt_state|optimizer|mu|nu|momentum|adam|exp_avg|exp_avg_sq)(?:$|[\]'\".\[])"
)


def is_optimizer_state(path: str) -> bool:
    """An argument's path names optimizer state (optax's ``mu``/``nu``, ``opt_state``, ``momentum``)."""
    return _OPTIMIZER_KEYS.search(path) is not None


def _value_types(allocations: Sequence[Allocation], device: DeviceSizes | None) -> dict[str, str]:
    """Each placed value's shape and element type per device, in the program's dtype where known."""
    out: dict[str, str] = {}
    for allocation in allocations:
        for v in allocation.values:
            shape = v.shape.split("{", 1)[0]
            if device is not None and v.name in device.elements:
                shape = device.elements[v.name] + shape[shape.index("[") :] if "[" in shape else shape
            out[v.name] = shape
    return out


def _dims(type_str: str) -> tuple[int, ...] | None:
    m = re.match(r"^[a-z0-9]+\[([0-9,]*)\]$", type_str)
    if m is None:
        return None
    return tuple(int(d) for d in m.group(1).split(",") if d)


def _updated(
    allocations: Sequence[Allocation],
    input_paths: Sequence[str],
    kept: Sequence[int] | None,
    inputs: Sequence[tuple[str, tuple[int, ...], str]],
    output_shapes: Sequence[tuple[int, ...]],
) -> frozenset[str]:
    """Inputs with an output of their shape per device, or whose buffer an output is written into."""
    shapes = {tuple(s) for s in output_shapes}
    out = {path for path, shape, _ in inputs if tuple(shape) in shapes}
    order = kept or list(range(len(input_paths)))
    for allocation in allocations:
        k = allocation.parameter
        if k is not None and allocation.live_out and k < len(order) and order[k] < len(input_paths):
            out.add(input_paths[order[k]])
    return frozenset(out)


def _gradient_of(type_str: str, source: SourceLocation | None, context: _Context) -> str | None:
    """The input a gradient buffer is the gradient of: the one input the program updates that has its
    shape per device (its dtype first, then one whose path the line that makes it names), None where
    that is not one input."""
    dims = _dims(type_str)
    if dims is None:
        return None
    element = type_str.split("[", 1)[0]
    same = [(p, dtype) for p, shape, dtype in context.inputs if tuple(shape) == dims and p in context.updated]
    if len(same) > 1:
        typed = [c for c in same if c[1] == element]
        same = typed or same
    if len(same) > 1 and source is not None:
        text = line_text(source.file, source.line) or ""
        named = [c for c in same if c[0] in text or _last_key(c[0]) in re.findall(r"\w+", text)]
        same = named or same
    if len(same) > 1:
        plain = [c for c in same if not is_optimizer_state(c[0])]
        same = plain if len(plain) == 1 else same
    if len(same) == 1:
        return same[0][0]
    return _pattern([c[0] for c in same])


def _pattern(paths: Sequence[str]) -> str | None:
    """``params[*]['w1']`` for paths that differ only in their list indices (a Python loop's layers,
    whose gradients one line makes), else None."""
    split = [re.split(r"\[(\d+)\]", p) for p in paths]
    if not split or any(len(parts) != len(split[0]) for parts in split):
        return None
    out = []
    for k, piece in enumerate(split[0]):
        same = all(parts[k] == piece for parts in split)
        if k % 2 == 0 and not same:
            return None  # they differ outside an index
        out.append(piece if k % 2 == 0 else f"[{piece}]" if same else "[*]")
    return "".join(out)


def _last_key(path: str) -> str:
    keys = re.findall(r"\w+", path)
    return keys[-1] if keys else path


def _group_of(
    allocation: Allocation,
    value: str,
    instructions: Mapping[str, hlo.Instruction],
    context: _Context,
    span: tuple[int, int],
    backward: int | None,
    type_str: str = "",
) -> tuple[str, str, SourceLocation | None, str]:
    if allocation.parameter is not None:
        k = allocation.parameter
        index = context.kept[k] if k < len(context.kept) else None
        path = context.input_paths[index] if index is not None and index < len(context.input_paths) else f"arg {k}"
        return "argument", path, None, ""
    name = value.split("{", 1)[0]
    if allocation.live_out and value in context.results:
        k = context.results[value]
        if k < len(context.output_paths):
            path = context.output_paths[k]
            return "output", path, user_frame(context.made.get(path, ())), ""
    inst = _maker(name, instructions) if not _op_name(instructions.get(name)) else instructions.get(name)
    if inst is None or not _op_name(inst):  # XLA's own copy: it belongs to what it copies
        inst = _first_named(name, instructions)
    if inst is None:
        return "temporary", name, None, ""
    op_name = inst.metadata.op_name or ""
    source = user_frame(context.stack_of(inst))
    scope = scope_of_op_name(op_name)
    gradient = is_gradient(op_name)
    saved = backward is not None and not gradient and span[0] < backward <= span[1]
    kind = "saved" if saved else "temporary"
    if gradient:
        target = _gradient_of(type_str, source, context)
        if target is not None:
            return kind, f"gradient of {target}", source, scope
    base = _value_name(source, op_name, inst.opcode)
    if not _fits_name(base, source, type_str, context):  # never the name of a smaller value
        base = op_name.rsplit("/", 1)[-1] if op_name else inst.opcode
        if inst.opcode == "fusion":
            ops = (context.fused_ops or {}).get(inst.name) or (base,)
            base = "fused " + ", ".join(ops)
    return kind, f"{base} (backward)" if gradient else base, source, scope


def _fused_ops(module: hlo.Module) -> dict[str, tuple[str, ...]]:
    """Per fusion, the user's operations its body computes (``mul, tanh, add``), each once, in order."""
    out: dict[str, tuple[str, ...]] = {}
    for _, inst in module.instructions():
        if inst.opcode != "fusion":
            continue
        body = next((module.by_name.get(c) for role, c in inst.called_computations if role == "calls"), None)
        if body is None:
            continue
        ops: dict[str, None] = {}
        for i in body.instructions:
            name = (i.metadata.op_name or "").split(";", 1)[0].rsplit("/", 1)[-1]
            if name and i.opcode not in ("parameter", "constant", "bitcast", "convert"):
                ops.setdefault(name, None)
        if ops:
            out[inst.name] = tuple(list(ops)[:4])
    return out


def _fits_name(name: str, source: SourceLocation | None, type_str: str, context: _Context) -> bool:
    """Whether ``name`` (a variable the line binds) is as large as the buffer it would name."""
    dims = _dims(type_str)
    if source is None or dims is None or context.named_elements is None:
        return True
    named = context.named_elements.get((source.file, source.line, name))
    return named is None or named >= math.prod(dims)


def _first_named(name: str, instructions: Mapping[str, hlo.Instruction]) -> hlo.Instruction | None:
    """The first instruction with metadata on the way back from ``name`` (any operands, breadth first)."""
    pending: list[str] = [name]
    seen: set[str] = set()
    while pending and len(seen) < 32:
        current = pending.pop(0)
        if current in seen:
            continue
        seen.add(current)
        inst = instructions.get(current)
        if inst is None:
            continue
        if _op_name(inst):
            return inst
        pending.extend(inst.operands)
    return None


def _value_name(source: SourceLocation | None, op_name: str, opcode: str) -> str:
    """The variable the value's line binds where it binds one, else the operation's name."""
    if source is not None:
        names = bound_names(line_text(source.file, source.line))
        if names is not None and len(names) == 1:
            return names[0]
    primitive = op_name.rsplit("/", 1)[-1] if op_name else opcode
    if primitive == "while":  # what a scan or loop carries from pass to pass, its results stacked
        return "loop results"
    return primitive or opcode
