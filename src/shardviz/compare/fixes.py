"""What would remove a collective: up to three changes, each traced again before it is shown.

From a collective's :class:`~shardviz.program.why.reasons.Why`, the changes that
could remove it are proposed: an input's spec (traced again with
:func:`shardviz.program.retrace`, in the what-if child for a what-if
program), an ``out_shardings`` for the output it lays out, or a
``with_sharding_constraint`` at the constraint's line that reaches the layout
in steps (both traced from the program's jaxpr, re-run with the change and
each operation's own line kept). Each changed program is compared with
``shardviz.diff`` and ranked by its estimated step time; one that removes
the collective but makes the step slower says so. Nothing here runs unless
``Collective.fixes`` is read: each trace costs a compile.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import jax
from jax.sharding import NamedSharding

from ..errors import ShardingError
from ..program.model import Collective, ProgramData
from ..program.why.reasons import Spec, Why, spec_text
from ..text.ranges import format_seconds
from .run import DEFAULT_HARDWARE

MOST = 3


@dataclass(frozen=True)
class Fix:
    """One change, traced: ``program`` is the changed program, ``diff`` its ``shardviz.diff`` with the
    program it changes; ``removed`` whether the collective is gone from its line; ``step_s`` the estimated
    step time on ``hardware`` (``before_s`` the program's own); ``code`` what to paste."""

    kind: str  # "input-spec", "out-shardings", "constraint"
    summary: str
    code: str
    removed: bool
    step_s: float | None
    before_s: float | None
    hardware: str
    program: Any = field(repr=False, compare=False)
    diff: Any = field(default=None, repr=False, compare=False)
    spec: Spec | None = None  # the new spec
    target: str = ""  # the input, the output or the line it changes

    @property
    def slower(self) -> bool:
        return self.step_s is not None and self.before_s is not None and self.step_s > self.before_s

    @property
    def text(self) -> str:
        gone = "removes it" if self.removed else "does not remove it"
        timing = ""
        if self.step_s is not None and self.before_s is not None:
            timing = f"; step {format_seconds(self.step_s)} on {self.hardware} (now {format_seconds(self.before_s)})"
            if self.removed and self.slower:
                timing += ", but the step is slower"
        return f"{self.summary}: {gone}{timing}\n    {self.code}"


@dataclass(frozen=True)
class _Change:
    kind: str
    summary: str
    code: str
    spec: Spec
    target: str
    input_index: int | None = None  # input-spec: which array input
    output_index: int | None = None  # out-shardings: which output
    constraint_line: int | None = None  # constraint: the line whose constraint goes in steps
    steps: tuple[Spec, ...] = ()
    second_index: int | None = None  # input-spec of two inputs: the other one
    second_spec: Spec = ()
    more: tuple[tuple[int, Spec], ...] = ()  # input-spec of several inputs: the rest, (input, spec) each
    value_at: tuple[int, int] | None = None  # constraint on a value: (top-level equation, result) that makes it


class FixFinder:
    """Works out each collective's fixes for one program on first read, and keeps them."""

    def __init__(self, program: ProgramData, hardware: str = DEFAULT_HARDWARE) -> None:
        self._program = weakref.ref(program)
        self.hardware = hardware
        self._found: dict[str, tuple[Fix, ...]] = {}

    def __reduce__(self) -> Any:  # a pickled program gets a fresh finder when it is built again
        return (_lost_finder, ())

    def traced(self) -> dict[str, tuple[Fix, ...]]:
        """The fixes worked out so far on the finder's hardware, by collective name (``remat k`` for a
        rematerialization's)."""
        return {k: v for k, v in self._found.items() if " on " not in k}

    def fixes_of_rematerialization(self, k: int, hardware: str | None = None) -> tuple[Fix, ...]:
        """The fixes of the program's k-th rematerialization: those of the collective that gathers the whole
        array, judged by whether the rematerialization is gone (ranked on ``hardware``, the finder's by default)."""
        program = self._program()
        if program is None or k >= len(program.rematerializations):
            return ()
        key = self._key(f"remat {k}", hardware)
        if key not in self._found:
            r = program.rematerializations[k]
            gathers = [c for c in program.collectives if c.why is not None and c.source is not None
                       and (c.source.file, c.source.line) == (r.source_file, r.source_line)]  # fmt: skip
            self._found[key] = find_fixes(program, gathers[0], hardware or self.hardware, remat=r) if gathers else ()
        return self._found[key]

    def fixes_of(self, collective: Collective, hardware: str | None = None) -> tuple[Fix, ...]:
        """``collective``'s fixes, ranked on ``hardware`` (the finder's by default)."""
        if collective.why is None:
            return ()
        key = self._key(collective.name, hardware)
        if key in self._found:
            return self._found[key]
        program = self._program()
        if program is None:
            raise ShardingError(_GONE)
        self._found[key] = find_fixes(program, collective, hardware or self.hardware)
        return self._found[key]

    def _key(self, name: str, hardware: str | None) -> str:
        """The finder's own hardware keys by name alone (the payload's keys); another one beside it."""
        return name if hardware is None or hardware == self.hardware else f"{name} on {hardware}"


# Fixes are traced from the program, which a collective does not keep alive (it would hold the program in a cycle).
_GONE = (
    "the Program this collective came from is no longer held, and its fixes are traced from it: keep it, "
    "prog = shardviz.trace(...), and read prog.collectives[i].fixes"
)


def _lost_finder() -> FixFinder | None:
    return None


def find_fixes(
    program: Any, collective: Collective, hardware: str = DEFAULT_HARDWARE, remat: Any = None
) -> tuple[Fix, ...]:
    """Up to three changes that may remove ``collective`` (or the rematerialization ``remat``), each traced,
    those that remove it first, fastest first."""
    why = collective.why
    if why is None or program.origin is None:
        return ()
    changes = proposed_changes(program, collective, why)[:MOST]
    before = _step(program, hardware)
    out = []
    for change in changes:
        try:
            changed = _traced(program, change)
        except ShardingError as err:
            if _IN_SHARDINGS not in str(err) or change.kind != "input-spec" or program.whatif is not None:
                continue  # a change JAX refuses is no fix
            try:  # the jit's own in_shardings fix that input's layout: the change goes there
                changed = _rewritten(program, change, _relaid(program, change))
            except ShardingError:
                continue
            change = _in_shardings_change(program, change)
        out.append(
            Fix(
                kind=change.kind,
                summary=change.summary,
                code=change.code,
                removed=not _still_there(changed, collective, program)
                if remat is None
                else not _remat_there(changed, remat),
                step_s=_step(changed, hardware),
                before_s=before,
                hardware=hardware,
                program=changed,
                diff=_diff(program, changed, hardware),
                spec=change.spec,
                target=change.target,
            )
        )
    # Gone from the program ranks before moved to another line of it; then the estimated step time.
    kept = {id(f): remat is None and _count(f.program, collective) >= _count(program, collective) for f in out}
    return tuple(
        sorted(out, key=lambda f: (not f.removed, kept[id(f)], f.step_s if f.step_s is not None else float("inf")))
    )


def proposed_changes(program: Any, collective: Collective, why: Why) -> list[_Change]:
    """The changes worth tracing for ``why``, likeliest first (none for a shard_map's own collective)."""
    if why.cause in ("shard-map", "unknown") or why.operand is None:
        return []
    paths = tuple(program.input_paths)
    out: list[_Change] = []
    operand = why.operands[why.operand] if why.operand < len(why.operands) else None
    if why.cause in ("partial-sums", "whole-dimension") and operand is not None and operand.spec is not None:
        d = why.dimension
        if d is not None and operand.label in paths:
            k = paths.index(operand.label)
            shape = program.inputs[k].shape
            # The operation's other operands read alike (concatenate's): changed with it.
            alike = [
                paths.index(o.label)
                for o in why.operands
                if o is not operand and o.label in paths and o.spec == operand.spec and o.type_str == operand.type_str
            ]
            moved = _moved_elsewhere(operand.spec, d, why.axes, shape, _sizes(program))
            if moved is not None and why.cause == "whole-dimension":
                out.append(_inputs_change(program, [(k, moved), *((j, moved) for j in alike)],
                                          f"split {operand.label} on another dimension"))  # fmt: skip
            dropped = tuple(
                tuple(a for a in s if a not in why.axes) if i == d else s for i, s in enumerate(operand.spec)
            )
            out.append(_inputs_change(program, [(k, dropped), *((j, dropped) for j in alike)],
                                      f"keep dimension {d} of {operand.label} whole"))  # fmt: skip
        if why.cause == "partial-sums":  # the other operand's contracting dimension split alike goes too
            for other in why.operands:
                if other is operand or other.spec is None or other.label not in paths:
                    continue
                k = paths.index(other.label)
                dropped = tuple(tuple(a for a in s if a not in why.axes) for s in other.spec)
                if dropped != other.spec and operand.label in paths:
                    j = paths.index(operand.label)
                    first = tuple(
                        tuple(a for a in s if a not in why.axes) if i == why.dimension else s
                        for i, s in enumerate(operand.spec)
                    )
                    out.append(_two_inputs(program, (j, first), (k, dropped)))
    if why.cause == "layout-mismatch" and why.arrival is not None and operand is not None:
        k, arriving = why.arrival
        if k < len(program.inputs) and program.inputs[k].spec not in (None, arriving):
            summary = (
                f"lay {paths[k]} out as it is wanted"
                if paths[k] == operand.label
                else f"lay {paths[k]} out so that {operand.label}, made from it, arrives as it is wanted"
            )
            out.append(_input_change(program, k, arriving, summary))
    if why.cause in ("layout-mismatch", "loop-carry") and why.wanted is not None and operand is not None:
        # The operand pointed at first, then another of its shape; never one the wanted layout is not for.
        candidates = [operand, *(o for o in why.operands if o is not operand)]
        for o in candidates:
            if (
                o.label in paths
                and o.spec is not None
                and o.spec != why.wanted
                and o.role != "result"
                and _shape(o.type_str) == _shape(operand.type_str)
            ):
                k = paths.index(o.label)
                if tuple(program.inputs[k].shape) and len(program.inputs[k].shape) == len(why.wanted):
                    out.append(_input_change(program, k, why.wanted, f"lay {o.label} out as it is wanted"))
                    break
        else:  # made from an input of its shape and layout (x * 2): that input laid out as wanted, tried
            made = operand.spec
            for k, layout in enumerate(program.inputs):
                if (
                    (not why.sources or k in why.sources)  # one it is made from, not any of its shape
                    and made is not None
                    and layout.spec == made
                    and made != why.wanted
                    and tuple(layout.shape) == _shape(operand.type_str)
                ):
                    summary = f"lay {paths[k]}, which {operand.label} is made from, out as it is wanted"
                    out.append(_input_change(program, k, why.wanted, summary))
                    break
        if why.wanted_by.startswith("the sharding of output") and collective.charged_to == "":
            output = _output_index(program, why.wanted_by)
            made = operand.spec
            if output is not None and made is not None:
                out.append(_out_change(program, output, made))
        if why.primitive == "sharding_constraint" and collective.source is not None:
            made = operand.spec
            if made is not None:
                steps = constraint_steps(made, why.wanted)
                if steps:
                    out.append(_constraint_change(collective.source.line, steps, why.wanted))
    if why.cause == "layout-mismatch" and why.wanted is None:
        # No layout is asked for (both operands split over one axis where the result can hold it once):
        # each input among the operands kept off that axis, the one XLA gathers among them.
        for o in why.operands:
            if o.label in paths and o.spec is not None and any(a in why.axes for s in o.spec for a in s):
                k = paths.index(o.label)
                dropped = tuple(tuple(a for a in s if a not in why.axes) for s in o.spec)
                out.append(_input_change(program, k, dropped, f"keep {o.label} off {_axes_words(why.axes)}"))
    out.extend(_upstream_changes(program, why, operand))
    return _unique(out)


def _upstream_changes(program: Any, why: Why, operand: Any) -> list[_Change]:
    """Where the operand is made inside the program: the inputs it is made from kept off the collective's
    axes, and a ``with_sharding_constraint`` on the operand where its line makes it."""
    out: list[_Change] = []
    paths = tuple(program.input_paths)
    split = [
        k
        for k in why.sources
        if k < len(program.inputs)
        and program.inputs[k].spec is not None
        and any(a in why.axes for s in program.inputs[k].spec for a in s)
    ]
    if split and why.axes:
        changes = [(k, tuple(tuple(a for a in s if a not in why.axes) for s in program.inputs[k].spec)) for k in split]
        names = _names([paths[k] for k in split])
        out.append(_inputs_change(program, changes, f"keep {names} off {_axes_words(why.axes)}"))
    if operand is None or operand.spec is None or operand.label in paths or why.made_at is None:
        return out
    d = why.dimension
    spec: Spec | None = None
    if why.cause in ("layout-mismatch", "loop-carry"):
        spec = why.wanted if why.wanted is not None and len(why.wanted) == len(operand.spec) else None
    elif d is not None and d < len(operand.spec):
        spec = tuple(tuple(a for a in s if a not in why.axes) if i == d else s for i, s in enumerate(operand.spec))
        shape = _shape(operand.type_str)
        if why.cause == "whole-dimension" and shape is not None:
            spec = _moved_elsewhere(operand.spec, d, why.axes, shape, _sizes(program)) or spec
    if spec is not None and spec != operand.spec:
        out.append(_value_change(operand, spec, why.made_at))
    return out


# A summary names this many inputs at most; the code to paste always lists them all.
NAMED = 3


def _names(labels: Sequence[str]) -> str:
    if len(labels) > NAMED:
        return ", ".join(labels[: NAMED - 1]) + f" and {len(labels) - NAMED + 1} more"
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def _axes_words(axes: Sequence[str]) -> str:
    return " and ".join(repr(a) for a in axes)


def _shape(type_str: str) -> tuple[int, ...] | None:
    """``float32[12,24]`` (or ``float32[12@a,24]``, as an Explicit mesh types it) -> (12, 24); None where the
    text is not an array type."""
    inner = type_str.partition("[")[2].partition("]")[0]
    try:
        return tuple(int(n.partition("@")[0]) for n in inner.split(",")) if inner else ()
    except ValueError:
        return None


def constraint_steps(made: Spec, wanted: Spec) -> tuple[Spec, ...]:
    """Layouts between ``made`` and ``wanted`` that move one mesh axis at a time (an all-to-all or a
    gather each, which XLA can do in place), in ``made``'s order of axes; ``wanted`` itself is left out."""
    current = [list(s) for s in made]
    steps: list[Spec] = []
    for axis in [a for s in made for a in s]:
        source = next(d for d, s in enumerate(current) if axis in s)
        target = next((d for d, s in enumerate(wanted) if axis in s), None)
        if target == source:
            continue
        current[source].remove(axis)
        if target is not None:
            current[target].append(axis)
        steps.append(tuple(tuple(s) for s in current))
    return tuple(s for s in steps if s != wanted)


def _unique(changes: list[_Change]) -> list[_Change]:
    seen, out = set(), []
    for c in changes:
        key = (c.kind, c.code)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def _sizes(program: Any) -> dict[str, int]:
    mesh = program.mesh
    return {} if mesh is None else dict(zip(mesh.axis_names, mesh.axis_sizes))


def _moved_elsewhere(
    spec: Spec, dim: int, axes: Sequence[str], shape: Sequence[int], sizes: dict[str, int]
) -> Spec | None:
    """``spec`` with ``axes`` taken off dimension ``dim`` and put on the first other whole dimension they divide."""
    split = 1
    for a in axes:
        split *= sizes.get(a, 1)
    for e in range(len(spec)):
        if e != dim and not spec[e] and shape[e] % split == 0:
            return tuple(
                tuple(a for a in s if a not in axes) if i == dim else (tuple(axes) if i == e else s)
                for i, s in enumerate(spec)
            )
    return None


def _sharding_code(spec: Spec) -> str:
    return f"NamedSharding(mesh, {spec_text(spec)})"


def _input_change(program: Any, k: int, spec: Spec, summary: str) -> _Change:
    path = program.input_paths[k]
    code = f"{path} = jax.device_put({path}, {_sharding_code(spec)})"
    return _Change("input-spec", f"input {path} as {spec_text(spec)} ({summary})", code, spec, path, input_index=k)


def _inputs_change(program: Any, changes: Sequence[tuple[int, Spec]], summary: str) -> _Change:
    """One input's spec, or several inputs' together, changed."""
    (k, spec), *rest = changes
    if not rest:
        return _input_change(program, k, spec, summary)
    paths = program.input_paths
    code = "; ".join(f"{paths[j]} = jax.device_put({paths[j]}, {_sharding_code(s)})" for j, s in changes)
    shown = [f"{paths[j]} as {spec_text(s)}" for j, s in changes]
    listed = ", ".join(shown) if len(shown) <= NAMED else _names(shown)
    return _Change("input-spec", f"inputs {listed} ({summary})", code, spec, paths[k], input_index=k,
                   more=tuple(rest))  # fmt: skip


def _value_change(operand: Any, spec: Spec, made_at: tuple[int, int, int]) -> _Change:
    """A ``with_sharding_constraint`` on the operand, where the line that makes it makes it."""
    i, j, line = made_at
    where = f"line {line}" if line else "the line that makes it"
    shown = _sharding_code(spec)
    label = operand.label
    if label.isidentifier():
        code = f"{label} = jax.lax.with_sharding_constraint({label}, {shown})  # after {where}, where {label} is made"
        what = label
    else:
        what = f"the {operand.type_str} {where} makes ({label})"
        code = f"jax.lax.with_sharding_constraint(..., {shown})  # around {what}"
    summary = f"constrain {what} to {spec_text(spec)} at {where}"
    return _Change("constraint", summary, code, spec, where, value_at=(i, j))


def _two_inputs(program: Any, first: tuple[int, Spec], second: tuple[int, Spec]) -> _Change:
    (j, a), (k, b) = first, second
    pa, pb = program.input_paths[j], program.input_paths[k]
    code = f"{pa} = jax.device_put({pa}, {_sharding_code(a)}); {pb} = jax.device_put({pb}, {_sharding_code(b)})"
    summary = f"inputs {pa} as {spec_text(a)} and {pb} as {spec_text(b)}"
    return _Change("input-spec", summary, code, a, pa, input_index=j, second_index=k, second_spec=b)


def _output_index(program: Any, wanted_by: str) -> int | None:
    for k, path in enumerate(program.output_paths):
        if f"output {path} " in wanted_by:
            return k
    return None


def _out_change(program: Any, k: int, made: Spec) -> _Change:
    path = program.output_paths[k]
    shown = _sharding_code(made)
    code = (
        f"jax.jit(f, out_shardings={shown})"
        if len(program.output_paths) == 1
        else f"jax.jit(f, out_shardings=...)  # {path}: {shown}"
    )
    return _Change("out-shardings", f"return {path} as {spec_text(made)}, as its line makes it", code, made, path,
                   output_index=k)  # fmt: skip


def _constraint_change(line: int, steps: tuple[Spec, ...], wanted: Spec) -> _Change:
    chain = " -> ".join(spec_text(s) for s in (*steps, wanted))
    code = "; ".join(f"y = jax.lax.with_sharding_constraint(y, {_sharding_code(s)})" for s in steps)
    code += f"  # at line {line}, before its own constraint to {spec_text(wanted)}"
    summary = f"constrain in steps at line {line}: {chain}"
    return _Change("constraint", summary, code, wanted, f"line {line}", constraint_line=line, steps=steps)


# ---------------------------------------------------------------------- tracing a change


def _traced(program: Any, change: _Change) -> Any:
    from ..program.trace import retrace

    if change.kind == "input-spec":
        specs: list[Any] = [None] * len(program.inputs)
        assert change.input_index is not None
        for k, spec in _changed_inputs(change):
            specs[k] = _partition_spec(spec)
        return retrace(program, specs, refs_as_shapes=True)
    if program.whatif is not None:
        origin = program.origin
        if origin.retrace_with is None:
            raise ShardingError("this what-if program has no child to trace a change in")
        args, kwargs = jax.tree_util.tree_unflatten(origin.tree, list(origin.leaves))
        rewritten = FixInChild(origin.fun, program.name, change.kind, change.output_index, change.spec,
                               change.constraint_line, change.steps, change.value_at)  # fmt: skip
        return origin.retrace_with(rewritten, *args, **kwargs)
    return _rewritten(program, change)


@dataclass(frozen=True)
class FixInChild:
    """An out_shardings or constraint change of a what-if program, rebuilt in its child: the function's
    jaxpr run again there with the change, on the child's mesh (the one its arguments are laid out on).
    Picklable (the function by reference, or by value as the what-if trace sends any function)."""

    fun: Any
    name: str
    kind: str
    output_index: int | None
    spec: Spec
    constraint_line: int | None
    steps: tuple[Spec, ...]
    value_at: tuple[int, int] | None = None

    def _jitted(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, list[Any]]:
        leaves = jax.tree_util.tree_leaves((args, kwargs))
        meshes = [getattr(leaf, "sharding", None) for leaf in leaves]
        mesh = next((m.mesh for m in meshes if isinstance(m, NamedSharding)), None)
        if mesh is None:
            raise ShardingError("the what-if program's arguments carry no mesh to lay a change out on")
        closed = (self.fun if hasattr(self.fun, "trace") else jax.jit(self.fun)).trace(*args, **kwargs).jaxpr
        arrays = [leaf for leaf in leaves if isinstance(leaf, (jax.Array, jax.ShapeDtypeStruct))]
        if len(arrays) != len(closed.jaxpr.invars):
            raise ShardingError("the program's arguments do not map one to one onto its jaxpr's inputs")
        change = _Change(self.kind, "", "", self.spec, "", output_index=self.output_index,
                         constraint_line=self.constraint_line, steps=self.steps, value_at=self.value_at)  # fmt: skip
        return _changed_jit(closed, change, mesh, self.name), arrays

    def trace(self, *args: Any, **kwargs: Any) -> Any:
        jitted, arrays = self._jitted(args, kwargs)
        return jitted.trace(*arrays)

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        jitted, arrays = self._jitted(args, kwargs)
        return jitted.lower(*arrays)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        jitted, arrays = self._jitted(args, kwargs)
        return jitted(*arrays)


def _partition_spec(spec: Spec) -> Any:
    from jax.sharding import PartitionSpec

    return PartitionSpec(*(None if not s else s[0] if len(s) == 1 else tuple(s) for s in spec))


# What jax.jit says when an argument is laid out unlike the jit's own in_shardings.
_IN_SHARDINGS = "does not match the sharding on the respective arg"


def _changed_inputs(change: _Change) -> list[tuple[int, Spec]]:
    out = [] if change.input_index is None else [(change.input_index, change.spec)]
    if change.second_index is not None:
        out.append((change.second_index, change.second_spec))
    return out + list(change.more)


def _relaid(program: Any, change: _Change) -> list[Any]:
    """The program's array arguments with the change's inputs laid out as it says (shapes only)."""
    arrays = [leaf for leaf, array in zip(program.origin.leaves, program.origin.array_leaf) if array]
    out = list(arrays)
    for k, spec in _changed_inputs(change):
        leaf = arrays[k]
        sharding = getattr(leaf, "sharding", None)
        mesh = sharding.mesh if isinstance(sharding, NamedSharding) else program.origin.mesh
        out[k] = jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=NamedSharding(mesh, _partition_spec(spec)))
    return out


def _in_shardings_change(program: Any, change: _Change) -> _Change:
    """An input-spec change of a jit whose in_shardings fix the input: the code to paste is there."""
    paths = program.input_paths
    shown = "; ".join(f"{paths[k]}: {_sharding_code(spec)}" for k, spec in _changed_inputs(change))
    code = f"jax.jit(f, in_shardings=...)  # {shown}"
    return replace(change, summary=f"{change.summary}, in the jit's in_shardings", code=code)


def _rewritten(program: Any, change: _Change, arguments: Sequence[Any] | None = None) -> Any:
    """The program's jaxpr run again with the change: each equation bound under its own line, so the
    changed program's collectives stay on the user's lines (on ``arguments``, the program's own by default)."""
    from ..program.compiling.trace_here import trace_here

    origin = program.origin
    mesh = origin.mesh
    if mesh is None:
        raise ShardingError("the program has no mesh to lay a change out on")
    args, kwargs = jax.tree_util.tree_unflatten(origin.tree, list(origin.leaves))
    context = origin.context_mesh
    with jax.set_mesh(context) if context is not None else contextlib.nullcontext():
        traced = (origin.fun if hasattr(origin.fun, "trace") else jax.jit(origin.fun)).trace(*args, **kwargs)
    closed = traced.jaxpr
    leaves = [leaf for leaf, array in zip(origin.leaves, origin.array_leaf) if array]
    if len(leaves) != len(closed.jaxpr.invars):
        raise ShardingError("the program's arguments do not map one to one onto its jaxpr's inputs")
    jitted = _changed_jit(closed, change, mesh, program.name)
    with jax.set_mesh(context) if context is not None else contextlib.nullcontext():
        return trace_here(jitted, *(leaves if arguments is None else arguments))


def _changed_jit(closed: Any, change: _Change, mesh: Any, name: str) -> Any:
    """``jax.jit`` of ``closed`` evaluated with ``change``: the constraint's steps or the output's sharding."""
    outputs = len(closed.jaxpr.outvars)

    def constrained_at(eqn: Any) -> Spec | tuple[Spec, ...] | None:
        if change.kind != "constraint" or eqn.primitive.name != "sharding_constraint":
            return None
        from ..program.lines.frames import user_frame
        from ..program.lines.jaxpr_walk import user_frames

        where = user_frame(user_frames(eqn.source_info))
        return change.steps if where is not None and where.line == change.constraint_line else None

    def changed(*flat: Any) -> Any:
        after = None
        if change.kind == "constraint" and change.value_at is not None:
            after = (change.value_at, NamedSharding(mesh, _partition_spec(change.spec)))
        return _evaluate(closed, flat, constrained_at, mesh, after)

    out_shardings: Any = None
    if change.kind == "out-shardings":
        assert change.output_index is not None
        out_shardings = [None] * outputs
        out_shardings[change.output_index] = NamedSharding(mesh, _partition_spec(change.spec))
    changed.__name__ = name
    changed.__qualname__ = name
    return jax.jit(changed, out_shardings=out_shardings) if out_shardings is not None else jax.jit(changed)


def _evaluate(closed: Any, flat: Sequence[Any], steps_at: Any, mesh: Any, after: Any = None) -> list[Any]:
    """``closed`` evaluated on ``flat``, as JAX's own evaluator does, with the steps a change asks for
    put before the constraint they lead to, and ``after`` (``((equation, result), sharding)``) put on the
    result that top-level equation makes, under that equation's own line."""
    from jax._src import source_info_util

    jaxpr = closed.jaxpr
    env: dict[Any, Any] = {}

    def read(v: Any) -> Any:
        return v.val if isinstance(v, jax.extend.core.Literal) else env[v]

    for v, c in zip(jaxpr.constvars, closed.consts):
        env[v] = c
    for v, x in zip(jaxpr.invars, flat):
        env[v] = x
    if after is not None and after[0][0] >= len(jaxpr.eqns):
        raise ShardingError("the program's jaxpr has no equation where the constraint was to go")
    for i, eqn in enumerate(jaxpr.eqns):
        params = eqn.primitive.get_bind_params(eqn.params)
        operands = [read(v) for v in eqn.invars]
        name_stack = source_info_util.current_name_stack() + eqn.source_info.name_stack
        with source_info_util.user_context(eqn.source_info.traceback, name_stack=name_stack), eqn.ctx.manager:
            for s in steps_at(eqn) or ():
                operands[0] = jax.lax.with_sharding_constraint(operands[0], NamedSharding(mesh, _partition_spec(s)))
            result = eqn.primitive.bind(*operands, **params)
            results = list(result) if eqn.primitive.multiple_results else [result]
            if after is not None and after[0][0] == i:
                results[after[0][1]] = jax.lax.with_sharding_constraint(results[after[0][1]], after[1])
        for v, r in zip(eqn.outvars, results):
            env[v] = r
    return [read(v) for v in jaxpr.outvars]


def _alike(c: Any, collective: Collective) -> bool:
    """The same kind over some of the same mesh axes: a collective over other axes is another one."""
    return c.kind == collective.kind and (not c.axes or not collective.axes or bool(set(c.axes) & set(collective.axes)))


def _count(program: Any, collective: Collective) -> int:
    return sum(c.count for c in program.collectives if _alike(c, collective))


def _still_there(changed: Any, collective: Collective, before: Any = None) -> bool:
    """Whether the changed program still runs a collective like it (kind, axes) on that line, or more like it
    than before on no line of the user's for the same operation: one XLA no longer ties to a line is not gone."""
    if collective.source is None:
        return any(_alike(c, collective) and c.charged_to == collective.charged_to for c in changed.collectives)
    if before is not None:
        operation = collective.op_name.rsplit("/", 1)[-1]

        def unlined(program: Any) -> int:  # the same operation's, on no line (not a new one the change costs)
            return sum(
                c.count
                for c in program.collectives
                if _alike(c, collective) and c.source is None and operation and c.op_name.endswith("/" + operation)
            )

        if unlined(changed) > unlined(before):
            return True
    here = (collective.source.file, collective.source.line)
    for c in changed.collectives:
        if _alike(c, collective) and any(_same_place(item, collective, here) for item in (c.parts or (c,))):
            return True
    return False


def _same_place(item: Any, collective: Collective, here: tuple[str, int]) -> bool:
    """On that line, and in the same layer (Flax scope) and pass of a Python loop where both say: a loop's
    other layers run their own collective on the same line."""
    s = item.source
    if s is None or (s.file, s.line) != here:
        return False
    if item.scope and collective.scope and item.scope != collective.scope:
        return False
    return item.pass_number is None or collective.pass_number is None or item.pass_number == collective.pass_number


def _remat_there(changed: Any, remat: Any) -> bool:
    return any(
        (r.source_file, r.source_line, r.shape) == (remat.source_file, remat.source_line, remat.shape)
        for r in changed.rematerializations
    )


def _step(program: Any, hardware: str) -> float | None:
    try:
        return float(program.estimate(hardware).step_s)
    except Exception:  # a program the estimate cannot price (no mesh) has no step time
        return None


def _diff(before: Any, after: Any, hardware: str) -> Any:
    from .run import diff

    try:
        return diff(before, after, hardware=hardware, names=("now", "changed"))
    except ShardingError:
        return None
