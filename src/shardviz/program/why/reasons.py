"""Why a collective is in the program, as data: the operation, the layouts it meets, the rule.

Pure and immutable, so a :class:`~shardviz.program.model.Collective` can carry
one and a what-if child can send it back pickled. :mod:`.causes` works them
out; :mod:`.remat` records XLA's involuntary full rematerializations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Spec = tuple[tuple[str, ...], ...]

# Every cause a Why can name; "unknown" always comes with the reason it cannot be told.
CAUSES = (
    "partial-sums",  # a contraction or reduction over a split dimension
    "layout-mismatch",  # what one operation makes is not the layout the next one (or an output) needs
    "whole-dimension",  # the operation needs a whole dimension on each device
    "loop-carry",  # a loop's carry laid out otherwise at the end of a pass than at its start
    "shard-map",  # written by the user inside a shard_map body
    "unknown",
)


def spec_text(spec: Spec | None) -> str:
    """``P('a', None)``, the way a user writes it; ``?`` when unknown."""
    if spec is None:
        return "?"
    entries = []
    for axes in spec:
        if not axes:
            entries.append("None")
        elif len(axes) == 1:
            entries.append(repr(axes[0]))
        else:
            entries.append("(" + ", ".join(repr(a) for a in axes) + ")")
    while entries and entries[-1] == "None":
        entries.pop()
    return "P(" + ", ".join(entries) + ")"


@dataclass(frozen=True)
class OperandLayout:
    """One array the operation reads (or, for ``role == "wanted"``, the layout it is asked for)."""

    label: str  # the user's name: w1, x, params['w'], %c
    type_str: str  # float32[12,12]
    spec: Spec | None  # per dimension, the mesh axes it is split over; None: shardviz cannot tell
    role: str = "operand"  # "operand", "carry-start", "carry-end", "made"
    note: str = ""  # why the spec is unknown

    @property
    def spec_text(self) -> str:
        return spec_text(self.spec)


@dataclass(frozen=True)
class Why:
    """Why one collective is there.

    ``primitive`` and ``expression`` name the operation (the jaxpr's primitive,
    the user's line); ``operands`` the layouts it meets, each operand's spec
    per dimension; ``wanted`` the layout asked for where something asks
    (``wanted_by`` says what: a ``with_sharding_constraint``, an output's
    sharding). ``operand`` and ``dimension`` point at the operand and the
    dimension the rule is about, ``axes`` the mesh axes. ``rule`` is the
    reason in one sentence; for ``cause == "unknown"`` it says why shardviz
    cannot tell.

    Where the fixes look (neither part of the text nor of the payload):
    ``sources`` the program's inputs, by position, that the operation's
    operands are made from; ``made_at`` the top-level equation, result and
    line that make the operand pointed at (None for an input, a loop body's
    value or a gradient's); ``arrival`` for a wanted layout, the input the
    operand is made from through transposes and layout-keeping operations,
    and the layout that input needs for the operand to arrive as wanted.
    """

    cause: str
    primitive: str
    expression: str
    operands: tuple[OperandLayout, ...]
    rule: str
    wanted: Spec | None = None
    wanted_by: str = ""
    operand: int | None = None  # index into operands
    dimension: int | None = None
    axes: tuple[str, ...] = ()
    sources: tuple[int, ...] = field(default=(), compare=False)
    made_at: tuple[int, int, int] | None = field(default=None, compare=False)
    arrival: tuple[int, Spec] | None = field(default=None, compare=False)

    @property
    def known(self) -> bool:
        return self.cause != "unknown"

    @property
    def text(self) -> str:
        """``because ...``: one line for the report and assertion messages."""
        return f"because {self.rule}" if self.known else f"cannot tell why, because {self.rule}"

    def __str__(self) -> str:
        lines = [f"{self.cause}: {self.primitive}" + (f" in `{self.expression}`" if self.expression else "")]
        for k, o in enumerate(self.operands):
            mark = " <-" if k == self.operand else ""
            lines.append(f"  {o.role} {o.label} {o.type_str} {o.spec_text}{mark}")
        if self.wanted is not None:
            lines.append(f"  wanted {spec_text(self.wanted)}" + (f" by {self.wanted_by}" if self.wanted_by else ""))
        lines.append(f"  {self.text}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Rematerialization:
    """XLA's "[SPMD] Involuntary full rematerialization": it could not move an array from one
    sharding to another efficiently, so every device gathers the whole array and cuts its block.

    ``before`` and ``after`` are the two shardings as specs on the mesh (None where no spec says
    them; ``before_text``/``after_text`` are XLA's), ``full_bytes`` the whole array each device
    then holds (the program's dtype), ``wire_bytes`` what the collectives on its line send per
    device per call to do it.
    """

    instruction: str  # the HLO operation XLA names (%param, %dot.3)
    shape: tuple[int, ...]  # the whole array's
    dtype: str
    before: Spec | None
    after: Spec | None
    before_text: str
    after_text: str
    full_bytes: int
    wire_bytes: int
    source_file: str | None
    source_line: int | None
    label: str  # the array as the user names it, where shardviz can tell
    message: str  # XLA's warning, as logged

    @property
    def where(self) -> str:
        if self.source_file is None or self.source_line is None:
            return "no line of yours"
        return f"{self.source_file.rsplit('/', 1)[-1]}:{self.source_line}"

    @property
    def text(self) -> str:
        name = f" {self.label}" if self.label else ""
        return (
            f"involuntary full rematerialization at {self.where}: XLA cannot move{name} "
            f"[{','.join(map(str, self.shape))}] from {spec_text(self.before)} to {spec_text(self.after)} "
            f"efficiently, so every device gathers the whole array ({self.full_bytes} B) and cuts its new block"
        )
