"""The ``geometry`` study (in progress): probes of syntax as distance and angle in word representations.

Entry points usable on any activations (see :mod:`.probes`, :mod:`.scores`, :mod:`.treebank`):
``fit_probe(kind, fit_pairs, dev_pairs, settings, seed)`` and ``score(probe, test_pairs)`` over lists
of ``(activations (n_words, d), Sentence)`` pairs.
"""
