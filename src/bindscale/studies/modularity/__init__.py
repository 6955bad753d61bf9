"""The ``modularity`` study: is a compound task ("same shape AND same colour") solved by separable
subnetworks, one per subroutine? After Lepori, Serre, Pavlick 2023, "Break It Down: Evidence for
Structural Compositionality in Neural Networks" (NeurIPS).

Modules: :mod:`.config` (trial config), :mod:`.tasks` (scenes and datasets), :mod:`.trial`
(train a base network, search its masks), :mod:`.analysis` (SubDiff / AblDiff), :mod:`.verdicts`,
:mod:`.figures`, :mod:`.table`, :mod:`.plan`; the mask search itself is shared
(:mod:`bindscale.studies.modularity.masks`).
"""

from bindscale.kit import Anchor, Claim, Gate, StudyPlugin

_LEPORI = ('Lepori, Serre, Pavlick 2023, "Break It Down: Evidence for Structural Compositionality in Neural '
           'Networks" (NeurIPS)')
_T = {"margin": (0.0, 1.0), "min_base_acc": (0.0, 1.0)}
#: Competence gate: the base networks of every deciding cell learned the compound task. The
#: source analyses a network only once it does, per network ("First, we train a neural network on a
#: compositional task (Inside-Contact), ensuring that it can achieve high accuracy on the task", Fig. 2
#: caption); it gives no number, 0.95 is bindscale's reading of "high accuracy" on a binary task. The same
#: level filters each base network (seeds below it are dropped from the statistic and count against
#: ``min_seeds``), and the gate checks each deciding cell's mean over all its ok seeds.
_GATE = Gate(metric="base_acc_test", threshold="min_base_acc",
             what="base network's compound-task accuracy on held-out scenes of its training distribution",
             source=("Lepori, Serre, Pavlick 2023, Fig. 2: 'First, we train a neural network on a compositional "
                     "task (Inside-Contact), ensuring that it can achieve high accuracy on the task' (no number "
                     "given; 0.95 is bindscale's reading of high accuracy on a binary task, chance 0.5)"))

#: The source's headline (the answer page shows it beside the verdicts): Lepori, Serre, Pavlick's abstract; their results are figures of
#: SubDiff / AblDiff per model and task, with no single number, and the sizes of their models are not cited here.
_LEPORI_CITE = "Lepori, Serre, Pavlick 2023, NeurIPS (abstract)"
_LEPORI_SIZE = "CNNs and transformers on vision and language tasks (sizes not cited here)"
_LEPORI_SAYS = ("Our results demonstrate that models often implement solutions to subroutines via modular subnetworks, "
                "which can be ablated while maintaining the functionality of other subnetworks.")
ANCHORS = {
    "structure_emerges": Anchor(
        citation=_LEPORI_CITE, model_size=_LEPORI_SIZE, quote=_LEPORI_SAYS,
        metric="SubDiff and AblDiff of masked and ablated subnetworks across runs (figures, no single number)",
        statistics=("weakest_structure_effect_net_of_controls",)),
    "structure_grows_with_width": Anchor(
        citation=_LEPORI_CITE, model_size=_LEPORI_SIZE, quote=_LEPORI_SAYS,
        metric="structural compositionality at their models' sizes (growth with width is bindscale's question)"),
    "pretraining_reliability": Anchor(
        citation="Lepori, Serre, Pavlick 2023, NeurIPS", model_size=_LEPORI_SIZE, paraphrase=True,
        # bindscale's paraphrase of their pretraining result: the wording is not checked against the paper.
        quote="pretrained models show structural compositionality more reliably than models trained from scratch",
        metric="structural compositionality after pretraining vs from scratch"),
}

CLAIMS = (
    Claim(
        name="structure_emerges", bounds=(-2.0, 2.0), title="Do subroutines live in separable subnetworks? (Break It Down)",
        anchor=ANCHORS["structure_emerges"],
        source=_LEPORI, side="scale_suffices",
        statement=("Lepori, Serre, Pavlick (2023) claim that a network trained on a compound task implements each "
                   "subroutine in its own subnetwork: across runs, the subnetwork found for a subroutine solves it "
                   "better than the other (mean SubDiff > 0) and ablating it hurts that subroutine more than the "
                   "other (mean AblDiff < 0)."),
        statistic=("The smallest of mean SubDiff, −mean AblDiff, and each of the two net of the untrained-network "
                   "and of the random-mask control (paired within base models), each a mean over (architecture, "
                   "width, pretraining) cells of base-seed means; its interval takes the smallest 95% low end and "
                   "a Bonferroni-adjusted high end."),
        thresholds=_T, defaults={"margin": 0.02, "min_base_acc": 0.95},
        figures=("mod_scores", "mod_accuracies"), retired=("min_fraction",), gates=(_GATE,),
    ),
    Claim(
        name="structure_grows_with_width", bounds=(-1.0, 1.0), own_hypothesis=True, title="Does structural compositionality grow with width? (Break It Down)",
        anchor=ANCHORS["structure_grows_with_width"],
        source="bindscale's question on the setting of " + _LEPORI + " (not a claim of the paper)",
        side="scale_suffices",
        statement=("Not a claim of Lepori, Serre, Pavlick (2023) but this lab's question: the share of runs with "
                   "structural compositionality beyond test-set noise grows from the smallest to the largest width."),
        statistic=("The share of (base model × mask seed) runs structural beyond test-set noise at the largest "
                   "width minus at the smallest, mean over (architecture, pretraining) strata of base-seed means "
                   "(Welch–Satterthwaite interval); the weakest of that difference and the same difference of "
                   "the share net of the untrained-network and of the random-mask control (Bonferroni-adjusted "
                   "high end)."),
        thresholds=_T, defaults={"margin": 0.1, "min_base_acc": 0.95},
        figures=("mod_share_vs_width",), guards=(".verdicts:planned_width_guard",), gates=(_GATE,),
    ),
    Claim(
        name="pretraining_reliability", bounds=(-1.0, 1.0), title="Does ordinary pretraining make it more reliable? (Break It Down)",
        anchor=ANCHORS["pretraining_reliability"],
        source=_LEPORI, side="scale_suffices",
        statement=("Lepori, Serre, Pavlick (2023) claim that pretrained models show structural compositionality more "
                   "reliably than models trained from scratch (here: generic match-count pretraining raises the "
                   "share of runs structural beyond test-set noise)."),
        statistic=("The share of runs structural beyond test-set noise after generic (match-count) pretraining "
                   "minus from scratch, mean over (architecture, width) strata of base-seed means "
                   "(Welch–Satterthwaite interval); the weakest of that difference and the same difference of "
                   "the share net of the untrained-network and of the random-mask control (Bonferroni-adjusted "
                   "high end); subroutine-head pretraining is reported beside it, not deciding."),
        thresholds=_T, defaults={"margin": 0.1, "min_base_acc": 0.95},
        figures=("mod_share_by_pretraining",), gates=(_GATE,),
    ),
)

STUDY = StudyPlugin(
    name="modularity",
    kind="modularity",
    claims=CLAIMS,
    package=__name__,
    description="Are a compound task's subroutines separable subnetworks, more so with width or pretraining? "
                "(Lepori, Serre, Pavlick 2023)",
    figure_set=".figures:modularity_figures",
    # A rough fit through two per-trial CPU times in modularity.yaml's comments (width 16 ~15 s, width 64
    # ~30 s) on the 2-core Xeon, one torch thread.
    seconds_per_cost=(3.3e-10, 11.5),
)
