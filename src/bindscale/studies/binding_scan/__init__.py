"""The ``binding_scan`` study: on SCAN (Lake & Baroni 2018), do transformers with an explicit binding
mechanism compose better than plain ones of equal or more parameters, and how far does scale alone take
the plain ones?

Models (:mod:`bindscale.models.binding`, written from the papers' equations): syntactic attention
(Russin, Jo, O'Reilly & Bengio 2019: attention weights from a contextual syntax stream, values from
context-free semantic embeddings) and the TP-Transformer (Schlag et al. 2019: each head's retrieved value
bound to a role vector by the Hadamard product), beside the plain decoder-only transformer of the depth
study's ladder, every one at a non-embedding budget within 1% of a rung of that ladder
(:mod:`bindscale.models.binding_shapes`).

Claims (both on side *binding_needed*; "supported" means the cited sources' claim holds):

- ``binding_beats_plain_on_scan`` (Russin et al. 2019; Li et al. 2019 as a second source): on every
  generalization split run, a binding model's test exact match exceeds the largest plain model's by the
  margin, at equal or fewer parameters.
- ``scale_partially_overcomes_binding`` (Hosseini et al. 2022): the plain models' test exact match rises
  from the smallest to the largest size but stays below their in-distribution exact match.

Both are gated on in-distribution exact match (:data:`SCAN_GATE`) for every deciding model.

Why a study of its own and not new model kinds inside ``depth``: the answer page and ``bindscale run all``
read one run per study (a study's folder), so claims added to ``depth`` would be decided only by a run of
``depth``'s own files; a study imports nothing of another, so the two read the same SCAN grammar, splits and
scoring from the kit (``scan``, :mod:`bindscale.train.scan`; :mod:`bindscale.train.seqdata`) and train through
the same kit trainer.

Beside them, ``binding_scan-lake2018.yaml`` reproduces the published recurrent baseline once in its own setting
(Lake & Baroni 2018, Experiment 3: an LSTM encoder-decoder with attention, 1.2% on add-jump;
:mod:`bindscale.models.seq2seq_rnn`, :mod:`.rnn_trial`), so that our number stands beside theirs; its records
decide no claim (:func:`.verdicts.prepare_rows` leaves recurrent models out).

Modules: :mod:`.config`, :mod:`.trial`, :mod:`.rnn_trial`, :mod:`.plan`, :mod:`.verdicts`, :mod:`.figures`,
:mod:`.table`.
"""

from bindscale.kit import Anchor, Claim, Gate, StudyPlugin

_RUSSIN = ('Russin, Jo, O\'Reilly & Bengio 2019, "Compositional generalization in a deep seq2seq model by '
           'separating syntax and semantics" (arXiv 1904.09708); Li, Zhao, Wang & Hestness 2019, '
           '"Compositional Generalization for Primitive Substitutions" (EMNLP)')
_HOSSEINI = ('Greff, van Steenkiste & Schmidhuber 2020, "On the Binding Problem in Artificial Neural Networks" '
             '(arXiv 2012.05208: scale can partially overcome the binding problem, the reading tested here); '
             'Hosseini, Vani, Bahdanau, Sordoni & Courville 2022, "On the Compositional Generalization Gap of '
             'In-Context Learning" (BlackboxNLP: the headline number)')

#: The competence gate of both claims: SCAN's in-distribution exact match (as the depth study's).
SCAN_GATE = Gate(
    metric="acc_id", threshold="min_id_acc",
    what="in-distribution exact match (held-out commands of the split's training distribution)",
    source=("Lake & Baroni 2018 (§3, training details): the overall-best network reaches over 99.5% accuracy on "
            "the training commands and each experiment's top performer at least 95%; a split failure says "
            "something only of a model that learned its training distribution"),
)

#: The sources' headlines, shown on the answer page beside the verdicts. The numbers are as the sources'
#: results tables are commonly cited (not re-read from the papers here): hence paraphrase=True.
ANCHORS = {
    "binding_beats_plain_on_scan": Anchor(
        citation="Russin et al. 2019, arXiv 1904.09708 (results on SCAN); Li et al. 2019, EMNLP; Lake & Baroni 2018, ICML",
        metric="exact match on SCAN's add-primitive (jump) test split",
        model_size=("recurrent encoder-decoders with a syntax / semantics separation (Russin et al.) or separate "
                    "primitive and function representations (Li et al.); the papers give no parameter counts"),
        number=91.0, unit="%",
        says=("syntactic attention about 91% exact match on add-jump (mean over runs, high variance); Li et al.'s "
              "CGPS about 99%; standard seq2seq 1.2% (Lake & Baroni's best model on that split)"),
        quote=("separating the syntactic stream that decides where to attend from the semantic stream that decides "
               "what to output lets a seq2seq model generalize to the add-jump split, where standard models fail"),
        paraphrase=True),
    "scale_partially_overcomes_binding": Anchor(
        citation="Hosseini et al. 2022, BlackboxNLP (abstract)",
        metric="relative gap between in-distribution and out-of-distribution accuracy (CFQ, SCAN, GeoQuery)",
        model_size="pretrained LMs of four families (OPT, BLOOM, CodeGen, Codex) used by in-context learning",
        quote="observe a trend of decreasing relative generalization gap as models are scaled up"),
}

CLAIMS = (
    Claim(
        name="binding_beats_plain_on_scan", bounds=(-1.0, 1.0),
        anchor=ANCHORS["binding_beats_plain_on_scan"],
        title="Does an explicit binding mechanism beat a larger plain transformer on SCAN? (Russin et al.; Li et al.)",
        source=_RUSSIN, side="binding_needed",
        statement=("Russin et al. 2019 (syntactic attention, about 91% on add-jump) and Li et al. 2019 (about 99%): "
                   "a sequence model whose attention is computed from syntax while its output is read from "
                   "context-free word meanings generalizes compositionally on SCAN where standard sequence models "
                   "fail (1.2% for Lake & Baroni's best add-jump model). Here, for transformers: on every "
                   "generalization split run (add-jump, around-right, length as a tier has them), a binding model "
                   "(syntactic attention or TP-Transformer) with at most the largest plain model's non-embedding "
                   "parameters beats that plain model's test exact match by more than the margin."),
        statistic=("Per generalization split: a binding model's minus a largest plain model's test exact match "
                   "(means over seeds; Welch interval on cells given one pseudo-seed at 0 and one at 1, Agresti & "
                   "Caffo, at 1 - 0.05/(K*P) for K binding candidates and P plain depths at the largest plain "
                   "budget, Bonferroni), for the binding candidate whose weakest comparison is strongest, against "
                   "the plain depth of that weakest comparison; the split with the lowest lower bound decides (the "
                   "weakest support), or the clearest contradiction."),
        thresholds={"margin": (0.0, 1.0), "param_tolerance": (0.0, 0.5), "min_id_acc": (0.0, 1.0)},
        defaults={"margin": 0.1, "param_tolerance": 0.05, "min_id_acc": 0.95},
        gates=(SCAN_GATE,),
        figures=("binding_acc_vs_params", "binding_id_vs_test"),
        guards=(".verdicts:planned_binding_model_missing",),
    ),
    Claim(
        name="scale_partially_overcomes_binding", bounds=(-1.0, 1.0),
        anchor=ANCHORS["scale_partially_overcomes_binding"],
        title="Does scale close part, but not all, of the plain transformer's gap on SCAN? (Hosseini et al.)",
        source=_HOSSEINI, side="binding_needed",
        statement=("Hosseini et al. 2022: as language models are scaled up, the gap between their in-distribution "
                   "and out-of-distribution (compositional) accuracy shrinks but remains (in-context learning of "
                   "pretrained models, SCAN among the data sets). Here, for plain transformers trained from "
                   "scratch: on every generalization split run, test exact match rises from the smallest to the "
                   "largest model of the size sweep, and the largest stays below its in-distribution exact match "
                   "by more than the gap margin. Not supported, with the finding against binding being needed, "
                   "when the largest model's test accuracy reaches its in-distribution accuracy (scale closed the "
                   "gap); not supported without that reading when the test accuracy does not rise."),
        statistic=("Per generalization split: the rise, largest minus smallest plain model's test exact match "
                   "(Welch interval on cells given one pseudo-seed at 0 and one at 1, Agresti & Caffo), and the gap, "
                   "the largest model's in-distribution minus test exact match (paired over seeds, the test cell "
                   "given the same two pseudo-seeds); a split holds when the rise's interval lies above rise_margin "
                   "and the gap's above gap_margin; the deciding number is the weaker of the two on the weakest "
                   "split (or the one that contradicts)."),
        thresholds={"rise_margin": (0.0, 1.0), "gap_margin": (0.0, 1.0), "min_id_acc": (0.0, 1.0)},
        defaults={"rise_margin": 0.0, "gap_margin": 0.05, "min_id_acc": 0.95},
        gates=(SCAN_GATE,),
        figures=("binding_acc_vs_params", "binding_id_vs_test"),
        guards=(".verdicts:planned_size_sweep_missing",),
    ),
)

STUDY = StudyPlugin(
    name="binding_scan",
    kind="binding_scan",
    claims=CLAIMS,
    package=__name__,
    description="SCAN: do explicit binding mechanisms (syntactic attention, TP-Transformer) beat larger plain "
                "transformers, and how far does scale take the plain ones? (Russin et al. 2019; Hosseini et al. 2022)",
    # The depth study's measured factor (same trainer, same plain transformer, same data; plan.py adds the
    # binding kinds' step and evaluation costs); ~2 s per trial of data generation and scoring.
    seconds_per_cost=(3.2e-6, 2.0),
    # Exact match and token accuracy are shares of a test set: a table in percent decides nothing.
    metric_ranges={"acc_*": (0.0, 1.0), "tok_acc_*": (0.0, 1.0)},
)
