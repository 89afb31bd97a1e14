"""Terminal colour: whether to use it, which colour a tile gets, how to paint.

Kept apart from index arithmetic (``ranges``) and drawing (``picture``).
Colour only ever helps: every box also carries its text label, so nothing is
told by colour alone. A tile's colour depends on its index and nothing else
and equals the widget's (``tileColor`` in ``js/util/palette.ts``). Boxes are
painted as light fills under black text, which reads the same on dark and
light terminal themes because both ink and paper are set.
"""

from __future__ import annotations

import math
import os
import sys
from functools import lru_cache
from typing import TextIO

RESET = "\x1b[0m"

# Paul Tol's "light" qualitative scheme (minus its grey), as in js/util/palette.ts.
TILE_BASE = ("#77AADD", "#EE8866", "#EEDD88", "#FFAABB", "#99DDFF", "#44BB99", "#BBCC33", "#AAAA00")
# Paul Tol's "bright" scheme, for mesh axes (``axisColor`` in js/util/palette.ts).
AXIS_BASE = ("#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377")
_GOLDEN_ANGLE = 137.508

RGB = tuple[int, int, int]


def color_enabled(color: bool | None = None, stream: TextIO | None = None) -> bool:
    """Whether to write ANSI colour.

    An explicit ``True``/``False`` wins. Otherwise, in CPython's own order
    (``_colorize.can_colorize``): a non-empty ``NO_COLOR`` turns colour off,
    a non-empty ``FORCE_COLOR`` turns it on, ``TERM=dumb`` turns it off, and
    else colour is used only when ``stream`` (default ``sys.stdout``) is a TTY.
    """
    if color is not None:
        return bool(color)
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    stream = sys.stdout if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def truecolor() -> bool:
    """Whether the terminal says it takes 24-bit colour (else xterm's 256 are used)."""
    return os.environ.get("COLORTERM", "").lower() in ("truecolor", "24bit")


@lru_cache(maxsize=4096)
def tile_rgb(tile: int) -> RGB:
    """Fill colour of tile ``tile``: the base scheme, then golden-angle hues."""
    if tile < len(TILE_BASE):
        return _hex_rgb(TILE_BASE[tile])
    # Past the base set: hues a golden angle apart, lightness stepping through
    # three levels so that neighbours differ in lightness too.
    k = tile - len(TILE_BASE)
    lightness = (0.84, 0.74, 0.92)[k % 3]
    return _oklch_rgb(lightness, 0.11, (20 + k * _GOLDEN_ANGLE) % 360)


@lru_cache(maxsize=256)
def axis_rgb(axis: int) -> RGB:
    """Mark colour of mesh axis ``axis`` (by position in the mesh), as the widget's."""
    if axis < len(AXIS_BASE):
        return _hex_rgb(AXIS_BASE[axis])
    return _oklch_rgb(0.62, 0.14, (200 + (axis - len(AXIS_BASE)) * _GOLDEN_ANGLE) % 360)


def _fore(rgb: RGB, true_color: bool) -> str:
    r, g, b = rgb
    return f"38;2;{r};{g};{b}" if true_color else f"38;5;{_xterm256(r, g, b)}"


def mark_axis(text: str, axis: int, *, true_color: bool) -> str:
    """``text`` in bold, inked in the axis colour, followed by a reset.

    The terminal's own background stays: the bright scheme reads on light
    and dark themes alike, and the text says the axis name anyway.
    """
    return f"\x1b[1;{_fore(axis_rgb(axis), true_color)}m{text}{RESET}"


def ink(text: str, rgb: RGB, *, true_color: bool) -> str:
    """``text`` drawn in ``rgb`` (for marks such as bars), followed by a reset."""
    return f"\x1b[{_fore(rgb, true_color)}m{text}{RESET}"


def paint(text: str, tile: int, *, true_color: bool) -> str:
    """``text`` on the tile's fill, in black ink, followed by a reset."""
    r, g, b = tile_rgb(tile)
    if true_color:
        back = f"48;2;{r};{g};{b}"
    else:
        back = f"48;5;{_xterm256(r, g, b)}"
    return f"\x1b[30;{back}m{text}{RESET}"


def _hex_rgb(hex_color: str) -> RGB:
    return (int(hex_color[1:3], 16), int(hex_color[3:5], 16), int(hex_color[5:7], 16))


def _oklch_rgb(lightness: float, chroma: float, hue_degrees: float) -> RGB:
    """OKLCH to sRGB, pulling chroma in until the colour fits the gamut."""
    h = math.radians(hue_degrees)
    c = chroma
    while c >= 0:
        lin = _oklab_linear(lightness, c * math.cos(h), c * math.sin(h))
        if all(-1e-4 <= v <= 1 + 1e-4 for v in lin):
            return _encode(lin)
        c -= 0.005
    return _encode(_oklab_linear(lightness, 0.0, 0.0))


def _oklab_linear(big_l: float, a: float, b: float) -> tuple[float, float, float]:
    """Björn Ottosson's OKLab -> linear sRGB transform."""
    lc = (big_l + 0.3963377774 * a + 0.2158037573 * b) ** 3
    mc = (big_l - 0.1055613458 * a - 0.0638541728 * b) ** 3
    sc = (big_l - 0.0894841775 * a - 1.291485548 * b) ** 3
    return (
        4.0767416621 * lc - 3.3077115913 * mc + 0.2309699292 * sc,
        -1.2684380046 * lc + 2.6097574011 * mc - 0.3413193965 * sc,
        -0.0041960863 * lc - 0.7034186147 * mc + 1.707614701 * sc,
    )


def _encode(linear: tuple[float, float, float]) -> RGB:
    def channel(v: float) -> int:
        x = min(1.0, max(0.0, v))
        encoded = 12.92 * x if x <= 0.0031308 else 1.055 * x ** (1 / 2.4) - 0.055
        return round(encoded * 255)

    r, g, b = (channel(v) for v in linear)
    return (r, g, b)


_CUBE = (0, 95, 135, 175, 215, 255)


def _xterm256(r: int, g: int, b: int) -> int:
    """Nearest colour of xterm's 6x6x6 cube or grey ramp."""

    def level(v: int) -> int:
        return min(range(6), key=lambda i: abs(_CUBE[i] - v))

    ri, gi, bi = level(r), level(g), level(b)
    cube = (_CUBE[ri], _CUBE[gi], _CUBE[bi])
    grey_index = min(23, max(0, round((sum((r, g, b)) / 3 - 8) / 10)))
    grey = 8 + 10 * grey_index

    def dist(c: tuple[int, int, int]) -> int:
        return (c[0] - r) ** 2 + (c[1] - g) ** 2 + (c[2] - b) ** 2

    if dist((grey, grey, grey)) < dist(cube):
        return 232 + grey_index
    return 16 + 36 * ri + 6 * gi + bi
