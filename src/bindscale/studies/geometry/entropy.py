"""The synthetic grammar's exact string probabilities and its entropy per token: what a perfect LM would reach.

The competence gate of the geometry claims compares a trained LM's next-token loss with
the loss of the grammar itself. The grammar (:mod:`.grammar`) is a probabilistic grammar with
depth-dependent rule probabilities, number agreement and a length cut (sentences longer than
``max_words`` are redrawn). A word string can have several derivations (a prepositional phrase attached
to a noun or to the verb, the scope of ``and``), so its probability is the sum over them:
:func:`sentence_logprob` computes it exactly with a chart (inside) parser that mirrors
:meth:`.grammar._Builder.clause` / ``np`` / ``pp`` draw for draw, divided by the probability that a
sentence fits the length cut (:func:`length_ok_prob`, exact, by a dynamic programme over lengths).

Per-token figures count what the LM predicts: every word and the closing ``</s>`` (``len(s) + 1`` tokens
per sentence, as :func:`.trial.encode` scores them).

- :func:`grammar_entropy`: Monte Carlo estimate of the grammar's entropy rate, Σ −log p(s) / Σ (len(s)+1)
  over sentences drawn from the generator on a seed stream no trial uses (:data:`ENTROPY_STREAM`).
- :func:`corpus_nll`: Σ −log p(s) and Σ (len(s)+1) over given sentences, so a trial can compare its LM's
  loss with the grammar's on the very same test sentences (``lm_excess_loss``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from bindscale.kit import rng

from .grammar import (ADJS, ADVS, CCS, DETS, NOUNS, PREPS, VERBS_INTR, VERBS_SAY, VERBS_TR, GrammarConfig,
                      sample_sentence)

#: Seed stream of the Monte Carlo entropy estimate: root seed 0, sub-stream 31 of ``test`` (no trial draws
#: a sub-stream of ``test``; trials use the stream itself), the same for every trial of a grammar.
ENTROPY_STREAM = (0, "test", 31)
#: Sentences of the Monte Carlo estimate.
ENTROPY_SENTENCES = 4000

_P_PLURAL = 0.4  # grammar._Builder.np: plural = chance(0.4)
_MAX_ADJ = 3


def _index(pairs):
    """word → list of numbers (0 singular, 1 plural) it spells, for (singular, plural) pairs."""
    out: dict[str, set[int]] = {}
    for pair in pairs:
        for num, w in enumerate(pair):
            out.setdefault(w, set()).add(num)
    return out


_NOUN = _index(NOUNS)
_TR, _INTR, _SAY = _index(VERBS_TR), _index(VERBS_INTR), _index(VERBS_SAY)
_DET = {num: set(d) for num, d in enumerate(DETS)}
_ADJ, _ADV, _PREP, _CC = set(ADJS), set(ADVS), set(PREPS), set(CCS)


class _Chart:
    """Inside probabilities of one word string under the grammar: ``np`` / ``pp`` / ``clause`` from a start
    word at a depth → {end (exclusive) [, plural]: probability}, memoised."""

    def __init__(self, words: Sequence[str], cfg: GrammarConfig):
        self.w, self.cfg, self.n = tuple(words), cfg, len(words)
        self.memo: dict = {}

    def _rec(self, p: float, depth: int) -> float:
        return p * self.cfg.decay ** depth

    def at(self, i: int) -> str | None:
        return self.w[i] if i < self.n else None

    def np(self, i: int, depth: int) -> dict[tuple[int, bool], float]:
        key = ("np", i, depth)
        if key in self.memo:
            return self.memo[key]
        out: dict[tuple[int, bool], float] = {}
        self.memo[key] = out  # every recursion consumes words, so no cycle reads this early
        cfg = self.cfg
        for plural in (False, True):
            if self.at(i) not in _DET[plural]:
                continue
            p = (_P_PLURAL if plural else 1 - _P_PLURAL) / len(DETS[plural])
            j = i + 1
            for k in range(_MAX_ADJ + 1):  # k adjectives, then the noun
                p_k = cfg.p_adj ** k * (1 - cfg.p_adj if k < _MAX_ADJ else 1.0)
                if k and self.at(j + k - 1) not in _ADJ:
                    break
                noun = j + k
                if plural not in _NOUN.get(self.at(noun), ()):
                    continue
                base = p * p_k * (1 / len(ADJS)) ** k / len(NOUNS)
                q, r = self._rec(cfg.p_nmod, depth), self._rec(cfg.p_np_coord, depth)
                ends = {noun + 1: base * (1 - q)}
                for e, pe in self.pp(noun + 1, depth + 1).items():
                    ends[e] = ends.get(e, 0.0) + base * q * pe
                for e, pe in ends.items():
                    out[(e, plural)] = out.get((e, plural), 0.0) + pe * (1 - r)
                    if r > 0 and self.at(e) == CCS[0]:
                        for (e2, _), p2 in self.np(e + 1, depth + 1).items():
                            out[(e2, True)] = out.get((e2, True), 0.0) + pe * r * p2
        return out

    def pp(self, i: int, depth: int) -> dict[int, float]:
        key = ("pp", i, depth)
        if key in self.memo:
            return self.memo[key]
        out: dict[int, float] = {}
        self.memo[key] = out
        if self.at(i) in _PREP:
            for (e, _), p in self.np(i + 1, depth).items():
                out[e] = out.get(e, 0.0) + p / len(PREPS)
        return out

    def clause(self, i: int, depth: int) -> dict[int, float]:
        key = ("clause", i, depth)
        if key in self.memo:
            return self.memo[key]
        out: dict[int, float] = {}
        self.memo[key] = out
        cfg = self.cfg
        s, c = self._rec(cfg.p_say, depth), self._rec(cfg.p_clause_coord, depth)
        for (e, plural), p_subj in self.np(i, depth + 1).items():
            starts = {e: p_subj * (1 - cfg.p_adv)}
            if self.at(e) in _ADV:
                starts[e + 1] = starts.get(e + 1, 0.0) + p_subj * cfg.p_adv / len(ADVS)
            verb_ends: dict[int, float] = {}
            for v, pv in starts.items():
                word = self.at(v)
                if s > 0 and plural in _SAY.get(word, ()) and self.at(v + 1) == "that":
                    for e2, p2 in self.clause(v + 2, depth + 1).items():
                        verb_ends[e2] = verb_ends.get(e2, 0.0) + pv * s / len(VERBS_SAY) * p2
                plain: dict[int, float] = {}
                if plural in _TR.get(word, ()):
                    for (e2, _), p2 in self.np(v + 1, depth + 1).items():
                        plain[e2] = plain.get(e2, 0.0) + pv * (1 - s) * cfg.p_trans / len(VERBS_TR) * p2
                if plural in _INTR.get(word, ()):
                    plain[v + 1] = plain.get(v + 1, 0.0) + pv * (1 - s) * (1 - cfg.p_trans) / len(VERBS_INTR)
                for e2, p2 in plain.items():
                    verb_ends[e2] = verb_ends.get(e2, 0.0) + p2 * (1 - cfg.p_obl)
                    for e3, p3 in self.pp(e2, depth + 1).items():
                        verb_ends[e3] = verb_ends.get(e3, 0.0) + p2 * cfg.p_obl * p3
            for e2, p2 in verb_ends.items():
                out[e2] = out.get(e2, 0.0) + p2 * (1 - c)
                if c > 0 and self.at(e2) == "," and self.at(e2 + 1) in _CC:
                    for e3, p3 in self.clause(e2 + 2, depth + 1).items():
                        out[e3] = out.get(e3, 0.0) + p2 * c / len(CCS) * p3
        return out


def string_prob_uncut(words: Sequence[str], cfg: GrammarConfig = GrammarConfig()) -> float:
    """Probability that one draw of the grammar, before the length cut, spells ``words`` (a sentence ends in ".")."""
    if not words or words[-1] != ".":
        return 0.0
    return _Chart(words[:-1], cfg).clause(0, 0).get(len(words) - 1, 0.0)


@functools.lru_cache(maxsize=32)
def length_ok_prob(cfg: GrammarConfig = GrammarConfig()) -> float:
    """P(a draw has at most ``cfg.max_words`` words): the normaliser of the length cut (exact).

    A dynamic programme over lengths mirroring :class:`_Chart` with every word choice summed out: each
    phrase's length distribution at each depth, truncated at ``max_words`` (lengths only add, so a
    partial length above the cut never comes back under it).
    """
    M = cfg.max_words
    memo: dict = {}

    def conv(a, b):
        return np.convolve(a, b)[:M + 1]

    def shift(a, k):
        out = np.zeros(M + 1)
        if k <= M:
            out[k:] = a[:M + 1 - k]
        return out

    def unit(k):
        return shift(np.r_[1.0, np.zeros(M)], k)

    def rec(p, depth):
        return p * cfg.decay ** depth

    def np_len(depth):
        if ("np", depth) in memo:
            return memo[("np", depth)]
        memo[("np", depth)] = np.zeros(M + 1)  # depth > M cannot fit; a placeholder stops recursion
        if depth > M:
            return memo[("np", depth)]
        adj = sum(cfg.p_adj ** k * (1 - cfg.p_adj if k < _MAX_ADJ else 1.0) * unit(k) for k in range(_MAX_ADJ + 1))
        core = conv(adj, unit(2))  # determiner + noun
        q, r = rec(cfg.p_nmod, depth), rec(cfg.p_np_coord, depth)
        core = (1 - q) * core + q * conv(core, pp_len(depth + 1))
        out = (1 - r) * core + r * conv(conv(core, unit(1)), np_len(depth + 1))
        memo[("np", depth)] = out
        return out

    def pp_len(depth):
        return shift(np_len(depth), 1) if depth <= M else np.zeros(M + 1)

    def clause_len(depth):
        if ("clause", depth) in memo:
            return memo[("clause", depth)]
        memo[("clause", depth)] = np.zeros(M + 1)
        if depth > M:
            return memo[("clause", depth)]
        s, c = rec(cfg.p_say, depth), rec(cfg.p_clause_coord, depth)
        subj = conv(np_len(depth + 1), (1 - cfg.p_adv) * unit(0) + cfg.p_adv * unit(1))
        plain = cfg.p_trans * shift(np_len(depth + 1), 1) + (1 - cfg.p_trans) * unit(1)
        plain = (1 - cfg.p_obl) * plain + cfg.p_obl * conv(plain, pp_len(depth + 1))
        verb = s * shift(clause_len(depth + 1), 2) + (1 - s) * plain
        body = conv(subj, verb)
        out = (1 - c) * body + c * conv(shift(body, 2), clause_len(depth + 1))
        memo[("clause", depth)] = out
        return out

    return float(shift(clause_len(0), 1).sum())


def sentence_logprob(words: Sequence[str], cfg: GrammarConfig = GrammarConfig()) -> float:
    """log p(words) under the grammar as sampled (length cut included); −inf for a string it cannot make."""
    if len(words) > cfg.max_words:
        return -math.inf
    p = string_prob_uncut(words, cfg)
    return math.log(p) - math.log(length_ok_prob(cfg)) if p > 0 else -math.inf


def corpus_nll(sentences, cfg: GrammarConfig = GrammarConfig()) -> tuple[float, int]:
    """(Σ −log p(s) in nats, Σ (len(s) + 1) tokens) over sentences (``Sentence`` or word tuples)."""
    nll, tokens = 0.0, 0
    for s in sentences:
        words = getattr(s, "words", s)
        nll -= sentence_logprob(words, cfg)
        tokens += len(words) + 1
    return nll, tokens


@functools.lru_cache(maxsize=32)
def grammar_entropy(cfg: GrammarConfig = GrammarConfig(), n: int = ENTROPY_SENTENCES) -> tuple[float, float]:
    """The grammar's entropy in nats per token (words and ``</s>``), Monte Carlo over ``n`` sentences drawn from
    :data:`ENTROPY_STREAM`, and its standard error (delta method for the ratio of sums)."""
    root, stream, key = ENTROPY_STREAM
    gen = rng(root, stream, key)
    nll = np.empty(n)
    tok = np.empty(n)
    for i in range(n):
        s = sample_sentence(gen, cfg)
        nll[i] = -sentence_logprob(s.words, cfg)
        tok[i] = len(s.words) + 1
    h = nll.sum() / tok.sum()
    resid = nll - h * tok
    se = float(np.sqrt((resid ** 2).sum() / (n * (n - 1))) / tok.mean())
    return float(h), se
