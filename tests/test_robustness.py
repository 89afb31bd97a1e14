"""Hostile and random input from Python and from the front end.

Every input ends in a layout equal to JAX's answer, or in a ShardingError
(Python) / an error trait naming the control (front end); which of the two is
JAX's call wherever the test knows what the input means (planned_edits.py).
The last good picture and the user's array stay; nothing raises into the
kernel, and nothing counts as a refusal that is a failure inside shardviz.
The counts of inputs tried are printed in the test summary (see conftest.py).
"""

from __future__ import annotations

import gc
import html.parser
import json
import logging
import resource
import weakref
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ipywidgets.widgets.widget import _instances
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jax_truth import assert_matches_jax, jax_blocks
from planned_edits import SOURCE, Model, Planned, entries, memory_kind_edit, mesh_edit, spec_edit
from shardviz import ShardingError, ShardingWidget
from shardviz.array import edits as edits_module
from shardviz.export.page import page_html, payload_script
from shardviz.widgets.controller import INTERNAL

TALLY: dict[str, int] = {}

HOSTILE = [
    "",
    " ",
    "<img src=x onerror=alert(1)>",
    "</script><script>alert(2)</script>",
    "'",
    '"',
    "x'y",
    "None",
    "P",
    "__import__('os').system('echo pwned')",
    "ü",
    "轴",
    "🙂",
    "a" * 500,
    "x=2",
    "(",
    ")",
    ",",
    "\n",
    "\x00",
]
axis_names = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(min_size=0, max_size=40),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True),
)
# Text the test did not build from a structure (planned_edits.py builds the rest):
# its meaning is unknown to the test, so an accepted one is only checked
# against the array the widget placed.
texts = st.one_of(
    st.text(max_size=60),
    st.lists(axis_names, max_size=4).map(", ".join),
    st.sampled_from(HOSTILE),
)
mesh_texts = st.one_of(
    texts,
    st.lists(
        st.tuples(
            axis_names,
            st.one_of(st.integers(-2, 20).map(str), st.text(max_size=4)),
            st.sampled_from(["", ":auto", ":explicit", ":bogus"]),
        ),
        min_size=0,
        max_size=4,
    ).map(lambda axes: ", ".join(f"{n!r}={s}{t}" if i % 2 else f"{n}={s}{t}" for i, (n, s, t) in enumerate(axes))),
)
memory_kinds = st.one_of(st.text(max_size=12), st.sampled_from(HOSTILE))


def tally(key: str) -> None:
    TALLY[key] = TALLY.get(key, 0) + 1


@pytest.fixture(scope="module")
def original():
    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])
    return jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P("x", "y")))


RANDOM_TEXT = {"spec_text": texts, "mesh_text": mesh_texts, "memory_kind": memory_kinds}


class ShardvizErrors(logging.Handler):
    """Records shardviz logs at ERROR: a failure inside shardviz, not a refusal."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def shardviz_errors():
    handler = ShardvizErrors()
    logger = logging.getLogger("shardviz")
    logger.addHandler(handler)
    try:
        yield handler.records
    finally:
        logger.removeHandler(handler)


def assert_refusal_not_failure(w: ShardingWidget, errors: list[logging.LogRecord]) -> None:
    """A refused edit names a control; "internal" (or a shardviz error log) is a bug in shardviz."""
    assert w.error_source != INTERNAL, w.error
    assert not errors, [r.getMessage() for r in errors]
    if w.error:
        assert w.error_source in ("spec", "mesh", "memory_kind"), (w.error_source, w.error)


def initial_model(original: jax.Array) -> Model:
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    model = Model(mesh, P("x", "y"), "device")
    assert original.sharding == model.sharding  # the fixture is what the model says
    return model


def assert_shows(w: ShardingWidget, model: Model, shape: tuple[int, ...]) -> None:
    """The widget shows, and placed the array under, JAX's answer for the model's sharding."""
    assert_matches_jax(w.layout, model.sharding, shape, array=w.array)
    assert jax_blocks(w.array.sharding, shape) == jax_blocks(model.sharding, shape)
    assert w.array.sharding.memory_kind == model.memory_kind
    assert [d.id for d in w.array.sharding.mesh.devices.flat] == [d.id for d in model.mesh.devices.flat]


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(st.sampled_from(list(SOURCE)), st.booleans(), st.data()), min_size=1, max_size=4))
def test_frontend_edits_never_raise_and_never_lose_the_picture(original, shardviz_errors, edits):
    """Edits as the front end sends them, most built from a structure (spec entries,
    mesh axes, a memory kind) whose meaning the test knows, the rest random text.

    A built edit must be accepted exactly when JAX accepts what it means (less
    shardviz's own rules, listed in planned_edits.py), and then show JAX's
    answer for the sharding the test built; a refusal names the edit's control.
    Random text may be refused or accepted; accepted, it is checked against
    JAX's answer for the array the widget placed (its meaning is unknown to the test).
    """
    shape = (4, 8)
    w = ShardingWidget(original)
    model = initial_model(original)
    for trait, built, data in edits:
        before_payload, before_array = dict(w.payload), w.array
        if built:
            planned: Planned = data.draw(
                {
                    "spec_text": spec_edit(model, original, axis_names),
                    "mesh_text": mesh_edit(model, original, axis_names),
                    "memory_kind": memory_kind_edit(model, original),
                }[trait]
            )
            text = planned.text
        else:
            text = data.draw(RANDOM_TEXT[trait])
        w.set_state({trait: text})  # must not raise
        tally("front-end edits")
        assert_refusal_not_failure(w, shardviz_errors)
        if built:
            tally("front-end edits built from a structure")
            if planned.after is None:
                tally("front-end edits built from a structure: refused, as JAX or shardviz's rules say")
                assert w.error, f"{text!r} was accepted; expected a refusal ({planned.why})"
                assert w.error_source == SOURCE[trait], (w.error_source, w.error)
            else:
                tally("front-end edits built from a structure: accepted and checked against JAX")
                assert not w.error, f"{text!r} was refused ({w.error_source}: {w.error}); JAX accepts it"
                model = planned.after
                assert_shows(w, model, shape)
        else:
            tally("front-end edits of random text")
            if not w.error and trait == "spec_text" and not text.strip():
                tally("front-end edits of random text: blank spec, accepted as P() and checked against JAX")
                model = replace(model, spec=P(), asked=None)
                assert_shows(w, model, shape)
            elif not w.error:
                tally("front-end edits of random text: accepted, checked against JAX for the array placed")
                assert_matches_jax(w.layout, w.array.sharding, shape, array=w.array)
                shown = w.array.sharding
                if trait == "mesh_text":
                    model = model.on_mesh(shown.mesh, shape)
                    assert entries(model.spec, len(shape)) == entries(shown.spec, len(shape)), (model, shown)
                model = Model(shown.mesh, shown.spec, shown.memory_kind, None if trait == "spec_text" else model.asked)
        if w.error:
            tally("front-end edits refused with a message")
            assert w.payload == before_payload and w.array is before_array
        else:
            tally("front-end edits accepted")
            assert w.layout.type_str == str(jax.typeof(w.array))
    assert not original.is_deleted()
    np.testing.assert_array_equal(np.asarray(original), np.arange(32.0).reshape(4, 8))
    w.close()


python_memory_kinds = st.one_of(
    st.sampled_from(["device", "pinned_host", "unpinned_host", "hbm", "", "<b>"]), st.text(max_size=12)
)


@settings(max_examples=300, deadline=None)
@given(
    names=st.lists(axis_names, min_size=1, max_size=3),
    shape=st.lists(st.integers(-2, 12), max_size=4),
    kind=python_memory_kinds,
    data=st.data(),
)
def test_python_inputs_give_a_layout_or_a_sharding_error(names, shape, kind, data):
    """Random meshes, specs, shapes and kinds through the Python API: a layout exactly
    when JAX places an array of that shape there, and then JAX's answer; else a ShardingError."""
    sizes = [1] * len(names)
    sizes[0] = 2
    entry = st.one_of(st.none(), st.sampled_from(names), st.lists(st.sampled_from(names), max_size=2), axis_names)
    spec = P(*(tuple(e) if isinstance(e, list) else e for e in data.draw(st.lists(entry, max_size=4))))
    tally("Python inputs")
    try:
        mesh = jax.make_mesh(tuple(sizes), tuple(names), devices=jax.devices()[:2])
    except Exception:  # JAX refuses the mesh (e.g. duplicate names); not ours to judge
        tally("Python inputs JAX refused before shardviz")
        return
    try:
        sharding = NamedSharding(mesh, spec, memory_kind=kind)
        jax.device_put(np.zeros(shape, np.float32), sharding)
        jax_refused = ""
    except Exception as err:  # JAX's (or numpy's, for a negative shape) verdict
        jax_refused = f"{type(err).__name__}: {err}"
    try:
        w = ShardingWidget(shape=tuple(shape), mesh=mesh, spec=spec, memory_kind=kind)
    except ShardingError as err:
        tally("Python inputs rejected with ShardingError")
        assert str(err)
        assert jax_refused, f"shardviz refused what JAX accepts: {err}"
        return
    tally("Python inputs laid out")
    assert not jax_refused, f"shardviz laid out what JAX refuses ({jax_refused})"
    assert_matches_jax(w.layout, sharding, tuple(shape))
    w.close()


def test_hostile_axis_names_survive_a_round_trip():
    names = ("<img src=x onerror=alert(1)>", "</script>")
    mesh = jax.make_mesh((2, 4), names, devices=jax.devices()[:8])
    x = jax.device_put(jnp.zeros((4, 8)), NamedSharding(mesh, P(*names)))
    w = ShardingWidget(x)
    assert w.payload["mesh"]["names"] == list(names)
    w.set_state({"spec_text": w.spec_text})  # the canonical text parses back to the same spec
    assert w.error == "" and w.layout.spec == ((names[0],), (names[1],))
    # An HTML parser ends a script element at the first "</script": the inline
    # JSON must survive that intact and read back as the very payload.
    assert inline_payloads(page_html([w.payload], "t")) == [w.payload]


class PayloadScripts(html.parser.HTMLParser):
    """The text of every <script data-shardviz-payload> element, as a browser would cut it."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []
        self._inside = False

    def handle_starttag(self, tag, attrs):
        self._inside = tag == "script" and "data-shardviz-payload" in dict(attrs)
        if self._inside:
            self.texts.append("")

    def handle_data(self, data):
        if self._inside:
            self.texts[-1] += data

    def handle_endtag(self, tag):
        self._inside = False


def inline_payloads(page: str) -> list[dict]:
    parser = PayloadScripts()
    parser.feed(page)
    parser.close()
    return [json.loads(text) for text in parser.texts]


def test_the_inline_payload_check_can_fail():
    """Unescaped, a "</script>" in an axis name ends the element early and the JSON breaks."""
    payload = {"mesh": {"names": ["</script><b>x</b>"]}}
    raw = f'<script type="application/json" data-shardviz-payload>{json.dumps(payload)}</script>'
    with pytest.raises(json.JSONDecodeError):
        inline_payloads(raw)
    assert inline_payloads(payload_script(payload)) == [payload]


def test_the_fuzz_checks_catch_a_misread_and_a_failure(original, monkeypatch, shardviz_errors):
    """The fuzz test's checks fail on a grammar that misreads a spec (the widget's own
    array would agree with the misreading) and on a failure inside shardviz."""
    model = initial_model(original)
    w = ShardingWidget(original)
    real_parse = edits_module.parse_spec
    monkeypatch.setattr(edits_module, "parse_spec", lambda text: tuple(reversed(real_parse(text))))
    w.set_state({"spec_text": "x, y"})
    assert w.error == ""
    assert_matches_jax(w.layout, w.array.sharding, (4, 8), array=w.array)  # the old, circular check passes
    with pytest.raises(AssertionError):
        assert_shows(w, replace(model, spec=P("x", "y")), (4, 8))
    monkeypatch.undo()

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("shardviz.array.placement.describe", broken)
    w.set_state({"spec_text": "y, x"})
    with pytest.raises(AssertionError):
        assert_refusal_not_failure(w, shardviz_errors)
    w.close()


def test_deleted_array_under_the_widget(original):
    x = jax.device_put(original, original.sharding)  # a copy the test may delete
    x = x + 0
    w = ShardingWidget(x)
    before = dict(w.payload)
    x.delete()
    w.set_state({"spec_text": "y, x"})
    assert "deleted" in w.error and w.payload == before
    assert "deleted" in w.preview(0)["error"]


def test_donated_array_under_the_widget(original):
    x = original + 0
    w = ShardingWidget(x)
    before = dict(w.payload)
    jax.jit(lambda a: a * 2, donate_argnums=0)(x)
    # JAX 0.10.2's CPU backend honours the donation (see test_engine_errors).
    assert jax.devices()[0].platform == "cpu" and x.is_deleted()
    w.set_state({"spec_text": "y, x"})
    assert "deleted" in w.error and "donation" in w.error and w.error_source == "spec"
    assert w.payload == before
    assert "deleted" in w.preview(0)["error"]


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def test_many_widgets_open_and_close_without_leaks(original):
    """100 widgets opened and closed, five times: ipywidgets' registry empties, every widget is
    collected, and memory stops growing after the first round. (No kernel here: the comms are
    counted in a real kernel by tests/browser/test_lab_widget.py::test_closing_100_widgets_leaves_no_comm_open.)"""
    start_instances = len(_instances)
    for _ in range(2):  # warm caches and allocator pools first
        ws = [ShardingWidget(original) for _ in range(100)]
        for w in ws:
            w.close()
    gc.collect()
    rss = [rss_mib()]
    for _round in range(5):
        ws = [ShardingWidget(original) for _ in range(100)]
        for i, w in enumerate(ws):
            w.set_state({"spec_text": "y, x" if i % 2 else "x, y"})
        assert len(_instances) == start_instances + 100
        alive = [weakref.ref(w) for w in ws]
        for w in ws:
            w.close()
        del ws, w
        gc.collect()
        assert len(_instances) == start_instances
        assert sum(ref() is not None for ref in alive) == 0, "closed widgets are still referenced"
        rss.append(rss_mib())
    TALLY["many widgets: RSS before (MiB)"] = round(rss[0])
    TALLY["many widgets: RSS after 500 more (MiB)"] = round(rss[-1])
    # A leak grows every round; the first round may still fill the caches of a long test session.
    assert rss[-1] - rss[1] < 48, f"RSS grew round by round: {[round(r) for r in rss]} MiB"


def test_refused_constructor_leaves_no_widget_behind(original):
    start = len(_instances)
    for _ in range(3):
        with pytest.raises(ShardingError, match=r"axis 'q' is not in the mesh"):
            ShardingWidget(original, spec=P("q"))
    assert len(_instances) == start


def test_malformed_frontend_messages_never_raise(original):
    w = ShardingWidget(original)
    before = dict(w.payload)
    w.set_state({"payload": {"version": 1, "type_str": "forged"}, "error": "forged"})
    assert w.payload == before and w.error == ""
    w.set_state({"spec_text": 42})  # not text: read as text, rejected with a message
    assert "axis '42' is not in the mesh" in w.error
    w.set_state({"spec_text": None, "mesh_text": ["x=2"]})
    assert w.error and w.payload == before
    w.set_state({"spec_text": "y, x"})
    assert w.error == "" and w.layout.type_str == "float32[4@y,8@x]"
