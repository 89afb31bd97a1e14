"""Checks every program view must pass on real code: each collective has a line of the user's or
the output or input it lays out, and the collectives of a loop's passes or of different layers
(name scopes) on one line are told apart. Used by the tests of public programs."""

from __future__ import annotations

from collections import defaultdict


def charges(prog):
    """Every collective, or each operand of a combined one: what the report and the table list."""
    out = []
    for c in prog.collectives:
        for part in c.parts or (None,):
            out.append((c, part))
    return out


def assert_every_collective_has_a_line_or_an_output(prog):
    for c, part in charges(prog):
        where = part or c
        assert where.source is not None or c.charged_to, f"{c.name} ({c.kind}) has no line and lays out nothing"
        assert where.source is None or where.source.line > 0


def looped_lines(prog):
    """``(file, line)`` of lines whose values ran several passes of a Python loop, with the count."""
    out = {}
    for v in prog.values:
        if v.source is not None and v.passes:
            out[(v.source.file, v.source.line)] = max(out.get((v.source.file, v.source.line), 0), v.passes)
    return out


def assert_layers_told_apart(prog):
    """On a line that ran several passes, every collective names its pass; on a line whose values
    were made under several name scopes, every collective names its scope. Returns, per line, the
    (scope, pass) pairs its collectives carry."""
    loops = looped_lines(prog)
    scopes = defaultdict(set)
    for v in prog.values:
        if v.source is not None and v.role != "input":
            scopes[(v.source.file, v.source.line)].add(v.scope)
    seen = defaultdict(set)
    for c, part in charges(prog):
        where = part or c
        if where.source is None:
            continue
        key = (where.source.file, where.source.line)
        if key in loops:
            assert where.pass_number is not None, f"{c.name} on line {key[1]} (a loop's line) names no pass"
            assert where.passes == loops[key], (c.name, where.passes, loops[key])
        if len(scopes[key]) > 1:
            assert where.scope, f"{c.name} on line {key[1]} (made under {sorted(scopes[key])}) names no scope"
        seen[key].add((where.scope, where.pass_number))
    return seen


def assert_every_collective_has_a_cause(prog, causes):
    """Every collective (each operand of a combined one) has a cause, one of ``causes``: the hand analysis
    of the program says which rules apply (a contraction's partial sums, a constraint, a shard_map body)."""
    for c, part in charges(prog):
        why = (part or c).why
        assert why is not None and why.known, f"{c.name} ({c.kind}) has no cause: {why}"
        assert why.cause in causes, f"{c.name} ({c.kind}): {why.cause}, expected one of {sorted(causes)}: {why}"
