"""Saved program pages (`shardviz.save_html(prog, path)`) opened from file:// with every network cut off.

The page draws the whole program from what it carries inline, read-only,
with a plain note that tracing again needs a kernel; values' layouts and
collectives' groups are computed in the page and must be what JAX says:
the groups those of the compiled module (read without shardviz), the
layouts Python's own for the same sharding. Hostile axis names stay text.
"""

from __future__ import annotations

import functools
import pathlib
from typing import Any

import jax
import pytest
from browser_support import OfflineContext, check_front_end_built
from playwright.sync_api import expect

import shardviz
from decoding import decode_runs
from program_js_fixtures import HOSTILE_AXIS, hlo_collectives, programs, value_parity

pytestmark = pytest.mark.browser


def open_program(cut: OfflineContext, tmp_path: pathlib.Path, name: str) -> tuple[Any, Any, shardviz.Program]:
    check_front_end_built()
    fun, args = programs()[name]
    prog = shardviz.trace(fun, *args)
    page, watch = cut.open(pathlib.Path(shardviz.save_html(prog, tmp_path / f"{name}.html")))
    expect(page.locator('[data-view="program"]')).to_have_count(1)
    return page, watch, prog


def assert_offline(cut: OfflineContext, watch: Any, page: Any) -> None:
    assert cut.aborted == [], f"the page tried to load: {cut.aborted}"
    assert [url for url in watch.requests if url != page.url] == []
    watch.assert_clean()


def grid_groups(page: Any) -> list[list[int]]:
    painted = page.locator('[data-role="group-grid"] [data-device-id]').evaluate_all(
        "cells => cells.map((c) => [Number(c.getAttribute('data-device-id')), c.getAttribute('data-group')])"
    )
    groups: dict[str, list[int]] = {}
    for device, group in painted:
        groups.setdefault(group, []).append(device)
    return sorted(sorted(g) for g in groups.values())


def test_a_saved_program_draws_offline_read_only(offline_context: OfflineContext, tmp_path: pathlib.Path) -> None:
    page, watch, prog = open_program(offline_context, tmp_path, "scan_grad")
    expect(page.locator('[data-role="read-only-note"]')).to_contain_text("needs a live kernel")
    editors = page.locator('[data-role="input-spec"]')
    expect(editors).to_have_count(len(prog.inputs))
    for i in range(len(prog.inputs)):
        expect(editors.nth(i)).to_be_disabled()
    rows = page.locator('[data-role="collective"]')
    expect(rows).to_have_count(len(prog.collectives))
    expect(page.locator('[data-role="source-line"]')).to_have_count(len(prog.source.lines))
    # Selecting each collective colours the groups JAX's compiled module gives.
    fun, args = programs()["scan_grad"]
    theirs = hlo_collectives(jax.jit(fun).lower(*args).compile())
    drawn = []
    for i in range(rows.count()):
        rows.nth(i).click()
        expect(page.locator('[data-role="group-grid"] [data-device-id][data-group]')).to_have_count(8)
        drawn.append([rows.nth(i).get_attribute("data-kind"), grid_groups(page)])
    assert sorted(drawn) == sorted([c["kind"], sorted(sorted(g) for g in c["groups"])] for c in theirs)
    # Selecting a value lays it out in the page, as Python lays out that sharding.
    parity = value_parity(prog)
    i = next(k for k, v in enumerate(prog.values) if v.role == "intermediate" and parity[k] is not None)
    page.locator("details[data-role='fold'] > summary").first.click()
    page.locator(f'[data-role="value"][data-value="{i}"]').first.click()
    cells = page.locator('[data-role="selection"] .sv-mesh [data-tile-of]')
    expect(cells).to_have_count(8)
    tiles = cells.evaluate_all("cells => cells.map((c) => Number(c.getAttribute('data-tile-of')))")
    assert tiles == [int(t) for t in decode_runs(parity[i]["devices"]["tile"])]
    expect(page.locator('[data-role="selection"] [data-role="type"]')).to_have_text(parity[i]["type_str"])
    expect(page.locator('[role="alert"]')).to_have_count(0)
    assert_offline(offline_context, watch, page)


def test_a_saved_program_keeps_hostile_axis_names_as_text(
    offline_context: OfflineContext, tmp_path: pathlib.Path
) -> None:
    page, watch, _ = open_program(offline_context, tmp_path, "hostile")
    expect(page.locator("body")).to_contain_text(HOSTILE_AXIS)
    page.locator('[data-role="collective"]').first.click()
    expect(page.locator('[data-role="group-grid"] [data-device-id][data-group]')).to_have_count(8)
    page.wait_for_load_state("networkidle")
    assert page.locator("img").count() == 0
    scripts = page.locator("script").evaluate_all("els => els.map((e) => e.type || 'classic')")
    assert sorted(scripts) == ["application/json", "classic"], scripts
    assert_offline(offline_context, watch, page)


def test_a_saved_training_step_puts_each_gradients_bytes_on_its_line(
    offline_context: OfflineContext, tmp_path: pathlib.Path
) -> None:
    """XLA combines the step's gradient all-reduces into one op; the page shows each operand's
    bytes on the line of the program that made it, with that line's text, and its caller."""
    page, watch, prog = open_program(offline_context, tmp_path, "train_step")
    (combined,) = [k for k, c in enumerate(prog.collectives) if c.combined]
    c = prog.collectives[combined]
    fun, args = programs()["train_step"]
    text = jax.jit(fun).lower(*args).compile().as_text()
    assert f"{c.name} = (" in text, "the module's combined all-reduce returns a tuple, one element per operand"
    chips = page.locator(f'[data-role="line-collective"][data-collective="{combined}"]')
    expect(chips).to_have_count(len(c.parts))
    for k, part in enumerate(c.parts):
        chip = page.locator(f'[data-role="line-collective"][data-collective="{combined}"][data-part="{k}"]')
        expect(chip).to_contain_text(f"of {len(c.parts)} in {c.name}")
        block = chip.locator("xpath=ancestor::*[@data-source-line][1]")
        code = pathlib.Path(part.source.file).read_text().splitlines()[part.source.line - 1].strip()
        expect(block.locator('[data-role="chain-line"]').first).to_contain_text(f":{part.source.line}")
        expect(block.locator('[data-role="chain-line"]').first).to_contain_text(code)
    chips.first.click()
    expect(page.locator('[data-role="collective-part"]')).to_have_count(len(c.parts))
    page.screenshot(path=str(tmp_path / "train-step.png"), full_page=True)
    assert_offline(offline_context, watch, page)


def test_a_saved_program_estimates_each_hardware_offline(
    offline_context: OfflineContext, tmp_path: pathlib.Path
) -> None:
    page, watch, prog = open_program(offline_context, tmp_path, "scan_grad")
    select = page.locator('select[data-role="hardware"]')
    expect(select).to_have_value("tpu-v5p")
    for name in ("h100", "tpu-v5e"):
        select.select_option(name)
        est = prog.estimate(name)  # Python's estimate of the same program
        ms = f"{est.step_s * 1e3:.1f} ms" if est.step_s >= 1e-3 else f"{est.step_s * 1e6:.1f} \u00b5s"
        expect(page.locator('[data-role="estimate-step"]')).to_have_text(f"{ms} per step, {est.bound}-bound")
        slowest = max(est.collectives, key=lambda c: c.seconds)
        expect(page.locator('[data-role="estimate-slowest"] li').first).to_contain_text(f"on {slowest.link}")
    page.screenshot(path=str(tmp_path / "estimate.png"), full_page=True)
    assert_offline(offline_context, watch, page)


def gather_rows(a, to):
    return jax.lax.with_sharding_constraint(a, to)


def test_a_saved_page_shows_the_parts_of_a_collective_over_two_gpu_nodes(
    offline_context: OfflineContext, tmp_path: pathlib.Path
) -> None:
    # 12 devices are a node of 8 GPUs and part of another: the gather runs on NVLink and InfiniBand at once
    check_front_end_built()
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()[:12]), ("x",))
    a = jax.device_put(jax.numpy.ones((12 * 64, 1024)), NamedSharding(mesh, PartitionSpec("x")))
    prog = shardviz.trace(functools.partial(gather_rows, to=NamedSharding(mesh, PartitionSpec())), a)
    est = prog.estimate("h100")
    (gather,) = [c for c in est.collectives if c.kind == "all-gather"]
    assert [p.link for p in gather.parts] == ["NVLink", "InfiniBand"]
    page, watch = offline_context.open(pathlib.Path(shardviz.save_html(prog, tmp_path / "two_nodes.html")))
    page.locator('select[data-role="hardware"]').select_option("h100")
    expect(page.locator('[data-role="estimate-parts"]')).to_contain_text("on 2 nodes")
    item = page.locator('[data-role="estimate-slowest"] li').first
    expect(item).to_contain_text("on NVLink+InfiniBand")
    legs = item.locator('[data-role="collective-links"] li')
    expect(legs).to_have_count(2)
    for k, part in enumerate(gather.parts):
        expect(legs.nth(k)).to_contain_text(f"{part.what} on {part.link}")
    page.screenshot(path=str(tmp_path / "two-nodes.png"), full_page=True)
    assert_offline(offline_context, watch, page)
