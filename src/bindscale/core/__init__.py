"""The core wing: what a study is and how a study file becomes trials.

Lives here: the Study protocol, StudyPlugin and the claim / verdict types (:mod:`.study`), the pydantic
trial and study configs (:mod:`.config`), study-file loading and ``--set`` (:mod:`.studyfile`), the
registry of built-in and entry-point studies (:mod:`.registry`), ``new-study`` (:mod:`.scaffold` and
``templates/``), the ok rows a rule reads (:mod:`.rows`), seeding, number formatting, machine facts,
errors and the version.

May import: nothing of bindscale outside this wing (it is the lowest; every other wing builds on it).
"""
