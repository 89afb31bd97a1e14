"""Inverses of shardviz's compact encodings, for tests only: they read back
what the package writes (run-encoded columns, abbreviated id lists, ANSI
colour) so tests can check it against JAX's own answers."""

from __future__ import annotations

ELLIPSIS = "..."


def decode_runs(runs: list[list[int]]) -> list[int]:
    """The inverse of :func:`encode_runs` (tests and Python consumers)."""
    out: list[int] = []
    for start, step, count in runs:
        out.extend(start + k * step for k in range(count))
    return out


def decode_value_keys(payload: dict) -> list[str]:
    """Each value's key from a program payload's ``key_stems`` and ``values.key_stem``: the stem, then
    ``#`` and how many values before it name the same stem where that is not 0 (docs/program-payload.md)."""
    seen: dict[int, int] = {}
    keys = []
    for row in payload["values"]["key_stem"]:
        before = seen.get(row, 0)
        seen[row] = before + 1
        keys.append(payload["key_stems"][row] + (f"#{before}" if before else ""))
    return keys


def expand_ids(text: str) -> list[int]:
    """The ids a :func:`compress_ids` or :func:`abbreviate_ids` text stands for, sorted.

    ``"a-b"`` is every id from a to b; ``"p,q,...,z"`` continues the pattern
    set by the runs ``p`` and ``q`` (same length, same step) up to ``z``.
    """
    text = text.strip()
    if not text:
        return []
    tokens = [t.strip() for t in text.split(",")]
    runs: list[tuple[int, int]] = []  # (start, length), in text order
    pending_ellipsis = False
    for tok in tokens:
        if tok == ELLIPSIS:
            if len(runs) < 2 or pending_ellipsis:
                raise ValueError(f"'...' needs two runs before it in {text!r}")
            pending_ellipsis = True
            continue
        lo, sep, hi = tok.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"cannot read {tok!r} in {text!r}")
        start, stop = int(lo), int(hi) if sep else int(lo)
        if stop < start:
            raise ValueError(f"range {tok!r} runs backwards in {text!r}")
        if pending_ellipsis:
            (s0, n0), (s1, n1) = runs[-2], runs[-1]
            step = s1 - s0
            if n0 != n1 or step <= 0 or (start - s1) % step or stop - start + 1 != n1:
                raise ValueError(f"{tok!r} does not continue the pattern before '...' in {text!r}")
            runs.extend((s, n1) for s in range(s1 + step, start, step))
            pending_ellipsis = False
        runs.append((start, stop - start + 1))
    if pending_ellipsis:
        raise ValueError(f"'...' must be followed by the last run in {text!r}")
    return sorted({s + k for s, n in runs for k in range(n)})


def strip_ansi(text: str) -> str:
    """``text`` without the escape sequences :func:`paint` writes."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\x1b":
            end = text.find("m", i)
            i = len(text) if end < 0 else end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)
