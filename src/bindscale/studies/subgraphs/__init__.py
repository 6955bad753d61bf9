"""The ``subgraphs`` study: transformers trained from scratch on multi-step tasks with computation
graphs (long multiplication, a dynamic program), after Dziri et al. 2023, "Faith and Fate: Limits
of Transformers on Compositionality" (NeurIPS).

Modules: :mod:`.config` (trial config), :mod:`.tasks` (generators with their graphs),
:mod:`.trial` (train and analyse one trial), :mod:`.analysis` (subgraph statistics and error
taxonomy), :mod:`.verdicts`, :mod:`.figures`, :mod:`.table`, :mod:`.plan`.
"""

from bindscale.kit import Anchor, Claim, Gate, StudyPlugin

_DZIRI = 'Dziri et al. 2023, "Faith and Fate: Limits of Transformers on Compositionality" (NeurIPS)'

#: The competence gate of both claims: in-distribution exact match, the source's metric.
ID_GATE = Gate(
    metric="acc_id", threshold="min_id_acc",
    what="in-distribution exact match (problem sizes up to the training maximum)",
    source=("Dziri et al. 2023 (§3, exhaustive fine-tuning of GPT-3 on multiplication and dynamic programming up to a "
            "problem size): the models reach near-perfect accuracy in distribution while out-of-distribution accuracy "
            "collapses; their claims are about models that learned the training distribution ('near-perfect' read as "
            "0.95)"),
)

#: The source's headlines (the answer page shows them beside the verdicts): Dziri et al.'s introduction (§1 citing §3) and abstract. Their
#: fine-tuning results (in- vs out-of-distribution by problem size) are figures; GPT-4's size is not disclosed.
_DZIRI_SIZE = "GPT-4 and ChatGPT off the shelf (sizes not disclosed); GPT-3 fine-tuned in their §3"
ANCHORS = {
    "scale_does_not_lift_ood": Anchor(
        citation="Dziri et al. 2023, NeurIPS (§1)", model_size=_DZIRI_SIZE, number=59.0, unit="%",
        says="59% (GPT-4) and 55% (ChatGPT) accuracy on 3-digit by 3-digit multiplication",
        quote="off-the-shelf ChatGPT and GPT4 achieve only 55% and 59% accuracies on this task, respectively",
        metric="zero-shot exact-match accuracy on 3 x 3-digit multiplication (not a gain with size)"),
    "correct_steps_seen_in_training": Anchor(
        citation="Dziri et al. 2023, NeurIPS (abstract)", model_size=_DZIRI_SIZE,
        quote=("transformer LLMs solve compositional tasks by reducing multi-step compositional reasoning into "
               "linearized subgraph matching, without necessarily developing systematic problem-solving skills"),
        metric="how often correct steps' computation subgraphs were seen in training (figures, no single number)"),
}

#: The value each accuracy and share column the rules read can take (:attr:`bindscale.kit.StudyPlugin.metric_ranges`):
#: exact match in and out of distribution, the seen shares of correct and wrong steps and the per-step error rate
#: of the compounding fit lie in [0, 1]; the depth-matched gap, a difference of two shares, in [-1, 1]. A table
#: outside them (accuracies entered in percent) makes both claims inconclusive before a rule runs: a share of 45
#: against the level 0.5, or a gain of 2.5 against a margin of 0.05, would decide on the wrong units.
METRIC_RANGES = {"acc_id": (0.0, 1.0), "acc_ood": (0.0, 1.0), "seen_correct": (0.0, 1.0), "seen_wrong": (0.0, 1.0),
                 "compound_eps": (0.0, 1.0), "seen_gap_depth": (-1.0, 1.0)}

CLAIMS = (
    Claim(
        name="scale_does_not_lift_ood", bounds=(-1.0, 1.0), title="Out of distribution: does scale help? (Faith and Fate)",
        anchor=ANCHORS["scale_does_not_lift_ood"],
        source=_DZIRI, side="where_scale_stops",
        statement=("Dziri et al. 2023 (Faith and Fate): a transformer trained on a multi-step task gains no "
                   "out-of-distribution exact match from more parameters (no model size of one task beats the "
                   "smallest by the margin), and its out-of-distribution accuracy stays low (the largest model's "
                   "is clearly below its in-distribution accuracy)."),
        statistic=("The out-of-distribution exact-match gain over the smallest model of the model size that gains "
                   "most (by its interval's low end among sizes whose gain clears the margin, else by its high end): "
                   "a difference of means over seeds with Welch's interval on cells given one pseudo-seed at 0 and "
                   "one at 1 (Agresti-Caffo: a cell may hold none of a bimodal exact match's rare successes), at "
                   "confidence 1 - 0.05/K for the K sizes compared with the smallest (Bonferroni), within one task, "
                   "scratchpad trials, the largest training set. Where the other part decides (out-of-distribution accuracy stays "
                   "low) the rule returns id_minus_ood_acc_largest_model instead: the largest model's "
                   "in-distribution minus out-of-distribution exact match, paired by seed (t interval). With "
                   "several tasks each is decided within its task; the details name the deciding one (task_used)."),
        thresholds={"margin": (0.0, 1.0), "ood_floor": (0.0, 1.0), "min_id_acc": (0.0, 1.0),
                    "min_ood_drop": (0.0, 1.0)},
        defaults={"margin": 0.05, "ood_floor": 0.05, "min_id_acc": 0.95, "min_ood_drop": 0.2}, gates=(ID_GATE,),
        figures=("sg_acc_vs_params", "sg_acc_by_size"), aliases=("ood_scaling",),
        guards=(".verdicts:largest_planned_size_missing",),
    ),
    Claim(
        name="correct_steps_seen_in_training", bounds=(-1.0, 1.0),
        anchor=ANCHORS["correct_steps_seen_in_training"],
        title="Are correct steps the ones seen in training? (Faith and Fate)", source=_DZIRI,
        side="where_scale_stops",
        statement=("Dziri et al. 2023 (Faith and Fate): transformers get a computation step right mostly when its "
                   "whole computation subgraph occurred in training: most correct steps are seen ones (share above "
                   "one half), and at equal depth correct steps are more often seen ones than wrong steps are."),
        statistic=("The share of correct scratchpad steps whose whole computation subgraph occurs in training "
                   "minus that share among wrong steps, at equal depth (per trial, depths weighted by the pairs "
                   "they can form), mean of (model size, training set) cell means over seeds with Hall's "
                   "skewness-corrected Welch–Satterthwaite interval. Where the other part decides (most correct steps are seen ones) "
                   "the rule returns seen_share_correct instead: the seen share of correct steps over all depths, "
                   "same cells, same interval. Decided within each task; the details name the deciding one (task_used)."),
        thresholds={"margin": (0.0, 1.0), "min_id_acc": (0.0, 1.0)}, defaults={"margin": 0.05, "min_id_acc": 0.95},
        gates=(ID_GATE,),
        figures=("sg_coverage_by_depth", "sg_error_types", "sg_acc_by_depth"), aliases=("seen_subgraphs",),
        # The rule compares no model sizes and reads no out-of-distribution reach: "not supported" says that the
        # source's mechanism (correct steps are the seen ones, by the levels the rule names) is not found here,
        # not that scale goes further. It is no evidence for the other side (see .verdicts).
        not_supported_means="missed_level",
    ),
)

STUDY = StudyPlugin(
    name="subgraphs",
    kind="subgraphs",
    claims=CLAIMS,
    package=__name__,
    description="Does scale lift out-of-distribution accuracy on multi-step tasks, and are correct steps the "
                "ones seen in training? (Dziri et al. 2023)",
    # A rough fit through the per-trial CPU times (process time, data to metrics) in subgraphs.yaml's
    # comments on the 2-core Xeon, one torch thread: 2x32 30.5 s and 2x64 54 s at 2000 steps, 3x128
    # 83 s at 1000 steps (it was 9.2e-11, fitted to 29 s and 129 s per trial at 1000 steps: 55% above
    # the 3x128 time measured here).
    seconds_per_cost=(5.5e-11, 24.0),
    metric_ranges=METRIC_RANGES,
)
