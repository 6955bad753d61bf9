"""A toy third-party study: the whole plugin in one folder (tests/toy_study/), registered through the
``bindscale.studies`` entry-point group by the test that installs it.

It shows the minimum a study is, by convention (:data:`bindscale.core.study.CONVENTION`): claims and a
:class:`~bindscale.kit.StudyPlugin` here; the trial config in :mod:`.config` (``TrialConfig``), the
trainer in :mod:`.trial` (``run_group``), one rule per claim in :mod:`.verdicts` (named like the claim)
and the figures in :mod:`.figures` (``figures``).

Trial: fit a line y = 2x + noise with ``model.width`` random features for ``train.steps`` steps of
plain gradient descent; metric ``score`` = R² on held-out points. Claim ``toy_fits``: the mean score
of the widest model lies above ``threshold``.
"""

from bindscale.kit import Claim, StudyPlugin

CLAIMS = (
    Claim(name="toy_fits", title="The toy model fits a line", source="a test fixture (no paper)",
          statement="A random-feature model fits y = 2x on held-out points (mean R² of the widest model "
                    "above the threshold).",
          statistic="mean held-out R² of the widest model", side="scale_suffices",
          thresholds={"threshold": (0.0, 1.0)}, defaults={"threshold": 0.5}, figures=("score_vs_width",)),
)

STUDY = StudyPlugin(name="toy", kind="toy", claims=CLAIMS, package=__name__,
                    description="A toy study that lives in the tests (entry-point plugin example).")
