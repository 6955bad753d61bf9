"""Does a report fit the page? Lay it out in headless Chromium and list what sticks out.

``overflowing_elements(html_path, width=1024)`` answers for one page and one
viewport width; ``overflow_by_width(paths, widths)`` for several at the cost of
one Chromium start (a few seconds each on a loaded machine). How:

1. Each page gets a small script appended. A frame page, written to a
   temporary directory, holds one ``<iframe srcdoc=…>`` per (page, width),
   exactly ``width`` pixels wide, so each copy lays out in a viewport of that
   width (srcdoc frames share the frame page's origin).
2. ``chromium --headless --dump-dom`` loads the frame page (no network, a
   throwaway profile). On each copy's ``load`` event (images decoded, so figures
   have their size) the script opens every ``<details>`` (folded content is
   measured too) and collects

   * the document, when ``documentElement.scrollWidth > clientWidth`` (the page
     would scroll sideways), and
   * every element and every text run whose right edge lies past
     ``documentElement.clientWidth``, unless a box between it and ``<body>``
     clips or scrolls it (``overflow-x`` auto, scroll, hidden or clip: a table in
     its own scroll box is fine; the box itself is measured).

   Only the outermost overflowing element of a chain is listed (a too-wide
   table, not also each of its rows), with the widest overflowing text beneath
   it as the likely culprit. The copy writes its list, synchronously, into the
   frame page's ``<pre id="overflow-result">`` (JSON keyed by frame).
3. Chromium prints the DOM after the frame page's ``load`` event, which waits
   for every frame's own ``load``; the result is parsed from that dump. A frame
   that reported nothing is an error, never a pass.

No Playwright or Selenium: Debian's ``chromium`` package is enough.
``BrowserMissing`` is raised when no Chromium is found.
"""

from __future__ import annotations

import html as _html
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["BrowserMissing", "CHROMIUM_FLAGS", "assert_fits", "find_chromium", "layout_by_width", "overflow_by_width",
           "overflowing_elements", "require_browser"]

#: Flags for a quiet, offline, throwaway headless Chromium. Without the
#: background-networking ones it tries to reach Google at start.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
]
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
RESULT_ID = "overflow-result"
FRAME_HEIGHT = 768

# Appended to each page copy. Runs on `load`; window.name is the frame's key.
_CHECKER = r"""
<script>
window.addEventListener("load", function () {
  var out = [];
  try {
    document.querySelectorAll("details").forEach(function (d) { d.open = true; });
    var doc = document.documentElement, limit = doc.clientWidth, body = document.body, TOL = 0.5;
    if (doc.scrollWidth > limit) {
      out.push({what: "document", right: doc.scrollWidth, limit: limit,
                text: "the page scrolls sideways (scrollWidth " + doc.scrollWidth + " > " + limit + ")"});
    }
    function clips(el) {  // a box that scrolls or clips horizontally (<body> and <html> do not count)
      if (el === body || el === doc) return false;
      var o = getComputedStyle(el).overflowX;
      return o === "auto" || o === "scroll" || o === "hidden" || o === "clip";
    }
    function clipped(el) {  // inside such a box
      for (var a = el.parentElement; a && a !== body && a !== doc; a = a.parentElement) if (clips(a)) return true;
      return false;
    }
    function name(el) {
      var s = el.tagName.toLowerCase();
      if (el.id) s += "#" + el.id;
      if (typeof el.className === "string" && el.className.trim())
        s += "." + el.className.trim().split(/\s+/).join(".");
      return s;
    }
    function path(el) {
      var parts = [];
      for (var a = el; a && a !== body && a !== doc; a = a.parentElement) parts.unshift(name(a));
      return parts.join(" > ");
    }
    var over = new Set(), widest = new Map();
    body.querySelectorAll("*").forEach(function (el) {
      if (el.tagName === "SCRIPT") return;
      var r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) return;
      if (r.right > limit + TOL && !clipped(el)) over.add(el);
    });
    // Text spilling out of a box that is itself narrow enough: measure each text run.
    var walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT), range = document.createRange();
    for (var t = walker.nextNode(); t; t = walker.nextNode()) {
      var el = t.parentElement;
      if (!el || !t.data.trim() || el.tagName === "SCRIPT") continue;
      range.selectNodeContents(t);
      var rr = range.getBoundingClientRect();
      if (rr.right > limit + TOL && !clips(el) && !clipped(el)) {
        over.add(el);
        var prev = widest.get(el);
        if (!prev || rr.width > prev.width)
          widest.set(el, {right: rr.right, width: rr.width, text: t.data.trim().slice(0, 80)});
      }
    }
    over.forEach(function (el) {
      for (var a = el.parentElement; a && a !== body; a = a.parentElement) if (over.has(a)) return;  // outermost only
      var right = el.getBoundingClientRect().right, text = "", best = -Infinity;
      over.forEach(function (d) {  // the widest overflowing text run beneath it names the likely culprit
        var w = widest.get(d);
        if (w && el.contains(d)) { right = Math.max(right, w.right); if (w.width > best) { best = w.width; text = w.text; } }
      });
      if (!text) text = (el.textContent || "").trim().replace(/\s+/g, " ").slice(0, 80);
      out.push({what: path(el), right: Math.round(right), limit: limit, text: text});
    });
  } catch (e) {
    out = [{what: "checker error", right: 0, limit: 0, text: String(e)}];
  }
  // Same origin (srcdoc): write into the frame page now, inside this load event, which the
  // frame page's own load event (after which Chromium dumps the DOM) waits for.
  var pre = window.parent.document.getElementById("overflow-result");
  var got = JSON.parse(pre.textContent || "{}");
  got[window.name] = out;
  pre.textContent = JSON.stringify(got);
});
</script>
"""

# Appended to each page copy by layout_by_width: measures the page as a reader first sees it.
_MEASURE = r"""
<script>
window.addEventListener("load", function () {
  var out;
  try {
    var doc = document.documentElement, body = document.body;
    function broken() {  // words split over two lines inside table cells and list items
      var found = [], range = document.createRange();
      var walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT);
      for (var t = walker.nextNode(); t; t = walker.nextNode()) {
        var el = t.parentElement;
        if (!el || !el.closest("td, th, li") || el.closest("script, style")) continue;
        if (!el.getClientRects().length) continue;  // not rendered (a closed <details>)
        // A word: letters and digits, with inner . , ' (0.0294, don't); a line may break at anything else
        // (a space, hyphen, slash, bracket, operator, or a <wbr>, which splits the text node).
        var re = /[\p{L}\p{N}]+(?:[.,'\u2019][\p{L}\p{N}]+)*/gu, m;
        while ((m = re.exec(t.data)) !== null) {
          range.setStart(t, m.index); range.setEnd(t, m.index + m[0].length);
          var rects = Array.prototype.filter.call(range.getClientRects(), function (r) { return r.width > 0; });
          var tops = new Set(rects.map(function (r) { return Math.round(r.top); }));
          if (tops.size > 1) found.push(m[0]);
        }
      }
      return found;
    }
    var closed = broken();
    var height = doc.scrollHeight;
    var figures = Array.prototype.map.call(document.querySelectorAll("img"), function (i) {
      return Math.round(i.getBoundingClientRect().width); });
    var rows = document.querySelectorAll("table.claims tr[id]").length;
    var spills = [];
    document.querySelectorAll("td, th").forEach(function (c) {
      if (c.scrollWidth > c.clientWidth + 1) spills.push((c.textContent || "").trim().replace(/\s+/g, " ").slice(0, 60));
    });
    document.querySelectorAll("details").forEach(function (d) { d.open = true; });
    var opened = broken();
    out = {height: height, rows: rows, figures: figures, spills: spills,
           broken: Array.from(new Set(closed.concat(opened)))};
  } catch (e) {
    out = {error: String(e)};
  }
  var pre = window.parent.document.getElementById("overflow-result");
  var got = JSON.parse(pre.textContent || "{}");
  got[window.name] = out;
  pre.textContent = JSON.stringify(got);
});
</script>
"""

# The frame page: one same-origin (srcdoc) frame per page and width; each writes its list into #overflow-result.
_FRAMES = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>
  body {{ margin: 0; }} iframe {{ position: absolute; top: 0; left: 0; border: 0; height: {height}px; }}
</style></head><body>
<pre id="{result_id}"></pre>
{frames}
</body></html>
"""


class BrowserMissing(RuntimeError):
    """No Chromium to lay the page out with."""


def find_chromium() -> str | None:
    """Path of a Chromium binary: ``$BINDSCALE_CHROMIUM``, else the first of CANDIDATES on PATH."""
    env = os.environ.get("BINDSCALE_CHROMIUM")
    if env:
        return shutil.which(env) or (env if Path(env).is_file() else None)
    for c in CANDIDATES:
        found = shutil.which(c)
        if found:
            return found
    return None


def _with_checker(page: str, script: str = _CHECKER) -> str:
    i = page.lower().rfind("</body>")
    return page[:i] + script + page[i:] if i >= 0 else page + script


def _describe(f: dict) -> str:
    return f"{f['what']}: right edge {f['right']}px > {f['limit']}px" + (f": {f['text']!r}" if f.get("text") else "")


def _run_frames(html_paths: Sequence[str | os.PathLike], widths: Sequence[int], script: str,
                timeout: float) -> dict[tuple[str, int], object]:
    """Lay out every page at every width in one Chromium start with ``script`` appended to each copy;
    ``{(str(path), width): what the script wrote for that copy}`` (parsed JSON)."""
    exe = find_chromium()
    if exe is None:
        raise BrowserMissing("no Chromium found to check the report's layout: install Debian's 'chromium' "
                             "package (apt-get install -y chromium) or set BINDSCALE_CHROMIUM to its path")
    paths = [str(p) for p in html_paths]
    frames = [(f"p{i}w{int(w)}", i, int(w)) for i in range(len(paths)) for w in widths]
    keys = {k: (paths[i], w) for k, i, w in frames}
    pages = [_html.escape(_with_checker(Path(p).read_text(encoding="utf-8"), script), quote=True) for p in paths]
    tags = "\n".join(f'<iframe name="{k}" style="width:{w}px" srcdoc="{pages[i]}"></iframe>' for k, i, w in frames)
    with tempfile.TemporaryDirectory(prefix="bindscale-browser-") as tmp:
        root = Path(tmp)
        index = root / "index.html"
        index.write_text(_FRAMES.format(height=FRAME_HEIGHT, frames=tags, result_id=RESULT_ID), encoding="utf-8")
        cmd = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={root / 'profile'}",
               f"--window-size={max(int(w) for w in widths)},{FRAME_HEIGHT}",
               "--virtual-time-budget=30000", "--dump-dom", index.as_uri()]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  env={**os.environ, "HOME": tmp})
        except subprocess.TimeoutExpired as e:
            raise RuntimeError(f"Chromium did not finish laying out {len(paths)} page(s) within {timeout:g} s") from e
    m = re.search(rf'<pre id="{RESULT_ID}"[^>]*>(.*?)</pre>', proc.stdout, re.S)
    if m is None:
        tail = " | ".join((proc.stderr or "").strip().splitlines()[-5:])
        raise RuntimeError(f"Chromium (exit {proc.returncode}) returned no layout result for {paths}"
                           + (f": {tail}" if tail else ""))
    got = json.loads(_html.unescape(m.group(1)))
    out: dict[tuple[str, int], object] = {}
    for k, where in keys.items():
        if k not in got:
            raise RuntimeError(f"Chromium laid out no result for {where[0]} at {where[1]}px")
        out[where] = got[k]
    return out


def overflow_by_width(html_paths: Sequence[str | os.PathLike], widths: Sequence[int] = (1024, 800),
                      timeout: float = 180.0) -> dict[tuple[str, int], list[str]]:
    """``{(str(path), width): overflow lines}`` for every page at every viewport width, from one
    Chromium start. An empty list means that page fits at that width.

    Raises ``BrowserMissing`` when no Chromium is installed, ``RuntimeError`` when Chromium fails,
    times out or leaves a page unreported, or the checker script fails (never a silent pass).
    """
    out: dict[tuple[str, int], list[str]] = {}
    for where, found in _run_frames(html_paths, widths, _CHECKER, timeout).items():
        if any(f["what"] == "checker error" for f in found):
            raise RuntimeError(f"the overflow script failed in {where[0]} at {where[1]}px: {found[0]['text']}")
        out[where] = [_describe(f) for f in found]
    return out


def layout_by_width(html_paths: Sequence[str | os.PathLike], widths: Sequence[int] = (1280,),
                    timeout: float = 180.0) -> dict[tuple[str, int], dict]:
    """How each page reads at each viewport width, as a reader first sees it (every ``<details>`` closed),
    from one Chromium start: ``{(str(path), width): {"height", "rows", "figures", "broken", "spills"}}``.

    * ``height``: the document's height in pixels (``scrollHeight``);
    * ``rows``: how many rows with an ``id`` the table ``table.claims`` has (one per claim on the answer page);
    * ``figures``: the rendered width in pixels of every ``<img>``;
    * ``broken``: words broken across two lines inside a table cell or list item (``"incon|clusiv|e"``),
      checked with every ``<details>`` closed and again open. A word is a run of letters and digits
      (with inner ``.``, ``,`` or ``'``): a break at a space, hyphen, slash, bracket or ``<wbr>`` breaks none;
    * ``spills``: cells whose content is wider than the cell (text running over its border).

    Raises as :func:`overflow_by_width`.
    """
    out = {}
    for where, got in _run_frames(html_paths, widths, _MEASURE, timeout).items():
        if isinstance(got, dict) and "error" in got:
            raise RuntimeError(f"the layout script failed in {where[0]} at {where[1]}px: {got['error']}")
        out[where] = got
    return out


def overflowing_elements(html_path: str | os.PathLike, width: int = 1024) -> list[str]:
    """What is wider than a ``width``-pixel viewport in the page at ``html_path``: one line per
    outermost overflowing element (``"div > table.configs: right edge 1530px > 1024px: 'n_params'"``),
    plus a line for the document when the page scrolls sideways. ``[]`` when everything fits.
    Raises as ``overflow_by_width``."""
    return overflow_by_width([html_path], [width])[(str(html_path), int(width))]


# ------------------------------------------------------------ test helpers --

MISSING = ("no Chromium installed: the layout check needs it (apt-get install -y chromium; "
           "BINDSCALE_REQUIRE_BROWSER=1 makes this a failure)")


def require_browser(skip: bool = True) -> str | None:
    """For tests: the Chromium path. Without one the test fails under ``BINDSCALE_REQUIRE_BROWSER=1``
    (CI), else it is skipped (``skip=True``) or goes on with a warning and ``None`` (``skip=False``)."""
    import warnings

    import pytest

    exe = find_chromium()
    if exe is None:
        if os.environ.get("BINDSCALE_REQUIRE_BROWSER") == "1":
            pytest.fail("BINDSCALE_REQUIRE_BROWSER=1 but no Chromium is installed (apt-get install -y chromium)")
        if skip:
            pytest.skip(MISSING)
        warnings.warn(MISSING, stacklevel=3)
    return exe


def assert_fits(html_paths: str | os.PathLike | Sequence[str | os.PathLike],
                widths: Sequence[int] = (1024, 800), skip_if_missing: bool = True) -> None:
    """For tests: fail when anything in the page(s) is wider than a viewport of each width.
    Without Chromium: fail under ``BINDSCALE_REQUIRE_BROWSER=1``; else skip the test, or, with
    ``skip_if_missing=False`` (a check at the end of a longer test), warn and return."""
    if require_browser(skip=skip_if_missing) is None:
        return
    paths = [html_paths] if isinstance(html_paths, (str, os.PathLike)) else list(html_paths)
    bad = {k: v for k, v in overflow_by_width(paths, widths).items() if v}
    assert not bad, "report wider than the viewport:\n" + "\n".join(
        f"{path} at {w}px: " + "; ".join(lines) for (path, w), lines in bad.items())
