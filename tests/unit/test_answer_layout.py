"""The answer page reads top to bottom on a laptop, measured in headless Chromium.

The page is built from summaries of every built-in study's claims (18), each with the longest texts a
real run gives: the claim's own statement and definition, a reason listing missed competence gates,
a caveat, the source's headline with a long quote, and a deciding figure of the size the studies
draw (600 px wide). Then, at a 1280-px viewport (a laptop) with every <details> closed, as a reader
first sees the page:

* **page height per claim ≤ 400 px.** A 1280 × 800 laptop screen shows about 700 px of page below
  the browser's bars: at ≤ 400 px a claim, a reader sees two claims a screen, synthesis and tables
  included, and the 18 claims in about nine screens. An earlier layout took 830 px a claim
  here (15,000 px for 18; 12,000 px on a quick run); this one takes about 340 px (a row is as tall
  as its figure, so the bound leaves room for taller figures or longer reasons).
* **smallest figure ≥ 320 px wide.** The figures are drawn 600 px wide with 10-point labels; at
  ≥ 320 px (53%) their tick labels stay over 7 px tall, readable on a laptop, where the old ~190 px
  thumbnails (30%, 4 px labels) were not. Each figure also links to its PNG, full size. (The figure
  column is 27% of the table: 329 px at 1280 px; wider figures would make every row taller.)
* **no word broken inside a cell** (the old synthesis table printed "incon/clusiv/e"), at 1280 and
  1024 px, with the <details> closed and open; and no cell whose text runs over its border.

Skips without Chromium; fails instead under BINDSCALE_REQUIRE_BROWSER=1 (CI).
"""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib

import pytest

from bindscale.core import registry
from bindscale.report.answer import build_answer
from bindscale.report.browser import assert_fits, layout_by_width, require_browser

WIDTH = 1280
#: The deciding figures' sizes as the studies draw them (pixels); the others are 600 x 400-460.
FIGURE_SIZE = {"mod_scores": (600, 610), "geo_best_layer": (600, 442), "heldout_vs_width": (600, 442)}
MAX_HEIGHT_PER_CLAIM = 400
MIN_FIGURE_WIDTH = 320


def png(width: int, height: int) -> bytes:
    """A plain PNG of the given size (no matplotlib needed)."""
    raw = b"".join(b"\x00" + bytes([235, 240, 250]) * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


LONG_REASON = ("the deciding models did not learn their training task (a claim is decided only by models that "
               "did): split addprim_jump, budget 20000, layers 2, pos rope: in-distribution exact match (held-out "
               "commands of the split's training distribution) 0 < 0.95; split length, budget 20000, layers 1, pos "
               "rope: in-distribution exact match 0.00667 < 0.95; id_minus_ood_acc_largest_model undefined")
GATE = {"metric": "id_acc", "what": "in-distribution exact match (held-out commands of the split's training "
        "distribution)", "level": 0.95, "higher": True, "source": "Lake & Baroni 2018's models, near 100%",
        "cells": {"split addprim_jump, budget 20000, layers 2, pos rope": 0.0,
                  "split length, budget 20000, layers 1, pos rope": 0.00667},
        "missed": ["split addprim_jump, budget 20000, layers 2, pos rope"], "says": "in-distribution exact match ≥ 0.95"}


def _run_dir(tmp_path):
    """A `run all` directory with every built-in study's summary and deciding figures."""
    n = 0
    for name in registry.run_order():
        plugin = registry.builtin()[name]
        verdicts = []
        for c in plugin.claims:
            verdict = ("inconclusive", "supported", "not_supported")[n % 3]
            n += 1
            verdicts.append({
                "claim": c.name, "verdict": verdict, "statistic": f"{c.name}_statistic_{name}",
                "value": 0.0294, "ci_low": 0.022, "ci_high": 0.14, "n_trials": 18, "title": c.title,
                "statement": c.statement, "statistic_text": c.statistic, "source": c.source, "side": c.side,
                "details": {"seeds_per_cell": 8, "reason": LONG_REASON, "gates": [GATE],
                            "caveat": "3 seeds per cell: intervals wide, " * 4},
            })
            figs = tmp_path / name / "figures"
            figs.mkdir(parents=True, exist_ok=True)
            for f in c.figures[:1]:
                (figs / f"{f}.png").write_bytes(png(*FIGURE_SIZE.get(f, (600, 460))))
        (tmp_path / name / "summary.json").write_text(json.dumps({
            "study": name, "verdicts": verdicts, "n_trials": 18, "n_ok": 18, "n_failed": 0, "n_diverged": 0,
            "quick": True, "n_planned": 18, "n_missing": 0}))
    return tmp_path


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The page, with every claim's real source headline, relation and rule (answer.collect)."""
    root = _run_dir(tmp_path_factory.mktemp("answer"))
    data = build_answer(root)
    return root / "answer.html", data


def test_the_answer_page_fits_a_laptop(page):
    require_browser()
    path, data = page
    got = layout_by_width([path], (WIDTH, 1024))
    at = got[(str(path), WIDTH)]
    assert at["rows"] == len(data["claims"]) >= 18
    per_claim = at["height"] / at["rows"]
    assert per_claim <= MAX_HEIGHT_PER_CLAIM, f"{per_claim:.0f} px of page per claim at {WIDTH} px"
    assert len(at["figures"]) == len(data["claims"])
    assert min(at["figures"]) >= MIN_FIGURE_WIDTH, f"smallest figure {min(at['figures'])} px wide"
    for width in (WIDTH, 1024):
        assert got[(str(path), width)]["broken"] == [], f"words broken inside a cell at {width} px"
        assert got[(str(path), width)]["spills"] == [], f"cells overflowing at {width} px"
    assert_fits([path], widths=(1024, 800))


def test_figures_open_full_size_and_definitions_stay_out_of_the_cells(page):
    path, data = page
    html = path.read_text(encoding="utf-8")
    for c in data["claims"]:
        assert f'<a href="{c["figure"]}" title="open the figure full size"><img' in html
    # the statistic's definition (the row's rule) and the long texts are one click away (<details>), never in a
    # cell's text; the source's headline and the relation word sit beside bindscale's number
    visible = re.sub(r"<details.*?</details>", "", html, flags=re.S).replace("<wbr>", "")
    for c in data["claims"]:
        assert c["rule"] and c["rule"][:60] not in visible
        assert c["anchor"] and c["relation"]["word"]
    assert visible.count('<div class="line">source: ') == len(data["claims"])
    # the measure and the scale apart, on every row; the one word only where its rule applies (same measure,
    # within 10x), never "not comparable" or "different scale", which the measure and scale say better
    for c in data["claims"]:
        assert c["distance"]["text"] and c["distance"]["text"].replace("'", "&#39;")[:40] in visible
    decided = [c for c in data["claims"] if c["relation"]["word"] in ("reproduced", "contradicted")]
    assert visible.count('<span class="relation" title="') == len(decided)
    assert 'bindscale: <span class="nowrap">0.0294 [0.0220, 0.140]</span>' in visible
    assert "not comparable</span>" not in visible  # quick runs: smoke tests never reproduce or contradict
    assert data["relation_rule"][:50].replace("'", "&#39;") in html


def test_the_synthesis_names_every_side_with_its_claims(page):
    path, data = page
    html = path.read_text(encoding="utf-8").replace("<wbr>", "")
    for side in ("scale_suffices", "binding_needed", "where_scale_stops"):
        block = html[html.index(f'id="side-{side}"'):]
        block = block[:block.index("</section>")]
        for c in data["claims"]:
            if c["side"] == side:
                assert f'href="#{c["claim"]}"' in block and "smoke test: " in block


def test_partial_anchors_and_a_plain_relation_word_render(tmp_path, monkeypatch):
    """Rows whose anchor lacks most keys (a source with no number: its sentence), whose relation is a bare word,
    or that have none: the page is written and says what it has."""
    import bindscale.report.answer as answer

    (tmp_path / "scaling").mkdir()
    verdicts = [{"claim": c, "verdict": "supported", "statistic": "s", "value": 0.5, "ci_low": 0.4, "ci_high": 0.6,
                 "n_trials": 8, "details": {}} for c in ("scaling", "binding", "hull")]
    (tmp_path / "scaling" / "summary.json").write_text(json.dumps({"study": "scaling", "verdicts": verdicts}))
    real = answer.collect

    def rows(run_dir):
        data = real(run_dir)
        extra = {"scaling": {"anchor": {"quote": "scaling can lead to compositional generalization"},
                             "relation": "not comparable"},
                 "binding": {"anchor": {"number": 2, "unit": "x fewer parameters"}, "relation": {"word": "reproduced"}}}
        for c in data["claims"]:
            c.update(extra.get(c["claim"], {}))
        return data

    monkeypatch.setattr(answer, "collect", rows)
    build_answer(tmp_path)
    html = (tmp_path / "answer.html").read_text(encoding="utf-8").replace("<wbr>", "")
    assert "source: no number: “scaling can lead to compositional generalization”" in html
    html_file = html
    assert ">reproduced</span>" in html_file  # the word where its rule applies
    assert "another measure (s) than the source" in html
    assert "source: 2 x fewer parameters" in html


def test_the_layout_check_finds_a_word_broken_inside_a_cell(tmp_path):
    """The measuring script itself: "incon/clusiv/e" in a narrow cell is a broken word; breaks at <wbr>, at a
    hyphen or between words are not; a cell whose text runs over its border is a spill."""
    require_browser()
    page = tmp_path / "p.html"
    page.write_text(
        '<!DOCTYPE html><html><body><table class="claims" style="table-layout:fixed;width:220px">'
        '<tr id="a"><td style="width:60px;overflow-wrap:anywhere">inconclusive</td>'
        '<td style="width:100px">length_<wbr>transfer_<wbr>exists in-distribution held-out</td>'
        '<td style="width:60px;white-space:nowrap">0.0294 [0.0220, 0.140]</td></tr></table>'
        f'<img style="width:123px" src="data:image/png;base64,{base64.b64encode(png(20, 10)).decode()}">'
        '</body></html>', encoding="utf-8")
    got = layout_by_width([page], (800,))[(str(page), 800)]
    assert got["broken"] == ["inconclusive"] and got["rows"] == 1 and got["figures"] == [123]
    assert len(got["spills"]) == 1 and got["spills"][0].startswith("0.0294")
