"""The verdicts wing: from records to numbers and verdicts.

Lives here: the verdict engine every claim's rule runs in (:mod:`.engine`: gates, floors and ceilings,
``min_seeds``, intervals), the statistics (:mod:`.stats`), the sources' headline anchors
(:mod:`.anchors`) and the results table built from a run's records (:mod:`.results_table`).

May import: :mod:`bindscale.core`, :mod:`bindscale.models`, :mod:`bindscale.train`, :mod:`bindscale.store`.
"""
