"""Dotted paths of pytree leaves: ``layers.0.w`` from JAX's key paths.

Each key becomes one segment: a dict key (``DictKey.key``), a sequence index
(``SequenceKey.idx``), an attribute name (``GetAttrKey.name``) or a custom
node's child number (``FlattenedIndexKey.key``), written with ``str`` and
joined by dots. The rules' globs match these strings, and the code the rules
engine writes (:mod:`shardviz.tree.code`) builds the same text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jax.tree_util import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey

# The attribute each known key type keeps its key in; other key types are
# asked for the same attributes in this order, then written with str().
KEY_ATTRIBUTES = ("key", "idx", "name")
_KNOWN = {DictKey: "key", SequenceKey: "idx", GetAttrKey: "name", FlattenedIndexKey: "key"}


def key_text(key: Any) -> str:
    """One path segment: the key, index or attribute name a key object holds."""
    attribute = _KNOWN.get(type(key))
    if attribute is None:
        attribute = next((a for a in KEY_ATTRIBUTES if hasattr(key, a)), None)
        if attribute is None:
            return str(key)
    return str(getattr(key, attribute))


def path_segments(key_paths: Sequence[Sequence[Any]]) -> list[tuple[str, ...]]:
    """Segments of many key paths at once; each distinct key is written once."""
    texts: dict[Any, str] = {}
    out = []
    for key_path in key_paths:
        segments = []
        for key in key_path:
            text = texts.get(key)
            if text is None:
                text = texts[key] = key_text(key)
            segments.append(text)
        out.append(tuple(segments))
    return out
