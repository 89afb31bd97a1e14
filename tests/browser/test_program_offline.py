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


def reveal_value(page: Any, i: int) -> Any:
    """Value i's chip in the source view, shown: past a line's first chips, or inside its family's chip."""
    more = page.locator('[data-role="more-notes"]')
    while more.count() > 0:
        more.first.click()
    chip = page.locator(f'[data-role="value"][data-value="{i}"]')
    if chip.count() == 0:
        families = page.locator('[data-role="value-family"]')
        for k in range(families.count()):
            if str(i) in (families.nth(k).get_attribute("data-values") or "").split(","):
                families.nth(k).click()
                break
    return chip.first


def test_a_saved_program_draws_offline_read_only(offline_context: OfflineContext, tmp_path: pathlib.Path) -> None:
    page, watch, prog = open_program(offline_context, tmp_path, "scan_grad")
    expect(page.locator('[data-role="read-only-note"]')).to_contain_text("needs a live kernel")
    editors = page.locator('[data-role="input-spec"]')
    expect(editors).to_have_count(len(prog.inputs))
    for i in range(len(prog.inputs)):
        expect(editors.nth(i)).to_be_disabled()
    rows = page.locator('[data-role="collective"]')
    expect(rows).to_have_count(len(prog.collectives))
    root = page.locator('[data-role="source-block"]').first
    expect(root).to_have_attribute("data-function", prog.source.name.split(".")[-1])
    expect(root.locator('[data-role="source-line"]')).to_have_count(len(prog.source.lines))
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
    reveal_value(page, i).click()
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
    families = page.locator('[data-role="collective-family"]')
    for k in range(families.count()):
        families.nth(k).click()
    chips = page.locator(f'[data-role="line-collective"][data-collective="{combined}"]')
    expect(chips).to_have_count(len(c.parts))
    for k, part in enumerate(c.parts):
        chip = page.locator(f'[data-role="line-collective"][data-collective="{combined}"][data-part="{k}"]')
        expect(chip).to_contain_text(f"of {len(c.parts)} in {c.name}")
        # On the row of the operand's own line, in the block of the function that line is in.
        row = chip.locator("xpath=ancestor::*[@data-role='source-line'][1]")
        code = pathlib.Path(part.source.file).read_text().splitlines()[part.source.line - 1].strip()
        expect(row).to_have_attribute("data-line", str(part.source.line))
        expect(row.locator(".sv-src-code")).to_have_text(code)
        expect(row.locator("xpath=ancestor::*[@data-role='source-block'][1]")).to_have_attribute(
            "data-function", part.source.function.rsplit(".", 1)[-1]
        )
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


def test_a_saved_training_step_shows_memory_over_the_program(
    offline_context: OfflineContext, tmp_path: pathlib.Path
) -> None:
    """No kernel: the page draws the strip from the payload alone; pointing at a step lists what
    Python's own timeline says is live there, and a group selects its line in the source view."""
    page, watch, prog = open_program(offline_context, tmp_path, "layers")
    timeline = prog.memory_timeline
    track = page.locator('[data-role="memory-track"]')
    live = page.locator('[data-role="memory-live"]')
    expect(track).to_have_attribute("aria-valuenow", str(timeline.peak_step))
    track.scroll_into_view_if_needed()
    box = track.bounding_box()
    steps = len(timeline.steps)
    for fraction in (0.2, 0.45, 0.7):
        x = box["width"] * fraction
        page.mouse.move(box["x"] + x, box["y"] + box["height"] / 2)
        step = min(steps - 1, int(x / box["width"] * steps))
        expect(live).to_have_attribute("data-step", str(step))
        shown = live.locator('[data-role="memory-group"]').evaluate_all(
            "gs => gs.map((g) => [Number(g.getAttribute('data-group')), Number(g.getAttribute('data-bytes'))])"
        )
        index = {id(g): k for k, g in enumerate(timeline.groups)}
        theirs = {index[id(g)]: n for g, n in timeline.live_at(step)}
        assert shown and shown[0][0] in theirs
        for group, held in shown:
            assert held <= theirs[group] <= held * 1.01 + 64, (step, group, held, theirs[group])
    page.mouse.move(1, 1)
    group = live.locator('[data-role="memory-group"]:not([data-kind="argument"])').first
    line = prog.memory_timeline.groups[int(group.get_attribute("data-group"))].source.line
    group.click()
    expect(page.locator('[data-role="source-line"][aria-current="true"]')).to_have_attribute("data-line", str(line))
    expect(page.locator('[role="alert"]')).to_have_count(0)
    assert_offline(offline_context, watch, page)


def test_a_saved_page_never_breaks_a_piece_of_an_axis(offline_context: OfflineContext, tmp_path: pathlib.Path) -> None:
    """On a narrow page, `y[sub 2 of 4, stride 2]` wraps as a whole or not at all, in the table and the
    source: it never reads as `y[sub 2 of 4,`, and the two collectives of sub_axes read differently."""
    page, watch, prog = open_program(offline_context, tmp_path, "sub_axes")
    page.set_viewport_size({"width": 420, "height": 900})
    pieces = page.locator(".sv-axis-piece")
    expect(pieces.first).to_be_visible()
    # One line each: a piece's box is no taller than one line of its text (two lines would be twice that).
    drawn = pieces.evaluate_all(
        "ps => ps.map((p) => [p.textContent,"
        " p.getBoundingClientRect().height / parseFloat(getComputedStyle(p).fontSize)])"
    )
    assert drawn and all(height < 1.9 for _, height in drawn), drawn
    labels = {c.axes_label for c in prog.collectives}
    assert labels == {"y[sub 2 of 4]", "y[sub 2 of 4, stride 2]"}
    assert {text for text, _ in drawn} == labels
    assert_offline(offline_context, watch, page)
