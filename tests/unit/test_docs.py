"""The README and the docs beside it stay true to the repository.

(a) README's two commands are the ones CI runs (``.ci/run``): the first installs and runs the headline study,
the second installs and runs the tests, verbatim as CI does.
(b) Every relative link in README.md, docs/*.md and each study's README.md points at a file or folder that
exists (an anchor ``#...`` is stripped; absolute ``http(s)://`` / ``mailto:`` links are not checked).
(c) README.md stays a page of one screen: at most 250 lines outside the block ``bindscale publish`` writes,
and no line over 160 characters outside it.

Each check is a function of text (or of a file and the repository root) with a synthetic case that it fails,
so that a check which cannot fail does not pass silently.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).parents[2]


def _publish_markers() -> tuple[str, str]:
    """``BEGIN`` and ``END`` as ``bindscale.report.publish`` defines them, read from its source (no import: a
    docs check should not fail on an unrelated import error)."""
    tree = ast.parse((ROOT / "src" / "bindscale" / "report" / "publish.py").read_text(encoding="utf-8"))
    found = {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name) and t.id in ("BEGIN", "END")
             and isinstance(node.value, ast.Constant)}
    return found["BEGIN"], found["END"]


BEGIN, END = _publish_markers()
README = ROOT / "README.md"
CI = ROOT / ".ci" / "run"

#: README's command 1: install, then run the headline study (``.ci/run`` runs command 2 and the slow tests).
COMMAND_1 = "python3 -m venv .venv && .venv/bin/pip install -q -c constraints.txt -e . && .venv/bin/bindscale run"
MAX_LINES = 250
MAX_WIDTH = 160


# ----------------------------------------------------------------------------- helpers


def two_commands(readme: str) -> list[str]:
    """The command lines (not comments, not blank) of the first code block under README's "Two commands"."""
    m = re.search(r"^## Two commands\s*$(.*?)(?=^## |\Z)", readme, flags=re.MULTILINE | re.DOTALL)
    assert m, 'README has no "## Two commands" section'
    block = re.search(r"^```[^\n]*\n(.*?)^```", m.group(1), flags=re.MULTILINE | re.DOTALL)
    assert block, 'README\'s "Two commands" section has no code block'
    return [ln.strip() for ln in block.group(1).splitlines() if ln.strip() and not ln.strip().startswith("#")]


def command_problems(readme: str, ci: str) -> list[str]:
    """What is wrong with README's two commands against ``.ci/run`` (empty: nothing)."""
    cmds = two_commands(readme)
    if len(cmds) != 2:
        return [f"README's Two commands block has {len(cmds)} command lines, not 2: {cmds}"]
    out = []
    if cmds[0] != COMMAND_1:
        out.append(f"README command 1 is {cmds[0]!r}, not {COMMAND_1!r}")
    ci_lines = {ln.strip() for ln in ci.splitlines()}
    if cmds[1] not in ci_lines:
        out.append(f"README command 2 {cmds[1]!r} is not a line of .ci/run")
    return out


def without_generated_block(text: str) -> str:
    """The text with the block between publish's markers (markers included) cut out."""
    if BEGIN in text and END in text:
        i, j = text.index(BEGIN), text.index(END) + len(END)
        return text[:i] + text[j:]
    return text


_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", flags=re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", flags=re.DOTALL)
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HTML = re.compile(r"""<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']+)["']""", flags=re.IGNORECASE)


def link_targets(markdown: str) -> list[str]:
    """Targets of the Markdown (and HTML ``<a>`` / ``<img>``) links of a text, code blocks and spans left out."""
    text = _CODE_SPAN.sub("", _FENCE.sub("", markdown))
    return [m.group(1) for m in _LINK.finditer(text)] + [m.group(1) for m in _HTML.finditer(text)]


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """Relative links of a Markdown file that point at nothing (anchors stripped, absolute URLs skipped)."""
    out = []
    for target in link_targets(path.read_text(encoding="utf-8")):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
            continue  # http(s)://, mailto:, …: not checked
        rel = unquote(target.split("#", 1)[0].split("?", 1)[0])
        if not rel:
            continue  # an anchor in the same page
        dest = (root / rel.lstrip("/")) if rel.startswith("/") else (path.parent / rel)
        if not dest.exists():
            out.append(f"{path.relative_to(root)}: {target}")
    return out


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md, docs/*.md (docs/answer/ is generated) and every study's README.md."""
    files = [root / "README.md", *sorted((root / "docs").glob("*.md")),
             *sorted((root / "src" / "bindscale" / "studies").glob("*/README.md"))]
    return [f for f in files if f.exists()]


def size_problems(readme: str) -> list[str]:
    """README over its size: too many lines or too wide a line, outside the generated block."""
    lines = without_generated_block(readme).splitlines()
    out = []
    if len(lines) > MAX_LINES:
        out.append(f"README.md has {len(lines)} lines outside the answer block (at most {MAX_LINES})")
    out += [f"README.md: a line of {len(ln)} characters (at most {MAX_WIDTH}): {ln[:60]}…"
            for ln in lines if len(ln) > MAX_WIDTH]
    return out


# ----------------------------------------------------------------------------- (a) the two commands


def test_readme_commands_are_the_ones_ci_runs():
    assert not command_problems(README.read_text(encoding="utf-8"), CI.read_text(encoding="utf-8"))


def test_a_changed_command_is_caught():
    ci = CI.read_text(encoding="utf-8")
    readme = README.read_text(encoding="utf-8")
    cmd2 = two_commands(readme)[1]
    changed = readme.replace(cmd2, cmd2.replace("-m pytest", "-m pytest -x"))
    assert changed != readme
    assert any("command 2" in p for p in command_problems(changed, ci))
    changed1 = readme.replace(COMMAND_1, COMMAND_1.replace("-e .", "-e '.[lm]'"))
    assert any("command 1" in p for p in command_problems(changed1, ci))
    three = readme.replace(cmd2, cmd2 + "\nbindscale run all")
    assert "not 2" in command_problems(three, ci)[0]


# ----------------------------------------------------------------------------- (b) relative links


def test_the_doc_files_are_there():
    names = {str(p.relative_to(ROOT)) for p in doc_files()}
    assert {"README.md", "docs/running.md", "docs/speed.md", "docs/new_study.md"} <= names
    studies = [p for p in (ROOT / "src" / "bindscale" / "studies").iterdir() if (p / "__init__.py").exists()]
    assert studies and all(str((s / "README.md").relative_to(ROOT)) in names for s in studies), \
        "every built-in study has a README.md"


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_something(path):
    assert not broken_links(path), "links to nothing:\n" + "\n".join(broken_links(path))


def test_a_broken_link_is_caught(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "there.md").write_text("x\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "[ok](../there.md#part) [anchor](#here) [web](https://example.org/none) ![img](../there.md)\n"
        "[broken](../missing.md) and <a href=\"gone/\">html</a>\n"
        "`[not a link](nowhere.md)`\n```\n[nor this](nowhere.md)\n```\n[root](/there.md) [rootless](/nope.md)\n")
    assert broken_links(page, tmp_path) == ["docs/page.md: ../missing.md", "docs/page.md: /nope.md",
                                            "docs/page.md: gone/"]


# ----------------------------------------------------------------------------- (c) one screen


def test_readme_is_one_screen():
    text = README.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, "README keeps the answer markers bindscale publish rewrites between"
    assert not size_problems(text), "\n".join(size_problems(text))


def test_a_long_readme_is_caught():
    text = README.read_text(encoding="utf-8")
    assert not size_problems(text)
    longer = text + "\n" * (MAX_LINES + 1)
    assert any("lines outside" in p for p in size_problems(longer))
    wide = text + "x" * (MAX_WIDTH + 1) + "\n"
    assert any("characters" in p for p in size_problems(wide))
    # the generated block does not count, however long
    i = text.index(END)
    assert not size_problems(text[:i] + ("| row |\n" * 500) + "y" * 400 + "\n" + text[i:])
