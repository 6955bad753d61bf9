"""SCAN from its grammar (Lake & Baroni 2018; :mod:`bindscale.train.scan`, the kit's ``scan``, shared by the
SCAN studies): counts, hand-worked commands, splits, official files, loaders."""

import collections
import gzip
from pathlib import Path

import pytest

from bindscale.core.errors import ConfigError
from bindscale.kit import scan

OFFICIAL = Path(__file__).resolve().parents[4] / "shared" / "data" / "scan"
L, R = "I_TURN_LEFT", "I_TURN_RIGHT"

HAND = {
    "jump": ["I_JUMP"],
    "turn left": [L],
    "jump left": [L, "I_JUMP"],
    "walk right twice": [R, "I_WALK", R, "I_WALK"],
    "run opposite left": [L, L, "I_RUN"],
    "turn opposite right": [R, R],
    "look around right": [R, "I_LOOK"] * 4,
    "turn around left": [L] * 4,
    "jump around left twice": [L, "I_JUMP"] * 8,
    "turn opposite right thrice after walk": ["I_WALK"] + [R, R] * 3,
    "walk and look": ["I_WALK", "I_LOOK"],
    "walk after look": ["I_LOOK", "I_WALK"],
    "run twice and jump opposite left thrice": ["I_RUN", "I_RUN"] + [L, L, "I_JUMP"] * 3,
    "turn left after turn right thrice": [R, R, R, L],
    "look around right thrice and turn around left twice": [R, "I_LOOK"] * 12 + [L] * 8,
}


def test_the_grammar_yields_20910_distinct_commands_with_1_to_48_actions():
    pairs = scan.generate()
    assert len(pairs) == scan.N_COMMANDS == 20_910
    assert len({p.src for p in pairs}) == 20_910
    lengths = collections.Counter(len(p.tgt) for p in pairs)
    assert min(lengths) == 1 and max(lengths) == 48 and 23 not in lengths
    vocab = {t for p in pairs for t in p.src}
    assert vocab == {"walk", "look", "run", "jump", "turn", "left", "right", "opposite", "around", "twice",
                     "thrice", "and", "after"}


@pytest.mark.parametrize("command", sorted(HAND))
def test_hand_worked_commands(command):
    assert list(scan.interpret(command)) == HAND[command]


@pytest.mark.parametrize("bad", ["walk twice twice", "left walk", "jump around", "turn", "walk and"])
def test_a_string_outside_the_grammar_is_refused(bad):
    with pytest.raises(ValueError, match="not a SCAN command"):
        scan.interpret(bad)


def _has(src, phrase):
    return " ".join(phrase) in " ".join(src) and any(src[i:i + len(phrase)] == phrase for i in range(len(src)))


def test_split_definitions():
    every = {p.src for p in scan.generate()}
    train, test = scan.make_split("simple", seed=3)
    assert len(test) == round(0.2 * 20_910) and {p.src for p in train} | {p.src for p in test} == every
    assert scan.make_split("simple", seed=3) == (train, test) and scan.make_split("simple", seed=4) != (train, test)

    train, test = scan.make_split("length")
    assert all(len(p.tgt) <= 22 for p in train) and all(len(p.tgt) >= 24 for p in test)
    assert len(train) + len(test) == 20_910

    for name, prim in (("addprim_jump", ("jump",)), ("addprim_turn_left", ("turn", "left"))):
        train, test = scan.make_split(name)
        assert all(_has(p.src, prim) and p.src != prim for p in test)
        alone = [p for p in train if p.src == prim]
        assert all(not _has(p.src, prim) for p in train if p.src != prim)
        assert len(alone) / len(train) == pytest.approx(scan.PRIMITIVE_SHARE, abs=1e-3)
        assert {p.src for p in train} | {p.src for p in test} == every
    assert len(scan.make_split("addprim_turn_left")[1]) == 1208 and len(scan.make_split("addprim_jump")[1]) == 7706
    assert [len(x) for x in scan.make_split("addprim_jump")] == [14_670, 7_706]  # the official files' sizes
    assert [len(x) for x in scan.make_split("length")] == [16_990, 3_920]

    train, test = scan.make_split("around_right")
    assert all(_has(p.src, ("around", "right")) for p in test)
    assert not any(_has(p.src, ("around", "right")) for p in train)
    assert any(_has(p.src, ("around", "left")) for p in train) and any(_has(p.src, ("opposite", "right")) for p in train)
    assert len(test) == 5685 and len(train) == 15_225
    for name in scan.SPLITS:
        train, test = scan.make_split(name)
        assert not {p.src for p in train} & {p.src for p in test}, name
    with pytest.raises(ValueError, match="unknown SCAN split"):
        scan.make_split("mcd1")


def _official(name):
    with gzip.open(OFFICIAL / name, "rt") as f:
        return collections.Counter(line.strip() for line in f if line.strip())


@pytest.mark.skipif(not OFFICIAL.is_dir(), reason="official SCAN files not present")
def test_generated_set_and_splits_equal_the_official_files():
    assert collections.Counter(p.line() for p in scan.generate()) == _official("tasks.txt.gz")
    for split, stem in (("length", "length"), ("addprim_jump", "addprim_jump")):
        train, test = scan.make_split(split)
        assert collections.Counter(p.line() for p in train) == _official(f"tasks_train_{stem}.txt.gz"), split
        assert collections.Counter(p.line() for p in test) == _official(f"tasks_test_{stem}.txt.gz"), split


def test_loaders_read_scan_and_cogs_files(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("IN: jump twice OUT: I_JUMP I_JUMP\n\nIN: walk left OUT: I_TURN_LEFT I_WALK\n")
    assert scan.load_pairs(f) == [scan.Pair(("jump", "twice"), ("I_JUMP", "I_JUMP")),
                                  scan.Pair(("walk", "left"), ("I_TURN_LEFT", "I_WALK"))]
    gz = tmp_path / "a.txt.gz"
    with gzip.open(gz, "wt") as g:
        g.write(f.read_text())
    assert scan.load_pairs(gz) == scan.load_pairs(f)
    c = tmp_path / "c.tsv"
    c.write_text("A cat smiled .\t* cat ( x _ 1 ) ; smile . agent ( x _ 2 , x _ 1 )\tin_distribution\n"
                 "Emma ran .\trun . agent ( x _ 1 , Emma )\n")
    pairs = scan.load_pairs(c)
    assert pairs[0].src == ("A", "cat", "smiled", ".") and pairs[0].tgt[:3] == ("*", "cat", "(")
    assert pairs[1].tgt[-1] == ")" and scan.load_pairs(c, "cogs") == pairs


@pytest.mark.parametrize("text, fmt, where", [
    ("IN: jump OUT: I_JUMP\nIN: walk I_WALK\n", "auto", "line 2"),
    ("IN: jump OUT: I_JUMP\nIN:  OUT: I_WALK\n", "auto", "line 2"),
    ("a b\tx y\nonly one field\n", "auto", "line 2"),
    ("a b\tx y\tz\tw\n", "cogs", "line 1"),
    ("hello world\n", "auto", "line 1"),
])
def test_a_malformed_file_is_one_line_naming_file_and_line(tmp_path, text, fmt, where):
    f = tmp_path / "bad.txt"
    f.write_text(text)
    with pytest.raises(ConfigError) as err:
        scan.load_pairs(f, fmt)
    msg = str(err.value)
    assert "\n" not in msg and str(f) in msg and where in msg


def test_missing_and_empty_files_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        scan.load_pairs(tmp_path / "nope.txt")
    (tmp_path / "e.txt").write_text("\n\n")
    with pytest.raises(ConfigError, match="no examples"):
        scan.load_pairs(tmp_path / "e.txt")
