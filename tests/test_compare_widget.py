"""The comparison view's widget: its payload, a rules edit that traces one candidate again, a refused
edit that keeps the last good comparison, the kind registry and a saved page."""

from __future__ import annotations

import json

import pytest
from jax.sharding import AbstractMesh, AxisType

import shardviz
from compare_steps import mlp, mlp_arguments
from shardviz.api import kind_of

RULES = "0 = data, model\n1 = model, data\n2 = data, None"


def mesh(data, model):
    return AbstractMesh((data, model), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)


@pytest.fixture(scope="module")
def comparison():
    return shardviz.compare(
        mlp, [("a", mesh(4, 2), RULES), ("b", mesh(2, 4), RULES)], args=mlp_arguments(64, 256, 256), hardware="h100"
    )


def test_the_payload_is_the_comparison_with_its_rules(comparison):
    widget = shardviz.ComparisonWidget(comparison)
    assert widget.payload["kind"] == "compare" and widget.payload["rules"] == {"a": RULES, "b": RULES}
    assert widget.payload["editable"] is True
    assert widget.payload["rows"] == json.loads(json.dumps(comparison.to_json()["rows"]))
    assert kind_of(comparison) == "compare"
    assert shardviz.render_text(comparison) == comparison.render()


def test_a_rules_edit_traces_that_candidate_again(comparison):
    widget = shardviz.ComparisonWidget(comparison)
    assert widget.apply_edit(rules_edit=json.dumps({"candidate": "a", "rules": "2 = data, None"})), widget.error
    assert widget.comparison.programs["b"] is comparison.programs["b"]
    gathers = [c for c in widget.comparison.row("a").lines if c.kind == "all-gather"]
    assert gathers == [] and widget.notice.startswith("a traced again: ")
    assert widget.payload["rules"]["a"] == "2 = data, None"
    assert widget.rules_edit == ""


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("not json", "a rules edit is JSON"),
        (json.dumps({"candidate": "a"}), "names a candidate and its rules text"),
        (json.dumps({"candidate": "zz", "rules": RULES}), "candidate 'zz' has no rules text"),
        (json.dumps({"candidate": "a", "rules": "0 = data, nope"}), "line 1"),
    ],
)
def test_a_bad_edit_says_why_and_keeps_the_comparison(comparison, edit, message):
    widget = shardviz.ComparisonWidget(comparison)
    before = widget.payload
    assert not widget.apply_edit(rules_edit=edit)
    assert message in widget.error
    assert widget.comparison is comparison and widget.payload == before


def test_a_diff_is_shown_read_only(comparison):
    diff = shardviz.diff(comparison.programs["a"], comparison.programs["b"])
    widget = shardviz.ComparisonWidget(diff)
    assert widget.payload["editable"] is False and widget.payload["rules"] == {}
    with pytest.raises(shardviz.ShardingError, match="not a str"):
        shardviz.ComparisonWidget("comparison")


def test_a_saved_page_holds_the_payload(comparison, tmp_path):
    path = tmp_path / "compare.html"
    shardviz.save_html(comparison, path)
    page = path.read_text(encoding="utf-8")
    assert "<title>shardviz: compare mlp</title>" in page
    start = page.index("data-shardviz-payload>") + len("data-shardviz-payload>")
    saved = json.loads(page[start : page.index("</script>", start)])
    assert saved["kind"] == "compare" and saved["rows"] == json.loads(json.dumps(comparison.to_json()["rows"]))
