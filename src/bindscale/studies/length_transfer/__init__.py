"""The ``length_transfer`` study: does a task extrapolate in length when trained beside a related
longer task, and do the two reuse the same attention heads? After Cai et al. 2025,
"Extrapolation by Association: Length Generalization Transfer in Transformers" (arXiv 2506.09251).

Modules: :mod:`.config` (trial config), :mod:`.tasks` (task generators), :mod:`.trial` (train and
analyse one trial), :mod:`.heads` (teacher-forced scoring, mean-ablation importance, map
similarity), :mod:`.verdicts`, :mod:`.figures`, :mod:`.table`, :mod:`.plan`.

Sides on the answer page: transfer, its growth with size and head reuse are the seed's reading of
Cai et al. — reusable computational scaffolding that scale and training build with no binding
mechanism — so they bear on "scale suffices"; the unrelated control (more training data at long
lengths, but of an unrelated task, gives no extrapolation) marks a limit of data scale alone:
"where scale stops".
"""

from pathlib import Path

from bindscale.study import Claim, StudyPlugin

_CAI = ('Cai et al. 2025, "Extrapolation by Association: Length Generalization Transfer in Transformers" '
        '(arXiv 2506.09251)')
_V = "bindscale.studies.length_transfer.verdicts"
_T = {"margin": (-1.0, 1.0), "min_in_acc": (0.0, 1.0), "min_aux_acc": (0.0, 1.0)}
_D = {"margin": 0.05, "min_in_acc": 0.5, "min_aux_acc": 0.5}

CLAIMS = (
    Claim(
        name="length_transfer_exists", title="Does a related longer task extend the main task's length? (Cai et al.)",
        source=_CAI, side="scale_suffices",
        statement=("Cai et al. 2025: a main task trained only up to length L, co-trained with a related auxiliary "
                   "task seen up to a longer length, reaches higher exact match beyond L (toward the auxiliary's "
                   "length) than the main task trained alone."),
        statistic=("Transfer gain: mean exact match of the main task at lengths L+1..aux_len (each length weighted "
                   "equally) co-trained with its related auxiliary minus trained alone, at the largest model size, "
                   "RoPE, the most common main task; a difference of means over seeds with Welch's interval. NoPE "
                   "and the other sizes and task pairs are reported beside it."),
        rule=f"{_V}:length_transfer_exists", thresholds=_T, defaults=_D,
        figures=("lt_acc_by_length", "lt_gain_vs_size"),
    ),
    Claim(
        name="unrelated_aux_no_transfer", title="Does an unrelated longer task give no transfer? (Cai et al.)",
        source=_CAI, side="where_scale_stops",
        statement=("Cai et al. 2025: co-training with an unrelated auxiliary task seen at longer lengths gives the "
                   "main task no extrapolation beyond L (its gain over the main task alone stays below the margin)."),
        statistic=("Gain of the unrelated control: mean exact match of the main task at lengths L+1..aux_len "
                   "co-trained with an unrelated auxiliary minus trained alone, same cell as the transfer claim "
                   "(largest size, RoPE, most common main task); Welch's interval."),
        rule=f"{_V}:unrelated_aux_no_transfer", thresholds=_T, defaults=_D,
        figures=("lt_acc_by_length",),
    ),
    Claim(
        name="head_reuse_predicts_transfer", title="Does head reuse predict transfer? (Cai et al.)",
        source=_CAI, side="scale_suffices",
        statement=("Cai et al. 2025: tasks that transfer reuse the same attention heads: across co-trained models "
                   "(task pairs and seeds), the similarity of the main and auxiliary tasks' head-importance maps "
                   "correlates positively with the transfer gain."),
        statistic=("Spearman correlation, over every co-trained trial (related and unrelated auxiliaries, all task "
                   "pairs, sizes and position schemes), between the Pearson correlation of the main and auxiliary "
                   "mean-ablation loss-rise maps and the trial's transfer gain (its exact match beyond L minus the "
                   "mean of the main-alone trials of its cell); pairs-bootstrap 95% interval."),
        rule=f"{_V}:head_reuse_predicts_transfer",
        thresholds={"margin": (-1.0, 1.0), "null_band": (-1.0, 1.0), "min_trials": (3.0, 10_000.0)},
        defaults={"margin": 0.0, "null_band": 0.2, "min_trials": 10.0},
        figures=("lt_reuse_scatter", "lt_head_maps"),
    ),
    Claim(
        name="transfer_grows_with_size", title="Does transfer grow with model size? (Cai et al.)",
        source="bindscale's question on the setting of " + _CAI + " (the seed's reading)",
        side="scale_suffices",
        statement=("The transfer gain (co-trained with the related auxiliary minus alone, beyond L) is larger at the "
                   "largest model size than at the smallest."),
        statistic=("Difference in differences: (related − alone) at the largest size minus (related − alone) at the "
                   "smallest, exact match at lengths L+1..aux_len, RoPE, the most common main task; four independent "
                   "seed groups, Welch–Satterthwaite interval."),
        rule=f"{_V}:transfer_grows_with_size", thresholds=_T, defaults=_D,
        figures=("lt_gain_vs_size",),
    ),
)

STUDY = StudyPlugin(
    name="length_transfer",
    kind="length_transfer",
    trial_config="bindscale.studies.length_transfer.config:LengthTransferTrial",
    claims=CLAIMS,
    description="Does a task extrapolate in length beside a related longer task, and do the two reuse the same "
                "heads? (Cai et al. 2025)",
    directory=Path(__file__).parent,
    trainer="bindscale.studies.length_transfer.trial:run_group",
    cost="bindscale.studies.length_transfer.plan:job_cost",
    memory="bindscale.studies.length_transfer.plan:trial_memory_bytes",
    rows="bindscale.studies.length_transfer.verdicts:prepare_rows",
    figure_set="bindscale.studies.length_transfer.figures:figures",
    table="bindscale.studies.length_transfer.table:config_table",
    models="bindscale.studies.length_transfer.trial:untrained_model",
    tasks="bindscale.studies.length_transfer.trial:task_family",
    # A rough fit through four per-trial CPU times (2 x 64: copy alone 14 s, + mqar 27 s, caprev + cap+rev
    # 21 s; 3 x 64 copy + sub ~33 s; 600 steps) on the 2-core Xeon, one torch thread; checked on the default's
    # 48 trials at widths 32 and 64 (L = 4, 1000 steps): ~790 CPU-s measured, 780 estimated.
    seconds_per_cost=(1.67e-10, 9.0),
)
