"""``shardviz.testing``'s names load on first use, once, and say so when one does not exist."""

from __future__ import annotations

import pytest

import shardviz.testing as testing
from shardviz.testing import memory


def test_a_name_loads_its_module_once_and_stays():
    testing.__dict__.pop("assert_fits", None)
    first = testing.assert_fits
    assert testing.__dict__["assert_fits"] is first is memory.assert_fits
    assert testing.assert_fits is first


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError) as info:
        testing.assert_everything  # noqa: B018
    assert str(info.value) == "module 'shardviz.testing' has no attribute 'assert_everything'"


def test_dir_lists_every_public_name_before_it_is_loaded():
    names = dir(testing)
    assert names == sorted(names)
    assert {"assert_fits", "assert_tree_layout", "SnapshotChanged", "parse_bytes"} <= set(names)
    assert set(testing.__all__) <= set(names)
