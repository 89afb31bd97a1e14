"""A saved comparison page (`shardviz.save_html(comparison, path)`) opened from file:// offline: the
ranked table, sorting, two candidates side by side with their meshes and the lines that differ, read-only
rules; checked against the comparison's own rows and each candidate's mesh size."""

from __future__ import annotations

import pathlib

import pytest
from browser_support import OfflineContext, check_front_end_built
from jax.sharding import AbstractMesh, AxisType
from playwright.sync_api import expect

import shardviz
from compare_steps import mlp, mlp_arguments

pytestmark = pytest.mark.browser

RULES = "0 = data, model\n1 = model, data\n2 = data, None"


def mesh(data: int, model: int) -> AbstractMesh:
    return AbstractMesh((data, model), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)


def test_a_saved_comparison_draws_offline(offline_context: OfflineContext, tmp_path: pathlib.Path) -> None:
    check_front_end_built()
    comparison = shardviz.compare(
        mlp,
        [("fsdp 8x1", mesh(8, 1), RULES), ("fsdp+tp 2x4", mesh(2, 4), RULES), ("tp 1x8", mesh(1, 8), RULES),
         ("uneven 3x1", mesh(3, 1), RULES)],
        args=mlp_arguments(2048, 1024, 1024),
        hardware="h100",
    )  # fmt: skip
    page, watch = offline_context.open(pathlib.Path(shardviz.save_html(comparison, tmp_path / "compare.html")))
    expect(page.locator('[data-view="compare"]')).to_have_count(1)
    rows = page.locator('[data-role="compare-row"]')
    expect(rows).to_have_count(len(comparison.rows))
    assert rows.evaluate_all("rs => rs.map((r) => r.dataset.candidate)") == [r.candidate for r in comparison.rows]
    expect(page.locator('[data-role="compare-failures"]')).to_contain_text("uneven 3x1")
    # sorted by network time, longest first (the header clicked twice)
    page.locator('button[data-column="network"]').click()
    page.locator('button[data-column="network"]').click()
    by_network = sorted(comparison.rows, key=lambda r: -r.network_s)
    assert rows.evaluate_all("rs => rs.map((r) => r.dataset.candidate)") == [r.candidate for r in by_network]
    # two side by side: both meshes drawn with all their devices, the lines that differ marked
    page.locator('[data-candidate="fsdp 8x1"]').click()
    page.locator('[data-candidate="fsdp+tp 2x4"]').click()
    meshes = page.locator('[data-role="compare-mesh"] .sv-mesh')
    expect(meshes).to_have_count(2)
    assert meshes.evaluate_all("ms => ms.map((m) => m.dataset.deviceCount)") == ["8", "8"]
    changed = comparison.changes("fsdp 8x1", "fsdp+tp 2x4")
    differing = page.locator('[data-role="compare-line"][data-differs="true"]')
    expect(differing).to_have_count(len(changed))
    # a saved Comparison carries no kernel to trace with: no rules editors, nothing to press
    expect(page.locator('[data-role="retrace"]')).to_have_count(0)
    page.screenshot(path=str(tmp_path / "compare-page.png"), full_page=True)
    assert offline_context.aborted == []
    watch.assert_clean()
