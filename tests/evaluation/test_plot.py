"""The eval trade-off plot reads well: a title that is not clipped, a legend below that leaves the plane its width,
methods drawn at one place listed once by name."""

from __future__ import annotations

import pytest

from referee.evaluation.bootstrap import BootstrapSpec
from referee.evaluation.plot import draw_tradeoff, legend_label, plot_tradeoff
from referee.evaluation.run import EvalOptions, run_eval
from tests.evaluation.helpers import audit_and_gold, record

pytest.importorskip("matplotlib")


@pytest.fixture
def report(tmp_path):
    recs = [record(f"r{i}", claim="success", disposition="flag" if i % 3 == 0 else "pass",
                   trace_state="not_completed" if i % 3 == 0 else "completed") for i in range(30)]
    gold = "run_id,completed\n" + "".join(f"r{i},{'false' if i % 2 == 0 else 'true'}\n" for i in range(30))
    audit, gold_path = audit_and_gold(tmp_path, recs, gold)
    rep, _ = run_eval(EvalOptions(audit=audit, gold=gold_path, spec=BootstrapSpec(resamples=50, seed=1)))
    return rep


def _boxes(fig):
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    return r, fig.bbox


@pytest.mark.parametrize("title", [None, "A much longer title that a user gives to this plot so that it would run "
                                         "past the width of the figure if it were not wrapped at all, twice over"])
def test_title_and_legend_lie_inside_the_figure_and_the_plane_keeps_its_width(report, title):
    import matplotlib.pyplot as plt

    fig, _ = draw_tradeoff(report, title=title)
    try:
        r, whole = _boxes(fig)
        ax = fig.axes[0]
        t = ax.title.get_window_extent(r)
        assert t.x0 >= whole.x0 and t.x1 <= whole.x1 and t.y1 <= whole.y1  # not clipped on any side
        [legend] = fig.legends
        lg = legend.get_window_extent(r)
        assert lg.x0 >= whole.x0 and lg.x1 <= whole.x1 and lg.y0 >= whole.y0
        plane = ax.get_window_extent(r)
        assert lg.y1 <= plane.y0  # below the axes, not beside them
        assert plane.width >= 0.8 * whole.width  # the legend does not squeeze the plane
    finally:
        plt.close(fig)


def test_methods_at_one_place_are_one_legend_entry_naming_each_once(report):
    import matplotlib.pyplot as plt

    fig, _ = draw_tradeoff(report)
    try:
        texts = [t.get_text() for t in fig.legends[0].get_texts()]
    finally:
        plt.close(fig)
    joined = "\n".join(texts)
    names = [m.name for m in report.methods]
    for name in names:
        assert joined.count(name) >= 1
    assert "(policy)" not in joined and "(baseline)" not in joined  # the marker says the kind, not every entry
    assert len(texts) < len(names) or len(set(texts)) == len(texts)


def test_a_legend_label_wraps_and_names_each_method_once():
    from referee.evaluation.plot import Point

    g = [Point(n, "policy", 0.5, 0.5) for n in ("policy:causal", "policy:causal", "policy:unanimous")]
    assert legend_label(g) == "policy:causal = policy:unanimous"


def test_the_png_is_written(report, tmp_path):
    out = tmp_path / "p.png"
    plot_tradeoff(report, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
