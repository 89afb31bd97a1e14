"""Why each collective is there: the operation on the user's line, the layouts it meets, the rule.

A collective is matched to the jaxpr's equation that needs it: the one on the
collective's line whose primitive XLA's ``op_name`` names (a constraint's
collectives moved to the constraint's line, to that ``sharding_constraint``).
The equation's operands are the program's own values, laid out as the
program shows them, and its parameters say which dimensions it contracts,
reduces, sorts or reshapes. The rule follows from the collective's kind and
those: a split contracting dimension leaves partial sums; a layout asked for
(a constraint, an output) unlike the one made must be moved; an operation
that needs a whole dimension gathers a split one; a loop's carry made in
another layout than it starts in is moved back; a ``shard_map`` body's
collective is the user's own. Where none of these can be shown from the
layouts, the reason says what is missing rather than guess.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

from jax.extend import core as jex_core
from jax.sharding import AxisType

from .. import hlo
from ..collectives import places
from ..lines.frames import user_frame
from ..lines.jaxpr_walk import CALL_PRIMITIVES, RESHARDING_KINDS, _jaxprs, user_frames
from ..lines.sources import line_text
from ..model import Collective, CollectivePart, SourceLocation, Value
from ..values.layouts import UNEVEN_SPLIT
from .reasons import OperandLayout, Spec, Why, spec_text

REDUCING_KINDS = ("all-reduce", "reduce-scatter")
# The collectives a shard_map body's user writes (jax.lax's names, as the jaxpr spells them).
SHARD_MAP_COLLECTIVES = frozenset(
    {
        "psum",
        "psum_invariant",
        "pmax",
        "pmin",
        "pmean",
        "all_gather",
        "all_gather_invariant",
        "all_to_all",
        "ppermute",
        "psum_scatter",
        "reduce_scatter",
        "pbroadcast",
    }
)
REDUCTIONS = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or"})
CUMULATIVE = frozenset({"cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"})
# XLA's op_name for operations JAX lowers to another primitive's name.
_LOWERED_AS = {
    "reduce_window_sum": CUMULATIVE,
    "reduce_window_max": CUMULATIVE,
    "reduce_window_min": CUMULATIVE,
    "reduce_window": CUMULATIVE,
    "argmax": frozenset({"argmax"}),
    "argmin": frozenset({"argmin"}),
    "fft": frozenset({"fft"}),
    "while": frozenset({"scan", "while"}),
    "reduce": frozenset({"argmax", "argmin", *REDUCTIONS}),
    # a scan's body reads (and writes) one slice of its scanned inputs (and stacked results) each pass
    "dynamic_slice": frozenset({"dynamic_slice", "scan"}),
    "dynamic_update_slice": frozenset({"dynamic_update_slice", "scan"}),
}
_CONSTRAINTS = frozenset({"sharding_constraint", "reshard"})
_CONSTRAINT_WORDS = {"sharding_constraint": "with_sharding_constraint", "reshard": "reshard"}
_SCATTER_ADDS = frozenset({"scatter-add", "scatter_add"})
_SHIFTS = frozenset({"slice", "pad", "rev"})


@dataclass(frozen=True)
class _Eqn:
    """One equation of the jaxpr (any depth) with the user's frame it is on."""

    eqn: Any
    where: SourceLocation | None
    manual: bool  # inside a shard_map body
    loop: Any  # the scan/while equation whose body it is in, innermost (None at top level)
    body: Any  # that body's jaxpr


def _equations(
    jaxpr: Any, manual: bool = False, loop: Any = None, body: Any = None, callers: tuple[SourceLocation, ...] = ()
) -> Iterator[_Eqn]:
    for eqn in jaxpr.eqns:
        frames = user_frames(eqn.source_info) or callers
        yield _Eqn(eqn, user_frame(frames), manual, loop, body)
        name = eqn.primitive.name
        for key in sorted(eqn.params):
            for sub in _jaxprs(eqn.params[key]):
                inner_loop, inner_body = (
                    (eqn, sub) if name in ("scan", "while") and key in ("jaxpr", "body_jaxpr") else (loop, body)
                )
                yield from _equations(sub, manual or name == "shard_map", inner_loop, inner_body, frames)


class CauseReader:
    """Reads the cause of each collective of one program (see the module's doc)."""

    def __init__(
        self,
        jaxpr: Any,
        walked: Sequence[Any],
        values: Sequence[Value],
        module: hlo.Module,
        output_paths: Sequence[str],
        outputs: Sequence[Any],
        asked: Sequence[bool] | None = None,
    ) -> None:
        self.jaxpr = jaxpr
        self.asked = None if asked is None else tuple(asked)  # which outputs an out_shardings lays out
        self.module = module
        self.by_var: dict[int, Value] = {id(w.var): v for w, v in zip(walked, values)}
        self.output_paths = tuple(output_paths)
        self.outputs = tuple(outputs)
        self.by_line: dict[tuple[str, int], list[_Eqn]] = {}
        self.producer: dict[int, _Eqn] = {}
        self.outer: dict[int, Any] = {}  # a call's inner input -> the operand the call passes it
        self.lifted: dict[int, Any] = {}  # a call's inner result -> the call's result
        self.returned: dict[int, Any] = {}  # a call's result -> the inner result it returns
        self.input_of: dict[int, int] = {id(v): k for k, v in enumerate(jaxpr.invars)}
        self.top: dict[int, int] = {id(eqn): i for i, eqn in enumerate(jaxpr.eqns)}
        self.enclosing: dict[int, Any] = {}  # an inner input no call maps one to one (a carry) -> its equation
        self.readers: dict[int, list[_Eqn]] = {}  # a value -> the equations that read it
        for e in _equations(jaxpr):
            subs = [sub for key in sorted(e.eqn.params) for sub in _jaxprs(e.eqn.params[key])]
            if e.eqn.primitive.name in CALL_PRIMITIVES and len(subs) == 1 and len(subs[0].invars) == len(e.eqn.invars):
                for inner, outer in zip(subs[0].invars, e.eqn.invars):
                    self.outer[id(inner)] = outer
                if len(subs[0].outvars) == len(e.eqn.outvars):
                    for inner, outer in zip(subs[0].outvars, e.eqn.outvars):
                        self.lifted[id(inner)] = outer
                        self.returned[id(outer)] = inner
            for inner, outer in (*_loop_constants(e.eqn), *_branch_operands(e.eqn)):
                self.outer[id(inner)] = outer
            for sub in subs:
                for inner in sub.invars:
                    if id(inner) not in self.outer:
                        self.enclosing[id(inner)] = e.eqn
            if e.where is not None:
                self.by_line.setdefault((e.where.file, e.where.line), []).append(e)
            for v in e.eqn.outvars:
                self.producer[id(v)] = e
            for v in e.eqn.invars:
                self.readers.setdefault(id(v), []).append(e)
        self._bodies: set[str] | None = None
        self._resolving: set[int] = set()  # loop inputs being read, so that carries handed round stop

    # ------------------------------------------------------------------ entry

    def explain(self, collectives: Sequence[Collective], ops: Sequence[hlo.CollectiveOp]) -> tuple[Collective, ...]:
        out = []
        for c, op in zip(collectives, ops):
            parts = tuple(replace(p, why=self._why_part(c, p)) for p in c.parts)
            why = parts[0].why if parts else self.why(c, op)
            out.append(replace(c, parts=parts, why=why))
        return tuple(out)

    def _why_part(self, c: Collective, part: CollectivePart) -> Why:
        primitive = _primitive_of(part.op_name)
        return self._by_operation(c.kind, c.axes or _piece_axes(c), part.source, primitive, part.op_name, None, None)

    def why(self, c: Collective, op: hlo.CollectiveOp | None) -> Why:
        primitive = "sharding_constraint" if c.note else _primitive_of(c.op_name)
        axes = c.axes or _piece_axes(c)
        carry = self._loop_carry(c, op, axes) if op is not None and c.kind in RESHARDING_KINDS else None
        if carry is not None:
            return carry
        charge = self._output_charge(op) if op is not None and c.kind in RESHARDING_KINDS else None
        return self._by_operation(c.kind, axes, c.source, primitive, c.op_name, charge, c)

    def _input_moved(self, kind: str, axes: tuple[str, ...], op_name: str) -> Why | None:
        """A collective XLA's metadata names after an input and no line: the input is moved as it comes in,
        to the layout an operation that reads it needs. The first reader whose cause is known is the one."""
        names = {
            id(var): (value.label or value.name)
            for var in self.jaxpr.invars
            if (value := self.by_var.get(id(var))) is not None
        }
        var = next((v for v in self.jaxpr.invars if names.get(id(v)) == op_name), None)
        if var is None:
            return None
        reading = {id(var)}
        for e in _equations(self.jaxpr):
            for sub in (sub for key in sorted(e.eqn.params) for sub in _jaxprs(e.eqn.params[key])):
                reading |= {
                    id(inner)
                    for inner in sub.invars
                    if id(inner) in self.outer and id(self.outer[id(inner)]) in reading
                }
            if e.eqn.primitive.name in CALL_PRIMITIVES or not any(id(v) in reading for v in e.eqn.invars):
                continue
            expression = line_text(e.where.file, e.where.line) if e.where is not None else ""
            why = self._by_equation(e, kind, axes, expression)
            # The reason must be about the input: a reader whose rule moves another operand is not this move.
            if why.known and why.operand is not None and why.operands[why.operand].label == op_name:
                return self._located(why, e.eqn)
        return None

    # ------------------------------------------------------------------ matching

    def _candidates(
        self, source: SourceLocation | None, primitive: str, op_name: str, pass_number: int | None = None
    ) -> list[_Eqn]:
        """The equations on ``source``'s line that are ``primitive``, the likeliest first: forward or
        backward as ``op_name`` says, the loop pass asked for, the same column."""
        if source is None:
            return []
        on_line = self.by_line.get((source.file, source.line), [])
        names = _LOWERED_AS.get(primitive, frozenset({primitive}))
        found = [e for e in on_line if e.eqn.primitive.name in names]
        backward = "transpose(" in op_name

        def pass_of(e: _Eqn) -> int | None:
            v = self.by_var.get(id(e.eqn.outvars[0])) if e.eqn.outvars else None
            return None if v is None else v.pass_number

        return sorted(
            found,
            key=lambda e: (
                ("transpose" in str(e.eqn.source_info.name_stack)) != backward,
                pass_number is not None and pass_of(e) != pass_number,
                e.where is None or e.where.column != source.column,
            ),
        )

    def _find(self, source: SourceLocation | None, primitive: str, op_name: str) -> _Eqn | None:
        found = self._candidates(source, primitive, op_name)
        return found[0] if found else None

    def _operand(self, var: Any, role: str = "operand") -> OperandLayout | None:
        if not isinstance(var, jex_core.Var):
            return None
        v = self.by_var.get(id(var))
        hops = 0
        while (v is None or v.layout is None) and id(var) in self.outer and hops < 8:
            var, hops = self.outer[id(var)], hops + 1
            if not isinstance(var, jex_core.Var):
                return None
            v = self.by_var.get(id(var))
        aval = var.aval
        type_str = str(aval)
        if v is None and id(var) in self.enclosing:
            return self._loop_input(var, role)
        if v is None:
            # Named by its type, never by an address: a reason reads the same in every run and every snapshot.
            return OperandLayout(f"an unlisted {type_str}", type_str, None, role, "not among the program's values")
        note = "" if v.layout is not None else (v.note or "its layout is unknown")
        return OperandLayout(v.label or v.name, v.type_str, v.spec, role, note)

    def _loop_input(self, var: Any, role: str) -> OperandLayout:
        """A loop body's carry or scanned slice, which no equation makes. A carry has one layout in every
        pass: where it comes into the loop as the body makes it again, that is its layout. A scanned slice
        is its operand's layout less the scanned dimension, where that dimension is whole."""
        loop = self.enclosing[id(var)]
        type_str = str(var.aval)
        slot = _loop_slot(loop, var)
        if slot is None or id(var) in self._resolving:
            # A shard_map body's block, or a carry handed round between slots: as any value not listed.
            return OperandLayout(f"an unlisted {type_str}", type_str, None, role, "not among the program's values")
        kind, operand, end = slot
        self._resolving.add(id(var))
        try:
            outer = self._operand(operand)
            made = self._operand(end) if end is not None and end is not var else outer
        finally:
            self._resolving.discard(id(var))
        if outer is None:
            return OperandLayout(f"a {kind} of a constant", type_str, None, role, "the loop's operand is a constant")
        label = f"the carry {outer.label}" if kind == "carry" else f"a slice of {outer.label}"
        if outer.spec is None:
            return OperandLayout(label, type_str, None, role, outer.note or "its layout is unknown")
        if kind == "carry":
            if made is None or made.spec != outer.spec:
                note = f"it comes in as {outer.spec_text} and the body makes it {made.spec_text if made else '?'}"
                return OperandLayout(label, type_str, None, role, note)
            return OperandLayout(label, type_str, outer.spec, role)
        if outer.spec[0]:
            note = f"the scanned dimension of {outer.label} is split over {_axes_text(outer.spec[0])}"
            return OperandLayout(label, type_str, None, role, note)
        return OperandLayout(label, type_str, outer.spec[1:], role)

    def _sources(self, variables: Sequence[Any]) -> tuple[int, ...]:
        """The program's inputs (positions among the jaxpr's inputs) that ``variables`` are made from, followed
        back through every equation, call and loop."""
        found: set[int] = set()
        seen: set[int] = set()
        pending = [v for v in variables if isinstance(v, jex_core.Var)]
        while pending and len(seen) < 20_000:
            v = pending.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            if id(v) in self.input_of:
                found.add(self.input_of[id(v)])
            elif id(v) in self.outer:
                pending.append(self.outer[id(v)])
            elif id(v) in self.enclosing:
                pending.extend(self.enclosing[id(v)].invars)
            elif (producer := self.producer.get(id(v))) is not None:
                pending.extend(producer.eqn.invars)
            pending = [p for p in pending if isinstance(p, jex_core.Var)]
        return tuple(sorted(found))

    def _operand_sources(self, var: Any) -> tuple[int, ...]:
        """The inputs ``var`` is made from, where a loop body's scanned slice is its own operand's alone
        (not every operand the loop takes)."""
        loop = self.enclosing.get(id(var))
        slot = _loop_slot(loop, var) if loop is not None else None
        if slot is not None and slot[0] == "slice":
            var = slot[1]
        return self._sources([var])

    def _made_at(self, var: Any) -> tuple[int, int, int] | None:
        """(equation, result, line) of the top-level equation that makes ``var`` (or what a call passes in as it)."""
        hops = 0
        while id(var) in self.outer and hops < 8:
            var, hops = self.outer[id(var)], hops + 1
        producer = self.producer.get(id(var)) if isinstance(var, jex_core.Var) else None
        if producer is None or id(producer.eqn) not in self.top:
            return None
        if "transpose" in str(producer.eqn.source_info.name_stack):
            return None  # a gradient's value: no line of the user's makes it, so no constraint can be written there
        k = next((k for k, out in enumerate(producer.eqn.outvars) if out is var), None)
        line = producer.where.line if producer.where is not None else 0
        return None if k is None else (self.top[id(producer.eqn)], k, line)

    def _located(self, why: Why, eqn: Any) -> Why:
        """``why`` with where its fixes look: the inputs the operation reads from, and where its operand is made."""
        made_at = None
        marked = None
        if why.operand is not None and why.operand < len(why.operands):
            label = why.operands[why.operand].label
            for v in eqn.invars:
                o = self._operand(v)
                if o is not None and o.label == label:
                    made_at = self._made_at(v)
                    marked = v
                    break
        if eqn.primitive.name in _CONSTRAINTS and eqn.invars and why.operand is not None:
            # What the constraint asks the layout of, where the operand pointed at is it or made before it (its shape)
            if why.operands[why.operand].type_str == str(eqn.invars[0].aval):
                marked = eqn.invars[0]
        arrival = None
        if why.cause == "layout-mismatch" and why.wanted is not None and marked is not None:
            arrival = self._arrival(marked, why.wanted)
        # A reason that names the inputs its operand is made from keeps them; else the operation's inputs
        sources = why.sources or self._sources(eqn.invars)
        return replace(why, sources=sources, made_at=made_at, arrival=arrival)

    def _arrival(self, var: Any, wanted: Spec, hops: int = 8) -> tuple[int, Spec] | None:
        """The input ``var`` is made from through transposes and operations of one array operand of its shape
        (``y * 2``, ``sin(y)``, a constraint), into the calls that return it and out of those it is passed to,
        with the layout it needs for ``var`` to be ``wanted``."""
        for _ in range(hops):
            if not isinstance(var, jex_core.Var):
                return None
            if id(var) in self.input_of:
                return self.input_of[id(var)], wanted
            if id(var) in self.outer:
                var = self.outer[id(var)]
                continue
            if id(var) in self.returned:
                var = self.returned[id(var)]
                continue
            producer = self.producer.get(id(var))
            if producer is None or len(producer.eqn.outvars) != 1:
                return None
            eqn = producer.eqn
            if eqn.primitive.name == "transpose":
                perm = tuple(int(p) for p in eqn.params.get("permutation", ()))
                if len(perm) != len(wanted):
                    return None
                wanted, var = _before_transpose(wanted, perm), eqn.invars[0]
                continue
            if eqn.primitive.name == "broadcast_in_dim" and eqn.invars:
                # A broadcast splits its new dimensions on each device without moving data: only the
                # dimensions it keeps need the operand's layout.
                wanted, var = _before_broadcast(wanted, eqn, var), eqn.invars[0]
                continue
            shape = tuple(getattr(var.aval, "shape", ()))
            same = [
                v for v in eqn.invars if isinstance(v, jex_core.Var) and tuple(getattr(v.aval, "shape", ())) == shape
            ]
            if (
                len(same) != 1
                or eqn.primitive.name in CALL_PRIMITIVES
                or any(True for p in eqn.params.values() for _ in _jaxprs(p))
            ):
                return None
            var = same[0]
        return None

    # ------------------------------------------------------------------ causes

    def _by_operation(
        self,
        kind: str,
        axes: tuple[str, ...],
        source: SourceLocation | None,
        primitive: str,
        op_name: str,
        charge: tuple[str, int] | None,
        c: Collective | None,
    ) -> Why:
        expression = line_text(source.file, source.line) if source is not None else ""
        # XLA's metadata naming an input (no "/" of a jit's operation) is that input moved as it comes in, even
        # where its line is the constraint that asks for the layout
        named_input = kind in RESHARDING_KINDS and (source is None or "/" not in op_name)
        moved = self._input_moved(kind, axes, op_name) if named_input else None
        if moved is not None:
            return moved
        if source is None and charge is None:
            return Why("unknown", primitive or "?", "", (), "XLA's metadata names no line of yours for it")
        pass_number = None if c is None else c.pass_number
        candidates = self._candidates(source, primitive, op_name, pass_number)
        found = candidates[0] if candidates else None
        # A constraint or a shard_map body's collective is the cause itself, whatever the output is laid out as
        owns = found is not None and found.eqn.primitive.name in _CONSTRAINTS | SHARD_MAP_COLLECTIVES
        if charge is not None and not owns:
            if found is not None and not self._output_asked(charge[1]):
                # Nothing asks the output's layout, which XLA chose: operands laid out unlike are the cause
                unlike = self._operands_mismatch(found.eqn, found.eqn.primitive.name, expression, axes)
                if unlike is not None:
                    return self._located(unlike, found.eqn)
            output = self._output_mismatch(kind, axes, charge[1], primitive, expression, source, op_name)
            if output is not None:
                return output
        if found is None:
            moved = self._input_moved(kind, axes, op_name) if kind in RESHARDING_KINDS else None
            if moved is not None:  # the metadata names an input, on the line that reads it
                return moved
            return Why(
                "unknown",
                primitive or "?",
                expression,
                (),
                f"no operation of the jaxpr on that line is the {primitive or 'operation'} XLA's metadata names",
            )
        first: Why | None = None
        for candidate in candidates:
            why = self._by_equation(candidate, kind, axes, expression)
            if why.known:
                return self._located(why, candidate.eqn)
            first = first or why
        assert first is not None
        return first

    def _by_equation(self, found: _Eqn, kind: str, axes: tuple[str, ...], expression: str) -> Why:
        eqn = found.eqn
        name = eqn.primitive.name
        if name in SHARD_MAP_COLLECTIVES or (found.manual and name in SHARD_MAP_COLLECTIVES):
            return self._shard_map(eqn, name, expression, axes, "transpose" in str(eqn.source_info.name_stack))
        if name in _CONSTRAINTS:
            return self._constraint(eqn, name, expression, kind, axes)
        if name in ("scan", "while") and kind in RESHARDING_KINDS:
            carried = self._carry_of_loop(eqn, expression)
            if carried is not None:
                return carried
        if name == "scan":
            scanned = self._scanned(eqn, expression, axes, kind)
            if scanned is not None:
                return scanned
        if kind in REDUCING_KINDS:
            if name == "dot_general":
                return self._contraction(eqn, expression, axes, kind)
            if name in _SCATTER_ADDS:
                summed = self._scatter_sum(eqn, name, expression, axes, kind)
                if summed is not None:
                    return summed
            if name in REDUCTIONS or name in ("argmax", "argmin"):
                return self._reduction(eqn, name, expression, axes, kind)
        if name == "conv_general_dilated":
            convolved = self._convolution(eqn, expression, axes, kind)
            if convolved is not None:
                return convolved
        needs = self._whole_dimension(eqn, name, expression, axes, kind)
        if needs is not None:
            return needs
        if name in _SHIFTS:
            shifted = self._shifted(eqn, name, expression, axes, kind)
            if shifted is not None:
                return shifted
        if name == "dot_general" and kind in RESHARDING_KINDS:
            contraction = self._operands_mismatch_dot(eqn, expression, axes, kind)
            if not contraction.known and found.loop is not None:
                return self._carry_made_unlike(found, expression) or contraction
            return contraction
        mismatch = self._operands_mismatch(eqn, name, expression, axes)
        if mismatch is not None:
            return mismatch
        if kind in RESHARDING_KINDS:
            moved = self._result_unlike_operand(found, name, expression, kind)
            if moved is not None:
                return moved
        operands = tuple(o for o in (self._operand(v) for v in eqn.invars) if o is not None)
        return Why(
            "unknown",
            name,
            expression,
            operands,
            f"its operands' layouts ({', '.join(o.spec_text for o in operands) or 'none'}) show no split that a "
            f"{name} over {_axes_text(axes)} needs a {kind} for; XLA re-laid them out by its own choice",
        )

    def _shard_map(self, eqn: Any, name: str, expression: str, axes: tuple[str, ...], backward: bool) -> Why:
        named = eqn.params.get("axes") or eqn.params.get("axis_name") or axes
        named = tuple(named) if isinstance(named, (tuple, list)) else (named,)
        operands = tuple(o for o in (self._operand(v) for v in eqn.invars) if o is not None)
        shown = ", ".join(repr(str(a)) for a in named)
        rule = (
            f"you wrote a collective over {shown} on this line inside a shard_map body, and its gradient "
            f"(JAX's transpose of it) is this {name}: the body runs per device, so the collective is your code's own"
            if backward
            else f"you wrote {name} over {shown} inside a shard_map body: each device runs the body on its own "
            "block, and this collective is the one your code asks for"
        )
        return Why(
            "shard-map",
            name,
            expression,
            operands,
            rule,
            axes=tuple(str(a) for a in named),
        )

    def _constraint(self, eqn: Any, name: str, expression: str, kind: str, axes: tuple[str, ...] = ()) -> Why:
        # Where XLA fused the constrained value away, its layout is carried from the nearest value it is made from
        operand = self._layout_of(eqn.invars[0]) if eqn.invars else None
        sharding = eqn.params.get("sharding") or eqn.params.get("dst_sharding")
        rank = len(getattr(eqn.invars[0].aval, "shape", ())) if eqn.invars else 0
        wanted = _spec_of(sharding, rank)
        by = "with_sharding_constraint" if name == "sharding_constraint" else "reshard"
        operands: tuple[OperandLayout, ...] = (operand,) if operand is not None else ()
        index, made_text = 0, ""
        if operand is None or operand.spec is None or wanted is None:
            missing = (
                "the layout asked for" if wanted is None else f"{operand.label if operand else 'the operand'}'s layout"
            )
            return Why("unknown", name, expression, operands, f"{missing} is unknown", wanted, by)
        if operand.spec == wanted:  # XLA laid the operand out as asked: the move is further back
            earlier = self._made_before(eqn.invars[0], wanted)
            gathered = self._gathered_into(eqn.invars[0], operand, wanted, by, expression, name, kind, axes)
            if earlier is None and gathered is not None:
                return gathered
            if earlier is None:
                made_whole = self._made_needing_whole(eqn.invars[0], axes, kind)
                if made_whole is not None:
                    return made_whole
                stretched = self._stretched_unlike(eqn.invars[0], operand, wanted, by, expression, kind)
                if stretched is not None:
                    return stretched
                stop = self._walk_stop(eqn.invars[0])
                return Why(
                    "unknown",
                    name,
                    expression,
                    operands,
                    f"{operand.label} is already {operand.spec_text}, as {by} asks, and {stop}",
                    wanted,
                    by,
                )
            origin, carried, through = earlier
            if through:
                # Dimensions move between the value and the constrained one: the rule reads in the latter's
                # dimensions, with the layout its line gives it from that value.
                operand = replace(operand, spec=carried, role="made")
                operands, index = (origin, operand), 1
                made_text = f"made as {spec_text(carried)} by {through} from {origin.label} ({origin.spec_text})"
            else:
                operands, operand = (origin, operand), origin
        made = operand.spec
        assert made is not None
        dim = _first_difference(made, wanted)
        moved = _move_words(made, wanted, kind)
        return Why(
            "layout-mismatch",
            name,
            expression,
            operands,
            f"{by} asks for {spec_text(wanted)} of {operand.label}, {made_text or f'made as {operand.spec_text}'}: "
            f"{moved}",
            wanted,
            by,
            index,
            dim,
            _changed_axes(made, wanted),
        )

    def _gathered_into(
        self,
        var: Any,
        result: OperandLayout,
        wanted: Spec,
        by: str,
        expression: str,
        name: str,
        kind: str,
        axes: tuple[str, ...],
    ) -> Why | None:
        """A constraint met by a contraction's result (or an element-wise step's of it, ``tanh(h @ w)``)
        because XLA gathered an operand first: the operand split over the collective's axes on a dimension the
        contraction keeps where the result is asked otherwise, or on its contracting dimension over axes that
        already split the result as asked (so the product cannot be left as partial sums over them)."""
        if kind != "all-gather":
            return None
        current = self._inside_calls(var)
        producer = self.producer.get(id(current))
        for _ in range(4):  # element-wise steps keep every dimension where it is
            if producer is None or producer.eqn.primitive.name == "dot_general":
                break
            before = self._carried_from(producer.eqn, current)
            if before is None or _shape(before) != _shape(current):
                return None
            current = self._inside_calls(before)
            producer = self.producer.get(id(current))
        if producer is None or producer.eqn.primitive.name != "dot_general":
            return None
        (contracting, batch) = producer.eqn.params["dimension_numbers"]
        ranks = [len(_shape(v)) for v in producer.eqn.invars]
        free = [[d for d in range(ranks[s]) if d not in contracting[s] and d not in batch[s]] for s in (0, 1)]
        asked = {a for entry in wanted for a in entry}
        layouts = [self._operand(v, "made") for v in producer.eqn.invars]

        def gathered(o: OperandLayout, d: int, split: tuple[str, ...], why_words: str) -> Why:
            operand_var = producer.eqn.invars[layouts.index(o)]
            whole = tuple(tuple(a for a in e if a not in split) for e in o.spec or ())  # an axis splits one dimension
            return Why(
                "layout-mismatch",
                name,
                expression,
                (o, result),
                f"{by} asks for {spec_text(wanted)} of {result.label}, but {o.label} ({o.spec_text}) is split "
                f"over {_axes_text(split)} on {why_words}: XLA gathers {o.label} over {_axes_text(split)} first, "
                f"and {result.label} comes out as asked",
                whole,
                f"{by}, through {result.label}",
                0,
                d,
                split,
                sources=self._operand_sources(operand_var),
            )

        for side, o in enumerate(layouts):
            if o is None or o.spec is None:
                continue
            for d in free[side]:
                split = tuple(a for a in o.spec[d] if a in axes)
                at = len(batch[0]) + (free[0].index(d) if side == 0 else len(free[0]) + free[1].index(d))
                if split and not set(split) <= set(wanted[at]):
                    words = f"dimension {d}, which the contraction keeps, so it would split {result.label} too"
                    return gathered(o, d, split, words)
        for side, o in enumerate(layouts):
            other = layouts[1 - side]
            if o is None or o.spec is None:
                continue
            for d, e in zip(contracting[side], contracting[1 - side]):
                split = tuple(a for a in o.spec[d] if a in axes and a in asked)
                paired = other is not None and other.spec is not None and any(a in other.spec[e] for a in split)
                if split and not paired:
                    words = (
                        f"its contracting dimension {d}, while {result.label} is split over {_axes_text(split)} "
                        "as asked, so the product cannot be left as partial sums over it"
                    )
                    return gathered(o, d, split, words)
        return None

    def _inside_calls(self, var: Any) -> Any:
        """The value a call's result is inside the call (a jitted helper's own result), through nested calls."""
        for _ in range(4):
            inner = self.returned.get(id(var))
            if not isinstance(inner, jex_core.Var):
                break
            var = inner
        return var

    def _stretched_unlike(
        self, var: Any, result: OperandLayout, wanted: Spec, by: str, expression: str, kind: str
    ) -> Why | None:
        """A constraint met by an element-wise result whose operands stretch size-1 dimensions
        (``u[:, None] * w[None, :]``): the first operand split unlike the layout asked on a dimension it holds
        at full size, which XLA moves before the operation (a stretched dimension takes any split as it is)."""
        var = self._inside_calls(var)
        producer = self.producer.get(id(var))
        if producer is None or len(producer.eqn.outvars) != 1 or producer.eqn.primitive.name in _CONTRACTING:
            return None
        eqn = producer.eqn
        shape = _shape(var)
        arrays = [v for v in eqn.invars if isinstance(v, jex_core.Var)]
        if len(arrays) < 2 or not all(_stretches_to(_shape(v), shape) for v in arrays):
            return None
        if all(_shape(v) == shape for v in arrays):
            return None  # nothing is stretched: operands laid out unlike are read elsewhere
        layouts = [self._layout_of(v) for v in arrays]
        for v, o in zip(arrays, layouts):
            if o is None or o.spec is None or self._constant_fill(v):
                continue
            # Read in the result's dimensions: a whole dimension is cut as the result asks, with no move, and
            # so is a stretched one (of size 1, never split).
            carried = tuple(split or asked for split, asked in zip(o.spec, wanted))
            if carried == wanted:
                continue
            operands = (*(x for x in layouts if x is not None), result)
            others = ", ".join(x.label for x in layouts if x is not None and x is not o)
            return Why(
                "layout-mismatch",
                eqn.primitive.name,
                expression,
                operands,
                f"{by} asks for {spec_text(wanted)} of {result.label}, which {eqn.primitive.name} makes element by "
                f"element from {o.label} ({o.spec_text}) stretched against {others}: {o.label}'s full-size dimensions "
                f"keep their splits, and {_move_words(carried, wanted, kind)}",
                wanted,
                by,
                operands.index(o),
                _first_difference(carried, wanted),
                _changed_axes(carried, wanted),
            )
        return None

    def _made_needing_whole(self, var: Any, axes: tuple[str, ...], kind: str) -> Why | None:
        """The operation that makes ``var``, where it needs whole a dimension of its operand split over ``axes``
        (a reshape that merges or splits it): XLA's metadata names the constraint after it for the move."""
        producer = self.producer.get(id(var))
        if producer is None:
            return None
        where = producer.where
        expression = line_text(where.file, where.line) if where is not None else ""
        why = self._whole_dimension(producer.eqn, producer.eqn.primitive.name, expression, axes, kind)
        return why if why is not None and why.cause == "whole-dimension" else None

    def _made_before(self, var: Any, wanted: Spec, hops: int = 6) -> tuple[OperandLayout, Spec, str] | None:
        """The value ``var`` is made from, through operations that carry each dimension's split over to their
        result (a transpose, pad, slice, broadcast, an element-wise operation) and into the calls that return
        it, whose layout so carried to ``var`` is unlike ``wanted``: (that value, the layout it gives ``var``,
        the primitives between, or "" where they all keep its shape)."""
        current = var
        steps: list[Any] = []  # the equations from the value reached to ``var``, last first
        reshaping: set[int] = set()  # those among them that broadcast their operand to a new shape
        for _ in range(hops):
            if id(current) in self.returned:
                current = self.returned[id(current)]
                if not isinstance(current, jex_core.Var):
                    return None
            else:
                producer = self.producer.get(id(current))
                if producer is None:
                    return None
                before = self._carried_from(producer.eqn, current)
                if before is None:
                    return None
                steps.append(producer.eqn)
                if _shape(before) != _shape(current):
                    reshaping.add(id(producer.eqn))
                current = before
            o = self._operand(current, "made")
            if o is None or o.spec is None:
                continue
            carried = _carried_along(steps, o.spec)
            if carried is not None and carried != wanted:
                through = [
                    e.primitive.name
                    for e in reversed(steps)
                    if e.primitive.name in _LAYOUT_CARRYING or id(e) in reshaping
                ]
                return o, carried, ", ".join(dict.fromkeys(through))
        return None

    def _output_mismatch(
        self,
        kind: str,
        axes: tuple[str, ...],
        k: int,
        primitive: str,
        expression: str,
        source: SourceLocation | None,
        op_name: str,
    ) -> Why | None:
        """The output's layout asked for unlike the one its line makes; None where they agree (the
        collective is then the operation's own)."""
        path = self.output_paths[k] if k < len(self.output_paths) else f"out[{k}]"
        layout = self.outputs[k] if k < len(self.outputs) else None
        wanted = None if layout is None else layout.spec
        made = None
        outvar = self.jaxpr.outvars[k] if k < len(self.jaxpr.outvars) else None
        producer = self.producer.get(id(outvar)) if outvar is not None else None
        operands: tuple[OperandLayout, ...] = ()
        if producer is not None and outvar is not None:
            shape = tuple(getattr(outvar.aval, "shape", ()))
            for v in producer.eqn.invars:
                o = self._operand(v, "made")
                if o is not None and tuple(getattr(v.aval, "shape", ())) == shape:
                    operands = (o,)
                    made = o.spec
                    break
        by = f"the sharding of output {path} (out_shardings, or the layout the caller asks for)"
        sources = self._sources(producer.eqn.invars) if producer is not None else ()
        uneven = bool(operands) and operands[0].note.startswith(UNEVEN_SPLIT)
        if wanted is not None and made is None and uneven and axes and not primitive:
            # XLA split the value in padded blocks (its size does not divide over the axes): whole, as asked
            return Why(
                "layout-mismatch",
                primitive or (producer.eqn.primitive.name if producer is not None else "?"),
                expression,
                operands,
                f"output {path} must be {spec_text(wanted)} but its line makes it split over {_axes_text(axes)}: "
                f"{operands[0].note}; the blocks are gathered",
                wanted,
                by,
                0,
                axes=axes,
                sources=sources,
            )
        if wanted is None or made is None or made == wanted:
            return None
        return Why(
            "layout-mismatch",
            primitive or "?",
            expression,
            operands,
            f"output {path} must be {spec_text(wanted)} but its line makes it {spec_text(made)}: "
            f"{_move_words(made, wanted, kind)}",
            wanted,
            by,
            0,
            _first_difference(made, wanted),
            _changed_axes(made, wanted),
            sources=sources,
            arrival=self._arrival(outvar, wanted) if outvar is not None else None,
        )

    def _output_asked(self, k: int) -> bool:
        """Whether something outside the program asks output ``k``'s layout: the jit's ``out_shardings``, or
        the output's type under Explicit axes."""
        if self.asked is None or (k < len(self.asked) and self.asked[k]):
            return True
        outvar = self.jaxpr.outvars[k] if k < len(self.jaxpr.outvars) else None
        sharding = getattr(getattr(outvar, "aval", None), "sharding", None)
        types = getattr(getattr(sharding, "mesh", None), "axis_types", ())
        return any(t == AxisType.Explicit for t in types)

    def _contraction(self, eqn: Any, expression: str, axes: tuple[str, ...], kind: str) -> Why:
        (lc, rc), _ = eqn.params["dimension_numbers"]
        operands = tuple(self._operand(v) or _literal(v) for v in eqn.invars[:2])
        for index, (o, dims) in enumerate(zip(operands, (lc, rc))):
            if o.spec is None:
                continue
            for d in dims:
                split = tuple(a for a in o.spec[d] if not axes or a in axes)
                if split:
                    tail = (
                        "; the result is split, so each device keeps only its block of the sum (reduce-scatter)"
                        if kind == "reduce-scatter"
                        else ""
                    )
                    return Why(
                        "partial-sums",
                        "dot_general",
                        expression,
                        operands,
                        f"{o.label} is split over {_axes_text(split)} on its contracting dimension {d}: each device "
                        f"multiplies only its block of it and holds a partial sum, which the {kind} adds up over "
                        f"{_axes_text(split)}{tail}",
                        operand=index,
                        dimension=int(d),
                        axes=split,
                    )
        unknown = [o.label for o in operands if o.spec is None]
        reason = (
            f"the layout of {', '.join(unknown)} is unknown"
            if unknown
            else f"neither operand is split over {_axes_text(axes)} on a contracting dimension "
            f"({' and '.join(o.spec_text for o in operands)}): XLA re-laid them out inside the operation"
        )
        return Why("unknown", "dot_general", expression, operands, reason)

    def _convolution(self, eqn: Any, expression: str, axes: tuple[str, ...], kind: str) -> Why | None:
        """A convolution over input features split in both operands leaves partial sums; features split in one
        operand only move that operand (as a contraction's do); a window along a split spatial dimension reads
        past each block's edge, so the neighbours' edge elements are sent (a halo exchange)."""
        numbers = eqn.params["dimension_numbers"]
        lhs_dims, rhs_dims = tuple(numbers.lhs_spec), tuple(numbers.rhs_spec)
        operands = tuple(self._layout_of(v) or _literal(v) for v in eqn.invars[:2])
        if kind in REDUCING_KINDS:
            for index, (o, feature) in enumerate(zip(operands, (lhs_dims[1], rhs_dims[1]))):
                split = tuple(a for a in (o.spec[feature] if o.spec is not None else ()) if not axes or a in axes)
                if split:
                    return Why(
                        "partial-sums",
                        "conv_general_dilated",
                        expression,
                        operands,
                        f"a convolution sums over its input features, dimension {feature} of {o.label}, split over "
                        f"{_axes_text(split)}: each device convolves only its block of them and holds a partial "
                        f"sum, which the {kind} adds up over {_axes_text(split)}",
                        operand=index,
                        dimension=feature,
                        axes=split,
                    )
            return None
        lhs, rhs = operands
        features = (lhs.spec[lhs_dims[1]] if lhs.spec else None, rhs.spec[rhs_dims[1]] if rhs.spec else None)
        if None not in features and features[0] != features[1]:
            # Like a contraction's: both operands' input features split alike, or the one split over the axes moves
            moved = next((i for i, f in enumerate(features) if any(a in axes for a in f or ())), None)
            if moved is not None:
                o, other, dim = operands[moved], operands[1 - moved], (lhs_dims[1], rhs_dims[1])[moved]
                how = "gathered" if kind == "all-gather" else "moved"
                return Why(
                    "layout-mismatch",
                    "conv_general_dilated",
                    expression,
                    operands,
                    f"a convolution needs both operands' input features split alike, but dimension {dim} of "
                    f"{o.label} is split over {_axes_text(features[moved] or ())} and {other.label}'s input "
                    f"features over {_axes_text(features[1 - moved] or ())}: {o.label} is {how} "
                    f"over {_axes_text(axes)} to match {other.label}",
                    None,
                    "",
                    moved,
                    dim,
                    axes,
                )
        kernel = tuple(getattr(eqn.invars[1].aval, "shape", ()))
        for k, d in enumerate(lhs_dims[2:]):
            window = kernel[rhs_dims[2 + k]] if 2 + k < len(rhs_dims) else 1
            split = tuple(a for a in (lhs.spec[d] if lhs.spec is not None else ()) if not axes or a in axes)
            if not split or window < 2:
                continue
            how = (
                f"each device needs {window - 1} element{'s' if window > 2 else ''} beyond its block's edges, "
                "sent from its neighbours "
                "(a halo exchange)"
                if kind == "collective-permute"
                else _whole_words(kind, split)
            )
            return Why(
                "whole-dimension",
                "conv_general_dilated",
                expression,
                operands,
                f"a convolution's window of {window} along dimension {d} of {lhs.label}, split over "
                f"{_axes_text(split)}, reaches past each device's block: {how}",
                operand=0,
                dimension=d,
                axes=split,
            )
        return None

    def _walk_stop(self, var: Any) -> str:
        """Where the walk back from a constrained value stops, in words: the operation it cannot read a
        layout back through, or that nothing it is made from is laid out otherwise."""
        current = var
        for _ in range(6):
            current = self._inside_calls(current)
            producer = self.producer.get(id(current))
            if producer is None:
                break
            before = self._carried_from(producer.eqn, current)
            if before is None:
                name = producer.eqn.primitive.name
                return f"shardviz reads no one layout back through the {name} that makes it from its operands"
            current = before
        return "no value it is made from is laid out otherwise"

    def _carried_from(self, eqn: Any, var: Any) -> Any | None:
        """The operand whose layout ``eqn`` hands on to ``var``: one step of every walk back."""
        return _carried_operand(eqn, var, self._constant_fill) or self._joined_alike(eqn)

    def _joined_alike(self, eqn: Any) -> Any | None:
        """A concatenate's first operand, where every operand is laid out alike and whole along the joined
        dimension: the result has that layout."""
        if eqn.primitive.name != "concatenate":
            return None
        specs = {o.spec if o is not None else None for o in map(self._operand, eqn.invars)}
        if len(specs) != 1 or None in specs:
            return None
        (spec,) = specs
        return eqn.invars[0] if spec is not None and not spec[int(eqn.params["dimension"])] else None

    def _constant_fill(self, var: Any) -> bool:
        """Whether ``var`` is made from literals alone (``jnp.ones``, an iota): it has no layout to hand on."""
        producer = self.producer.get(id(var))
        return producer is not None and not any(isinstance(v, jex_core.Var) for v in producer.eqn.invars)

    def _layout_of(self, var: Any) -> OperandLayout | None:
        """``var``'s layout, or where XLA's is unknown, the one carried to it from the nearest value it is made
        from through operations that keep each dimension's split (a reshape that adds a size-1 dimension)."""
        o = self._operand(var)
        if o is None or o.spec is not None:
            return o
        steps: list[Any] = []
        current = var
        for _ in range(6):
            producer = self.producer.get(id(current))
            before = self._carried_from(producer.eqn, current) if producer is not None else None
            if producer is None or before is None:
                return o
            steps.append(producer.eqn)
            current = before
            earlier = self._operand(current)
            if earlier is not None and earlier.spec is not None:
                carried = _carried_along(steps, earlier.spec)
                return o if carried is None else replace(o, spec=carried, note="")
        return o

    def _reduction(self, eqn: Any, name: str, expression: str, axes: tuple[str, ...], kind: str) -> Why:
        operand = self._operand(eqn.invars[0]) or _literal(eqn.invars[0])
        reduced = tuple(eqn.params.get("axes", ()))
        if operand.spec is None:
            return Why("unknown", name, expression, (operand,), f"the layout of {operand.label} is unknown")
        for d in reduced:
            split = tuple(a for a in operand.spec[d] if not axes or a in axes)
            if split:
                return Why(
                    "partial-sums",
                    name,
                    expression,
                    (operand,),
                    f"{name} runs over dimension {d} of {operand.label}, split over {_axes_text(split)}: each device "
                    f"reduces only its block, and the {kind} combines the blocks' results over {_axes_text(split)}",
                    operand=0,
                    dimension=int(d),
                    axes=split,
                )
        return Why(
            "unknown",
            name,
            expression,
            (operand,),
            f"{operand.label} ({operand.spec_text}) is split over {_axes_text(axes)} on no dimension {name} reduces",
        )

    def _scatter_sum(self, eqn: Any, name: str, expression: str, axes: tuple[str, ...], kind: str) -> Why | None:
        """A scatter-add whose updates are split over ``axes`` on a dimension they scatter along: each device adds
        its share into the whole operand, and the partial results are summed. Where the jaxpr makes the updates
        whole first (a ``reshard``, as the gradient of ``x.at[i].get(out_sharding=...)`` does), XLA may keep them
        split and sum the smaller result instead: the layout before that reshard is the one that shows it."""
        if len(eqn.invars) < 3:
            return None
        updates = eqn.invars[2]
        windows = set(getattr(eqn.params.get("dimension_numbers"), "update_window_dims", ()))
        rank = len(getattr(updates.aval, "shape", ()))
        scattered = [d for d in range(rank) if d not in windows]
        operands = [self._operand(v) or _literal(v) for v in eqn.invars if isinstance(v, jex_core.Var)]
        target = operands[0].label if operands else "its operand"
        seen = self._operand(updates)
        before = self._before_constraint(updates)
        for layout, made in ((seen, False), (before, True)):
            if layout is None or layout.spec is None:
                continue
            for d in scattered:
                split = tuple(a for a in layout.spec[d] if not axes or a in axes) if d < len(layout.spec) else ()
                if not split:
                    continue
                if made:
                    operands.append(layout)
                    where = (
                        f"{layout.label}, the updates, is split over {_axes_text(split)} on dimension {d} before the "
                        f"{_CONSTRAINT_WORDS.get(self._constraint_name(updates), 'constraint')} that makes it whole; "
                        "XLA keeps it split"
                    )
                else:
                    where = f"{layout.label}, the updates, is split over {_axes_text(split)} on dimension {d}"
                return Why(
                    "partial-sums",
                    name,
                    expression,
                    tuple(operands),
                    f"{where}: each device adds only its share of the updates into the whole {target}, and the "
                    f"{kind} sums the devices' partial results over {_axes_text(split)}",
                    operand=len(operands) - 1
                    if made
                    else next((k for k, o in enumerate(operands) if o is seen), len(operands) - 1),
                    dimension=int(d),
                    axes=split,
                )
        return None

    def _before_constraint(self, var: Any) -> OperandLayout | None:
        """The layout of what a ``reshard`` or ``with_sharding_constraint`` made ``var`` from (None: no such step)."""
        producer = self.producer.get(id(var))
        if producer is None or producer.eqn.primitive.name not in _CONSTRAINTS or not producer.eqn.invars:
            return None
        return self._operand(producer.eqn.invars[0], "made")

    def _constraint_name(self, var: Any) -> str:
        producer = self.producer.get(id(var))
        return "" if producer is None else producer.eqn.primitive.name

    def _whole_dimension(self, eqn: Any, name: str, expression: str, axes: tuple[str, ...], kind: str) -> Why | None:
        """Sort, cumulative ops, argmax, top_k, FFT, concatenate, reshape, gather and scatter: a split dimension
        they need whole."""
        needed = _needed_dimensions(eqn, name)
        if needed is None:
            return None
        operand_index, dims, words = needed
        var = eqn.invars[operand_index]
        operand = self._operand(var) or _literal(var)
        operands = tuple(self._operand(v) or _literal(v) for v in eqn.invars if isinstance(v, jex_core.Var))
        at = next((k for k, v in enumerate(v for v in eqn.invars if isinstance(v, jex_core.Var)) if v is var), 0)
        if operand.spec is None and name == "concatenate":
            pieces = self._sliced_from(eqn, dims[0], axes, kind, expression)
            if pieces is not None:
                return pieces
        if operand.spec is None:
            return Why("unknown", name, expression, operands, f"the layout of {operand.label} is unknown")
        for d in dims:
            split = tuple(a for a in operand.spec[d] if not axes or a in axes) if d < len(operand.spec) else ()
            if split:
                return Why(
                    "whole-dimension",
                    name,
                    expression,
                    operands,
                    f"{name} {words} dimension {d} of {operand.label}, which is split over {_axes_text(split)}: it "
                    f"needs that dimension whole on each device, {_whole_words(kind, split)}",
                    operand=at,
                    dimension=int(d),
                    axes=split,
                )
        if name in ("gather", "scatter", "scatter-add", "scatter_add", "dynamic_slice", "dynamic_update_slice"):
            indices = eqn.invars[1] if len(eqn.invars) > 1 else None
            idx = self._operand(indices) if indices is not None else None
            if idx is not None and idx.spec is not None and any(idx.spec):
                d = next(k for k, s in enumerate(idx.spec) if s)
                split = tuple(idx.spec[d])
                return Why(
                    "whole-dimension",
                    name,
                    expression,
                    operands,
                    f"{name}'s indices {idx.label} are split over {_axes_text(split)} on dimension {d}: each device "
                    f"holds only some indices, and any of them may point anywhere in {operand.label}",
                    operand=1,
                    dimension=d,
                    axes=split,
                )
        return None

    def _scanned(self, eqn: Any, expression: str, axes: tuple[str, ...], kind: str) -> Why | None:
        """A scan over an input split along the dimension it steps through: each pass reads one slice, which
        one device holds, so the input is made whole first."""
        first = int(eqn.params.get("num_consts", 0)) + int(eqn.params.get("num_carry", 0))
        operands = tuple(self._operand(v) or _literal(v) for v in eqn.invars[first:])
        for k, o in enumerate(operands):
            if o.spec is None or not o.spec:
                continue
            split = tuple(a for a in o.spec[0] if not axes or a in axes)
            if split:
                return Why(
                    "whole-dimension",
                    "scan",
                    expression,
                    operands,
                    f"scan steps through dimension 0 of {o.label}, which is split over {_axes_text(split)}: each "
                    f"pass reads one slice of it, held by one device, {_whole_words(kind, split)}",
                    operand=k,
                    dimension=0,
                    axes=split,
                )
        return None

    def _sliced_from(self, eqn: Any, d: int, axes: tuple[str, ...], kind: str, expression: str) -> Why | None:
        """A concatenate of pieces sliced from one array split along the joined dimension (``jnp.roll``): the
        pieces' own layouts are XLA's padded blocks, so the array they are cut from is the one named."""
        for v in eqn.invars:
            producer = self.producer.get(id(v)) if isinstance(v, jex_core.Var) else None
            if producer is None or producer.eqn.primitive.name != "slice":
                continue
            source = self._operand(producer.eqn.invars[0], "made")
            if source is None or source.spec is None or d >= len(source.spec):
                continue
            split = tuple(a for a in source.spec[d] if not axes or a in axes)
            if split:
                return Why(
                    "whole-dimension",
                    "concatenate",
                    expression,
                    (source,),
                    f"concatenate joins along dimension {d} pieces sliced from {source.label}, which is split over "
                    f"{_axes_text(split)} along it: the joined blocks' edges are not {source.label}'s, "
                    + (
                        "so the blocks are sent between devices"
                        if kind == "collective-permute"
                        else _whole_words(kind, split)
                    ),
                    operand=0,
                    dimension=d,
                    axes=split,
                )
        return None

    def _shifted(self, eqn: Any, name: str, expression: str, axes: tuple[str, ...], kind: str) -> Why | None:
        """A slice, pad or rev along a split dimension: the new blocks' edges are not the old ones (a slice
        off the start, padding) or each block belongs at the mirrored place (rev), so blocks move."""
        var = eqn.invars[0]
        operand = self._operand(var)
        if operand is None or operand.spec is None:
            return None
        shape = tuple(getattr(var.aval, "shape", ()))
        params = eqn.params
        moved: list[tuple[int, str]] = []
        if name == "slice":
            starts, limits = params["start_indices"], params["limit_indices"]
            strides = params.get("strides") or (1,) * len(shape)
            for d in range(len(shape)):
                if starts[d] != 0 or limits[d] != shape[d] or strides[d] != 1:
                    moved.append((d, f"slice takes elements {starts[d]} to {limits[d]} of dimension {d}"))
        elif name == "pad":
            for d, (low, high, interior) in enumerate(params["padding_config"]):
                if low or high or interior:
                    moved.append((d, f"pad adds {int(low)} before and {int(high)} after dimension {d}"))
        else:
            moved = [(int(d), f"rev reverses dimension {d}") for d in params.get("dimensions", ())]
        for d, words in moved:
            split = tuple(a for a in operand.spec[d] if not axes or a in axes) if d < len(operand.spec) else ()
            if not split:
                continue
            if name == "rev":
                effect = "each device's block belongs at the mirrored place along it"
            else:
                effect = f"the new blocks' edges along it are not {operand.label}'s"
            how = (
                "so the blocks are sent between devices"
                if kind == "collective-permute"
                else _whole_words(kind, split).replace("so it is", "so the dimension is")
            )
            return Why(
                "whole-dimension",
                name,
                expression,
                (operand,),
                f"{words} of {operand.label}, which is split over {_axes_text(split)}: {effect}, {how}",
                operand=0,
                dimension=d,
                axes=split,
            )
        return None

    def _operands_mismatch_dot(self, eqn: Any, expression: str, axes: tuple[str, ...], kind: str) -> Why:
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        operands = tuple(self._operand(v) or _literal(v) for v in eqn.invars[:2])
        lhs, rhs = operands
        if lhs.spec is None or rhs.spec is None:
            unknown = lhs.label if lhs.spec is None else rhs.label
            return Why("unknown", "dot_general", expression, operands, f"the layout of {unknown} is unknown")
        for dl, dr in zip(lc, rc):
            if lhs.spec[dl] != rhs.spec[dr]:
                # The collective runs over the axes of the split it moves: that operand is the one moved.
                on_left = bool(set(lhs.spec[dl]) & set(axes)) or not set(rhs.spec[dr]) & set(axes)
                index, d, other, kept = (0, dl, rhs, rhs.spec[dr]) if on_left else (1, dr, lhs, lhs.spec[dl])
                moved = operands[index]
                assert moved.spec is not None
                wanted = tuple(kept if e == d else s for e, s in enumerate(moved.spec))
                split = tuple(a for a in moved.spec[d] if a in axes) or moved.spec[d]
                how = "gathered" if kind == "all-gather" else "moved"
                return Why(
                    "layout-mismatch",
                    "dot_general",
                    expression,
                    operands,
                    f"a contraction needs both operands' contracting dimensions split alike, but dimension {dl} "
                    f"of {lhs.label} is split over {_axes_text(lhs.spec[dl])} and dimension {dr} of {rhs.label} over "
                    f"{_axes_text(rhs.spec[dr])}: {moved.label} is {how} over {_axes_text(split)} to match "
                    f"{other.label}",
                    wanted,
                    f"the contraction with {other.label}",
                    operand=index,
                    dimension=int(d),
                    axes=tuple(sorted(set(lhs.spec[dl]) ^ set(rhs.spec[dr]))),
                )
        batched = self._batch_mismatch(operands, tuple(zip(lb, rb)), expression, axes, kind)
        if batched is not None:
            return batched
        free_l = {a for d, s in enumerate(lhs.spec) if d not in lc for a in s if a in axes}
        free_r = {a for d, s in enumerate(rhs.spec) if d not in rc for a in s if a in axes}
        shared = tuple(sorted(free_l & free_r))
        if shared:
            index = next(k for k, o in enumerate(operands) if o.spec is not None)
            d = next(d for d, s in enumerate(lhs.spec) if d not in lc and set(s) & set(shared))
            return Why(
                "layout-mismatch",
                "dot_general",
                expression,
                operands,
                f"both operands are split over {_axes_text(shared)} on dimensions that are not contracted "
                f"({lhs.spec_text} and {rhs.spec_text}): a mesh axis can split only one dimension of the "
                "result, so one operand is gathered",
                operand=index,
                dimension=d,
                axes=shared,
            )
        return Why(
            "unknown",
            "dot_general",
            expression,
            operands,
            f"its operands ({lhs.spec_text} and {rhs.spec_text}) are split alike where they are contracted, so no "
            f"rule forces it: XLA chose to re-lay out over {_axes_text(axes)} for the result's layout",
        )

    def _batch_mismatch(
        self,
        operands: tuple[OperandLayout, ...],
        pairs: tuple[tuple[int, int], ...],
        expression: str,
        axes: tuple[str, ...],
        kind: str,
    ) -> Why | None:
        """A batch dimension split over an axis in one operand, whose other operand holds that axis on
        another dimension: the result's batch dimension can keep the split only once that operand's split
        is moved to its batch dimension (an operand whole there would be sliced on each device, for free)."""
        for dl, dr in pairs:
            for index, (d, e) in enumerate(((dl, dr), (dr, dl))):
                mine, theirs = operands[index], operands[1 - index]
                assert mine.spec is not None and theirs.spec is not None
                wanted_axes = [a for a in theirs.spec[e] if a in axes and a not in mine.spec[d]]
                elsewhere = [f for f, s in enumerate(mine.spec) if f != d and set(s) & set(wanted_axes)]
                if not wanted_axes or not elsewhere:
                    continue
                wanted = tuple(
                    (*s, *wanted_axes) if f == d else tuple(a for a in s if a not in wanted_axes)
                    for f, s in enumerate(mine.spec)
                )
                how = "gathered" if kind == "all-gather" else "moved"
                return Why(
                    "layout-mismatch",
                    "dot_general",
                    expression,
                    operands,
                    f"a batched contraction keeps each batch element on the devices that hold it, and batch "
                    f"dimension {e} of {theirs.label} is split over {_axes_text(wanted_axes)}, but {mine.label} "
                    f"holds {_axes_text(wanted_axes)} on dimension {elsewhere[0]}, not on its batch dimension {d}: "
                    f"{mine.label} is {how} to match",
                    wanted,
                    f"the contraction with {theirs.label}",
                    operand=index,
                    dimension=int(d),
                    axes=tuple(wanted_axes),
                )
        return None

    def _operands_mismatch(self, eqn: Any, name: str, expression: str, axes: tuple[str, ...]) -> Why | None:
        arrays = [v for v in eqn.invars if isinstance(v, jex_core.Var) and tuple(getattr(v.aval, "shape", ()))]
        shapes = [tuple(getattr(v.aval, "shape", ())) for v in arrays]
        if len(arrays) < 2 or len({len(shape) for shape in shapes}) != 1:
            return None
        # Operands of one rank, each dimension of the full size or 1 (lax broadcasts a size-1 dimension);
        # a concatenate's operands may differ along the dimension it joins them on.
        joined = int(eqn.params.get("dimension", -1)) if name == "concatenate" else -1
        full = tuple(max(sizes) for sizes in zip(*shapes))
        if any(n not in (1, m) for shape in shapes for d, (n, m) in enumerate(zip(shape, full)) if d != joined):
            return None
        operands = tuple(self._operand(v) for v in arrays)
        known = [(o, shape) for o, shape in zip(operands, shapes) if o is not None and o.spec is not None]
        leader = next(((o, shape) for o, shape in known if shape == full), None)
        if leader is None:
            return self._stretched_across(eqn, name, expression, operands, known)
        first, _ = leader
        lead: Spec = first.spec or ()

        def unlike(o: OperandLayout, shape: tuple[int, ...]) -> bool:
            return o.spec is not None and any(o.spec[d] != lead[d] for d in range(len(full)) if shape[d] == full[d] > 1)

        moved = next(((o, shape) for o, shape in known if o is not first and unlike(o, shape)), None)
        if moved is None:
            return None
        other, shape = moved
        assert other.spec is not None
        wanted = tuple(lead[d] if shape[d] == full[d] else () for d in range(len(full)))
        listed = tuple(o for o in operands if o is not None)
        return Why(
            "layout-mismatch",
            name,
            expression,
            listed,
            f"{_alike_words(name, joined)}, but {first.label} is {first.spec_text} and {other.label} is "
            f"{other.spec_text}: one is moved to match",
            wanted,
            f"{first.label}'s layout",
            listed.index(other),
            _first_difference(other.spec, wanted),
            _changed_axes(other.spec, wanted),
        )

    def _stretched_across(
        self,
        eqn: Any,
        name: str,
        expression: str,
        operands: Sequence[OperandLayout | None],
        known: Sequence[tuple[OperandLayout, tuple[int, ...]]],
    ) -> Why | None:
        """An element-wise operation none of whose operands has the result's shape (``u[:, None] * w[None, :]``)
        where one mesh axis splits two operands on different dimensions of the result: it can split only one,
        so one operand is moved; the one laid out unlike the result, where XLA's layout of it is known."""
        result = self._operand(eqn.outvars[0])
        made = result.spec if result is not None else None
        for (a, _), (b, _) in combinations(known, 2):
            a_spec, b_spec = a.spec or (), b.spec or ()
            # an axis on one dimension of a's and on another of b's
            elsewhere = [{x for e, f in enumerate(b_spec) if e != d for x in f} for d in range(len(a_spec))]
            shared = [x for d, others in enumerate(elsewhere) for x in a_spec[d] if x in others]
            if shared:
                # a laid out as the result is (its splits among the result's), b is the one moved
                kept = made is not None and all(not s or s == r for s, r in zip(a_spec, made))
                moved = b if kept else a
                other = a if kept else b
                listed = tuple(o for o in operands if o is not None)
                d = next(d for d, entry in enumerate(moved.spec or ()) if any(x in entry for x in shared))
                axes = tuple(dict.fromkeys(shared))
                return Why(
                    "layout-mismatch",
                    name,
                    expression,
                    listed,
                    f"{name} works element by element on operands stretched against each other, and {a.label} "
                    f"({a.spec_text}) and {b.label} ({b.spec_text}) are split over {_axes_text(axes)} on different "
                    f"dimensions of the result: a mesh axis can split only one of them, so {moved.label} is moved "
                    f"to match {other.label}",
                    None,
                    "",
                    listed.index(moved),
                    d,
                    axes,
                )
        return None

    def _result_unlike_operand(self, found: _Eqn, name: str, expression: str, kind: str) -> Why | None:
        """An operation whose result is laid out unlike its operand of the same shape: the operand is moved
        to the layout its result is in (the loop carry's, where the result is carried)."""
        eqn = found.eqn
        if len(eqn.outvars) != 1:
            return None
        result = self._operand(eqn.outvars[0], "result")
        if name == "transpose" and eqn.invars and result is not None and result.spec is not None:
            return self._transposed_unlike(found, eqn.invars[0], result, expression, kind)
        shape = tuple(getattr(eqn.outvars[0].aval, "shape", ()))
        for v in eqn.invars:
            if not isinstance(v, jex_core.Var) or tuple(getattr(v.aval, "shape", ())) != shape:
                continue
            o = self._operand(v)
            if o is None or result is None or o.spec is None or result.spec is None or o.spec == result.spec:
                continue
            by = self._result_wanted_by(found)
            return Why(
                "layout-mismatch",
                name,
                expression,
                (o, result),
                f"{o.label} comes in as {o.spec_text} but {name}'s result must be {result.spec_text} "
                f"({by}): {_move_words(o.spec, result.spec, kind)}",
                result.spec,
                by,
                0,
                _first_difference(o.spec, result.spec),
                _changed_axes(o.spec, result.spec),
            )
        return None

    def _result_wanted_by(self, found: _Eqn) -> str:
        """What asks a result's layout of an operation moved to it: the loop carry it becomes, or XLA's choice."""
        if self._feeds_carry(found):
            return "the loop's carry, which this result becomes"
        out = found.eqn.outvars[0] if found.eqn.outvars else None
        constraint = next(
            (e.eqn.primitive.name for e in self.readers.get(id(out), ()) if e.eqn.primitive.name in _CONSTRAINTS), None
        )
        if constraint is not None:
            by = "with_sharding_constraint" if constraint == "sharding_constraint" else "reshard"
            return f"the {by} it is passed to"
        ours = self._ours(found)
        k = next((k for k, v in enumerate(self.jaxpr.outvars) if id(v) in ours), None)
        if k is not None and self._output_asked(k):
            path = self.output_paths[k] if k < len(self.output_paths) else f"out[{k}]"
            return f"the sharding of output {path} (out_shardings, or the layout the caller asks for)"
        return "the layout XLA chose for its result, for what reads it"

    def _transposed_unlike(
        self, found: _Eqn, var: Any, result: OperandLayout, expression: str, kind: str
    ) -> Why | None:
        """A transpose whose result is laid out unlike its operand's dimensions carried over: the operand is
        moved to the layout, as the operand's own dimensions, that gives the result's."""
        o = self._operand(var)
        perm = tuple(int(p) for p in found.eqn.params.get("permutation", ()))
        if o is None or o.spec is None or result.spec is None or len(perm) != len(o.spec):
            return None
        carried = tuple(o.spec[p] for p in perm)
        if carried == result.spec:
            return None
        wanted_spec = _before_transpose(result.spec, perm)
        by = self._result_wanted_by(found)
        return Why(
            "layout-mismatch",
            "transpose",
            expression,
            (o, result),
            f"{o.label} comes in as {o.spec_text}, which transposed is {spec_text(carried)}, but the result must be "
            f"{result.spec_text} ({by}), so {o.label} must be {spec_text(wanted_spec)}: "
            f"{_move_words(o.spec, wanted_spec, kind)}",
            wanted_spec,
            by,
            0,
            _first_difference(o.spec, wanted_spec),
            _changed_axes(o.spec, wanted_spec),
        )

    # ------------------------------------------------------------------ HLO flow

    def _output_charge(self, op: hlo.CollectiveOp) -> tuple[str, int] | None:
        if op.computation != self.module.entry.name:
            return None
        k = result_index(self.module.entry, op.inst.name, self.module)
        return None if k is None else ("output", k)

    def _loop_carry(self, c: Collective, op: hlo.CollectiveOp, axes: tuple[str, ...]) -> Why | None:
        """A collective of a while body whose result goes, handed on, to the body's result: the carry
        is moved back to the layout the next pass starts in."""
        if self._bodies is None:
            self._bodies = {
                body
                for _, inst in self.module.instructions()
                if inst.opcode == "while"
                for body in [inst.attr("body")]
                if body
            }
            self._bodies = {b.lstrip("%") for b in self._bodies}
        if op.computation not in self._bodies:
            return None
        computation = self.module.by_name.get(op.computation)
        if computation is None:
            return None
        found = self._find(c.source, "sharding_constraint" if c.note else _primitive_of(c.op_name), c.op_name)
        # Through any fusion: the body's contraction may read a carry XLA holds as the body makes it, gathered
        # at the start of each pass, which is the carry's layout moved all the same.
        if result_index(computation, op.inst.name) is None and (found is None or not self._feeds_carry(found)):
            return None
        expression = line_text(c.source.file, c.source.line) if c.source is not None else ""
        start = end = None
        loop = found.loop if found is not None else None
        if found is not None and found.loop is not None:
            start, end = self._carry_layouts(found)
        elif found is None and c.source is None:
            # No metadata at all, as XLA leaves the move back at a body's end: the program's one loop, where
            # one carry of it ends a pass laid out otherwise, over the collective's axes.
            loop, start, end = self._only_loop_moved(axes)
            if loop is not None and loop.source_info is not None:
                where = user_frame(user_frames(loop.source_info))
                expression = line_text(where.file, where.line) if where is not None else ""
        if start is None or end is None or start.spec is None or end.spec is None or start.spec == end.spec:
            return None  # the carry keeps its layout: the collective is the body's own operation's
        operands = (start, end)
        primitive = loop.primitive.name if loop is not None else "while"
        sources = self._sources(loop.invars) if loop is not None else ()
        return Why(
            "loop-carry",
            primitive,
            expression,
            operands,
            f"the loop's carry {start.label} starts each pass as {start.spec_text} but the body makes it "
            f"{end.spec_text}: it is moved back before the next pass",
            start.spec,
            "the carry's layout at the start of a pass",
            1,
            _first_difference(end.spec, start.spec),
            _changed_axes(end.spec, start.spec),
            sources=sources,
        )

    def _carry_made_unlike(self, found: _Eqn, expression: str) -> Why | None:
        """A contraction in a loop body whose result the body hands on as a carry through operations that
        carry each dimension's split (a transpose): the layout it makes from its operands, so carried to
        the body's result, is unlike the carry's at the start of a pass, so XLA re-lays it out."""
        loop, body = found.loop, found.body
        made = _contraction_layout(found.eqn, [self._operand(v) for v in found.eqn.invars[:2]])
        if loop is None or body is None or made is None:
            return None
        result = found.eqn.outvars[0]
        consts, carries = _carry_slots(loop, body)
        for k, out in enumerate(body.outvars[:carries]):
            steps: list[Any] = []
            current = out
            while current is not result and len(steps) < 6:
                producer = self.producer.get(id(current))
                before = self._carried_from(producer.eqn, current) if producer is not None else None
                if producer is None or before is None:
                    break
                steps.append(producer.eqn)
                current = before
            if current is not result or consts + k >= len(loop.invars):
                continue
            carried = _carried_along(steps, made)
            start = self._operand(loop.invars[consts + k], "carry-start")
            if carried is None or start is None or start.spec is None or carried == start.spec:
                continue
            through = ", ".join(dict.fromkeys(e.primitive.name for e in reversed(steps)))
            end = OperandLayout(f"the carry {start.label} at the end of a pass", str(out.aval), carried, "carry-end")
            return Why(
                "loop-carry",
                loop.primitive.name,
                expression,
                (start, end),
                f"the loop's carry {start.label} starts each pass as {start.spec_text}, but this line's "
                f"contraction makes {spec_text(made)}, which the body hands on"
                f"{f' through {through}' if through else ''} as {spec_text(carried)}: XLA re-lays the carry out "
                "so that it has one layout in every pass",
                start.spec,
                "the carry's layout at the start of a pass",
                1,
                _first_difference(carried, start.spec),
                _changed_axes(carried, start.spec),
            )
        return None

    def _only_loop_moved(self, axes: tuple[str, ...]) -> tuple[Any, OperandLayout | None, OperandLayout | None]:
        """The program's one scan or while, and its one carry whose layout at a pass's end is unlike its
        layout at the start over ``axes``; (None, None, None) where there are more loops or carries, or none."""
        loops = [e.eqn for e in _equations(self.jaxpr) if e.eqn.primitive.name in ("scan", "while")]
        if len(loops) != 1:
            return None, None, None
        loop = loops[0]
        subs = [sub for key in ("jaxpr", "body_jaxpr") for sub in _jaxprs(loop.params.get(key))]
        if not subs:
            return None, None, None
        consts, carries = _carry_slots(loop, subs[0])
        moved = []
        for k, out in enumerate(subs[0].outvars[:carries]):
            if consts + k >= len(loop.invars):
                break
            start, end = self._operand(loop.invars[consts + k], "carry-start"), self._operand(out, "carry-end")
            if start is None or end is None or start.spec is None or end.spec is None:
                continue
            if set(_changed_axes(end.spec, start.spec)) & set(axes):
                moved.append((start, end))
        if len(moved) != 1:
            return None, None, None
        return loop, *moved[0]

    def _feeds_carry(self, found: _Eqn) -> bool:
        if found.loop is None:
            return False
        ours = self._ours(found)
        return any(id(out) in ours for out in found.body.outvars)

    def _ours(self, found: _Eqn) -> set[int]:
        """The equation's results and what calls around it hand them on as."""
        out: set[int] = set()
        for v in found.eqn.outvars:
            hops = 0
            while v is not None and hops < 8:
                out.add(id(v))
                v, hops = self.lifted.get(id(v)), hops + 1
        return out

    def _carry_of_loop(self, eqn: Any, expression: str) -> Why | None:
        """A collective on the loop's own line: the carry's first layout moved to the one the body makes."""
        subs = [sub for key in ("jaxpr", "body_jaxpr") for sub in _jaxprs(eqn.params.get(key))]
        if not subs:
            return None
        body = subs[0]
        consts, carries = _carry_slots(eqn, body)
        for k, out in enumerate(body.outvars[:carries]):
            if consts + k >= len(eqn.invars):
                break
            start, end = self._operand(eqn.invars[consts + k], "carry-start"), self._operand(out, "carry-end")
            if start is None or end is None or start.spec is None or end.spec is None or start.spec == end.spec:
                continue
            return Why(
                "loop-carry",
                eqn.primitive.name,
                expression,
                (start, end),
                f"the loop's carry {start.label} comes in as {start.spec_text} but the body makes it "
                f"{end.spec_text}, and a carry has one layout in every pass: it is moved to the body's layout",
                end.spec,
                "the carry's layout at the end of a pass",
                0,
                _first_difference(start.spec, end.spec),
                _changed_axes(start.spec, end.spec),
            )
        return None

    def _carry_layouts(self, found: _Eqn) -> tuple[OperandLayout | None, OperandLayout | None]:
        loop, body = found.loop, found.body
        consts, carries = _carry_slots(loop, body)
        ours = self._ours(found)
        for k, out in enumerate(body.outvars[:carries]):
            if id(out) in ours or self._made_from(out, ours):
                start = loop.invars[consts + k] if consts + k < len(loop.invars) else None
                return (
                    self._operand(start, "carry-start") if start is not None else None,
                    self._operand(out, "carry-end"),
                )
        return None, None

    def _made_from(self, var: Any, ours: set[int], depth: int = 4) -> bool:
        producer = self.producer.get(id(var))
        if producer is None or depth == 0:
            return False
        return any(id(v) in ours or self._made_from(v, ours, depth - 1) for v in producer.eqn.invars)


def _carry_slots(loop: Any, body: Any) -> tuple[int, int]:
    """Where a scan's or while's carry starts among its operands, and how many carries it has (a while's
    operands are its condition's constants, then its body's, then the carry)."""
    if loop.primitive.name == "scan":
        return int(loop.params.get("num_consts", 0)), int(loop.params.get("num_carry", 0))
    consts = int(loop.params.get("body_nconsts", 0)) + int(loop.params.get("cond_nconsts", 0))
    return consts, len(body.outvars)


def result_index(computation: hlo.Computation, name: str, module: hlo.Module | None = None) -> int | None:
    """Which result of ``computation`` the instruction ``name`` goes to, handed on in its layout (through
    copies, bitcasts, tuple pieces, fusions of them): the root tuple's operand, 0 for a plain root; None
    where any path meets real work first (a fusion that contracts or reduces, where ``module`` holds its
    body), or several results."""
    users: dict[str, list[hlo.Instruction]] = {}
    for inst in computation.instructions:
        for operand in dict.fromkeys(inst.operands):
            users.setdefault(operand, []).append(inst)
    root = computation.root
    found: set[int] = set()
    pending, seen = [name], set[str]()
    while pending and len(seen) < 64:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        if root is not None and root.name == current:
            found.add(0)
            continue
        readers = users.get(current, [])
        if not readers:
            return None
        for reader in readers:
            if reader.is_root and reader.opcode == "tuple":
                found.add(reader.operands.index(current))
            elif reader.opcode in places._HANDS_ON and _hands_on(reader, module):
                pending.append(reader.name)
            else:
                return None
    return found.pop() if len(found) == 1 else None


# Operations whose result is laid out otherwise than their operands: a fusion holding one is not a hand-on.
_RELAYING = frozenset(
    {"dot", "convolution", "reduce", "reduce-window", "sort", "scatter", "gather", "fft", "custom-call"}
)


def _hands_on(inst: hlo.Instruction, module: hlo.Module | None) -> bool:
    """Whether ``inst`` hands its operand's layout on: a fusion does unless its body contracts, reduces,
    sorts or indexes (XLA:CPU fuses a dot into a fusion of its own)."""
    if inst.opcode != "fusion" or module is None:
        return True
    body = module.by_name.get((inst.attr("calls") or "").lstrip("%"))
    return body is None or not any(i.opcode in _RELAYING for i in body.instructions)


def _needed_dimensions(eqn: Any, name: str) -> tuple[int, tuple[int, ...], str] | None:
    """(operand index, the dimensions it needs whole, what it does along them), or None for other operations."""
    rank = len(getattr(eqn.invars[0].aval, "shape", ())) if eqn.invars else 0
    params = eqn.params
    if name == "sort":
        return 0, (int(params.get("dimension", rank - 1)),), "sorts along"
    if name in CUMULATIVE:
        return 0, (int(params.get("axis", 0)),), "accumulates along"
    if name in ("argmax", "argmin"):
        return 0, tuple(int(a) for a in params.get("axes", ())), "searches along"
    if name == "top_k":
        return 0, (rank - 1,), "picks the largest along"
    if name == "fft":
        lengths = params.get("fft_lengths", ())
        return 0, tuple(range(rank - len(lengths), rank)), "transforms along"
    if name == "concatenate":
        return 0, (int(params.get("dimension", 0)),), "joins along"
    if name == "reshape":
        old = tuple(eqn.invars[0].aval.shape)
        new = tuple(params.get("new_sizes", eqn.outvars[0].aval.shape))
        return 0, _reshaped_dimensions(old, new), "merges or splits"
    if name in ("gather", "scatter", "scatter-add", "scatter_add", "dynamic_slice", "dynamic_update_slice"):
        return 0, tuple(range(rank)), "indexes along"
    return None


def _reshaped_dimensions(old: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...]:
    """The dimensions of ``old`` that a reshape to ``new`` does not carry over whole, as the same dimension
    (same size, same elements before it): those a split cannot survive without moving data."""
    kept = []
    for d, size in enumerate(old):
        before = _product(old[:d])
        if any(new[e] == size and _product(new[:e]) == before for e in range(len(new))):
            kept.append(d)
    return tuple(d for d in range(len(old)) if d not in kept and old[d] != 1)


def _before_transpose(spec: Spec, perm: Sequence[int]) -> Spec:
    """The operand's layout that a transpose by ``perm`` turns into ``spec``."""
    before: list[tuple[str, ...]] = [()] * len(perm)
    for k, p in enumerate(perm):
        before[p] = spec[k]
    return tuple(before)


def _before_broadcast(wanted: Spec, eqn: Any, result: Any) -> Spec:
    """The layout of a ``broadcast_in_dim``'s operand for its result to be ``wanted``: each kept dimension's
    split, none where a size-1 dimension is stretched."""
    kept = tuple(int(d) for d in eqn.params.get("broadcast_dimensions", ()))
    before = tuple(getattr(eqn.invars[0].aval, "shape", ()))
    after = tuple(getattr(result.aval, "shape", ()))
    return tuple(
        wanted[d] if d < len(wanted) and d < len(after) and before[i] == after[d] else () for i, d in enumerate(kept)
    )


_LAYOUT_CARRYING = frozenset({"transpose", "pad", "slice", "rev", "broadcast_in_dim", "squeeze", "reshape"})
_CONTRACTING = frozenset({"dot_general", "conv_general_dilated"})


def _carried_operand(eqn: Any, result: Any, constant: Callable[[Any], bool]) -> Any | None:
    """The operand whose dimensions' splits ``eqn`` carries over to ``result``: the one array operand of
    the primitives that move or resize dimensions, or an operand of the result's shape; ``constant`` tells
    the operands that are fills made from literals."""
    if len(eqn.outvars) != 1 or eqn.primitive.name in CALL_PRIMITIVES:
        return None
    if any(True for p in eqn.params.values() for _ in _jaxprs(p)):
        return None
    if eqn.primitive.name in _LAYOUT_CARRYING:
        first = eqn.invars[0] if eqn.invars else None
        rank = len(getattr(first.aval, "shape", ())) if isinstance(first, jex_core.Var) else -1
        ok = rank >= 0 and _carry_forward(eqn, ((),) * rank) is not None
        return first if ok else None
    if eqn.primitive.name in _CONTRACTING:
        return None  # a square product's result has its operand's shape, not its layout
    shape = tuple(getattr(result.aval, "shape", ()))
    arrays = [v for v in eqn.invars if isinstance(v, jex_core.Var)]
    same = [v for v in arrays if _shape(v) == shape]
    # An element-wise operation broadcasts size-1 dimensions: where every other operand is a constant fill,
    # the one that carries data (of the result's shape, or a size-1 stretch of it) gives the result its layout.
    held = [v for v in arrays if not constant(v) and _stretches_to(_shape(v), shape)]
    if len(held) == 1:
        return held[0]
    return same[0] if same else None


def _shape(var: Any) -> tuple[int, ...]:
    return tuple(getattr(var.aval, "shape", ()))


def _stretches_to(shape: tuple[int, ...], result: tuple[int, ...]) -> bool:
    return len(shape) == len(result) and all(n in (1, m) for n, m in zip(shape, result))


def _carry_forward(eqn: Any, spec: Spec) -> Spec | None:
    """The layout ``eqn`` gives its result from its first operand laid out ``spec``, where each of the
    result's dimensions is one of the operand's (None for a reshape that merges or splits dimensions)."""
    name = eqn.primitive.name
    before = tuple(getattr(eqn.invars[0].aval, "shape", ()))
    after = tuple(getattr(eqn.outvars[0].aval, "shape", ()))
    if len(spec) != len(before):
        return None
    if name == "transpose":
        return tuple(spec[int(p)] for p in eqn.params.get("permutation", ()))
    if name == "broadcast_in_dim":
        out: list[tuple[str, ...]] = [()] * len(after)
        for i, d in enumerate(int(d) for d in eqn.params.get("broadcast_dimensions", ())):
            out[d] = spec[i] if before[i] == after[d] else ()
        return tuple(out)
    if name in ("squeeze", "reshape"):
        kept = [i for i, n in enumerate(before) if n != 1]
        if [before[i] for i in kept] != [n for n in after if n != 1]:
            return None  # dimensions merged or split: no one dimension of the result is one of the operand's
        if any(spec[i] for i, n in enumerate(before) if n == 1):
            return None
        it = iter(spec[i] for i in kept)
        return tuple(next(it) if n != 1 else () for n in after)
    return spec if len(after) == len(before) else None


def _carried_along(steps: Sequence[Any], spec: Spec) -> Spec | None:
    """``spec`` carried forward through ``steps`` (gathered walking back, so last first); None where one of
    them carries no layout."""
    carried: Spec | None = spec
    for eqn in reversed(steps):
        carried = _carry_forward(eqn, carried) if carried is not None else None
    return carried


def _contraction_layout(eqn: Any, operands: Sequence[OperandLayout | None]) -> Spec | None:
    """The layout a dot_general makes from its operands as they are: its batch dimensions', then each
    operand's free dimensions' splits; None where an operand's is unknown, the batch dimensions are split
    unlike, or one mesh axis would split two of the result's dimensions."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    if len(operands) < 2 or any(o is None or o.spec is None for o in operands):
        return None
    lhs, rhs = (o.spec for o in operands if o is not None and o.spec is not None)
    if any(lhs[d] != rhs[e] for d, e in zip(lb, rb)):
        return None
    made = [lhs[d] for d in lb]
    made += [s for d, s in enumerate(lhs) if d not in lc and d not in lb]
    made += [s for d, s in enumerate(rhs) if d not in rc and d not in rb]
    used = [a for s in made for a in s]
    return tuple(made) if len(used) == len(set(used)) else None


def _alike_words(name: str, joined: int) -> str:
    if joined >= 0:
        return f"{name} joins its operands along dimension {joined} and needs them laid out alike"
    return f"{name} works element by element and needs its operands laid out alike"


def _product(sizes: Sequence[int]) -> int:
    out = 1
    for s in sizes:
        out *= int(s)
    return out


def _primitive_of(op_name: str | None) -> str:
    return (op_name or "").rsplit("/", 1)[-1]


def _piece_axes(c: Collective) -> tuple[str, ...]:
    return tuple(p.axis for p in c.pieces) if c.pieces else ()


def _axes_text(axes: Sequence[str]) -> str:
    if not axes:
        return "no mesh axis"
    return " and ".join(repr(str(a)) for a in axes)


def _literal(var: Any) -> OperandLayout:
    return OperandLayout(str(var), str(getattr(var, "aval", "")), None, "operand", "a constant")


def _spec_of(sharding: Any, rank: int) -> Spec | None:
    spec = getattr(sharding, "spec", None)
    if spec is None:
        return None
    out: list[tuple[str, ...]] = []
    for entry in tuple(spec) + (None,) * (rank - len(tuple(spec))):
        if entry is None:
            out.append(())
        elif isinstance(entry, (tuple, list)):
            out.append(tuple(str(a) for a in entry))
        else:
            out.append((str(entry),))
    return tuple(out[:rank])


def _first_difference(made: Spec, wanted: Spec) -> int | None:
    return next((d for d, (a, b) in enumerate(zip(made, wanted)) if a != b), None)


def _changed_axes(made: Spec, wanted: Spec) -> tuple[str, ...]:
    out: list[str] = []
    for a, b in zip(made, wanted):
        if a != b:
            out.extend(x for x in (*a, *b) if x not in out)
    return tuple(out)


def _whole_words(kind: str, split: Sequence[str]) -> str:
    """How XLA gives an operation the whole dimension it needs, by the collective it uses."""
    if kind in REDUCING_KINDS:
        return (
            f"so each device works on the part it holds and the partial results are combined over {_axes_text(split)}"
        )
    if kind == "all-to-all":
        return "so the split is moved to another dimension"
    if kind == "collective-permute":
        return "so the blocks each device needs are sent to it from the devices that hold them"
    return "so it is gathered"


def _move_words(made: Spec, wanted: Spec, kind: str) -> str:
    """What the move does, dimension by dimension: ``dimension 0 goes from 'a' to 'b'``."""
    steps = []
    for d, (a, b) in enumerate(zip(made, wanted)):
        if a != b:
            steps.append(
                f"dimension {d} goes from {_axes_text(a) if a else 'whole'} to {_axes_text(b) if b else 'whole'}"
            )
    how = {
        "all-gather": "the split that is dropped is gathered",
        "all-to-all": "a split moves to another dimension, each device trading blocks with the others",
        "collective-permute": "the blocks trade places between devices",
    }.get(kind, "the data moves")
    return f"{', '.join(steps) or 'the layouts differ'}, so {how}"


def explain_all(
    collectives: Sequence[Collective],
    ops: Sequence[hlo.CollectiveOp],
    module: hlo.Module,
    jaxpr: Any,
    walked: Sequence[Any],
    values: Sequence[Value],
    output_paths: Sequence[str],
    outputs: Sequence[Any],
    asked: Sequence[bool] | None = None,
) -> tuple[Collective, ...]:
    """Each collective (and each operand of a combined one) with its :class:`Why`. ``asked``: which outputs the
    jit's ``out_shardings`` lays out (None where that is not known: each output then counts as asked)."""
    if not collectives:
        return tuple(collectives)
    reader = CauseReader(jaxpr, walked, values, module, output_paths, outputs, asked)
    return reader.explain(collectives, ops)


def _loop_slot(loop: Any, var: Any) -> tuple[str, Any, Any] | None:
    """For a carry or scanned input of ``loop``'s body or condition: ("carry" or "slice", the loop's
    operand it comes from, the body result that carries it into the next pass, None for a slice)."""
    params = loop.params
    if loop.primitive.name == "scan":
        body = params["jaxpr"].jaxpr
        consts, carries = int(params["num_consts"]), int(params["num_carry"])
        k = next((k for k, inner in enumerate(body.invars) if inner is var), None)
        if k is None or k < consts or k >= len(loop.invars):
            return None
        if k < consts + carries:
            return "carry", loop.invars[k], body.outvars[k - consts]
        return "slice", loop.invars[k], None
    if loop.primitive.name == "while":
        body = params["body_jaxpr"].jaxpr
        before = int(params["cond_nconsts"]) + int(params["body_nconsts"])
        for sub, consts in (
            (body, int(params["body_nconsts"])),
            (params["cond_jaxpr"].jaxpr, int(params["cond_nconsts"])),
        ):
            k = next((k for k, inner in enumerate(sub.invars) if inner is var), None)
            if k is not None and k >= consts and before + k - consts < len(loop.invars):
                return "carry", loop.invars[before + k - consts], body.outvars[k - consts]
    return None


def _loop_constants(eqn: Any) -> list[tuple[Any, Any]]:
    """A loop body's constants paired with the operands the loop passes them: the same value in every pass
    (a scan's first ``num_consts`` inputs; a while loop's condition and body constants). Its carry and its
    scanned inputs are not: their layout in the body is XLA's to choose."""
    name = eqn.primitive.name
    params = eqn.params
    if name == "scan":
        body = params["jaxpr"].jaxpr
        k = params["num_consts"]
        return list(zip(body.invars[:k], eqn.invars[:k]))
    if name == "while":
        nc, nb = params["cond_nconsts"], params["body_nconsts"]
        cond, body = params["cond_jaxpr"].jaxpr, params["body_jaxpr"].jaxpr
        return list(zip(cond.invars[:nc], eqn.invars[:nc])) + list(zip(body.invars[:nb], eqn.invars[nc : nc + nb]))
    return []


def _branch_operands(eqn: Any) -> list[tuple[Any, Any]]:
    """A ``cond``'s branches' inputs paired with the operands the cond passes them (all but its predicate)."""
    if eqn.primitive.name != "cond":
        return []
    operands = eqn.invars[1:]
    return [
        (inner, outer)
        for branch in eqn.params.get("branches", ())
        for inner, outer in zip(branch.jaxpr.invars, operands)
        if len(branch.jaxpr.invars) == len(operands)
    ]
