"""The ``depth`` study: on SCAN (Lake & Baroni 2018), do deeper transformers compose better at an equal
parameter budget, and does more scale solve SCAN's compositional splits?

Claims and their sides (the answer page groups claims by side; "supported" always means the cited
source's claim holds):

- ``deeper_composes_better_at_equal_params`` (Petty et al. 2024) — side *scale_suffices*:
  if it holds, a plain transformer composes better by spending the same parameters on more serial
  layers, with no binding mechanism; arXiv 2601.18858 (depth has little effect on SCAN-style
  out-of-distribution accuracy) is the counter-anchor printed beside it. MobileLLM (Liu et al.
  2024; 30 layers x 576 beat balanced shapes at 125M) is context only: it measured zero-shot
  commonsense reasoning and QA, not compositional generalization, so it is not a source of
  "deeper composes better".
- ``seq2seq_fails_scan_splits`` (Lake & Baroni 2018) — side *where_scale_stops*. The seed's question
  is "does scale solve the split?"; the claim is named after what its source asserts (sequence
  models fail the add-jump and length splits), so "supported" means every model at the largest budget
  of the size sweep, whatever its depth, still fails both (scale did not solve them within the sweep),
  and "not supported" means scale solved at least one.

Modules: :mod:`.config` (trial config; SCAN from its grammar, its splits and the SCAN / COGS file loaders
are the kit's ``scan``, :mod:`bindscale.train.scan`, shared with ``binding_scan``), :mod:`.trial` (train and score one trial), :mod:`.verdicts`, :mod:`.figures`, :mod:`.table`,
:mod:`.plan`; the iso-parameter shapes are :mod:`bindscale.models.shapes` (the ceiling study's too).
"""

from bindscale.kit import Anchor, Claim, Gate, StudyPlugin

_PETTY = ('Petty et al. 2024, "The Impact of Depth on Compositional Generalization in Transformer Language '
          'Models" (NAACL)')
_LAKE = ('Lake & Baroni 2018, "Generalization without systematicity: On the compositional skills of '
         'sequence-to-sequence recurrent networks" (ICML)')

#: The competence gate of both claims: SCAN's in-distribution exact match, the metric in
#: which Lake & Baroni report their models' fit to the training commands.
SCAN_GATE = Gate(
    metric="acc_id", threshold="min_id_acc",
    what="in-distribution exact match (held-out commands of the split's training distribution)",
    source=("Lake & Baroni 2018 (§3, training details): the overall-best network reaches over 99.5% accuracy on "
            "the training commands and each experiment's top performer at least 95%; their split failures are "
            "failures of models that learned the training distribution"),
)

#: The sources' headlines, shown on the answer page beside the verdicts. Petty et al.: abstract. Lake & Baroni: abstract, and the numbers of
#: their experiments as this study records them; the paper states architectures, not parameter counts (the
#: overall-best network, a 2-layer LSTM encoder-decoder with 200 units per layer, is about 1.3M parameters by
#: bindscale's count: 4 gates x 200 x (200 + 200 + 1) per layer, four layers).
ANCHORS = {
    "deeper_composes_better_at_equal_params": Anchor(
        citation="Petty et al. 2024, NAACL (abstract)",
        metric="compositional generalization after fine-tuning, deeper vs shallower models at a fixed total parameter count",
        model_size="pretrained LMs in three families of 41M, 134M and 374M parameters", params=374e6,
        quote=("after fine-tuning, deeper models generalize more compositionally than shallower models do, but the "
               "benefit of additional layers diminishes rapidly"),
        statistics=("deep_minus_shallow_acc",)),
    "seq2seq_fails_scan_splits": Anchor(
        citation="Lake & Baroni 2018, ICML (abstract; the numbers of their experiments 2 and 3)",
        metric="exact match on SCAN's add-primitive (jump) and length test splits",
        model_size=("seq2seq RNNs; the overall-best a 2-layer LSTM with 200 units per layer (about 1.3M parameters "
                    "by bindscale's count; the paper gives no count)"), params=1.3e6, number=1.2, unit="%",
        says="1.2% exact match on add-jump (best model on that split); 13.8% on the length split (overall-best model)",
        quote=("when generalization requires systematic compositional skills (as in the \"dax\" example above), "
               "RNNs fail spectacularly"),
        statistics=("largest_model_acc",)),
}

CLAIMS = (
    Claim(
        name="deeper_composes_better_at_equal_params", bounds=(-1.0, 1.0),
        anchor=ANCHORS["deeper_composes_better_at_equal_params"],
        title="At equal parameters, do deeper transformers compose better? (Petty et al.)",
        source=_PETTY, side="scale_suffices",
        statement=("Petty et al. 2024: at a fixed (total) parameter budget, deeper transformers generalize "
                   "compositionally better than shallower ones (with diminishing returns); here, at a fixed "
                   "non-embedding budget (totals reported beside it): on every compositional generalization "
                   "split the deepest model of an iso-parameter family beats the shallowest. (MobileLLM, Liu "
                   "et al. 2024, found deep-and-thin better on zero-shot commonsense and QA: context, not a "
                   "compositional-generalization source.)"),
        statistic=("Per iso-parameter family (a generalization split, every split but 'simple', at one budget): the "
                   "deepest minus the shallowest member's test exact match, mean over seeds, with a bounded "
                   "(Agresti–Caffo-adjusted) Welch–Satterthwaite interval at 1 − 0.05/F for the F families of "
                   "its split (Bonferroni); every family must hold, and the family that decides gives the number "
                   "(the clearest contradiction, else the weakest support)."),
        thresholds={"margin": (-1.0, 1.0), "min_id_acc": (0.0, 1.0), "param_tolerance": (0.0, 1.0)},
        defaults={"margin": 0.0, "min_id_acc": 0.95, "param_tolerance": 0.05},
        gates=(SCAN_GATE,),
        figures=("depth_acc_vs_depth", "depth_acc_vs_params"),
        guards=(".verdicts:planned_family_missing",),
    ),
    Claim(
        name="seq2seq_fails_scan_splits", bounds=(0.0, 1.0),
        anchor=ANCHORS["seq2seq_fails_scan_splits"],
        title="Does scale solve SCAN's add-jump and length splits? (Lake & Baroni)",
        source=_LAKE, side="where_scale_stops",
        statement=("Lake & Baroni 2018: sequence-to-sequence models that learn SCAN's training distribution "
                   "(training accuracy above 99.5% for their overall-best network) fail its add-primitive-jump "
                   "and length splits (add-jump: 1.2% exact match for the best model on that split, the "
                   "overall-best model far lower; length: 13.8% for the overall-best model); here: every "
                   "model at the largest budget of the size sweep, whatever its depth, stays below the study's "
                   "'solved' threshold on both."),
        statistic=("Test exact match of every depth at the largest budget of the size sweep (rotary positions), "
                   "mean over seeds with a bounded (Agresti–Caffo-adjusted) t interval at 1 − 0.05/K for the K "
                   "depths there (Bonferroni), on the length and add-jump splits; every one must fail. The cell "
                   "nearest to being solved (highest upper bound) decides, or the cell solving a split most "
                   "clearly."),
        thresholds={"threshold": (0.0, 1.0), "min_id_acc": (0.0, 1.0)},
        defaults={"threshold": 0.5, "min_id_acc": 0.95},
        gates=(SCAN_GATE,),
        figures=("depth_acc_vs_params", "depth_acc_by_length"),
        guards=(".verdicts:largest_planned_model_missing",),
    ),
)

STUDY = StudyPlugin(
    name="depth",
    kind="depth",
    claims=CLAIMS,
    package=__name__,
    description="SCAN: at equal parameters, do deeper transformers compose better, and does scale solve the "
                "add-jump and length splits? (Petty et al. 2024; Lake & Baroni 2018)",
    # plan.SECONDS_PER_COST: measured on 24 trials of the default study on the 2-core Xeon under load, one
    # torch thread; ~2 s per trial of data generation and scoring.
    seconds_per_cost=(3.2e-6, 2.0),
    seconds_measured=True,
    # Exact match and token accuracy are shares of a test set: a table in percent decides nothing.
    metric_ranges={"acc_*": (0.0, 1.0), "tok_acc_*": (0.0, 1.0)},
)
