"""The ``length_transfer`` study: does a task extrapolate in length when trained beside a related
longer task, and do the two reuse the same attention heads? After Cai et al. 2025,
"Extrapolation by Association: Length Generalization Transfer in Transformers" (arXiv 2506.09251).

Modules: :mod:`.config` (trial config), :mod:`.tasks` (task generators), :mod:`.data` (a trial's data),
:mod:`.trial` (train and analyse one trial), :mod:`.lmtrial` (the pretrained arm: fine-tune a pretrained LM
on the same tasks, ``model.kind: pretrained``, study file ``length_transfer-lm``), :mod:`.heads`
(teacher-forced scoring, mean-ablation importance, map similarity), :mod:`.verdicts`, :mod:`.figures`,
:mod:`.table`, :mod:`.plan`.

Claim ``pretraining_adds_transfer`` (the ``length_transfer-lm`` study file only): Cai et
al.'s pretrained-model result — "we observe similar transfer effects in pretrained language models,
suggesting that pretraining equips models with reusable computational scaffolding" — read as: a fine-tuned
pretrained LM's transfer beyond L exceeds the from-scratch transformer's.

Sides on the answer page: transfer, its growth with size and head reuse are the seed's reading of
Cai et al. — reusable computational scaffolding that scale and training build with no binding
mechanism — so they bear on "scale suffices"; the unrelated control (more training data at long
lengths, but of an unrelated task, gives no extrapolation) marks a limit of data scale alone:
"where scale stops". Cai et al. claim transfer from *related* auxiliaries; the unrelated control is
the seed's reading of that qualifier (no separate unrelated-auxiliary result of theirs is cited).
"""

from bindscale.kit import Anchor, Claim, Gate, StudyPlugin

_CAI = ('Cai et al. 2025, "Extrapolation by Association: Length Generalization Transfer in Transformers" '
        '(arXiv 2506.09251)')
_T = {"margin": (-1.0, 1.0), "min_in_acc": (0.0, 1.0), "min_aux_acc": (0.0, 1.0)}
_D = {"margin": 0.05, "min_in_acc": 0.95, "min_aux_acc": 0.95}
_FIT = ("Cai et al. 2025 read transfer off models that solve their training range: in their exact-match-by-length "
        "figures the main and auxiliary tasks sit at or near 100% up to their own training lengths and fall only "
        "beyond them (no in-distribution number is given in the text; 'near-perfect' read as 0.95, as for SCAN)")
#: Competence gates: the main task within its training lengths (every deciding cell, the
#: main-alone arm too) and the auxiliary within its own (co-trained cells only: an arm without an auxiliary has
#: no auxiliary fit, so its cells are named with ``gated=["acc_in"]``).
GATES = (
    Gate(metric="acc_in", threshold="min_in_acc", what="main task's exact match within its training lengths",
         source=_FIT),
    Gate(metric="aux_acc_in", threshold="min_aux_acc", what="auxiliary's exact match within its own training lengths",
         source=_FIT),
)
#: Decided at the largest (and smallest) planned size or not at all (review item 2).
_G = (".verdicts:planned_size_guard",)

#: The source's headline (the answer page shows it beside the verdicts): Cai et al.'s abstract (their transfer results are figures, no
#: table). Model size: their from-scratch transformer, 6 layers x 6 heads, width 384 (about 10.6M non-embedding
#: parameters by bindscale's count, 12 * layers * width²; the paper's own count is not cited here).
_CAI_SIZE = ("from-scratch transformers, 6 layers x 6 heads, width 384, RoPE (about 10.6M non-embedding parameters "
             "by bindscale's count)")
_CAI_CITE = "Cai et al. 2025, arXiv 2506.09251 (abstract)"
_CAI_TRANSFER = ("training a model with a longer and related auxiliary task can lead it to generalize to unseen and "
                 "longer inputs from some other target task")
ANCHORS = {
    "length_transfer_exists": Anchor(
        citation=_CAI_CITE, model_size=_CAI_SIZE, params=10.6e6, quote=_CAI_TRANSFER,
        metric="main task's exact match beyond its training length, co-trained with a related longer task vs alone",
        statistics=("transfer_gain_related_minus_alone",)),
    "unrelated_aux_no_transfer": Anchor(
        citation=_CAI_CITE, model_size=_CAI_SIZE, params=10.6e6,
        quote="We find that length generalization can be transferred across related tasks.",
        metric="transfer from related auxiliaries (no unrelated-auxiliary result stated: the control is bindscale's reading)"),
    "head_reuse_predicts_transfer": Anchor(
        citation=_CAI_CITE, model_size=_CAI_SIZE, params=10.6e6,
        quote=("we provide initial mechanistic evidence that length generalization transfer correlates with the "
               "re-use of the same attention heads between the tasks"),
        metric="head reuse between tasks against transfer (their measure of reuse is not bindscale's map correlation)"),
    "pretraining_adds_transfer": Anchor(
        citation=_CAI_CITE, model_size="SmolLM-360M, pretrained, fine-tuned (beside their from-scratch models)",
        params=360e6,
        quote=("we observe similar transfer effects in pretrained language models, suggesting that pretraining equips "
               "models with reusable computational scaffolding that facilitates extrapolation in downstream settings"),
        metric=("transfer beyond L (co-trained with the related auxiliary minus alone) of a fine-tuned pretrained model "
                "against a from-scratch model (their comparison is qualitative: no difference is cited)"),
        statistics=("transfer_gain_pretrained_minus_scratch",)),
    "transfer_grows_with_size": Anchor(
        citation=_CAI_CITE, model_size=_CAI_SIZE, params=10.6e6, quote=_CAI_TRANSFER,
        metric="transfer at their model size (growth with size is bindscale's question, not a result of theirs)"),
}

CLAIMS = (
    Claim(
        name="length_transfer_exists", bounds=(-1.0, 1.0), title="Does a related longer task extend the main task's length? (Cai et al.)",
        anchor=ANCHORS["length_transfer_exists"],
        source=_CAI, side="scale_suffices",
        statement=("Cai et al. 2025: a main task trained only up to length L, co-trained with a related auxiliary "
                   "task seen up to a longer length, reaches higher exact match beyond L (toward the auxiliary's "
                   "length) than the main task trained alone."),
        statistic=("Transfer gain: mean exact match of the main task at lengths L+1..aux_len (each length weighted "
                   "equally) co-trained with its related auxiliary minus trained alone, capitalise-and-reverse with "
                   "capitalise + reverse (the study's deciding pair: the one pair a CPU budget learns), RoPE, one cell at the largest planned model size; a difference of means over "
                   "seeds with Welch's interval. NoPE and the other sizes and task pairs are reported beside it."),
        thresholds=_T, defaults=_D, guards=_G, gates=GATES,
        figures=("lt_acc_by_length", "lt_gain_vs_size"),
    ),
    Claim(
        name="unrelated_aux_no_transfer", bounds=(-1.0, 1.0), title="Does an unrelated longer task give no transfer? (Cai et al.)",
        anchor=ANCHORS["unrelated_aux_no_transfer"],
        source=_CAI, side="where_scale_stops",
        statement=("The control implied by Cai et al. 2025, who claim transfer from a *related* auxiliary (abstract: "
                   "\"training a model with a longer and related auxiliary task can lead it to generalize to unseen "
                   "and longer inputs from some other target task\"): where a related auxiliary transfers, an "
                   "unrelated auxiliary seen at the same longer lengths gives the main task no extrapolation beyond L "
                   "(its gain over the main task alone stays below the margin). No separate unrelated-auxiliary "
                   "result of theirs was found to cite; the claim is the seed's reading of their qualifier."),
        statistic=("Gain of the unrelated control: mean exact match of the main task at lengths L+1..aux_len "
                   "co-trained with copy (unrelated: learned at the longer lengths, no task of the related set) "
                   "minus trained alone, same cell as the transfer claim (capitalise-and-reverse, RoPE, largest "
                   "planned size), decided only where the related auxiliary transfers there; "
                   "Welch's interval. Related minus unrelated is reported beside."),
        thresholds=_T, defaults=_D, guards=_G, gates=GATES,
        figures=("lt_acc_by_length",),
    ),
    Claim(
        name="head_reuse_predicts_transfer", bounds=(-1.0, 1.0), title="Does head reuse predict transfer? (Cai et al.)",
        anchor=ANCHORS["head_reuse_predicts_transfer"],
        source=_CAI, side="scale_suffices",
        statement=("Cai et al. 2025: tasks that transfer reuse the same attention heads: across co-trained models "
                   "(task pairs and seeds), the similarity of the main and auxiliary tasks' head-importance maps "
                   "correlates positively with the transfer gain."),
        statistic=("Spearman correlation within cells (ranks residualised on cell indicators: size and auxiliary "
                   "cannot drive both), over the deciding pair's co-trained trials (capitalise-and-reverse with "
                   "capitalise + reverse and with copy, RoPE, every size; each cell gated on its main and auxiliary "
                   "fit), between the Pearson correlation of the main and auxiliary mean-ablation "
                   "loss-rise maps and the trial's transfer gain (its exact match beyond L minus the mean of the "
                   "main-alone trials of its cell); pairs-bootstrap 95% interval against one threshold."),
        thresholds={"margin": (-1.0, 1.0), "min_trials": (3.0, 10_000.0), "min_in_acc": (0.0, 1.0),
                    "min_aux_acc": (0.0, 1.0)},
        defaults={"margin": 0.2, "min_trials": 10.0, "min_in_acc": 0.95, "min_aux_acc": 0.95}, gates=GATES,
        retired=("null_band",),
        figures=("lt_reuse_scatter", "lt_head_maps"),
    ),
    Claim(
        name="transfer_grows_with_size", bounds=(-2.0, 2.0), own_hypothesis=True, title="Does transfer grow with model size? (Cai et al.)",
        anchor=ANCHORS["transfer_grows_with_size"],
        source="bindscale's question on the setting of " + _CAI + " (the seed's reading)",
        side="scale_suffices",
        statement=("The transfer gain (co-trained with the related auxiliary minus alone, beyond L) is larger at the "
                   "largest model size than at the smallest."),
        statistic=("Difference in differences: (related − alone) at the largest planned size minus (related − "
                   "alone) at the smallest, exact match at lengths L+1..aux_len, capitalise-and-reverse with "
                   "capitalise + reverse, RoPE, every learning check at both sizes; four independent seed groups, Welch–Satterthwaite interval."),
        thresholds=_T, defaults=_D, guards=_G, gates=GATES,
        figures=("lt_gain_vs_size",),
    ),
)

CLAIMS += (
    Claim(
        name="pretraining_adds_transfer", bounds=(-2.0, 2.0), title="Does pretraining change transfer? (Cai et al., pretrained arm)",
        anchor=ANCHORS["pretraining_adds_transfer"],
        source=_CAI, side="scale_suffices",
        statement=("Cai et al. 2025 (abstract): \"we observe similar transfer effects in pretrained language models, "
                   "suggesting that pretraining equips models with reusable computational scaffolding that facilitates "
                   "extrapolation in downstream settings\". Read here as a difference that can fail: a pretrained LM "
                   "fine-tuned on the deciding pair (capitalise-and-reverse alone, and with capitalise + reverse) gains "
                   "more exact match beyond L from the related auxiliary than the from-scratch transformer does. Only "
                   "the length_transfer-lm study file decides it."),
        statistic=("Per seed, transfer = exact match of the main task at lengths L+1..aux_len co-trained with "
                   "capitalise + reverse minus alone (same seed); mean over seeds of the fine-tuned pretrained model "
                   "(the one with the most parameters when several are given) minus that of the from-scratch "
                   "transformer at the largest planned width (RoPE), Welch's 95% interval. Supported above the margin, "
                   "not supported below it; gates: main within L and auxiliary within its lengths in all four cells."),
        thresholds=_T, defaults=_D, gates=GATES, guards=(".verdicts:pretrained_planned_size_guard",),
        figures=("lt_acc_by_length",),
    ),
)

STUDY = StudyPlugin(
    name="length_transfer",
    kind="length_transfer",
    claims=CLAIMS,
    package=__name__,
    # 2: the warm-up is 300 steps, not 100 (4 December); the published default predates it.
    result_version=2,
    description="Does a task extrapolate in length beside a related longer task, and do the two reuse the same "
                "heads? (Cai et al. 2025)",
    # A rough fit through four per-trial CPU times (2 x 64: copy alone 14 s, + mqar 27 s, caprev + cap+rev
    # 21 s; 3 x 64 copy + sub ~33 s; 600 steps) on the 2-core Xeon, one torch thread; checked on the default's
    # 48 trials at widths 32 and 64 (L = 4, 1000 steps): ~790 CPU-s measured, 780 estimated.
    seconds_per_cost=(1.67e-10, 9.0),
)
