"""Byte budgets as users write them: ``2**30``, ``"16 GiB"``, ``"1.5 MB"``."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

import numpy as np

from ..errors import ShardingError

# Binary units as shardviz prints them (KiB, MiB, ...), decimal ones as disks are sold (kB, MB, ...).
UNITS = {
    "b": 1,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
}
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)\s*")


def parse_bytes(value: Any, what: str) -> int:
    """``value`` as a whole number of bytes; a :class:`ShardingError` naming ``what`` otherwise.

    Takes an int (or a whole float, ``16e9``) or a string of a number and a
    unit (``"16 GiB"``, ``"512 B"``, ``"2.5 GB"``; a bare number is bytes).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str, np.integer, np.floating)):
        raise ShardingError(
            f"{what} must be a byte count, an int such as 2**30 or a string such as '16 GiB', "
            f"not {type(value).__name__} {value!r}"
        )
    if isinstance(value, str):
        match = _SIZE.fullmatch(value)
        unit = match.group(2).lower() if match else ""
        if not match or (unit and unit not in UNITS):
            raise ShardingError(
                f"{what} {value!r} is not a size: write a number and a unit, one of "
                f"B, KiB, MiB, GiB, TiB, kB, MB, GB, TB (e.g. '16 GiB')"
            )
        count = Decimal(match.group(1)) * UNITS.get(unit, 1)  # exact: "1.1 GB" is 1100000000 bytes
        if count != count.to_integral_value():
            raise ShardingError(
                f"{what} {value!r} is {count.normalize():f} bytes, not a whole number: "
                "write a whole number of bytes, or a unit that makes it one ('0.5 KiB' is 512 B)"
            )
        return int(count)
    if isinstance(value, (float, np.floating)) and (not math.isfinite(value) or value != int(value)):
        raise ShardingError(f"{what} must be a whole number of bytes, not {value!r}")
    if value < 0:
        raise ShardingError(f"{what} must be 0 or more bytes, not {value!r}")
    return int(value)
