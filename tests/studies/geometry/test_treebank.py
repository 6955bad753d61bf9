"""CoNLL-U reading and writing, tree validation, and the synthetic grammar's splits (geometry study)."""

import pytest

from bindscale.studies.geometry.grammar import RELATIONS, GrammarConfig, make_splits, sample_sentences, vocabulary
from bindscale.studies.geometry.probes import tree_distances
from bindscale.studies.geometry.treebank import Sentence, TreebankError, read_conllu, validate_heads, write_conllu

GOOD = """# sent_id = a1
# text = The cat's toy fell .
1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_
2-3\tcat's\t_\t_\t_\t_\t_\t_\t_\t_
2\tcat\tcat\tNOUN\t_\t_\t4\tnmod:poss\t_\t_
3\t's\t's\tPART\t_\t_\t2\tcase\t_\t_
4\ttoy\ttoy\tNOUN\t_\t_\t5\tnsubj\t_\t_
4.1\tghost\t_\t_\t_\t_\t_\t_\t_\t_
5\tfell\tfall\tVERB\t_\t_\t0\troot\t_\t_
6\t.\t.\tPUNCT\t_\t_\t5\tpunct\t_\t_

# sent_id = np1
1\tA\ta\tDET\t_\t_\t2\tdet\t_\t_
2\thearing\thearing\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tis\tbe\tAUX\t_\t_\t0\troot\t_\t_
4\tscheduled\tschedule\tVERB\t_\t_\t3\txcomp\t_\t_
5\ton\ton\tADP\t_\t_\t6\tcase\t_\t_
6\tissue\tissue\tNOUN\t_\t_\t2\tnmod\t_\t_
"""


def _write(tmp_path, text, name="t.conllu"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_read_skips_multiword_tokens_and_empty_nodes_and_strips_subtypes(tmp_path):
    s1, s2 = read_conllu(_write(tmp_path, GOOD))
    assert s1.sent_id == "a1" and s1.words == ("The", "cat", "'s", "toy", "fell", ".")
    assert s1.heads == (2, 4, 2, 5, 0, 5)
    assert s1.deprels == ("det", "nmod", "case", "nsubj", "root", "punct")
    assert s1.upos[-1] == "PUNCT"
    # non-projective: 'issue' (6) hangs on 'hearing' (2), crossing the arc is -> scheduled
    assert s2.heads == (2, 3, 0, 3, 6, 2)
    d = tree_distances(s2.heads)
    assert d[5, 1] == 1 and d[5, 3] == 3 and d[0, 4] == 3


def test_write_then_read_round_trips(tmp_path):
    sents = read_conllu(_write(tmp_path, GOOD))
    out = tmp_path / "back.conllu"
    write_conllu(sents, out)
    assert read_conllu(out) == sents


@pytest.mark.parametrize("line, fragment", [
    ("3\tsat\tsit\tVERB\t_\t_\t3\troot\t_\t_", "word 3 is its own head"),
    ("3\tsat\tsit\tVERB\t_\t_\t1\tacl\t_\t_", "cycle"),
    ("3\tsat\tsit\tVERB\t_\t_\t_\troot\t_\t_", "has no head"),
    ("3\tsat\tsit\tVERB\t_\t_\t0\troot\t_", "9 tab-separated columns, CoNLL-U needs 10"),
    ("3\tsat\tsit\tVERB\t_\t_\t7\troot\t_\t_", "head 7, outside 0..4"),
])
def test_malformed_sentences_give_one_line_naming_file_sentence_and_line(tmp_path, line, fragment):
    text = ("# sent_id = ok\n1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\t_\n\n# sent_id = bad7\n"
            "1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_\n2\tcat\tcat\tNOUN\t_\t_\t3\tnsubj\t_\t_\n"
            f"{line}\n4\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_\n")
    path = _write(tmp_path, text)
    with pytest.raises(TreebankError) as err:
        read_conllu(path)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{path}: sentence bad7 (line ") and fragment in msg


def test_two_roots_and_unnamed_sentences(tmp_path):
    text = "1\tA\ta\tX\t_\t_\t0\troot\t_\t_\n2\tB\tb\tX\t_\t_\t0\troot\t_\t_\n"
    with pytest.raises(TreebankError, match=r"sentence t-1 \(line 1\): 2 root words"):
        read_conllu(_write(tmp_path, text))
    assert validate_heads([2, 0, 2]) is None and "no words" in validate_heads([])


def test_write_refuses_a_non_tree(tmp_path):
    with pytest.raises(ValueError, match="sentence x: the heads form a cycle"):
        write_conllu([Sentence("x", ("a", "b", "c"), (2, 3, 2), ("d", "d", "d"), ("X",) * 3)], tmp_path / "o")


def test_grammar_sentences_are_trees_with_at_least_eight_relations():
    sents = sample_sentences(3, "train", 300)
    rels = {r for s in sents for r in s.deprels}
    assert len(rels - {"root"}) >= 8 and rels - {"root"} <= set(RELATIONS)
    assert all(validate_heads(s.heads) is None for s in sents)
    assert all(len(s) <= GrammarConfig().max_words for s in sents)
    assert {w for s in sents for w in s.words} <= set(vocabulary())
    assert max(tree_distances(s.heads).max() for s in sents) >= 6  # recursion gives depth


def test_splits_are_disjoint_deterministic_and_from_separate_streams():
    a = make_splits(5, 400, 100, 50, 50)
    b = make_splits(5, 400, 100, 50, 50)
    assert a == b
    sets = {k: {s.words for s in v} for k, v in a.items()}
    assert [len(v) for v in sets.values()] == [400, 100, 50, 50]  # distinct within each set
    names = list(sets)
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            assert not sets[x] & sets[y], (x, y)
    # the dev set does not depend on how many LM sentences were drawn (its own stream) except for exclusions
    c = make_splits(5, 10, 100, 50, 50)
    assert sum(s.words in sets["dev"] for s in c["dev"]) >= 45
    assert make_splits(6, 10, 10, 10, 10)["test"] != a["test"][:10]
