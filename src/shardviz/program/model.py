"""What a traced program is made of: pure, immutable data.

No imports of the payload or the terminal report: ``payload.py`` and
``report.py`` read these classes, and :class:`shardviz.program.Program`
subclasses :class:`ProgramData` to add ``to_json()`` and ``__str__``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np

from ..array.layout import Layout
from ..array.model import DeviceColumns, MeshInfo

ROLES = ("input", "intermediate", "output")

T = TypeVar("T")


class Deferred:
    """Figures of one program worked out on first read, once, whichever thread reads first.

    ``work()`` is kept (with whatever it holds) until then and dropped after; a failure is raised
    to each reader and kept for none. Pickled, it is worked out and sent as its result.
    """

    def __init__(self, work: Callable[[], Any]) -> None:
        self._work: Callable[[], Any] | None = work
        self._lock = threading.Lock()
        self._result: Any = None

    def result(self) -> Any:
        if self._work is not None:
            with self._lock:  # a second reader waits for the first's result instead of working it out again
                if self._work is not None:
                    self._result = self._work()
                    self._work = None
        return self._result

    @property
    def done(self) -> bool:
        return self._work is None

    def __reduce__(self) -> tuple[Any, ...]:
        return (_worked_out, (self.result(),))


def _worked_out(result: Any) -> Deferred:
    deferred = Deferred(lambda: result)
    deferred.result()
    return deferred


@dataclass(frozen=True)
class PendingWhy:
    """A collective's (or one part's) cause not yet read: the ``part``-th of the ``index``-th collective's,
    in the causes ``causes.result()`` gives (each collective's why and its parts' whys)."""

    causes: Deferred
    index: int
    part: int | None = None

    def resolve(self) -> Any:
        why, part_whys = self.causes.result()[self.index]
        return why if self.part is None else part_whys[self.part]


class _WhyField:
    """The ``why`` of a collective or a part: a cause given, or one worked out on first read
    (:class:`PendingWhy`, all of a program's together), so that a trace reads none until asked."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, item: Any, owner: type | None = None) -> Any:
        if item is None:
            return None  # the field's default
        value = item.__dict__.get(self.slot)
        if isinstance(value, PendingWhy):
            value = value.resolve()
            item.__dict__[self.slot] = value
        return value

    def __set__(self, item: Any, value: Any) -> None:
        item.__dict__[self.slot] = value


def unread_why(item: Any) -> Any:
    """``item.why`` as held: a :class:`PendingWhy` where it has not been worked out yet."""
    return item.__dict__.get("_why")


def replaced(item: T, **changes: Any) -> T:
    """``dataclasses.replace`` of a collective or a part that leaves a cause not yet worked out unread."""
    changes.setdefault("why", unread_why(item))
    return replace(item, **changes)  # type: ignore[type-var]


@dataclass(frozen=True)
class SourceLocation:
    """A line of Python: the user's frame, never JAX's."""

    file: str
    line: int
    column: int = 0
    function: str = ""
    # Where the expression ends. Two operations on one line differ here (``q + k + v``'s adds
    # start at one column), but a line is one line wherever on it, so equality ignores them.
    end_line: int = field(default=0, compare=False)
    end_column: int = field(default=0, compare=False)


@dataclass(frozen=True)
class SourceListing:
    """The traced function's own source, for a listing annotated line by line."""

    name: str
    file: str
    first_line: int
    lines: tuple[str, ...]

    def contains(self, file: str, line: int) -> bool:
        return file == self.file and self.first_line <= line < self.first_line + len(self.lines)

    def line_of(self, stack: tuple[SourceLocation, ...]) -> int | None:
        """The first frame of ``stack`` (innermost first) that is a line of this listing."""
        for frame in stack:
            if self.contains(frame.file, frame.line):
                return frame.line
        return None


class Located:
    """``source_file`` and ``source_line`` of anything with a ``source`` (a value, a collective)."""

    source: SourceLocation | None

    @property
    def source_file(self) -> str | None:
        return None if self.source is None else self.source.file

    @property
    def source_line(self) -> int | None:
        return None if self.source is None else self.source.line


@dataclass(frozen=True)
class Body:
    """A body that values sit in: a loop (``scan``, ``while``) or a ``cond`` branch."""

    primitive: str
    trip_count: int | None  # scan's length; None for while (decided at run time) and cond
    source: SourceLocation | None  # the line that calls it


@dataclass(frozen=True)
class Value(Located):
    """One array the program computes (or takes in).

    ``layout`` is its layout over the program's mesh where the sharding is
    known; ``sharding_from`` says where that came from: ``jaxpr`` (the
    value's type under Explicit axes), ``xla`` (what the partitioner chose,
    Auto axes), ``argument`` / ``compiled`` (an input or output), or
    ``unknown`` / ``manual`` with ``note`` saying why there is none, or
    ``dead``: nothing reads it, so XLA never computes it. ``name`` is the
    jaxpr's (as ``print(traced.jaxpr)`` shows it), ``label`` the user's.
    ``source`` is the innermost frame of the user's own code, ``stack``
    the whole call chain (innermost first).
    """

    name: str
    role: str
    primitive: str | None
    type_str: str
    shape: tuple[int, ...]
    dtype: str
    layout: Layout | None
    sharding_from: str
    note: str
    source: SourceLocation | None
    stack: tuple[SourceLocation, ...]
    listing_line: int | None
    bodies: tuple[Body, ...]  # enclosing bodies, outermost first
    label: str = ""  # the user's name for it: params['w1'], the variable its line binds, else %name
    scope: str = ""  # the name scopes it was made under (jax.named_scope, a Flax module path): layers_2/attn
    pass_number: int | None = None  # which pass of a Python loop made it (1-based), where its line ran several
    passes: int | None = None  # how many passes its line ran (None where it ran once)
    key: str = ""  # unique in the program, and the same when it is traced again with other shardings

    @property
    def where_label(self) -> str:
        return where_label(self.scope, self.pass_number, self.passes)

    @property
    def spec(self) -> tuple[tuple[str, ...], ...] | None:
        return None if self.layout is None else self.layout.spec


@dataclass(frozen=True)
class AxisPiece:
    """The part of one mesh axis a collective's groups run along.

    A whole axis has ``size == axis_size``. A piece is ``size`` devices
    ``stride`` apart along the axis: XLA's sub-axes (``'x':(2)2`` in its
    mesh-form groups), e.g. pairs inside an axis of 4.
    """

    axis: str
    size: int
    stride: int
    axis_size: int

    @property
    def whole(self) -> bool:
        return self.size == self.axis_size

    @property
    def label(self) -> str:
        if self.whole:
            return self.axis
        stride = f", stride {self.stride}" if self.stride != 1 else ""
        return f"{self.axis}[sub {self.size} of {self.axis_size}{stride}]"


def where_label(
    scope: str, pass_number: int | None, passes: int | None, charged_to: str = "", charged_role: str = ""
) -> str:
    """The scope, the loop pass and the array a collective or value is charged to, as one short phrase."""
    parts = []
    if scope:
        parts.append(scope)
    if pass_number is not None and passes is not None:
        parts.append(f"pass {pass_number} of {passes}")
    if charged_to:
        verb = "laying out output" if charged_role == "output" else "taking in input"
        parts.append(f"{verb} {charged_to}")
    return ", ".join(parts)


@dataclass(frozen=True)
class BytesIn:
    """A collective's (or operand's) bytes per device per run, counted in one element type."""

    dtype: str  # "bfloat16", "float32"; a combined collective's operands' types joined ("bfloat16, float32")
    result_bytes: int
    wire_bytes: int


@dataclass(frozen=True)
class CollectivePart:
    """One operand of a combined collective, with its own bytes and line.

    XLA's combiners merge collectives of the same kind and groups into one op
    of many operands (every gradient's all-reduce in one, say); each operand
    still comes from its own line of the program.
    """

    operand: str  # the operand's name in the module
    result_bytes: int
    wire_bytes: int
    source: SourceLocation | None
    stack: tuple[SourceLocation, ...]
    listing_line: int | None
    op_name: str = ""  # XLA's op_name of the instruction that made the operand (its primitive last)
    scope: str = ""  # the name scopes of op_name (layers_2/attn)
    pass_number: int | None = None  # the Python loop's pass that made it, as for a Collective
    passes: int | None = None
    # both counts of its bytes (program.device_bytes); result_bytes and wire_bytes are one of them
    on_device: BytesIn | None = None
    on_cpu: BytesIn | None = None
    # shardviz.program.why.reasons.Why: the operation that needs it and the rule (causes.py), read on first use
    why: Any = _WhyField()

    @property
    def where_label(self) -> str:
        return where_label(self.scope, self.pass_number, self.passes)


@dataclass(frozen=True)
class Collective(Located):
    """One collective of the compiled program (an async pair counts once).

    ``groups`` hold partition positions (indices into the program's device
    assignment), as XLA prints them; ``axes`` names the mesh axes they span
    in mesh order, or is None when the groups are no set of whole mesh axes
    (the groups are still there; ``pieces`` then names the parts of axes they
    run along, where they do). ``count`` is how many times one call runs
    it (loops multiply); ``count_exact`` is False when a loop without a known
    trip count (counted once) or a conditional branch is on the way.
    ``wire_bytes`` estimates what one device sends per run, see
    :mod:`shardviz.program.memory.wire`; a combined collective's is the sum of its
    ``parts``, each on its own line. ``source`` is the innermost frame of
    the user's own code (None when the stack has none); ``stack`` is the
    whole stack, library frames included. ``note`` says why the line differs
    from the one XLA's metadata names, if it does.

    ``result_bytes`` and ``wire_bytes`` count the bytes as the program's
    ``bytes_from`` says: ``on_device`` in the program's dtypes, as a TPU or
    GPU moves them (the default), or ``on_cpu`` as XLA:CPU's module moves them
    (it widens bfloat16 and float16 to float32 around collectives); both are
    kept (:mod:`shardviz.program.memory.device_bytes`).
    """

    kind: str
    name: str
    axes: tuple[str, ...] | None
    group_size: int
    groups: tuple[tuple[int, ...], ...]
    groups_form: str
    pairs: tuple[tuple[int, int], ...]
    result_bytes: int
    operand_count: int
    count: int
    count_exact: bool
    wire_bytes: int
    source: SourceLocation | None
    stack: tuple[SourceLocation, ...]
    listing_line: int | None
    op_name: str
    hlo: str
    channel_id: int | None
    pieces: tuple[AxisPiece, ...] | None = None
    parts: tuple[CollectivePart, ...] = ()
    note: str = ""
    scope: str = ""  # the name scopes of op_name: Flax module paths, jax.named_scope (layers_2/attn)
    pass_number: int | None = None  # which pass of a Python loop runs it (1-based), where its line ran several
    passes: int | None = None  # how many passes that line ran
    # An output's or input's path when XLA added it to lay out that output (or take in that input) as its
    # sharding asks: it belongs to that array, and its line is the one that returns (or first reads) it.
    charged_to: str = ""
    charged_role: str = ""  # "output" or "input" when charged_to is set
    on_device: BytesIn | None = None
    on_cpu: BytesIn | None = None
    # shardviz.program.why.reasons.Why: the operation that needs it, the layouts it meets, the rule (causes.py);
    # worked out on first read, every collective's of the program at once (a trace reads none)
    why: Any = _WhyField()
    # the program's shardviz.compare.fixes.FixFinder: traces the fixes on first read of .fixes
    finder: Any = field(default=None, compare=False, repr=False)

    @property
    def fixes(self) -> tuple[Any, ...]:
        """Up to three changes that may remove it, each traced again, fastest first
        (shardviz.compare.fixes.Fix); worked out on first read (each costs a compile)."""
        return () if self.finder is None else tuple(self.finder.fixes_of(self))

    @property
    def where_label(self) -> str:
        """``layers_2/attn``, ``pass 2 of 4``, ``laying out out['w1']``: what tells it apart from its line's others."""
        return where_label(self.scope, self.pass_number, self.passes, self.charged_to, self.charged_role)

    @property
    def total_wire_bytes(self) -> int:
        return self.wire_bytes * self.count

    @property
    def axes_label(self) -> str:
        """``data``, ``x,y``, ``x[sub 2 of 4]``; ``-`` for groups of one device; ``?`` when unknown."""
        if self.axes is not None:
            return ",".join(self.axes) or "-"
        if self.pieces is not None:
            return ",".join(p.label for p in self.pieces)
        return "?"

    @property
    def device_result_bytes(self) -> int:
        """The result buffer per device as a TPU or GPU holds it, whichever count the program shows."""
        return self.result_bytes if self.on_device is None else self.on_device.result_bytes

    @property
    def widened(self) -> bool:
        """XLA:CPU's module moves more bytes than the device would (a narrow float widened)."""
        return (
            self.on_device is not None
            and self.on_cpu is not None
            and self.on_device.result_bytes != self.on_cpu.result_bytes
        )

    @property
    def combined(self) -> bool:
        """Several collectives XLA merged into this one (see ``parts``)."""
        return len(self.parts) > 1


@dataclass(frozen=True)
class LineFlops:
    """The matrix-multiply flops one source line causes per call, per device (loops counted);
    ``source`` None gathers the dots with no line of the user's."""

    source: SourceLocation | None
    flops: float


@dataclass(frozen=True)
class MemoryStats:
    """Per-device bytes from ``Compiled.memory_analysis()``."""

    argument_bytes: int
    output_bytes: int
    temp_bytes: int
    alias_bytes: int
    generated_code_bytes: int
    peak_bytes: int | None
    host_argument_bytes: int
    host_output_bytes: int
    host_temp_bytes: int
    host_alias_bytes: int

    @property
    def reserved_bytes(self) -> int:
        """What the compiled program holds per device at most: arguments, outputs and its scratch
        space, less what outputs reuse of arguments (``peak_bytes`` can be smaller: XLA:CPU reports
        what its schedule holds live, which is no bound on the scratch it allocates)."""
        return self.argument_bytes + self.output_bytes + self.temp_bytes - self.alias_bytes

    @property
    def held_bytes(self) -> int:
        """The one peak every figure uses (the report, ``fits``, ``compare``, ``assert_fits``): the
        bytes live at the worst step of the schedule, arguments and outputs counted as held;
        the reserved bytes where the schedule's peak is unknown."""
        return self.peak_bytes if self.peak_bytes is not None else self.reserved_bytes


@dataclass(frozen=True)
class Total:
    """Collective traffic summed under one key (an axis, a kind, a line)."""

    key: str
    wire_bytes: int  # bytes one device sends per call of the program, loops counted
    collectives: int  # distinct collectives
    runs: int  # collective runs per call


@dataclass(frozen=True)
class Totals:
    """Per mesh axis, per kind and per source line.

    ``by_axis``: a collective over several axes counts toward each, so the
    rows can add up to more than ``wire_bytes``; collectives whose groups
    span no set of whole axes are under the key ``"?"``. ``by_line`` keys
    are ``file:line``.
    """

    wire_bytes: int
    runs: int
    by_axis: tuple[Total, ...]
    by_kind: tuple[Total, ...]
    by_line: tuple[Total, ...]


@dataclass(frozen=True)
class LayoutChange:
    """An output laid out unlike the input it stands for (same path and shape): a
    training step whose state comes back in another layout pays to move it back."""

    output: str  # its path, out[1]['w1']
    input: str  # params['w1']
    before: tuple[tuple[str, ...], ...]  # the input's spec
    after: tuple[tuple[str, ...], ...]  # the output's spec
    before_memory_kind: str | None = None
    after_memory_kind: str | None = None


@dataclass(frozen=True)
class TraceOrigin:
    """What the program was traced from, enough to trace it again with other
    input shardings: the callable, the tree of ``(args, kwargs)`` and one
    abstract leaf per argument (``ShapeDtypeStruct`` with its sharding, or the
    Python scalar as passed). No reference to the user's buffers is kept."""

    fun: Callable[..., Any]
    tree: Any  # jax.tree_util.PyTreeDef of (args, kwargs)
    leaves: tuple[Any, ...]
    array_leaf: tuple[bool, ...]  # which leaves are arrays (have a Layout in inputs)
    mesh: Any = None  # the jax.sharding.Mesh new input specs are laid out on
    context_mesh: Any = None  # the mesh jax.set_mesh had set when it was traced: traced again under it
    # how to trace again (``fun, *args, **kwargs``) where not in this process: a what-if trace's child
    retrace_with: Callable[..., Any] | None = None


@dataclass(frozen=True, eq=False)
class ProgramData:
    """A jitted program as shardviz reads it. Immutable."""

    name: str
    mesh: MeshInfo | None
    devices: DeviceColumns | None  # the mesh's devices in mesh order (None without a mesh)
    assignment: np.ndarray | None  # mesh index of each partition position (None: unknown)
    num_partitions: int
    sharding_mode: str  # "explicit", "auto", "mixed" or "none" (no mesh)
    inputs: tuple[Layout, ...]
    input_paths: tuple[str, ...]
    outputs: tuple[Layout, ...]
    output_paths: tuple[str, ...]
    values: tuple[Value, ...]
    collectives: tuple[Collective, ...]
    memory: MemoryStats | None
    flops: float | None
    bytes_accessed: float | None
    source: SourceListing | None
    process_index: int
    process_count: int
    machine_devices: int  # jax.device_count() where the program was traced
    hlo_module: str  # the compiled module's name
    totals: Totals
    origin: TraceOrigin | None = field(default=None, repr=False)
    layout_changes: tuple[LayoutChange, ...] = ()
    whatif: Any = None  # shardviz.program.whatif.parent.WhatIf when traced on a what-if mesh (virtual devices)
    # per device: every dot of the module, loop trip counts multiplied through (cost analysis counts a
    # loop's body once); None when the module was not read for it
    matmul_flops: float | None = None
    line_flops: tuple[LineFlops, ...] = ()  # the same flops by the user's line that causes them, largest first
    # per device: bytes live at each step of the compiled schedule, the peak and what is live then
    # (shardviz.program.memory.timeline.MemoryTimeline); None where XLA's buffer assignment could not be read
    memory_timeline: Any = None
    # both counts of the memory: {"device": (MemoryStats, MemoryTimeline), "cpu": (...)}; ``memory`` and
    # ``memory_timeline`` are the one ``bytes_from`` names (shardviz.program.memory.device_bytes.recounted)
    memory_counts: Any = None
    # per device: bytes the module's operations read and write in the program's dtypes, loops counted
    # (hlo.hbm_bytes; not XLA:CPU's bytes_accessed, which counts its f32 converts); None when not read
    hbm_bytes: float | None = None
    # how collectives' bytes are counted: "device" (the program's dtypes) or "cpu" (XLA:CPU's module)
    bytes_from: str = "device"
    # XLA's involuntary full rematerializations, caught during the compile (reasons.Rematerialization)
    rematerializations: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        self._attach()

    def _attach(self) -> None:
        """A subclass's hook run once the program is built (Program attaches its fixes' finder)."""

    def device_groups(self, collective: Collective) -> tuple[tuple[int, ...], ...]:
        """A collective's groups as device ids (partition positions looked up in the mesh)."""
        if self.devices is None or self.assignment is None:
            return collective.groups
        ids = self.devices.ids
        return tuple(tuple(int(ids[self.assignment[p]]) for p in g) for g in collective.groups)
