"""The store wing: what a run writes and reads back.

Lives here: the run directory on a path or an fsspec URL with atomic writes (:mod:`.storage`), each
trial's record (:mod:`.records`), saved models (:mod:`.checkpoints`), the one-driver lock
(:mod:`.lock`) and a run's resolved ``study.yaml`` (:mod:`.rundir`).

May import: :mod:`bindscale.core`, :mod:`bindscale.models`, :mod:`bindscale.train`.
"""
