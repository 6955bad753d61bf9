"""Every study's figures, drawn on synthetic tables.

Each figure is a PNG on the synthetic table and None on an empty one; legends sit outside the axes in a
legible font; every plotted mean carries an interval; axes are labelled in words (no column names);
axes of problem size or depth mark the in- and out-of-distribution ranges.
"""

from __future__ import annotations

import base64
import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.container import BarContainer, ErrorbarContainer

from bindscale.studies.modularity import figures as mod_figs
from bindscale.studies.scaling import figures as sc_figs
from bindscale.studies.subgraphs import figures as sg_figs

PNG = b"\x89PNG\r\n\x1a\n"


def _fixtures(name: str):
    spec = importlib.util.spec_from_file_location(f"_figs_{name.replace('/', '_')}",
                                                  Path(__file__).parents[1] / "studies" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def subgraph_table(family: str = "maxsubseq", seeds: int = 3) -> pd.DataFrame:
    """Two model sizes (scratchpad) and an answer-only control, every per-trial table filled."""
    rng = np.random.default_rng(0)
    id_max, ood_max = (5, 7) if family == "maxsubseq" else (2, 3)
    if family == "maxsubseq":
        sizes = [str(n) for n in range(2, ood_max + 1)]
        in_dist = {k: int(k) <= id_max for k in sizes}
    else:
        sizes = [f"{a}x{b}" for a in range(1, ood_max + 1) for b in range(1, ood_max + 1)]
        in_dist = {k: max(map(int, k.split("x"))) <= id_max for k in sizes}
    rows = []
    for n_params, pad in ((1e5, True), (1e6, True), (1e5, False)):
        for s in range(seeds):
            def acc(ok: bool) -> float:
                return float(np.clip((0.95 if ok else 0.3) + rng.normal(0, 0.03), 0, 1))
            depths = range(3, 9)
            rows.append({
                "status": "ok", "task": family, "task.family": family, "task.id_max": id_max, "task.ood_max": ood_max,
                "n_params": n_params, "n_train": 4000, "scratchpad": pad, "seed": s,
                "acc_id": acc(True), "acc_ood": acc(False), "compound_eps": 0.05, "compound_r2": 0.8,
                "acc_by_size": json.dumps({k: [32, acc(in_dist[k])] for k in sizes}),
                "acc_by_depth": json.dumps({str(d): [32, acc(d <= 6)] for d in depths}),
                **({"acc_by_depth_source": json.dumps({str(d): [32, acc(d <= 5)] for d in depths})}
                   if family == "multiplication" else {}),
                "taxonomy_dziri_by_depth": json.dumps({str(d): {"correct": 1 - 0.1 * d, "local": 0.1 * d}
                                                       for d in range(1, 9)}),
                "taxonomy_by_depth": json.dumps({str(d): {"correct": 0.8, "propagation": 0.2} for d in range(1, 9)}),
                "coverage_by_depth": json.dumps({str(d): {"correct": [10, acc(d < 3)], "wrong": [5, acc(d < 2)]}
                                                 for d in range(1, 9)}),
                "rig_top": json.dumps({"y0": {"1": ["('a0',)", 0.4 + 0.01 * s], "2": ["('a0', 'b0')", 0.9]},
                                       "y1": {"1": ["('a1',)", 0.3], "2": ["('a1', 'b0')", 0.7 + 0.01 * s]}}),
            })
    return pd.DataFrame(rows)


def modularity_table() -> pd.DataFrame:
    """The modularity verdict tests' table with the per-subroutine scores and the mask-search runs added."""
    df = _fixtures("modularity/test_verdicts")._table(pre=("none", "match_count", "subroutines"))
    rng = np.random.default_rng(1)
    for src in ("", "random_", "untrained_"):
        for f in ("A", "B"):
            df[f"{src}sub_diff_{f}"] = (0.3 if not src else 0.0) + rng.normal(0, 0.02, len(df))
            df[f"{src}abl_diff_{f}"] = (-0.2 if not src else 0.0) + rng.normal(0, 0.02, len(df))
    df["runs"] = [json.dumps([{"net": net, "acc_sub_target": 0.99, "acc_sub_other": 0.5 + 0.01 * k,
                               "acc_abl_target": 0.6, "acc_abl_other": 0.9 - 0.01 * k}
                              for net in ("trained", "untrained") for k in range(3)]) for _ in range(len(df))]
    return df


def cases() -> list[tuple[str, object, pd.DataFrame]]:
    """(name, figure function, synthetic table) for every figure of the three studies."""
    scaling = _fixtures("scaling/test_verdicts").make_results(effect=True, n_seeds=3)
    out = [(f"scaling/{k}", fn, scaling) for k, (fn, _) in sc_figs.figures({"verdicts": {"scaling": {}}}).items()]
    for family in ("maxsubseq", "multiplication"):
        table = subgraph_table(family)
        out += [(f"subgraphs-{family}/{k}", fn, table) for k, (fn, _) in sg_figs.figures().items()]
    mod = modularity_table()
    out += [(f"modularity/{k}", fn, mod) for k, (fn, _) in mod_figs.modularity_figures().items()]
    return out


CASES = cases()
IDS = [name for name, _, _ in CASES]


@pytest.fixture
def drawn(monkeypatch):
    """Every matplotlib Figure a figure function renders, in order."""
    figs = []
    for module in (sc_figs, sg_figs, mod_figs):
        def wrapped(fig, _orig=module.to_base64):
            figs.append(fig)
            return _orig(fig)
        monkeypatch.setattr(module, "to_base64", wrapped)
    return figs


def _main_axes(fig):
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


@pytest.mark.parametrize("name, fn, df", CASES, ids=IDS)
def test_each_figure_is_a_png_follows_the_conventions_and_is_none_without_data(name, fn, df, drawn):
    b64 = fn(df)
    assert b64 is not None and base64.b64decode(b64).startswith(PNG), name
    fig = drawn[-1]
    assert fn(df.iloc[:0]) is None
    assert fn(pd.DataFrame()) is None

    # Legends outside the axes (below them), legible, not cut off.
    renderer = fig.canvas.get_renderer()
    assert all(ax.get_legend() is None for ax in fig.axes), "a legend inside the axes"
    for leg in fig.legends:
        box = leg.get_window_extent(renderer)
        assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes), "legend over an axes"
        assert all(t.get_fontsize() >= 8 for t in leg.get_texts())
        assert box.x0 >= 0 and box.x1 <= fig.bbox.width + 1
    for ax in fig.axes:  # in-axes labels (span names, line-end tags, heat-map cells) are legible too
        assert all(t.get_fontsize() >= 8 for t in ax.texts)

    # Axes labelled in words: no raw column name (r2_heldout, d_model, ...).
    labels = [lab for ax in fig.axes for lab in (ax.get_xlabel(), ax.get_ylabel()) if lab]
    assert all("_" not in lab for lab in labels), labels
    assert all(ax.get_ylabel() for ax in _main_axes(fig))
    assert any(ax.get_xlabel() for ax in _main_axes(fig))

    # Every plotted mean carries its interval: error bars, a band, bars with error bars, or heat-map
    # cells written "mean ± half-width"; the title says what they are. (The decodability scatter plots
    # single trials, not means.)
    if not name.endswith("/decodability"):
        for ax in _main_axes(fig):
            assert (any(isinstance(c, ErrorbarContainer) for c in ax.containers)
                    or any(isinstance(c, BarContainer) and c.errorbar is not None for c in ax.containers)
                    or any(isinstance(c, PolyCollection) for c in ax.collections)
                    or any("±" in t.get_text() for t in ax.texts)), name
        assert any("95% t interval" in ax.get_title() for ax in fig.axes), "the title says what the bars are"


def _texts(fig) -> str:
    return " ".join(t.get_text() for ax in fig.axes for t in ax.texts) + " " + " ".join(
        t.get_text() for leg in fig.legends for t in leg.get_texts())


@pytest.mark.parametrize("figure", ["sg_acc_by_size", "sg_acc_by_depth", "sg_coverage_by_depth", "sg_error_types"])
def test_size_and_depth_axes_mark_the_in_distribution_range(figure, drawn):
    fn = sg_figs.figures()[figure][0]
    for family in ("maxsubseq", "multiplication"):
        fn(subgraph_table(family))
        text = _texts(drawn[-1])
        if figure == "sg_acc_by_size":
            assert "in distribution" in text and "out of distribution" in text, (family, text)
        else:
            assert "deeper than any" in text and "(≤ " in text, (family, text)
    # Old records without task.id_max: the figure is drawn, without spans.
    assert fn(subgraph_table().drop(columns=["task.id_max"]))
    assert "distribution" not in _texts(drawn[-1])


def test_deepest_in_distribution_problem_follows_the_task_graphs():
    assert sg_figs.deepest_in_distribution(subgraph_table("maxsubseq")) == 6  # length 5: depth n + 1
    assert sg_figs.deepest_in_distribution(subgraph_table("multiplication")) == 5  # 2×2 digits: n + max(m, 2) + 1


def test_hull_figure_names_in_and_out_of_hull(drawn):
    df = _fixtures("scaling/test_verdicts").make_results(effect=True, n_seeds=3)
    assert sc_figs.fig_hull_vs_width(df)
    text = _texts(drawn[-1])
    assert "in hull" in text and "out of hull" in text
