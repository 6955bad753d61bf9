"""The package's text explains the code, not its history: no docstring, comment, study file or template in
``src/bindscale`` cites a tracker issue by its number (the word "issue", then the number). Such a citation
means nothing to a reader without the tracker; what the issue asked for belongs in the text as what the
code does, or why."""

import re
from pathlib import Path

import bindscale

SRC = Path(bindscale.__file__).parent
#: The word, singular or plural, any case, then a number, "#" or a line break between allowed (a wrapped docstring).
CITATION = re.compile(r"\bissues?\s*#?\s*\d+", re.IGNORECASE)
TEXT = {".py", ".pyi", ".yaml", ".yml", ".j2", ".tmpl", ".md", ".txt", ".toml", ".cfg", ".json"}


def citations(root: Path) -> list[str]:
    """``path:line: match`` for every issue number cited in a text file under ``root``."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "".join(p.suffixes[-1:]) in TEXT):
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in CITATION.finditer(text):
            found.append(f"{path.relative_to(root)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group()!r}")
    return found


def test_the_package_cites_no_issue_numbers():
    found = citations(SRC)
    assert not found, "replace each citation with what the code does or why:\n" + "\n".join(found)


def test_a_citation_is_found(tmp_path):
    word = "Issue"  # spelled apart, so that this file does not cite one itself
    (tmp_path / "m.py").write_text(f'"""Counted once ({word} 31, item 4)."""\n# see {word.lower()}\n#   12\nx = "tis{word.lower()} 3"\n')
    (tmp_path / "s.yaml").write_text("# no tracker here: issues are reported on the list\n")
    assert [c.split(": ", 1)[0] for c in citations(tmp_path)] == ["m.py:1", "m.py:2"]
