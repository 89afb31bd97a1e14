"""How many bytes a collective makes each device send: ring-algorithm estimates.

``result_bytes`` is the per-device result buffer (a tuple's elements
summed) and ``n`` the group size. Each formula counts the bytes one device
sends in one run of the collective on a ring of ``n`` devices:

==================== ======================== ==========================================
kind                 bytes sent per device    why
==================== ======================== ==========================================
all-reduce           2 (n-1)/n x result       reduce-scatter then all-gather, each moving
                                              (n-1) chunks of result/n
all-gather           (n-1)/n x result         forwards the n-1 chunks of result/n it lacks
reduce-scatter       (n-1) x result           the input is n x result; n-1 chunks of
                                              result leave each device
all-to-all           (n-1)/n x result         keeps its own 1/n, sends the rest
collective-permute   result                   when the device sends to another device
                                              (the busiest device is reported)
collective-broadcast result                   a pipelined ring forwards the whole buffer
ragged-all-to-all    (n-1)/n x result         as all-to-all (the real sizes are dynamic)
==================== ======================== ==========================================

A group of one device sends nothing. These are estimates of a bandwidth-
optimal ring; real libraries pick other algorithms (trees, two-level
schemes) that move about as much, and hardware may overlap them.
"""

from __future__ import annotations

from collections.abc import Sequence

FORMULAS = {
    "all-reduce": "2 (n-1)/n x result",
    "all-gather": "(n-1)/n x result",
    "reduce-scatter": "(n-1) x result",
    "all-to-all": "(n-1)/n x result",
    "collective-permute": "result, if the device sends to another",
    "collective-broadcast": "result",
    "ragged-all-to-all": "(n-1)/n x result",
}


def wire_bytes(kind: str, result_bytes: int, group_size: int, pairs: Sequence[tuple[int, int]] = ()) -> int:
    """Bytes one device sends in one run of the collective (see the table above)."""
    n = group_size
    if kind == "collective-permute":
        return result_bytes if any(s != t for s, t in pairs) else 0
    if n <= 1:
        return 0
    if kind == "all-reduce":
        return 2 * (n - 1) * result_bytes // n
    if kind in ("all-gather", "all-to-all", "ragged-all-to-all"):
        return (n - 1) * result_bytes // n
    if kind == "reduce-scatter":
        return (n - 1) * result_bytes
    if kind == "collective-broadcast":
        return result_bytes
    return 0
