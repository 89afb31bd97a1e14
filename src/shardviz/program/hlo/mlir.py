"""The lowered (MLIR) module's mesh declarations."""

from __future__ import annotations

import re

# --------------------------------------------------------------------------
# the lowered module's mesh declarations

# The meshes a lowered module declares: ``sdy.mesh @mesh = <["x"=2, "y"=4]>``.
_MESH_DECLARATION = re.compile(r"^\s*sdy\.mesh @\S+ = <\[(.*?)\]>", re.M)


_MLIR_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def declared_mesh_axis_names(module_text: str) -> list[bytes]:
    """The axis names of every mesh a lowered (StableHLO/Shardy) module declares, as bytes."""
    return [
        _mlir_string(quoted)
        for declaration in _MESH_DECLARATION.findall(module_text)
        for quoted in _MLIR_STRING.findall(declaration)
    ]


def _mlir_string(body: str) -> bytes:
    """The bytes of an MLIR string literal's body: ``\\\\``, ``\\"`` and ``\\XX`` (hex) escapes."""
    out = bytearray()
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body) and body[i + 1] in '\\"':
            out.append(ord(body[i + 1]))
            i += 2
        elif body[i] == "\\" and i + 2 < len(body) and re.fullmatch(r"[0-9A-Fa-f]{2}", body[i + 1 : i + 3]):
            out.append(int(body[i + 1 : i + 3], 16))
            i += 3
        else:
            out.extend(body[i].encode())
            i += 1
    return bytes(out)
