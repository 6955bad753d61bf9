"""A probabilistic grammar of English-like sentences with labelled dependency trees (the synthetic treebank).

Each sentence is drawn top-down and its Universal Dependencies tree (de Marneffe et al. 2021,
"Universal Dependencies") is built with it, in UD's conventions: content words head function
words (``det``, ``case``, ``mark`` attach to their noun or verb), the first conjunct heads the
others (``conj``), a coordinator attaches to the conjunct after it (``cc``), as does the comma
before it (``punct``); the final full stop attaches to the root verb. Relations (13):
``nsubj obj det amod case nmod obl advmod conj cc mark ccomp punct`` (plus ``root``).

Grammar (probabilities in :class:`GrammarConfig`; ``depth`` counts embedded phrases, every
recursive option is multiplied by ``decay ** depth``)::

    S      → CLAUSE "."
    CLAUSE → NP_subj [ADV] VERB ... [ "," CC CLAUSE ]            (conj, cc, punct)
    VERB   → V_intr [PP_obl] | V_tr NP_obj [PP_obl] | V_say "that" CLAUSE   (obl, obj, ccomp + mark)
    NP     → DET ADJ* NOUN [PP_nmod] [ "and" NP ]                (det, amod, nmod, conj, cc)
    PP     → PREP NP                                             (case)

The verb agrees in number with its subject (``the dog sees`` / ``the dogs see``; a coordinated
subject is plural), determiners with their noun (``a``/``every``/``this`` singular, ``some``/
``these``/``many`` plural), so a language model must track the subject to predict the verb.
Sentences longer than ``max_words`` are redrawn.

Splits (:func:`make_splits`): the LM corpus, probe fit, probe dev and probe test sentences come from
four independent seed streams (``train``, ``probe``, ``heldout``, ``test`` of
:mod:`bindscale.core.seeding`) and are made disjoint as word strings (a sentence already in an earlier
set is redrawn).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bindscale.kit import rng

from .treebank import Sentence

NOUNS = [("dog", "dogs"), ("cat", "cats"), ("bird", "birds"), ("child", "children"), ("teacher", "teachers"),
         ("farmer", "farmers"), ("king", "kings"), ("queen", "queens"), ("student", "students"),
         ("doctor", "doctors"), ("river", "rivers"), ("house", "houses"), ("garden", "gardens"),
         ("city", "cities"), ("table", "tables"), ("book", "books"), ("letter", "letters"), ("car", "cars"),
         ("tree", "trees"), ("window", "windows"), ("horse", "horses"), ("friend", "friends"),
         ("song", "songs"), ("box", "boxes"), ("ship", "ships"), ("apple", "apples"), ("story", "stories"),
         ("road", "roads"), ("park", "parks"), ("painter", "painters")]
VERBS_TR = [("sees", "see"), ("likes", "like"), ("finds", "find"), ("follows", "follow"), ("watches", "watch"),
            ("helps", "help"), ("reads", "read"), ("writes", "write"), ("carries", "carry"), ("builds", "build"),
            ("paints", "paint"), ("visits", "visit"), ("chases", "chase"), ("remembers", "remember")]
VERBS_INTR = [("sleeps", "sleep"), ("runs", "run"), ("laughs", "laugh"), ("arrives", "arrive"),
              ("waits", "wait"), ("sings", "sing"), ("falls", "fall"), ("smiles", "smile")]
VERBS_SAY = [("says", "say"), ("thinks", "think"), ("believes", "believe"), ("hopes", "hope")]
ADJS = ["big", "small", "old", "young", "red", "green", "happy", "quiet", "tall", "bright", "strange", "clever"]
DETS = (["the", "a", "this", "every"], ["the", "some", "these", "many"])  # singular, plural
PREPS = ["in", "on", "near", "with", "behind", "under", "from", "beside"]
ADVS = ["quickly", "often", "slowly", "quietly", "always", "rarely", "happily", "soon"]
CCS = ["and", "but", "or"]
RELATIONS = ("nsubj", "obj", "det", "amod", "case", "nmod", "obl", "advmod", "conj", "cc", "mark", "ccomp", "punct")


@dataclass(frozen=True)
class GrammarConfig:
    """Probabilities of the grammar's options (see the module docstring).

    Attributes:
        p_adj: chance of each further adjective (geometric: 0, 1, 2, ... adjectives).
        p_nmod: a noun takes a prepositional modifier (times ``decay ** depth``).
        p_np_coord: a noun phrase is coordinated with another (times ``decay ** depth``).
        p_obl: a verb takes a prepositional oblique.
        p_adv: a clause takes an adverb before its verb.
        p_clause_coord: a clause is coordinated with another (times ``decay ** depth``).
        p_say: the verb is a saying verb with a ``that`` clause (times ``decay ** depth``).
        p_trans: the (non-saying) verb is transitive.
        decay: factor per level of embedding.
        max_words: longer sentences are redrawn.
    """

    p_adj: float = 0.35
    p_nmod: float = 0.3
    p_np_coord: float = 0.1
    p_obl: float = 0.3
    p_adv: float = 0.25
    p_clause_coord: float = 0.2
    p_say: float = 0.15
    p_trans: float = 0.65
    decay: float = 0.5
    max_words: int = 30


class _Builder:
    """Words in linear order with their (later filled) heads and relations; indices 0-based."""

    def __init__(self, rng: np.random.Generator, cfg: GrammarConfig):
        self.rng, self.cfg = rng, cfg
        self.words: list[str] = []
        self.upos: list[str] = []
        self.heads: list[int] = []
        self.rels: list[str] = []

    def add(self, word: str, upos: str) -> int:
        self.words.append(word), self.upos.append(upos), self.heads.append(-1), self.rels.append("")
        return len(self.words) - 1

    def attach(self, dep: int, head: int, rel: str) -> None:
        self.heads[dep], self.rels[dep] = head, rel

    def chance(self, p: float, depth: int = 0, recursive: bool = False) -> bool:
        return bool(self.rng.random() < p * (self.cfg.decay ** depth if recursive else 1.0))

    def pick(self, items: list):
        return items[int(self.rng.integers(len(items)))]

    def np(self, depth: int) -> tuple[int, bool]:
        """A noun phrase; returns its head noun and whether it is plural."""
        plural = self.chance(0.4)
        det = self.add(self.pick(DETS[plural]), "DET")
        adjs = []
        while self.chance(self.cfg.p_adj) and len(adjs) < 3:
            adjs.append(self.add(self.pick(ADJS), "ADJ"))
        noun = self.add(self.pick(NOUNS)[plural], "NOUN")
        self.attach(det, noun, "det")
        for a in adjs:
            self.attach(a, noun, "amod")
        if self.chance(self.cfg.p_nmod, depth, True):
            self.attach(self.pp(depth + 1), noun, "nmod")
        if self.chance(self.cfg.p_np_coord, depth, True):
            cc = self.add(self.pick(CCS[:1]), "CCONJ")
            other, _ = self.np(depth + 1)
            self.attach(cc, other, "cc")
            self.attach(other, noun, "conj")
            plural = True
        return noun, plural

    def pp(self, depth: int) -> int:
        """A prepositional phrase; returns its noun (the preposition attaches to it as ``case``)."""
        prep = self.add(self.pick(PREPS), "ADP")
        noun, _ = self.np(depth)
        self.attach(prep, noun, "case")
        return noun

    def clause(self, depth: int) -> int:
        """A clause; returns its verb."""
        subj, plural = self.np(depth + 1)
        adv = self.add(self.pick(ADVS), "ADV") if self.chance(self.cfg.p_adv) else None
        if self.chance(self.cfg.p_say, depth, True):
            verb = self.add(self.pick(VERBS_SAY)[plural], "VERB")
            mark = self.add("that", "SCONJ")
            comp = self.clause(depth + 1)
            self.attach(mark, comp, "mark")
            self.attach(comp, verb, "ccomp")
        else:
            trans = self.chance(self.cfg.p_trans)
            verb = self.add(self.pick(VERBS_TR if trans else VERBS_INTR)[plural], "VERB")
            if trans:
                obj, _ = self.np(depth + 1)
                self.attach(obj, verb, "obj")
            if self.chance(self.cfg.p_obl):
                self.attach(self.pp(depth + 1), verb, "obl")
        self.attach(subj, verb, "nsubj")
        if adv is not None:
            self.attach(adv, verb, "advmod")
        if self.chance(self.cfg.p_clause_coord, depth, True):
            comma = self.add(",", "PUNCT")
            cc = self.add(self.pick(CCS), "CCONJ")
            other = self.clause(depth + 1)
            self.attach(comma, other, "punct")
            self.attach(cc, other, "cc")
            self.attach(other, verb, "conj")
        return verb


def sample_sentence(rng: np.random.Generator, cfg: GrammarConfig = GrammarConfig(), sent_id: str = "s") -> Sentence:
    """One sentence of at most ``cfg.max_words`` words (longer draws are redrawn) with its tree."""
    while True:
        b = _Builder(rng, cfg)
        root = b.clause(0)
        stop = b.add(".", "PUNCT")
        b.attach(stop, root, "punct")
        b.attach(root, -1, "root")
        if len(b.words) <= cfg.max_words:
            return Sentence(sent_id, tuple(b.words), tuple(h + 1 for h in b.heads), tuple(b.rels), tuple(b.upos))


def sample_sentences(seed: int, stream: str, n: int, cfg: GrammarConfig = GrammarConfig(),
                     exclude: set[tuple[str, ...]] | None = None, prefix: str | None = None) -> list[Sentence]:
    """``n`` distinct sentences from seed stream ``stream`` of root ``seed``, none whose words are in ``exclude``.

    Raises:
        RuntimeError: the grammar cannot supply ``n`` new sentences (after ``50 n + 1000`` draws).
    """
    gen = rng(seed, stream)
    taken = set(exclude or ())
    out: list[Sentence] = []
    for _ in range(50 * n + 1000):
        if len(out) == n:
            return out
        s = sample_sentence(gen, cfg, f"{prefix or stream}-{len(out) + 1}")
        if s.words not in taken:
            taken.add(s.words)
            out.append(s)
    if len(out) == n:
        return out
    raise RuntimeError(f"the grammar gave only {len(out)} distinct new sentences of the {n} asked for ({stream})")


def make_splits(seed: int, n_lm: int, n_fit: int, n_dev: int, n_test: int,
                cfg: GrammarConfig = GrammarConfig()) -> dict[str, list[Sentence]]:
    """The four disjoint sets of a trial: ``lm`` (language-model corpus), ``fit``, ``dev`` and ``test`` (probes).

    Streams ``train``, ``probe``, ``heldout``, ``test``; each set excludes the sentences of the sets before it.
    """
    seen: set[tuple[str, ...]] = set()
    out = {}
    for name, stream, n in (("lm", "train", n_lm), ("fit", "probe", n_fit), ("dev", "heldout", n_dev),
                            ("test", "test", n_test)):
        out[name] = sample_sentences(seed, stream, n, cfg, seen, prefix=name)
        seen |= {s.words for s in out[name]}
    return out


def vocabulary() -> list[str]:
    """Every word the grammar can produce, in a fixed order."""
    words = [w for pair in NOUNS + VERBS_TR + VERBS_INTR + VERBS_SAY for w in pair]
    words += ADJS + DETS[0] + DETS[1] + PREPS + ADVS + CCS + ["that", ",", "."]
    return list(dict.fromkeys(words))
