"""Verdict rules of the ``geometry`` study (Diego-Simón et al., NeurIPS 2024, "A polar coordinate
system represents syntax in large language models"; Hewitt & Manning 2019, "A structural probe for
finding syntax in word representations").

Each claim is named after what its source asserts, so "supported" means the source is right: for
``polar_beats_structural`` Diego-Simón et al.; for ``geometry_grows_with_scale`` bindscale's working hypothesis
(the paper does not assert growth with model size; the claim's ``source`` says so).

Deciding rows: ok trials whose model was trained here (``model.source`` trained or absent), at the
most common value of every other swept setting (training steps, corpus size, learning rate, probe
rank and angular weight: :func:`bindscale.verdicts.engine.restrict_to_mode`). A *cell* is one model
size (``n_params``); its replicates are distinct seeds (repeated records of a seed are averaged).
Each probe is scored at its own best layer chosen on dev sentences, on test sentences, in
PolarProbe's convention (``_pp``: per-sentence LAS with punctuation, the convention of the anchors).

*Estimators chosen on dev data*: with ``probe.inputs: dev`` (the default of every study file) each trial fits the
structural and polar probes twice, on PCA-whitened and on raw activations, for the trained model and for its
untrained twin alike (``probe_layers`` models ``trained`` / ``untrained`` whitened, ``trained_raw`` /
``untrained_raw`` raw). Per model and probe the rules take the (estimator, layer) with the best *dev* LAS
(:func:`.layers.choose`, fixed before any test number is read: the highest dev ``las_pp``, ties to the raw fit —
the sources' estimator, which whitening must beat to be chosen — then to the first layer), and read its test
scores; every estimator's test numbers at its own best dev layer are reported beside the chosen one
(``ctx_[untrained_]{raw_|whiten_}…``, :func:`estimator_report`), and the choice is counted per probe
(``ctx_[untrained_]inputs_{kind}``). Records of a single estimator (``probe.inputs`` whiten or scale, and those made
before the choice) are read at that estimator, the raw fit beside it reported only.

*Contextual layers only*: the rules re-choose each probe's best dev layer among layers ≥ 1 from the
per-layer table every trial records (``probe_layers``), for the trained and for the untrained model.
Layer 0 is the input embedding (``resid.0``; rotary positions act only inside attention), a
word-type vector without context: a probe that wins there reads the lexicon, not a sentence's
syntax, and in the default run it won there in 31 of 32 trials. The scalar ``{kind}_las_pp``
columns (best layer over all layers, 0 included) stay in the details for reference.

Competence gates (:data:`bindscale.studies.geometry.LM_GATE` / ``CHAIN_GATE`` / ``TWIN_GATE``), checked by
the engine on every deciding cell the rules name (:func:`bindscale.kit.deciding_cell`), per model: each trained
LM's next-token loss on held-out test sentences may exceed the grammar's own exact loss on the same sentences by
at most ``max_excess_loss`` nats per token (``lm_excess_loss``, :mod:`.entropy`); the polar probe's UUAS at
its best contextual layer must beat the linear chain's by ``min_uuas_over_chain``
(``ctx_polar_uuas_pp_minus_chain``, joined by :func:`prepare_rows`) — a probe that recovers fewer edges than
"attach each word to the next" reads no tree — and the untrained twin's polar UUAS (each model at its chosen
estimator and layer) by ``min_uuas_over_twin`` (``ctx_polar_uuas_pp_minus_untrained``) — a model that reads no
more of the tree than random weights read has not shown learned syntax. The untrained twins are controls, named as
ungated cells (``control: untrained twin``). A cell that misses a gate makes a decided claim inconclusive.

- ``polar_beats_structural``: decided on the *gold-edge relation accuracy* (:data:`REL`, ``rel_bacc`` of
  :mod:`.scores`: every gold edge's vector read in its gold direction, ``B(h_dep − h_head)``, labelled by its
  nearest relation centroid; balanced over relation types, as PolarProbe's ``evaluate_ang`` scores it). Not LAS:
  LAS ≈ UUAS × label accuracy, so a trained model that finds more of the tree than its twin, labelling no better,
  would pass a LAS rule; the gold-edge accuracy does not move with the tree found. Balanced rather than plain
  ``rel_acc``: it is the authors' own relation metric, and frequent relations a lexicon labels (punctuation,
  determiners) cannot carry it. The structural probe's labels are derived the same way (its own centroids). At the
  largest model, per seed, each probe at its chosen estimator and contextual layer, three parts
  (:func:`_relation_decision`, :data:`PARTS`):

  - ``net`` (:data:`REL_NET`) = (polar − structural of the trained model) − (polar − structural of the
    untrained model with the same initial weights): a gap the untrained model shows as well is not learned;
  - ``own`` (:data:`REL_GAP`) = polar − structural of the trained model: the claim is about the trained model, and a
    twin whose structural probe labels far better than its polar one must not turn a polar deficit into a net gain
    (the role the LAS ratio had before);
  - ``wordpair`` (:data:`WORDPAIR_MARGIN`) = the polar probe's minus the word-pair labeller's
    (:func:`.scores.word_pair_metrics`: each relation from the head and dependent words alone, fit on the same
    fitting sentences' gold edges, scored on the same test gold edges; ``wordpair_rel_bacc`` in every record): a
    probe that labels no better than a lexicon of word pairs has shown no relation coded by geometry.

  Mean over seeds with Student's t interval (:func:`bindscale.verdicts.stats.mean_ci`). Supported when the
  intervals of ``net`` and ``own`` lie above ``margin`` and that of ``wordpair`` above ``wordpair_margin`` (both 0
  by default); not supported when any of the three lies below (each is necessary); inconclusive otherwise, and
  whatever the numbers when the word-pair labeller's score (or any deciding value) is missing or NaN. Inconclusive
  too when a control is none (:func:`_no_control`, :func:`_no_baseline`): the untrained twin's polar or structural
  relation accuracy or its polar UUAS (the twin gate's) exactly 0 in every seed of the largest model (a twin never
  evaluated: "net of the twin" would be the raw number and the twin gate would pass by default); the word-pair
  labeller exactly 0 in every seed (never fitted: beating it beats no baseline), or exactly 1 in every seed or too
  near 1 for any probe to clear ``wordpair_margin`` (:func:`bindscale.kit.no_room`: no room to beat it, so a probe
  below it refutes nothing). Beside it,
  reported and not deciding: the (polar − structural LAS) gap net of the twin (``net_polar_minus_structural_las_pp``)
  and the source's headline, the polar/structural LAS ratio of the trained model (ratio of the seed means,
  Fieller's interval for paired seeds, :func:`_las_ratio`) next to the authors' 70.1/51.1 = 1.37 and their "nearly
  double". Every UUAS, UAS and LAS of both probes is shown beside the linear chain's, and the relation accuracies
  beside the twin's and the word-pair labeller's (``beside_linear_chain``). The same difference at every size, the
  trained and untrained gaps alone, the all-layers gap, the layers chosen and both probes' UUAS/LAS
  with the identity-probe, untrained-model and input-embedding controls are in the details.
- ``geometry_grows_with_scale``: the polar LAS of the trained model minus that of the untrained model
  with the same initial weights (``net_polar_las_pp``, each at its estimator and best contextual layer chosen on
  dev; its gates at the largest model: the chain and the twin), at the
  largest model minus at the smallest, paired by seed (a seed draws the same sentences at every size,
  so the sizes are not independent samples): mean of the per-seed differences with Student's t
  interval (:func:`bindscale.verdicts.stats.mean_ci`) over the seeds present at both sizes, and the net itself at
  the largest model (``net_polar_las_pp_largest_model``, mean and t interval over its seeds;
  :func:`_growth_decision`). Supported when both intervals lie above ``margin`` (LAS points as a share): a net that
  rises to within the margin of the twin (from −0.19 to −0.01, say) is growth of a reading random weights give as
  well, not learned syntax. Not supported when the gain's interval lies below ``margin``, or when the net's at the
  largest model lies below 0 (the trained model below its twin, past every gate: the geometry the claim calls
  learned is measurably absent at the size it is about — evidence against the claim, not a lack of it);
  inconclusive otherwise, and when the twin is no control (its polar LAS exactly 0 in every seed at the smallest or
  the largest model, or its polar UUAS at the largest: :func:`_no_control`). Growth the untrained model shows as well
  (a wider random network already separates word types better) is not learned syntax; the trained
  model's gain alone, the untrained model's, the input embeddings' and the identity probe's are in the
  details. The probe's rank is ``min(rank, d_model)``: with the default rank 32 every default size
  (width 64 and up) gets rank 32; a narrower model (width 16 in some studies' ladders) gets a lower
  rank, so a gain can partly be probe capacity; the details list the rank per size
  (``probe_rank_by_size``) and say when it varies.

Pretrained models (``model.source: pretrained``, the ``geometry-lm`` study file), when the table has no trained
model: ``polar_beats_structural`` per model over its probe-fit units (seeds: each draws the fit and dev sentences
and initialises the probes; test sentences and the untrained twin are fixed), :func:`pretrained_model_verdict`:
the same three parts per unit (each probe at its estimator and best dev layer >= 1, the twin's estimators its own
choice on dev, the word-pair labeller fit on the unit's fit sentences), mean over units with
:func:`bindscale.verdicts.stats.mean_ci`, the same rule; both probes' UUAS must beat the linear chain's by
``min_uuas_over_chain`` and the polar probe's the twin's by ``min_uuas_over_twin`` in each unit (the claim's
``CHAIN_GATE``, ``STRUCT_CHAIN_GATE`` and ``TWIN_GATE``, per unit: a unit that misses is left out, never averaged in);
at least :data:`MIN_UNITS` units left. The claim's verdict is the largest model's (:func:`pretrained_polar_verdict`);
the others are reported beside it. A planned model without an ok trial makes a decided verdict inconclusive
(:func:`lost_pretrained_model`).

Planned sizes (guard :func:`planned_size_guard`, which sees the whole table, failed and diverged
trials too): a verdict decided at a smaller largest size (or, for growth, a larger smallest size) than
the table plans at the deciding settings is inconclusive — the largest model failing must not leave
the claim decided on the next one. A row's size is its ``n_params``, else that of an ok row of the
same shape, else the transformer's count from the shape (:func:`transformer_params`).

Inconclusive, whatever the numbers, when a needed column is missing, a deciding value is NaN or
infinite, fewer than two model sizes are present, a size has fewer than ``MIN_REPLICATES`` distinct
seeds, or the deciding cells are degenerate (:func:`bindscale.verdicts.engine.degenerate`: zero
spread within a cell, one value everywhere, all zero included).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from bindscale.kit import (
    MIN_REPLICATES,
    NAN3,
    at_bound,
    ci_entry,
    deciding_cell,
    decide as _decide,
    gate_filter,
    json_key,
    coerce_numeric,
    degenerate,
    ok_rows,
    restrict_to_mode,
    Verdict,
    fmt,
    metric_table,
    mean_ci,
    mean_diff_ci,
    no_room,
)

from . import CHAIN_GATE, CLAIMS, LM_GATE, STRUCT_CHAIN_GATE, TWIN_GATE
from .config import GeometryTrial
from .grammar import vocabulary
from .layers import choose, estimator_tables
from .scores import PUNCT_CONVENTION

DEFAULTS = {c.name: dict(c.defaults) for c in CLAIMS}
#: Swept settings fixed at their most common value before deciding.
FIXED = ("steps", "n_lm", "lr", "rank", "angular_weight", "heads")
KINDS = ("structural", "polar", "identity")
CONTROL_PREFIXES = {"trained": "", "untrained model": "untrained_", "input embeddings": "embed_"}
#: The input-embedding layer's name in ``probe_layers`` (word-type vectors, no context).
INPUT_LAYER = "0"
#: Per-probe test scores re-read at the best contextual layer (``ctx_{model}{kind}_{metric}``).
CTX_METRICS = ("las_pp", "uuas_pp", "las_hm", "uuas_hm", "uas_pp", "uas_hm", "rel_acc", "rel_bacc")
#: PolarProbe's evaluation comments (Diego-Simón et al. 2024, a 7B model on UD English EWT, test): the anchors
#: the polar/structural LAS ratio is shown beside, and the paper's words for it.
ANCHOR_LAS = {"polar": 0.701, "structural": 0.511}
ANCHOR_RATIO = 0.701 / 0.511
HEADLINE_RATIO = 2.0  # "nearly double"
NET_GAP = "net_polar_minus_structural_las_pp"
CHAIN_MARGIN = "ctx_polar_uuas_pp_minus_chain"
STRUCT_CHAIN_MARGIN = "ctx_structural_uuas_pp_minus_chain"
#: The twin gate's fit (:data:`bindscale.studies.geometry.TWIN_GATE`): the trained model's polar UUAS minus its
#: untrained twin's, each at its own estimator and layer chosen on dev.
TWIN_MARGIN = "ctx_polar_uuas_pp_minus_untrained"
#: The gold-edge relation accuracy the relation verdicts decide on (:mod:`.scores`): balanced, as PolarProbe's
#: ``evaluate_ang`` scores relation types (module docstring: why not ``rel_acc``).
REL = "rel_bacc"
#: The trained model's (polar − structural) gold-edge relation accuracy, the twin's, and the first net of the second.
REL_GAP = f"ctx_polar_minus_structural_{REL}"
UNTRAINED_REL_GAP = f"ctx_untrained_polar_minus_structural_{REL}"
REL_NET = f"net_polar_minus_structural_{REL}"
#: The word-pair labeller's balanced accuracy on the test gold edges (:func:`.scores.word_pair_metrics`), and the
#: trained model's polar probe's minus it.
WORDPAIR = f"wordpair_{REL}"
WORDPAIR_MARGIN = f"ctx_polar_{REL}_minus_wordpair"
#: The deciding statistic of ``polar_beats_structural`` (synthetic and pretrained models alike).
STAT = f"polar_minus_structural_{REL}_net_of_untrained_largest_model"
#: Column prefix of each estimator's own numbers (every estimator reported beside the chosen one): ``ctx_raw_…``
#: (the sources' fit on raw vectors, :data:`.layers.RAW_MODEL`) and ``ctx_whiten_…``; the twin's ``ctx_untrained_raw_…``.
ESTIMATOR_PREFIX = {"scale": "raw_", "whiten": "whiten_"}
RAW_PREFIX = ESTIMATOR_PREFIX["scale"]
RAW_CHAIN_MARGIN = "ctx_raw_polar_uuas_pp_minus_chain"
#: Probe-fit units (seeds) a pretrained model needs for a verdict: the project's bar for a deciding cell.
MIN_UNITS = 8
#: Columns a pretrained model's verdict reads, per probe-fit unit.
PRETRAINED_NEED = ("ctx_polar_las_pp", "ctx_structural_las_pp", "ctx_untrained_polar_las_pp",
                   "ctx_untrained_structural_las_pp", "ctx_polar_uuas_pp", "ctx_structural_uuas_pp",
                   "ctx_untrained_polar_uuas_pp", "chain_uuas_pp", f"ctx_polar_{REL}", f"ctx_structural_{REL}",
                   f"ctx_untrained_polar_{REL}", f"ctx_untrained_structural_{REL}", WORDPAIR)


def _test_scores(tables: Mapping, est: str | None, at: str | None, kind: str, values: tuple[str, ...]) -> dict:
    """:data:`CTX_METRICS` of probe ``kind`` at (estimator, layer) on test, NaN where there is none."""
    test = ((tables.get(est) or {}).get(kind, {}).get(at) or {}).get("test") if at is not None else None
    out = {}
    for m in CTX_METRICS:
        i = values.index(m)
        v = test[i] if test and i < len(test) else None
        out[m] = float(v) if v is not None else np.nan
    return out


def contextual_scores(rows: pd.DataFrame) -> pd.DataFrame:
    """Per row, each probe's test scores at its estimator and best dev layer among layers ≥ 1, from ``probe_layers``.

    Columns ``ctx_{kind}_{metric}`` (trained model) and ``ctx_untrained_{kind}_{metric}`` (untrained
    model), ``ctx_[untrained_]best_layer_{kind}`` and ``ctx_[untrained_]inputs_{kind}`` (the estimator chosen,
    ``whiten`` / ``scale``), for ``kind`` polar / structural and ``metric`` in :data:`CTX_METRICS`; each estimator
    alone beside them, ``ctx_[untrained_]{raw_|whiten_}{kind}_{metric}`` (its own best dev layer); plus the
    differences the rules decide on: ``ctx_polar_minus_structural_las_pp``,
    ``ctx_untrained_polar_minus_structural_las_pp``, :data:`NET_GAP`, ``net_polar_las_pp`` (trained −
    untrained polar LAS), :data:`REL_GAP`, :data:`UNTRAINED_REL_GAP`, :data:`REL_NET`, :data:`WORDPAIR_MARGIN`
    (polar gold-edge relation accuracy − the word-pair labeller's), :data:`CHAIN_MARGIN` (polar UUAS − the
    linear-chain baseline) and :data:`TWIN_MARGIN` (polar UUAS − the untrained twin's). NaN where a row has no
    per-layer table, no untrained model or no contextual layer.

    The choice (:func:`.layers.choose`) reads dev scores only: per model and probe, the (estimator, layer) with the
    best dev LAS in PolarProbe's convention, layer 0 left out, ties to the raw fit. The estimators are the row's
    fits (:func:`.layers.estimator_tables`); the choice is among them when ``probe.inputs`` is ``dev`` (or not
    recorded), else the configured estimator decides and the other is only reported (records from before the
    choice).
    """
    keys, values = GeometryTrial.NESTED_METRICS["probe_layers"]
    cells = rows["probe_layers"] if "probe_layers" in rows else pd.Series([None] * len(rows), index=rows.index)
    inputs = rows["probe.inputs"] if "probe.inputs" in rows else pd.Series([None] * len(rows), index=rows.index)
    out, picks = [], []
    for cell, inp in zip(cells, inputs):
        inp = inp if isinstance(inp, str) else None
        table = metric_table(cell, keys, values) or {}
        rec: dict = {}
        pick: dict = {}
        for model, prefix in (("trained", ""), ("untrained", "untrained_")):
            tables = estimator_tables(table, model, inp)
            own = "scale" if inp == "scale" else "whiten"
            candidates = tables if inp in (None, "dev") else {e: t for e, t in tables.items() if e == own}
            for kind in ("polar", "structural"):
                for est, t in tables.items():  # every estimator alone, reported beside the choice
                    _, at = choose({est: t}, kind, contextual=True)
                    for m, v in _test_scores(tables, est, at, kind, values).items():
                        rec[f"ctx_{prefix}{ESTIMATOR_PREFIX[est]}{kind}_{m}"] = v
                est, at = choose(candidates, kind, contextual=True)
                for m, v in _test_scores(tables, est, at, kind, values).items():
                    rec[f"ctx_{prefix}{kind}_{m}"] = v
                rec[f"ctx_{prefix}best_layer_{kind}"] = float(at) if at is not None and at.isdigit() else np.nan
                pick[f"ctx_{prefix}inputs_{kind}"] = est or ""
        out.append(rec)
        picks.append(pick)
    ctx = pd.DataFrame(out, index=rows.index, dtype=float)
    if ctx.empty:
        return ctx
    for col in [f"ctx_{p}{k}_{m}" for p in ("", "untrained_") for k in ("polar", "structural") for m in CTX_METRICS]:
        if col not in ctx:
            ctx[col] = np.nan
    ctx["ctx_polar_minus_structural_las_pp"] = ctx["ctx_polar_las_pp"] - ctx["ctx_structural_las_pp"]
    ctx["ctx_untrained_polar_minus_structural_las_pp"] = (ctx["ctx_untrained_polar_las_pp"]
                                                          - ctx["ctx_untrained_structural_las_pp"])
    ctx[NET_GAP] = ctx["ctx_polar_minus_structural_las_pp"] - ctx["ctx_untrained_polar_minus_structural_las_pp"]
    ctx["net_polar_las_pp"] = ctx["ctx_polar_las_pp"] - ctx["ctx_untrained_polar_las_pp"]
    ctx[REL_GAP] = ctx[f"ctx_polar_{REL}"] - ctx[f"ctx_structural_{REL}"]
    ctx[UNTRAINED_REL_GAP] = ctx[f"ctx_untrained_polar_{REL}"] - ctx[f"ctx_untrained_structural_{REL}"]
    ctx[REL_NET] = ctx[REL_GAP] - ctx[UNTRAINED_REL_GAP]
    wordpair = pd.to_numeric(rows[WORDPAIR], errors="coerce") if WORDPAIR in rows else np.nan
    ctx[WORDPAIR_MARGIN] = ctx[f"ctx_polar_{REL}"] - wordpair
    chain = pd.to_numeric(rows["chain_uuas_pp"], errors="coerce") if "chain_uuas_pp" in rows else np.nan
    ctx[CHAIN_MARGIN] = ctx["ctx_polar_uuas_pp"] - chain
    ctx[STRUCT_CHAIN_MARGIN] = ctx["ctx_structural_uuas_pp"] - chain
    ctx[TWIN_MARGIN] = ctx["ctx_polar_uuas_pp"] - ctx["ctx_untrained_polar_uuas_pp"]
    for prefix in ("", "untrained_"):
        for ep in ESTIMATOR_PREFIX.values():
            c = f"ctx_{prefix}{ep}"
            if f"{c}polar_uuas_pp" in ctx:
                ctx[f"{c}polar_uuas_pp_minus_chain"] = ctx[f"{c}polar_uuas_pp"] - chain
                ctx[f"{c}polar_minus_structural_las_pp"] = ctx[f"{c}polar_las_pp"] - ctx[f"{c}structural_las_pp"]
                ctx[f"{c}polar_minus_structural_{REL}"] = ctx[f"{c}polar_{REL}"] - ctx[f"{c}structural_{REL}"]
    return pd.concat([ctx, pd.DataFrame(picks, index=rows.index)], axis=1)


def with_contextual(ok: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """``ok`` with :func:`contextual_scores` joined, and why the rules cannot use them (None when they can)."""
    if "probe_layers" not in ok or not ok["probe_layers"].notna().any():
        return ok, ("no per-layer probe table (probe_layers) in the table: the rules choose each probe's layer "
                    "among the contextual layers (≥ 1) and subtract the untrained model, which needs it")
    ctx = contextual_scores(ok)
    out = pd.concat([ok.drop(columns=[c for c in ctx if c in ok]), ctx], axis=1)
    if not out["ctx_untrained_polar_las_pp"].notna().any():
        return out, ("no untrained-model scores in probe_layers (probe.untrained_control off?): the rules subtract "
                     "the untrained model's numbers from the trained model's")
    return out, None


def prepare_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The study's ok rows (:func:`bindscale.kit.ok_rows`) with :func:`contextual_scores` joined, so that the
    claims' gates read ``ctx_polar_uuas_pp_minus_chain`` (the engine reads a gate's metric from these rows)."""
    ok = ok_rows(df)
    if "probe_layers" not in ok or not ok["probe_layers"].notna().any():
        return ok
    return with_contextual(ok)[0]


def _counts(col: pd.Series) -> dict[str, int]:
    return {json_key(k): int(v) for k, v in pd.to_numeric(col, errors="coerce").value_counts().sort_index().items()}


def _by_size(rows: pd.DataFrame, col: str, n_boot: int, seed: int) -> dict:
    """Mean and t interval over seeds of ``col`` per model size (NaN-free columns only)."""
    if col not in rows or not np.isfinite(pd.to_numeric(rows[col], errors="coerce")).all():
        return {}
    return {json_key(s): ci_entry(mean_ci(v, n_boot, seed=seed), v.size)
            for s, v in _cells(coerce_numeric(rows, (col,)), col).items()}


def deciding_rows(ok: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Trained-model rows at the most common value of every other swept setting, and the restriction note."""
    rows = ok
    if "model.source" in rows:
        rows = rows[rows["model.source"].fillna("trained").astype(str) == "trained"]
    return restrict_to_mode(rows, FIXED)


def _cells(rows: pd.DataFrame, col: str) -> dict[float, np.ndarray]:
    """Per model size, one value of ``col`` per distinct seed (a repeated seed's records averaged)."""
    per_seed = rows.groupby(["n_params", "seed"], sort=True)[col].mean().reset_index()
    return {s: g[col].to_numpy(float) for s, g in per_seed.groupby("n_params")}


def _size_cells(rows: pd.DataFrame, cells: Mapping[float, np.ndarray], sizes, gated=None) -> list[dict]:
    """:func:`bindscale.kit.deciding_cell` entries of these sizes, named by the model shape (config columns, which
    failed trials have too) where the table records it, else by ``n_params``; each followed by its untrained
    twin (same trials, ``control: untrained twin``), a control that is not meant to learn (``gated=False``).
    ``gated``: size → the gates (metric names, or True) its trained models must pass; every gate by default."""
    out = []
    for size in sizes:
        at = rows[rows["n_params"] == size]
        # steps too: the smallest size's training-tokens axis (200 steps) is another cell, and its gates must not
        # read those trials (they would lift the 800-step cell's LM excess loss from 0.016 to 0.033)
        shape = {c: at[c].iloc[0] for c in ("layers", "d_model", "steps") if c in at and at[c].nunique() == 1}
        cell = shape or {"n_params": size}
        out.append(deciding_cell(cell, cells[size].size, (gated or {}).get(size, True)))
        out.append(deciding_cell({**cell, "control": "untrained twin"}, cells[size].size, gated=False))
    return out


def _las_ratio(polar: np.ndarray, structural: np.ndarray, n_boot: int = 0, seed: int = 0,
               confidence: float = 0.95) -> tuple[float, float, float]:
    """Polar over structural LAS: the ratio of the means over paired units (seeds, or one model's test
    sentences), with Fieller's interval for a ratio of paired means (Fieller 1954): the ratios ``r`` at which
    the mean of ``polar − r·structural`` is within Student's t (n − 1 degrees of freedom) of 0. Exact for
    normal pairs at any n (a percentile bootstrap covered only 88–90% at 8 seeds in simulation; the test
    checks Fieller's at 8 seeds on normal and skewed pairs). Unbounded (−inf, inf) when the structural
    mean is not itself distinguishable from 0; NaN for fewer than 2 finite pairs. ``n_boot`` / ``seed``:
    unused (kept so the callers read like the other intervals)."""
    from scipy.stats import t as student_t

    pairs = np.column_stack([polar, structural]).astype(float)
    pairs = pairs[np.isfinite(pairs).all(1)]
    n = len(pairs)
    if n < 2:
        return NAN3
    mp, ms = pairs.mean(0)
    if ms <= 0:
        return NAN3
    cov = np.cov(pairs.T, ddof=1) / n
    q = float(student_t.ppf(0.5 + confidence / 2, n - 1)) ** 2
    a, b, c = ms * ms - q * cov[1, 1], mp * ms - q * cov[0, 1], mp * mp - q * cov[0, 0]
    point = float(mp / ms)
    disc = b * b - a * c
    if -1e-12 * b * b < disc < 0:  # rounding of an exactly proportional sample
        disc = 0.0
    if a <= 0 or disc < 0:
        return point, -np.inf, np.inf
    root = float(np.sqrt(disc))
    return point, float((b - root) / a), float((b + root) / a)


def _headline(triple, n: int, unit: str) -> dict:
    """The LAS ratio beside the source's numbers."""
    return {"polar_over_structural_las_pp": ci_entry(triple, n), "units": unit,
            "source_evaluation_ratio": round(ANCHOR_RATIO, 3),
            "source_evaluation_las": dict(ANCHOR_LAS), "source_headline": "polar 'nearly double' the structural "
            "probe's accuracy (x2); the authors' evaluation comments: LAS 70.1 vs 51.1 (x1.37), 7B model, EWT test"}


def _per_seed(rows: pd.DataFrame, col: str, size: float) -> np.ndarray:
    """``col`` per distinct seed at one size (a repeated seed's records averaged), ordered by seed."""
    at = rows[rows["n_params"] == size]
    return at.groupby("seed", sort=True)[col].mean().to_numpy(float)


def _beside_chain(rows: pd.DataFrame) -> dict:
    """Every UUAS, UAS and LAS of both probes (best layer >= 1, test) beside the linear chain's, per model
    size (mean over seeds), both conventions, with UAS and balanced relation accuracy as PolarProbe computes them."""
    out: dict = {}
    for size, at in rows.groupby("n_params"):
        cell: dict = {}
        for m in ("uuas_pp", "uas_pp", "las_pp", "uuas_hm", "uas_hm", "las_hm"):
            entry = {kind: _mean(at, f"ctx_{kind}_{m}") for kind in ("polar", "structural")}
            entry["linear_chain"] = _mean(at, f"chain_{m}")
            cell[m] = entry
        cell["rel_bacc"] = {kind: _mean(at, f"ctx_{kind}_rel_bacc") for kind in ("polar", "structural")}
        cell["rel_bacc"] |= {f"untrained_{kind}": _mean(at, f"ctx_untrained_{kind}_rel_bacc")
                             for kind in ("polar", "structural")}
        cell["rel_bacc"]["word_pair_labeller"] = _mean(at, WORDPAIR)
        out[json_key(size)] = cell
    return out


def _mean(rows: pd.DataFrame, col: str) -> float | None:
    if col not in rows:
        return None
    v = pd.to_numeric(rows[col], errors="coerce").to_numpy(float)
    v = v[np.isfinite(v)]
    return round(float(v.mean()), 6) if v.size else None


def pretrained_report(ok: pd.DataFrame, n_boot: int, seed: int) -> tuple[dict, list[dict], str]:
    """Per pretrained model (``model.source: pretrained``, one trial each): both probes' UUAS / UAS / LAS at their
    best layer >= 1 beside the linear chain's, the polar/structural LAS ratio with Fieller's interval over
    test sentences (:func:`_las_ratio`), balanced relation accuracy; its gate cells (the chain gate only: nothing was trained here);
    and a sentence in words. Such models are reported, not deciding: one trial has no seeds to resample."""
    if "model.source" not in ok:
        return {}, [], ""
    pre = ok[ok["model.source"].astype(str) == "pretrained"]
    out, cells, words = {}, [], []
    for name, at in pre.groupby(pre["model.name"].astype(str) if "model.name" in pre else pd.Series("?", index=pre.index)):
        row = at.iloc[-1]
        get = (lambda c: float(pd.to_numeric(pd.Series([row.get(c)]), errors="coerce").iloc[0]))
        entry: dict = {}
        for m in ("uuas_pp", "uas_pp", "las_pp", "uuas_hm", "uas_hm", "las_hm"):
            entry[m] = {"polar": get(f"ctx_polar_{m}"), "structural": get(f"ctx_structural_{m}"),
                        "linear_chain": get(f"chain_{m}")}
        entry["rel_bacc"] = {"polar": get("ctx_polar_rel_bacc"), "structural": get("ctx_structural_rel_bacc")}
        pol, struc = (np.asarray(row.get(f"{k}_las_pp_by_sentence") if row.get(f"{k}_las_pp_by_sentence") is not None
                                 else [], float) for k in ("polar", "structural"))
        triple = _las_ratio(pol, struc, n_boot, seed) if pol.size == struc.size else NAN3
        entry["headline"] = _headline(triple, int(pol.size), "test sentences")
        margin = get(CHAIN_MARGIN)
        beats = bool(np.isfinite(margin) and margin > 0)
        entry["polar_beats_chain"] = beats
        out[name] = entry
        cells.append(deciding_cell({"model.name": name}, 1, gated=[CHAIN_MARGIN]))
        u = entry["uuas_pp"]
        words.append(f"{name}: polar UUAS {u['polar']:.3f}, structural {u['structural']:.3f}, linear chain "
                     f"{u['linear_chain']:.3f}; LAS polar {entry['las_pp']['polar']:.3f}, structural "
                     f"{entry['las_pp']['structural']:.3f}, chain {entry['las_pp']['linear_chain']:.3f}; LAS ratio "
                     f"{triple[0]:.2f} [{triple[1]:.2f}, {triple[2]:.2f}] over {pol.size} sentences (source: 1.37)"
                     + ("" if beats else " — the polar probe does not beat the chain: it recovered no tree, so the "
                        "claim is not supported on this model"))
    return out, cells, ("pretrained models (reported, not deciding: one trial each has no seeds): " + "; ".join(words)
                        if words else "")


def _las_bound(rows: pd.DataFrame, arms: Mapping[str, tuple[str, float]]) -> str | None:
    """:func:`bindscale.kit.at_bound` on LAS (a share of words, in [0, 1]): arm name → (column, model size)."""
    return at_bound({name: _cells(rows, col)[size] for name, (col, size) in arms.items()})


def _no_control(arms: Mapping[str, np.ndarray]) -> str | None:
    """Why the untrained twin is no control for these of its scores (name → seed values), or None.

    A twin's score missing (NaN or infinite) in a seed, or exactly 0 in every seed (:func:`bindscale.kit.at_bound`
    at the metric's floor), is not a reading of random weights — they find some of the tree and label some edges
    (PolarProbe's random model: UUAS 36.1, LAS 5.7), and no real fit scores exactly 0 on every test sentence of
    every seed — but a twin never evaluated or a broken measurement. Subtracted or gated on, it would make "net of
    the twin" the trained model's raw number and pass the twin gate by default."""
    for name, v in arms.items():
        v = np.asarray(v, float)
        bad = int((~np.isfinite(v)).sum())
        if bad:
            return (f"{name} is missing, NaN or infinite in {bad} of {v.size} seeds: the twin was not measured, and "
                    "a control that was not measured is no control")
        if at_bound({name: v}, low=0.0, high=None):
            return (f"every seed of {name} is exactly 0 ({v.size} seeds): a control at the floor (never evaluated, "
                    "or a broken measurement: random weights read some of the tree and label some edges) is no "
                    "control, and net of it the trained model's raw number would decide")
    return None


def _twin_floor(cols: Mapping[str, tuple[np.ndarray, str]]) -> str | None:
    """:func:`_no_control` on the twin's columns a rule reads: words → (seed values, column)."""
    why = _no_control({f"the untrained twin's {what} ({col})": v for what, (v, col) in cols.items()})
    return f"the untrained twin is no control: {why}" if why else None


#: What the word-pair labeller's score is called in a reason.
WORDPAIR_WORDS = f"the word-pair labeller's gold-edge relation accuracy ({WORDPAIR})"


def _no_baseline(wordpair: np.ndarray, margin: float) -> str | None:
    """Why the word-pair labeller (its seed values) cannot be the baseline the ``wordpair`` part is held against, or
    None.

    At the floor, exactly 0 in every seed (:func:`bindscale.kit.at_bound`): a labeller that was never fitted (or
    whose score was never recorded); a fitted one labels some edges right (the commonest relation alone scores one
    over the number of relation types, balanced), so beating 0 beats no baseline. At the ceiling, exactly 1 in every
    seed, or too near it for any probe to exceed it by ``margin`` (:func:`bindscale.kit.no_room`, which leaves the
    exact ceiling at a margin of 0 to :func:`~bindscale.kit.at_bound`: its room is the ceiling minus the mean, 0
    here, and the rule needs the difference *above* the margin): the two words already fix every relation, no probe
    can label better, and a polar probe below such a labeller refutes nothing — inconclusive, not "not supported".
    """
    v = np.asarray(wordpair, float)
    if at_bound({WORDPAIR_WORDS: v}, low=0.0, high=None):
        return (f"every seed of {WORDPAIR_WORDS} is exactly 0 ({v.size} seeds): a labeller that was never fitted or "
                "recorded (a fitted one labels some edges right; balanced, the commonest relation alone scores one "
                "over the number of relation types), so a probe above it beats no baseline")
    if at_bound({WORDPAIR_WORDS: v}, low=None, high=1.0):
        return (f"every seed of {WORDPAIR_WORDS} is exactly 1 ({v.size} seeds): the two words' identities already "
                "fix every relation and no probe can label the gold edges better: the word-pair part cannot be "
                "measured, and a probe below such a labeller refutes nothing")
    return no_room(v, margin, name=WORDPAIR_WORDS)


def _word_pair_bound(wordpair: np.ndarray, margin: float) -> str | None:
    """:func:`_no_baseline` in a reason's words."""
    why = _no_baseline(wordpair, margin)
    return f"the word-pair labeller is no baseline: {why}" if why else None


def _screen(ok: pd.DataFrame, cols: tuple[str, ...], min_sizes: int = 1) -> tuple[pd.DataFrame | None, dict]:
    """The deciding rows, or None with a reason in the details (missing, NaN, fewer than ``min_sizes``
    model sizes or too few seeds)."""
    need = ("n_params", "seed", *cols)
    details: dict = {"seeds_per_cell": 0, "punctuation_convention": PUNCT_CONVENTION}
    missing = [c for c in need if c not in ok or not ok[c].notna().any()]
    if missing:
        details["reason"] = f"no {', '.join(missing)} in the table: the rule needs {', '.join(need)}"
        return None, details
    rows, note = deciding_rows(coerce_numeric(ok, need))
    details.update(note)
    if rows.empty:
        details["reason"] = "no trained-model trials"
        return None, details
    vals = rows[list(need)].to_numpy(dtype=float)
    bad = int((~np.isfinite(vals)).sum())
    if bad:
        details["reason"] = f"{bad} missing, NaN or infinite values among the deciding trials' {', '.join(need)}"
        return None, details
    sizes = sorted(rows["n_params"].unique())
    counts = rows.groupby("n_params")["seed"].nunique()
    details["seeds_per_cell"] = int(counts.min())
    details["sizes"] = [int(s) for s in sizes]
    if len(sizes) < min_sizes:
        details["reason"] = f"{len(sizes)} model size(s); the rule compares {min_sizes}"
        return None, details
    if details["seeds_per_cell"] < MIN_REPLICATES:
        details["reason"] = f"fewer than {MIN_REPLICATES} distinct seeds at some model size"
        return None, details
    return rows, details


def _controls(rows: pd.DataFrame, n_boot: int, seed: int) -> dict:
    """Per model size: mean test UUAS/LAS (both conventions) of every probe, for the model and each control."""
    out: dict = {}
    for name, prefix in CONTROL_PREFIXES.items():
        for kind in KINDS:
            for m in ("uuas_pp", "las_pp", "uuas_hm", "las_hm"):
                col = f"{prefix}{kind}_{m}"
                if col not in rows:
                    continue
                vals = pd.to_numeric(rows[col], errors="coerce")
                out.setdefault(name, {}).setdefault(kind, {})[m] = {
                    json_key(s): float(vals[rows["n_params"] == s].mean()) for s in sorted(rows["n_params"].unique())}
    for m in ("uuas_pp", "uuas_hm"):
        if f"chain_{m}" in rows:
            out.setdefault("linear chain baseline", {})[m] = float(pd.to_numeric(rows[f"chain_{m}"], errors="coerce").mean())
    return out


#: The three parts of the relation rule (:func:`_relation_decision`): name, the statistic in words, its column, the
#: threshold it is held against.
PARTS = (("net", ("(polar − structural gold-edge relation accuracy) of the trained model minus the same of its "
                  "untrained twin"), REL_NET, "margin"),
         ("own", "the trained model's own polar − structural gold-edge relation accuracy", REL_GAP, "margin"),
         ("wordpair", "the polar probe's gold-edge relation accuracy minus the word-pair labeller's", WORDPAIR_MARGIN,
          "wordpair_margin"))


def _relation_decision(values: Mapping[str, np.ndarray], p: Mapping, n_boot: int = 0,
                       seed: int = 0) -> tuple[str, dict, str]:
    """The relation rule on per-unit values of the three :data:`PARTS` (seeds of the largest model, or a
    pretrained model's probe-fit units): each part's mean with :func:`bindscale.verdicts.stats.mean_ci` held
    against its threshold by :func:`bindscale.kit.decide`. Supported when every part's interval lies above its
    threshold; not supported when any part's lies below (each part is necessary to the claim); inconclusive
    otherwise. Returns (verdict, ``{part: ci entry}``, the parts in words)."""
    triples = {name: mean_ci(values[name], n_boot, seed=seed) for name, *_ in PARTS}
    said = {name: _decide(triples[name], float(p[thr])) for name, _, _, thr in PARTS}
    if "not_supported" in said.values():
        verdict = "not_supported"
    elif all(v == "supported" for v in said.values()):
        verdict = "supported"
    else:
        verdict = "inconclusive"
    where = {"supported": "above", "not_supported": "below"}
    words = "; ".join(f"{what} {t[0]:+.3f} [{t[1]:+.3f}, {t[2]:+.3f}], {where.get(said[name], 'across')} "
                      f"{thr} {float(p[thr]):g}" for (name, what, _, thr), t in zip(PARTS, triples.values()))
    return verdict, {name: ci_entry(t, int(np.size(values[name]))) for name, t in triples.items()}, words


def estimator_report(units: pd.DataFrame, n_boot: int = 0, seed: int = 0) -> tuple[dict, str]:
    """Every estimator's test numbers beside the chosen one, over these units (one row per seed or probe-fit unit):
    per model (trained, untrained twin) and estimator (raw, whitened), each probe at that estimator's own best dev
    layer >= 1: the polar UUAS − chain, polar − structural LAS and gold-edge relation accuracy (mean and t
    interval), the polar UUAS and both relation accuracies (means); and how often each estimator was chosen per
    probe. With a clause for a reason; ``({}, "")`` when the units carry one estimator only (``probe.inputs``
    whiten or scale) or any of these numbers is NaN. Reported, never deciding: the choice is made on dev data."""
    models = {"trained": "", "untrained twin": "untrained_"}
    out: dict = {}
    said = []
    for model, prefix in models.items():
        entry: dict = {}
        for est, ep in ESTIMATOR_PREFIX.items():
            c = f"ctx_{prefix}{ep}"
            cols = {"polar_uuas_pp_minus_chain": f"{c}polar_uuas_pp_minus_chain",
                    "polar_minus_structural_las_pp": f"{c}polar_minus_structural_las_pp",
                    f"polar_minus_structural_{REL}": f"{c}polar_minus_structural_{REL}"}
            means = {"polar_uuas_pp": f"{c}polar_uuas_pp", f"polar_{REL}": f"{c}polar_{REL}",
                     f"structural_{REL}": f"{c}structural_{REL}"}
            if not all(col in units for col in (*cols.values(), *means.values())):
                continue
            vals = {k: pd.to_numeric(units[col], errors="coerce").to_numpy(float) for k, col in (cols | means).items()}
            if not all(v.size and np.isfinite(v).all() for v in vals.values()):
                continue
            entry[est] = ({k: ci_entry(mean_ci(vals[k], n_boot, seed=seed), vals[k].size) for k in cols}
                          | {k: round(float(vals[k].mean()), 6) for k in means})
        if len(entry) < 2:
            return {}, ""
        chosen = {}
        for kind in ("polar", "structural"):
            col = f"ctx_{prefix}inputs_{kind}"
            if col in units:
                chosen[kind] = {str(k): int(v) for k, v in units[col].astype(str).value_counts().sort_index().items()}
        entry["chosen_on_dev"] = chosen
        out[model] = entry
        n = len(units)
        picks = ", ".join(f"{'raw' if e == 'scale' else 'whitened'} {k}/{n}" for e, k in chosen.get("polar", {}).items())
        nums = ", ".join(f"{'raw' if e == 'scale' else 'whitened'}: polar UUAS {entry[e]['polar_uuas_pp']:.3f}, "
                         f"polar/structural relation accuracy {entry[e][f'polar_{REL}']:.3f} / "
                         f"{entry[e][f'structural_{REL}']:.3f}" for e in ("scale", "whiten"))
        said.append(f"{model} (polar probe's estimator chosen on dev: {picks}; on test {nums})")
    return out, "; every estimator beside the chosen one (reported, not deciding): " + "; ".join(said)


def polar_beats_structural(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """Diego-Simón et al. 2024: the polar probe labels relations that the structural probe does not, beyond what the
    untrained twin and the two words' identities give (see the module docstring)."""
    p = {**DEFAULTS["polar_beats_structural"], **p}
    stat = STAT
    ok, why = with_contextual(ok)
    if why:
        return _without_trained(ok, {"seeds_per_cell": 0, "reason": why}, stat, n_boot, seed)
    if _pretrained(ok) is not None and deciding_rows(ok)[0].empty:
        return pretrained_polar_verdict(ok, p, n_boot, seed)
    rows, details = _screen(ok, (REL_NET, REL_GAP, WORDPAIR_MARGIN, f"ctx_polar_{REL}", f"ctx_structural_{REL}",
                                 f"ctx_untrained_polar_{REL}", f"ctx_untrained_structural_{REL}", WORDPAIR,
                                 NET_GAP, "ctx_polar_las_pp", "ctx_structural_las_pp", CHAIN_MARGIN, TWIN_MARGIN))
    if rows is None:
        return _without_trained(ok, details, stat, n_boot, seed)
    cells = _cells(rows, REL_NET)
    largest = max(cells)
    diff = cells[largest]
    parts = {name: _cells(rows, col)[largest] for name, _, col, _ in PARTS}
    details["by_size"] = {json_key(s): ci_entry(mean_ci(v, n_boot, seed=seed), v.size) for s, v in cells.items()}
    details["rel_trained_gap_by_size"] = _by_size(rows, REL_GAP, n_boot, seed)
    details["rel_untrained_gap_by_size"] = _by_size(rows, UNTRAINED_REL_GAP, n_boot, seed)
    details["polar_rel_minus_word_pairs_by_size"] = _by_size(rows, WORDPAIR_MARGIN, n_boot, seed)
    details["las_gap_net_of_untrained_by_size"] = _by_size(rows, NET_GAP, n_boot, seed)
    details["las_trained_gap_by_size"] = _by_size(rows, "ctx_polar_minus_structural_las_pp", n_boot, seed)
    details["las_untrained_gap_by_size"] = _by_size(rows, "ctx_untrained_polar_minus_structural_las_pp", n_boot, seed)
    details["all_layers_gap_by_size"] = _by_size(rows, "polar_minus_structural_las_pp", n_boot, seed)
    details["by_size_hewitt_manning_convention_all_layers"] = _by_size(rows, "polar_minus_structural_las_hm",
                                                                       n_boot, seed)
    details["controls"] = _controls(rows, n_boot, seed)
    details["largest_model_params"] = int(largest)
    big = rows[rows["n_params"] == largest]
    details["best_layers_largest_model"] = {  # contextual layer (≥ 1) -> trials choosing it, per probe
        kind: _counts(big[f"ctx_best_layer_{kind}"]) for kind in ("polar", "structural")}
    details["best_layers_all_layers_largest_model"] = {  # the trial's own choice, layer 0 allowed
        kind: _counts(big[f"best_layer_{kind}"]) for kind in ("polar", "structural") if f"best_layer_{kind}" in big}
    if "best_layer_polar" in rows:
        details["share_of_trials_whose_polar_probe_wins_at_the_input_embeddings"] = float(
            (pd.to_numeric(rows["best_layer_polar"], errors="coerce") == 0).mean())
    chain = _cells(rows, CHAIN_MARGIN)[largest]
    chain_ci = mean_ci(chain, n_boot, seed=seed)
    twin_ci = mean_ci(_cells(rows, TWIN_MARGIN)[largest], n_boot, seed=seed)
    las_gap = mean_ci(_cells(rows, NET_GAP)[largest], n_boot, seed=seed)
    ratio = _las_ratio(_per_seed(rows, "ctx_polar_las_pp", largest), _per_seed(rows, "ctx_structural_las_pp", largest),
                       n_boot, seed)
    details["headline"] = _headline(ratio, int(diff.size), "seeds (paired: both probes of one model)")
    details["las_gap_net_of_untrained_largest_model"] = ci_entry(las_gap, int(diff.size))
    details["beside_linear_chain"] = _beside_chain(rows)
    details["polar_uuas_pp_minus_chain_largest_model"] = ci_entry(chain_ci, chain.size)
    details["polar_uuas_pp_minus_untrained_largest_model"] = ci_entry(twin_ci, chain.size)
    details["polar_uuas_by_size_vs_chain"] = {
        "polar_uuas_pp": _by_size(rows, "ctx_polar_uuas_pp", n_boot, seed),
        "polar_uuas_hm": _by_size(rows, "ctx_polar_uuas_hm", n_boot, seed),
        "chain_uuas_pp": float(pd.to_numeric(rows["chain_uuas_pp"], errors="coerce").mean()),
        "chain_uuas_hm": float(pd.to_numeric(rows["chain_uuas_hm"], errors="coerce").mean())
        if "chain_uuas_hm" in rows else float("nan")}
    wp = {k: _mean(big, f"wordpair_{k}") for k in ("rel_acc", "rel_bacc", "pair_share", "dependent_share")}
    details["word_pair_labeller_largest_model"] = {f"wordpair_{k}": v for k, v in wp.items()} | {
        f"polar_{REL}": _mean(big, f"ctx_polar_{REL}"), f"structural_{REL}": _mean(big, f"ctx_structural_{REL}"),
        "polar_rel_acc": _mean(big, "ctx_polar_rel_acc")}
    # The trained LMs' cell: the loss gate, the polar probe's chain gate and the twin gate (the structural probe's
    # chain gate is the pretrained models', STRUCT_CHAIN_GATE).
    details["deciding_cells"] = _size_cells(rows, cells, [largest],
                                            gated={largest: [LM_GATE.metric, CHAIN_MARGIN, TWIN_MARGIN]})
    # Both probes' relation accuracy at 0 (or 1) in every seed of the largest model: the floor (ceiling) decides.
    why = (_las_bound(rows, {"the polar probe's gold-edge relation accuracy": (f"ctx_polar_{REL}", largest),
                             "the structural probe's gold-edge relation accuracy": (f"ctx_structural_{REL}", largest)})
           or degenerate([diff]) or degenerate([parts["wordpair"]])
           or degenerate([cells[largest], *(c for c in cells.values())]))
    if why:
        details["reason"] = f"degenerate deciding cells: {why}"
        return Verdict(stat, "inconclusive", NAN3, len(diff), details)
    # The controls the parts are net of: a twin at the floor (or unmeasured) and a word-pair labeller at the floor
    # or the ceiling are no controls; the claim is decided against neither.
    ctrl = {c: _cells(rows, c)[largest] for c in (f"ctx_untrained_polar_{REL}", f"ctx_untrained_structural_{REL}",
                                                   "ctx_untrained_polar_uuas_pp", WORDPAIR)}
    why = (_twin_floor({what: (ctrl[col], col) for what, col in (
               ("polar probe's gold-edge relation accuracy", f"ctx_untrained_polar_{REL}"),
               ("structural probe's gold-edge relation accuracy", f"ctx_untrained_structural_{REL}"),
               ("polar UUAS (the twin gate's)", "ctx_untrained_polar_uuas_pp"))})
           or _word_pair_bound(ctrl[WORDPAIR], float(p["wordpair_margin"])))
    if why:
        details["reason"] = f"at the largest model ({int(largest):,} parameters, {diff.size} seeds) {why}: inconclusive"
        return Verdict(stat, "inconclusive", NAN3, len(diff), details)
    verdict, entries, words = _relation_decision(parts, p, n_boot, seed)
    details["parts"] = entries
    triple = (entries["net"]["value"], entries["net"]["ci_low"], entries["net"]["ci_high"])
    u = {k: {a: (f"{x:.3f}" if x is not None else "n/a") for a, x in v.items()}
         for k, v in details["beside_linear_chain"][json_key(largest)].items()}
    details["reason"] = (
        f"gold-edge relation accuracy ({REL}: balanced, PolarProbe's evaluate_ang), each probe at its estimator and "
        f"best dev layer among layers ≥ 1, at the largest model ({int(largest):,} parameters) over {diff.size} seeds "
        f"— polar {u['rel_bacc']['polar']}, structural {u['rel_bacc']['structural']}; untrained twin polar "
        f"{u['rel_bacc']['untrained_polar']}, structural {u['rel_bacc']['untrained_structural']}; word-pair labeller "
        f"{u['rel_bacc']['word_pair_labeller']}: {words}; supported when all three lie above their thresholds, not "
        f"supported when one lies below. Reported, not deciding: (polar − structural LAS) net of the twin "
        f"{las_gap[0]:+.3f} [{las_gap[1]:+.3f}, {las_gap[2]:+.3f}], polar/structural LAS ratio {ratio[0]:.2f} "
        f"[{ratio[1]:.2f}, {ratio[2]:.2f}] (source: 'nearly double', its evaluation 70.1/51.1 = {ANCHOR_RATIO:.2f}); "
        f"UUAS polar {u['uuas_pp']['polar']}, structural {u['uuas_pp']['structural']}, linear chain "
        f"{u['uuas_pp']['linear_chain']}; polar UUAS − chain {chain_ci[0]:+.3f} [{chain_ci[1]:+.3f}, "
        f"{chain_ci[2]:+.3f}], − untrained twin's {twin_ci[0]:+.3f} [{twin_ci[1]:+.3f}, {twin_ci[2]:+.3f}] (the "
        f"claim's gates)")
    twin = {c: float(pd.to_numeric(big[c], errors="coerce").mean()) for c in
            ("ctx_untrained_polar_uuas_pp", "ctx_untrained_polar_las_pp", "ctx_untrained_structural_las_pp") if c in big}
    if len(twin) == 3:
        details["untrained_twin_largest_model"] = twin
        details["reason"] += (f"; its untrained control (same initial weights): polar UUAS "
                              f"{fmt(twin['ctx_untrained_polar_uuas_pp'])}, LAS polar "
                              f"{fmt(twin['ctx_untrained_polar_las_pp'])} / structural "
                              f"{fmt(twin['ctx_untrained_structural_las_pp'])}")
    est, words = estimator_report(_per_unit(big), n_boot, seed)
    if est:
        details["estimators_largest_model"] = est
        details["reason"] += words
    return Verdict(stat, verdict, triple, len(diff), details)


def _per_unit(rows: pd.DataFrame) -> pd.DataFrame:
    """The ``ctx_`` columns per unit (seed): a unit's repeated records averaged, its chosen estimators (strings)
    taken from its first record."""
    cols = [c for c in rows.columns if c.startswith("ctx_")]
    return rows.groupby("seed", sort=True).agg(
        {c: "mean" if pd.api.types.is_numeric_dtype(rows[c]) else "first" for c in cols})


def _pretrained(ok: pd.DataFrame) -> pd.DataFrame | None:
    """The ok rows of pretrained models (``model.source: pretrained``), or None when there are none."""
    if "model.source" not in ok or "model.name" not in ok:
        return None
    pre = ok[ok["model.source"].astype(str) == "pretrained"]
    return pre if not pre.empty else None


def pretrained_model_verdict(rows: pd.DataFrame, p: Mapping, name: str) -> dict:
    """The polar-beats-structural verdict for one pretrained model over its probe-fit units (seeds).

    Unit (one ok trial of one seed; repeated records of a seed averaged), each probe at its estimator and best dev
    layer among layers >= 1 (:func:`.layers.choose`: dev LAS, PolarProbe's convention; raw or whitened inputs,
    ties to raw), on the test sentences (the same for every seed), gold-edge relation accuracy :data:`REL`:

    - ``net`` (:data:`REL_NET`): (polar − structural of the pretrained model) − (polar − structural of its
      untrained twin: the same architecture with random weights, its own estimator chosen on dev);
    - ``own`` (:data:`REL_GAP`): polar − structural of the pretrained model;
    - ``wordpair`` (:data:`WORDPAIR_MARGIN`): the polar probe's minus the word-pair labeller's
      (:func:`.scores.word_pair_metrics`, fit on the unit's fit sentences).

    Diego-Simón et al. 2024 compare against a random model; Hewitt & Manning 2019 against the linear chain.

    Interval: mean over units with :func:`bindscale.verdicts.stats.mean_ci` (Student's t with Hall's skewness correction).
    Not scipy.stats.bootstrap: at 8 units its BCa and its percentile intervals each covered 0.88 of 95% in a
    simulation of this statistic (normal and Gamma-skewed unit noise, 400 draws each), the t interval 0.95 and 0.94
    (2000 draws; tests/studies/geometry/test_pretrained_verdict.py checks it). Beside
    it, reported and not deciding: the (polar − structural LAS) gap net of the twin and the polar/structural LAS
    ratio of the unit means with Fieller's interval over paired units (:func:`_las_ratio`).

    Gates (:data:`bindscale.studies.geometry.CHAIN_GATE`, ``STRUCT_CHAIN_GATE`` and ``TWIN_GATE``): in each unit,
    each probe's UUAS at its layer minus the linear chain's (each word attached to the next) on the same test
    sentences at least ``p["min_uuas_over_chain"]``, for the polar *and* the structural probe (a probe that
    recovers no more of the tree than the chain reads no tree, and its labels against the other's say nothing),
    and the polar probe's UUAS minus its untrained twin's at least ``p["min_uuas_over_twin"]``. Per unit, not over
    their mean: the units that miss are left out by the engine's own filter (:func:`bindscale.kit.gate_filter`, the
    claim's gates; for the deciding model the engine applies the same gates again and counts the lost units
    against ``min_seeds``), and the verdict needs :data:`MIN_UNITS` units left.

    Rule (:func:`_relation_decision`): supported when the intervals of ``net`` and ``own`` lie above ``p["margin"]``
    and that of ``wordpair`` above ``p["wordpair_margin"]``; not supported when any lies below; inconclusive
    otherwise, and whatever the numbers when a column is missing, a unit's value is NaN or infinite (the word-pair
    labeller's included), fewer than :data:`MIN_UNITS` units are present, the units are degenerate (no spread, all
    zero: :func:`bindscale.kit.degenerate`; every relation accuracy 0 or 1: :func:`bindscale.kit.at_bound`), a
    control is none (the twin's relation accuracies or polar UUAS exactly 0 in every unit, :func:`_no_control`; the
    word-pair labeller exactly 0 or 1 in every unit or without room below 1, :func:`_no_baseline`) or a probe misses
    a gate.

    Returns:
        ``{"verdict", "value" (ci entry of ``net``), "n_units", "n_params", "label", "reason", ...numbers}``
        (plain JSON-able values; ``label`` is the model's description from its files, ``n_params`` its count).
    """
    level, twin_level = float(p["min_uuas_over_chain"]), float(p["min_uuas_over_twin"])
    first = lambda c: (str(rows[c].dropna().iloc[0]) if c in rows and rows[c].notna().any() else None)  # noqa: E731
    label = first("model_label") or name
    size = pd.to_numeric(rows["n_params"], errors="coerce").max() if "n_params" in rows else np.nan
    out: dict = {"label": label, "n_params": int(size) if np.isfinite(size) else None, "n_units": 0,
                 "verdict": "inconclusive", "value": ci_entry(NAN3, 0)}
    who = f"{label}" + (f", {int(size):,} parameters" if np.isfinite(size) else "")
    missing = [c for c in ("seed", *PRETRAINED_NEED) if c not in rows or not rows[c].notna().any()]
    if missing:
        out["reason"] = f"{who}: no {', '.join(missing)} in the table (the rule needs each probe's per-layer scores, " \
                        "the untrained twin's, the linear chain's and the word-pair labeller's): inconclusive"
        return out
    decide_cols = [NET_GAP, REL_NET, REL_GAP, WORDPAIR_MARGIN, CHAIN_MARGIN, STRUCT_CHAIN_MARGIN, TWIN_MARGIN]
    num = coerce_numeric(rows, ("seed", *PRETRAINED_NEED, *decide_cols))
    units = num.groupby("seed", sort=True)[[*PRETRAINED_NEED, *decide_cols]].mean()
    out["n_units"] = n = int(len(units))
    out["seeds"] = [json_key(x) for x in units.index]
    bad = int((~np.isfinite(units.to_numpy(float))).any(axis=1).sum())
    if bad:
        out["reason"] = (f"{who}: {bad} of {n} probe-fit units (seeds) have a missing, NaN or infinite score "
                         "among the probes', the untrained twin's, the chain's or the word-pair labeller's: "
                         "inconclusive")
        return out
    # The gates, per unit and through the engine's own filter (the claim's CHAIN_GATE, STRUCT_CHAIN_GATE and
    # TWIN_GATE, the same the engine applies to the deciding model's cell): a unit whose polar or structural probe
    # does not beat the linear chain read no tree, one whose polar probe does not beat the untrained twin's read
    # none the architecture does not give; it is left out like a lost seed, never averaged with the units that did.
    gates = (CHAIN_GATE, STRUCT_CHAIN_GATE, TWIN_GATE)
    every = units
    kept, lost = gate_filter(units.reset_index().assign(**{"model.name": name}),
                             [deciding_cell({"model.name": name}, n, gated=[g.metric for g in gates])], gates, p)
    units = units[units.index.isin(kept["seed"])]
    over_all = {k: ci_entry(mean_ci(every[c].to_numpy(float)), n)
                for k, c in (("polar", CHAIN_MARGIN), ("structural", STRUCT_CHAIN_MARGIN), ("twin", TWIN_MARGIN))}
    out["uuas_minus_chain"] = {k: over_all[k] for k in ("polar", "structural")}  # every unit, those that missed too
    out["polar_uuas_minus_untrained"] = over_all["twin"]
    n_lost = n - int(len(units))
    out["beats_chain"] = not any(not g.passes(float(v), level) for g in gates[:2] for v in every[g.metric])
    out["beats_twin"] = not any(not TWIN_GATE.passes(float(v), twin_level) for v in every[TWIN_GATE.metric])
    if n_lost:
        by_probe = {k: int(sum(not g.passes(float(v), level) for v in every[g.metric]))
                    for k, g in (("polar", CHAIN_GATE), ("structural", STRUCT_CHAIN_GATE))}
        by_twin = int(sum(not TWIN_GATE.passes(float(v), twin_level) for v in every[TWIN_GATE.metric]))
        out["units_below_chain"] = {"lost": n_lost, "of": n, **by_probe, "twin": by_twin}
        out["seeds_below_chain"] = [json_key(x) for x in every.index if x not in units.index]
        pieces = []
        if any(by_probe.values()):
            missed_words = " and ".join(f"the {k} probe in {c}" for k, c in by_probe.items() if c)
            pieces.append(f"do not beat the linear chain by {level:g} UUAS ({missed_words}; UUAS − chain over every "
                          f"unit: polar {over_all['polar']['value']:+.3f}, structural "
                          f"{over_all['structural']['value']:+.3f})")
        if by_twin:
            pieces.append(f"do not beat the untrained twin by {twin_level:g} UUAS (the polar probe in {by_twin}; "
                          f"its UUAS − the twin's over every unit {over_all['twin']['value']:+.3f})")
        chain_words = (f"{n_lost} of {n} units " + " and ".join(pieces) + ": such a probe reads no tree (or none "
                       "that random weights do not give), so those units are left out (the claim's gates, per unit)")
    n_all = n
    out["n_units"] = n = int(len(units))
    out["seeds"] = [json_key(x) for x in units.index]
    if n_lost and n < MIN_UNITS:
        mean_all = {c: float(every[c].mean()) for c in every.columns}
        out["reason"] = (f"{who}: {n_all} probe-fit unit(s) (seeds); {chain_words}; {n} remain and a verdict needs "
                         f"{MIN_UNITS} (over every unit: UUAS "
                         f"polar {fmt(mean_all['ctx_polar_uuas_pp'])}, structural "
                         f"{fmt(mean_all['ctx_structural_uuas_pp'])}, linear chain {fmt(mean_all['chain_uuas_pp'])}, "
                         f"untrained twin's polar {fmt(mean_all['ctx_untrained_polar_uuas_pp'])}): "
                         "they decide nothing: inconclusive")
        return out
    mean = {c: ci_entry(mean_ci(units[c].to_numpy(float)), n) for c in units.columns}
    out["per_unit_means"] = mean
    ctx_units = _per_unit(rows[pd.to_numeric(rows["seed"], errors="coerce").isin(units.index)])
    est, est_words = estimator_report(ctx_units)
    if est:
        out["estimators"] = est
    out["trained_gap"] = ci_entry(mean_ci((units["ctx_polar_las_pp"] - units["ctx_structural_las_pp"]).to_numpy()), n)
    out["untrained_gap"] = ci_entry(mean_ci((units["ctx_untrained_polar_las_pp"]
                                             - units["ctx_untrained_structural_las_pp"]).to_numpy()), n)
    numbers = (f"UUAS polar {fmt(mean['ctx_polar_uuas_pp']['value'])}, structural "
               f"{fmt(mean['ctx_structural_uuas_pp']['value'])}, linear chain {fmt(mean['chain_uuas_pp']['value'])}, "
               f"untrained twin's polar {fmt(mean['ctx_untrained_polar_uuas_pp']['value'])}; gold-edge relation "
               f"accuracy ({REL}) polar {fmt(mean[f'ctx_polar_{REL}']['value'])}, structural "
               f"{fmt(mean[f'ctx_structural_{REL}']['value'])}, untrained twin polar "
               f"{fmt(mean[f'ctx_untrained_polar_{REL}']['value'])} / structural "
               f"{fmt(mean[f'ctx_untrained_structural_{REL}']['value'])}, word-pair labeller "
               f"{fmt(mean[WORDPAIR]['value'])}; LAS polar {fmt(mean['ctx_polar_las_pp']['value'])}, structural "
               f"{fmt(mean['ctx_structural_las_pp']['value'])}; untrained twin LAS polar "
               f"{fmt(mean['ctx_untrained_polar_las_pp']['value'])}, structural "
               f"{fmt(mean['ctx_untrained_structural_las_pp']['value'])}{est_words}")
    if n < MIN_UNITS:
        out["reason"] = f"{who}: {n} probe-fit unit(s) (seeds); a verdict needs {MIN_UNITS} ({numbers}): inconclusive"
        return out
    parts = {name: units[col].to_numpy(float) for name, _, col, _ in PARTS}
    why = (at_bound({"the polar probe's gold-edge relation accuracy": units[f"ctx_polar_{REL}"].to_numpy(float),
                     "the structural probe's gold-edge relation accuracy":
                         units[f"ctx_structural_{REL}"].to_numpy(float)})
           or degenerate([parts["net"]]) or degenerate([parts["wordpair"]]))
    if why:
        out["reason"] = f"{who}: degenerate units: {why} ({numbers}): inconclusive"
        return out
    control = (_twin_floor({what: (units[col].to_numpy(float), col) for what, col in (
                   ("polar probe's gold-edge relation accuracy", f"ctx_untrained_polar_{REL}"),
                   ("structural probe's gold-edge relation accuracy", f"ctx_untrained_structural_{REL}"),
                   ("polar UUAS (the twin gate's)", "ctx_untrained_polar_uuas_pp"))})
               or _word_pair_bound(units[WORDPAIR].to_numpy(float), float(p["wordpair_margin"])))
    if control:
        out["reason"] = f"{who}: {control} ({numbers}): inconclusive"
        return out
    verdict, entries, words = _relation_decision(parts, p)
    las_gap = mean_ci(units[NET_GAP].to_numpy(float))
    ratio = _las_ratio(units["ctx_polar_las_pp"].to_numpy(float), units["ctx_structural_las_pp"].to_numpy(float))
    out["value"] = entries["net"]
    out["parts"] = entries
    out["las_gap"] = ci_entry(las_gap, n)
    out["las_ratio"] = ci_entry(ratio, n)
    if n_lost:
        numbers = f"{numbers}; {chain_words}, {n} remain"
    out["verdict"] = verdict
    out["reason"] = (f"over {n} probe-fit units: {words}: {verdict.replace('_', ' ')} for {who} (reported, not "
                     f"deciding: polar−structural LAS gain {las_gap[0]:+.3f} [{las_gap[1]:+.3f}, {las_gap[2]:+.3f}] "
                     f"beyond the untrained twin, LAS ratio {ratio[0]:.2f} [{ratio[1]:.2f}, {ratio[2]:.2f}]; "
                     f"{numbers})")
    return out


def pretrained_polar_verdict(ok: pd.DataFrame, p: Mapping, n_boot: int = 0, seed: int = 0) -> Verdict:
    """``polar_beats_structural`` on pretrained models (the ``geometry-lm`` study): :func:`pretrained_model_verdict`
    per model; the claim's verdict and deciding number are the largest model's (most parameters; ties by name),
    the others are reported beside it and do not change it (the source's claim is about large models, and a
    majority over a few unrelated models would be no better defined). Its deciding cell is that model's trials,
    gated by both probes' chain gates and the twin gate (:data:`bindscale.studies.geometry.CHAIN_GATE`,
    ``STRUCT_CHAIN_GATE`` and ``TWIN_GATE``, per unit, checked again by the engine)."""
    p = {**DEFAULTS["polar_beats_structural"], **p}
    stat = STAT
    if REL_NET not in ok and "probe_layers" in ok:
        ok = with_contextual(ok)[0]
    pre = _pretrained(ok)
    details: dict = {"seeds_per_cell": 0, "punctuation_convention": PUNCT_CONVENTION,
                     "units": "probe-fit units: one per seed (the fit and dev sentences drawn and the probes "
                              "initialised by the seed; the test sentences and the untrained twin fixed)"}
    if pre is None:
        details["reason"] = "no pretrained-model trials"
        return Verdict(stat, "inconclusive", NAN3, 0, details)
    models = {str(name): pretrained_model_verdict(at, p, str(name))
              for name, at in pre.groupby(pre["model.name"].astype(str), sort=True)}
    details["pretrained_models"] = models
    unsized = sorted(m for m, e in models.items() if e["n_params"] is None)
    if unsized:
        # Without every size the largest model, which decides, is unknown: a smaller one must not decide instead.
        details["reason"] = (f"parameter count unknown for {', '.join(unsized)}: the largest model, which decides, "
                             "cannot be told (models: " + "; ".join(f"{m}: {e['verdict'].replace('_', ' ')}"
                                                                     for m, e in models.items()) + ")")
        return Verdict(stat, "inconclusive", NAN3, len(pre), details)
    size = {m: e["n_params"] for m, e in models.items()}
    largest = sorted(models, key=lambda m: (-size[m], m))[0]
    e = models[largest]
    details["deciding_model"] = largest
    details["largest_model_params"] = e["n_params"]
    details["seeds_per_cell"] = e["n_units"]
    # Gated on both probes' chain gates and the twin gate, per unit: the engine leaves out the units that missed (as
    # the rule did) and counts them against the claim's min_seeds.
    details["deciding_cells"] = [deciding_cell({"model.name": largest}, e["n_units"],
                                               gated=[CHAIN_MARGIN, STRUCT_CHAIN_MARGIN, TWIN_MARGIN])]
    details["caveat"] = ("the interval covers the probes' fitting (fit and dev sentences drawn, probe "
                         "initialisation) on one fixed set of test sentences and one random draw of the untrained "
                         "twin's weights, not the sampling of test sentences nor of random weights")
    others = [f"{m}: {models[m]['verdict'].replace('_', ' ')} — {models[m]['reason']}" for m in models if m != largest]
    details["reason"] = (f"deciding (largest) model {largest}: {e['reason']}"
                         + (f". Other models (reported, not deciding): {'; '.join(others)}" if others else ""))
    n = e["n_units"]
    triple = (e["value"]["value"], e["value"]["ci_low"], e["value"]["ci_high"])
    return Verdict(stat, e["verdict"], triple if e["verdict"] != "inconclusive" else NAN3, n, details)


def lost_pretrained_model(df: pd.DataFrame, ok: pd.DataFrame, details: Mapping) -> str | None:
    """Why a pretrained-model verdict lacks a model the study planned (a model with no ok trial: it may be the
    largest, which would decide), or None."""
    if "deciding_model" not in details or "model.source" not in df or "model.name" not in df:
        return None
    planned = set(df.loc[df["model.source"].astype(str) == "pretrained", "model.name"].astype(str))
    lost = sorted(planned - set(details.get("pretrained_models", {})))
    if lost:
        return (f"planned model(s) {', '.join(lost)} have no ok trial: the verdict would be decided without them "
                "(one may be the largest model, which decides)")
    return None


def _without_trained(ok: pd.DataFrame, details: dict, stat: str, n_boot: int, seed: int) -> Verdict:
    """Inconclusive without deciding trained-model rows; pretrained models in the table are reported (numbers,
    chain, LAS ratio over sentences) and named as gate cells, so the chain gate shows beside the verdict."""
    pre, cells, words = pretrained_report(ok, n_boot, seed) if "ctx_polar_uuas_pp" in ok else ({}, [], "")
    if pre:
        details["pretrained_models"] = pre
        details["deciding_cells"] = cells
        details["reason"] = f"{details.get('reason', '')}; {words}".lstrip("; ")
    return Verdict(stat, "inconclusive", NAN3, 0, details)


def _probe_rank(rows: pd.DataFrame) -> tuple[dict, str | None]:
    """The probe's rank ``min(rank, d_model)`` per model size, and a note when it differs between sizes."""
    if "d_model" not in rows:
        return {}, None
    rank = pd.to_numeric(rows["rank"], errors="coerce") if "rank" in rows else pd.Series(32.0, index=rows.index)
    k = np.minimum(rank, pd.to_numeric(rows["d_model"], errors="coerce"))
    by_size = {json_key(s): sorted(int(v) for v in k[rows["n_params"] == s].dropna().unique())
               for s in sorted(rows["n_params"].unique())}
    if len({v for vs in by_size.values() for v in vs}) <= 1:
        return by_size, None
    return by_size, ("the probe's rank is min(rank, d_model) and differs between the sizes compared "
                     f"({by_size}): part of a gain with size can be probe capacity, not the model's geometry")


def _paired(rows: pd.DataFrame, col: str, small: float, large: float) -> np.ndarray:
    """Per seed present at both sizes, ``col`` at ``large`` minus at ``small`` (a repeated seed's records averaged)."""
    per_seed = rows.groupby(["seed", "n_params"])[col].mean().unstack("n_params")
    return (per_seed[large] - per_seed[small]).dropna().to_numpy(float)


def geometry_grows_with_scale(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """bindscale's working hypothesis: the polar probe's LAS, net of the untrained model, grows from the smallest to the
    largest model (see the module docstring)."""
    p = {**DEFAULTS["geometry_grows_with_scale"], **p}
    stat = "polar_las_pp_net_of_untrained_gain_largest_vs_smallest"
    ok, why = with_contextual(ok)
    if why:
        return _without_trained(ok, {"seeds_per_cell": 0, "reason": why}, stat, n_boot, seed)
    rows, details = _screen(ok, ("net_polar_las_pp", "ctx_polar_las_pp", "ctx_untrained_polar_las_pp"), min_sizes=2)
    if rows is None:
        return _without_trained(ok, details, stat, n_boot, seed)
    cells = _cells(rows, "net_polar_las_pp")
    small, large = min(cells), max(cells)
    details["smallest_model_params"], details["largest_model_params"] = int(small), int(large)
    details["net_polar_las_pp_by_size"] = {json_key(s): ci_entry(mean_ci(v, n_boot, seed=seed), v.size) for s, v in cells.items()}
    details["polar_las_pp_by_size"] = _by_size(rows, "ctx_polar_las_pp", n_boot, seed)
    details["controls"] = _controls(rows, n_boot, seed)
    details["best_layers_polar_by_size"] = {json_key(s): _counts(g["ctx_best_layer_polar"])
                                            for s, g in rows.groupby("n_params")}
    details["probe_rank_by_size"], rank_note = _probe_rank(rows)
    if rank_note:
        details["probe_rank_note"] = rank_note
    for name, col in (("trained_model", "ctx_polar_las_pp"), ("untrained_model", "ctx_untrained_polar_las_pp"),
                      ("all_layers_trained_model", "polar_las_pp"), ("input_embeddings", "embed_polar_las_pp"),
                      ("identity_probe", "identity_las_pp")):
        if col in rows and np.isfinite(pd.to_numeric(rows[col], errors="coerce")).all():
            g = _paired(coerce_numeric(rows, (col,)), col, small, large)
            details[f"{name}_gain"] = ci_entry(mean_ci(g, n_boot, seed=seed) if g.size >= 2 else NAN3, g.size)
    gain = _paired(rows, "net_polar_las_pp", small, large)
    details["seeds_paired"] = int(gain.size)
    if gain.size < MIN_REPLICATES:
        details["reason"] = (f"{gain.size} seed(s) present at both {int(small):,} and {int(large):,} parameters; the "
                             f"paired difference needs {MIN_REPLICATES}")
        return Verdict(stat, "inconclusive", NAN3, int(gain.size), details)
    # the smallest model must have learned the grammar; the polar probe need beat the chain and the untrained twin
    # only at the largest (every gate of the claim there)
    details["deciding_cells"] = _size_cells(rows, cells, [small, large], gated={small: ["lm_excess_loss"]})
    details["beside_linear_chain"] = _beside_chain(rows)
    why = (_las_bound(rows, {"the polar LAS of the smallest model": ("ctx_polar_las_pp", small),
                             "the polar LAS of the largest model": ("ctx_polar_las_pp", large)})
           or degenerate(list(cells.values())))
    if why:
        details["reason"] = f"degenerate deciding cells: {why}"
        return Verdict(stat, "inconclusive", NAN3, int(gain.size), details)
    # The twin is subtracted at both sizes (a twin at the floor at the smallest would sink the gain, at the largest
    # lift it) and gated on at the largest.
    twin = _twin_floor({f"polar LAS at {int(s):,} parameters": (_cells(rows, "ctx_untrained_polar_las_pp")[s],
                                                                "ctx_untrained_polar_las_pp") for s in (small, large)}
                       | ({f"polar UUAS at {int(large):,} parameters (the twin gate's)": (
                           _cells(rows, "ctx_untrained_polar_uuas_pp")[large], "ctx_untrained_polar_uuas_pp")}
                          if "ctx_untrained_polar_uuas_pp" in rows else {}))
    if twin:
        details["reason"] = f"{twin}: inconclusive"
        return Verdict(stat, "inconclusive", NAN3, int(gain.size), details)
    margin = float(p["margin"])
    triple = mean_ci(gain, n_boot, seed=seed)
    level = mean_ci(cells[large], n_boot, seed=seed)
    details["net_polar_las_pp_largest_model"] = ci_entry(level, cells[large].size)
    verdict, said = _growth_decision(triple, level, margin)
    details["welch_interval_unpaired_for_reference"] = ci_entry(mean_diff_ci(cells[large], cells[small], n_boot, seed=seed),
                                                           cells[large].size + cells[small].size)
    where = {"supported": "above", "not_supported": "below"}.get(_decide(triple, margin), "on both sides of")
    details["reason"] = (f"the polar probe's LAS net of the same model untrained (PolarProbe convention, best dev layer >= 1) "
                         f"grows by {triple[0]:+.3f} [{triple[1]:+.3f}, {triple[2]:+.3f}] from {int(small):,} to "
                         f"{int(large):,} parameters (mean {cells[small].mean():.3f} to {cells[large].mean():.3f}, "
                         f"paired by seed over {gain.size} seeds): its interval lies {where} the margin {p['margin']}; "
                         f"at the largest model the net itself is {level[0]:+.3f} [{level[1]:+.3f}, {level[2]:+.3f}]: "
                         f"{said}" + (f"; note: {rank_note}" if rank_note else ""))
    return Verdict(stat, verdict, triple, int(gain.size), details)


def _growth_decision(gain: tuple[float, float, float], level: tuple[float, float, float],
                     margin: float) -> tuple[str, str]:
    """``geometry_grows_with_scale`` from the gain of the net polar LAS (largest − smallest model, paired by seed)
    and its level at the largest model (trained − untrained twin), each a (mean, low, high) interval: (verdict, the
    level's part in words).

    Supported when both intervals lie above ``margin``: a net that rises but stays within the margin of the twin at
    the largest model is growth of a reading random weights give as well, not learned syntax (inconclusive). Not
    supported when the gain's interval lies below ``margin``, or when the level's lies below the twin (below 0, and
    below the margin when the margin is negative): the trained model's polar probe then reads measurably *less* than
    the same architecture with random weights at the size the claim is about, past the gates (its LM learned the
    grammar, its polar UUAS beats the chain's and the twin's), so the geometry the claim calls learned is not there
    to grow — evidence against the claim, not its absence. Inconclusive otherwise."""
    grows, learned = _decide(gain, margin), _decide(level, margin)
    below_twin = _decide(level, min(0.0, margin)) == "not_supported"
    if grows == "not_supported" or below_twin:
        verdict = "not_supported"
    elif grows == "supported" and learned == "supported":
        verdict = "supported"
    else:
        verdict = "inconclusive"
    if learned == "supported":
        said = f"above the margin {margin:g} (the polar LAS the trained model adds to its twin's is learned)"
    elif below_twin:
        said = ("below its untrained twin: training left the polar probe reading less than random weights give at the "
                "largest model, so no learned geometry is there to grow")
    else:
        said = (f"not above the margin {margin:g}: the trained model's polar LAS does not clear its untrained "
                "twin's, so a rise of the net is not shown to be learned syntax")
    return verdict, said


def transformer_params(n_layers: int, d_model: int, mlp_ratio: int = 4) -> int:
    """Parameters of the study's word-level transformer (:func:`.trial.build_model`: untied embedding and head
    over the grammar's vocabulary plus 3 special tokens, pre-LN blocks with biases, final LayerNorm, rotary
    positions without weights)."""
    V, d, L, r = len(vocabulary()) + 3, d_model, n_layers, mlp_ratio
    return 2 * V * d + L * ((4 + 2 * r) * d * d + (9 + r) * d) + 2 * d


def planned_params(df: pd.DataFrame) -> pd.Series:
    """Each row's model size, failed rows included: its recorded ``n_params``, else that of a row with the same
    shape (``layers``, ``d_model``, ``model.mlp_ratio``), else :func:`transformer_params` of the shape; NaN
    when neither is known."""
    size = pd.to_numeric(df["n_params"], errors="coerce") if "n_params" in df else pd.Series(np.nan, index=df.index)
    if "layers" not in df or "d_model" not in df:
        return size
    shape = pd.DataFrame({"layers": pd.to_numeric(df["layers"], errors="coerce"),
                          "d_model": pd.to_numeric(df["d_model"], errors="coerce"),
                          "mlp": pd.to_numeric(df["model.mlp_ratio"], errors="coerce") if "model.mlp_ratio" in df
                          else 4.0}, index=df.index)
    known = size.groupby([shape["layers"], shape["d_model"], shape["mlp"]]).transform("max")
    size = size.fillna(known)
    counted = [transformer_params(int(L), int(d), int(m)) if np.isfinite([L, d, m]).all() else np.nan
               for L, d, m in shape.to_numpy(float)]
    return size.fillna(pd.Series(counted, index=df.index, dtype=float))


def lost_planned_size(df: pd.DataFrame, ok: pd.DataFrame, details: Mapping) -> str | None:
    """Why a rule compared a smaller largest (or a larger smallest) model than the table plans, or None.

    Inputs: the whole results table (any status), the ok rows the rule saw, and its details
    (``largest_model_params``, ``smallest_model_params``). Planned rows: trained models at the deciding
    settings (each :data:`FIXED` setting at the single value the deciding rows have).
    """
    if "largest_model_params" not in details:
        return None
    rows = df.drop_duplicates("trial_id") if "trial_id" in df else df
    if "model.source" in rows:
        rows = rows[rows["model.source"].fillna("trained").astype(str) == "trained"]
    deciding, _ = deciding_rows(ok)
    # The largest planned model over every setting of the deciding slice: a largest model trained with other steps
    # (or corpus, learning rate...) than the most common setting is left out of the deciding rows, and a smaller
    # model would answer in its place.
    every_rows, every = rows, planned_params(rows)
    for col in FIXED:
        if col in rows and col in deciding:
            used = pd.to_numeric(deciding[col], errors="coerce").dropna().unique()
            if len(used) == 1:
                rows = rows[pd.to_numeric(rows[col], errors="coerce") == used[0]]
    planned = planned_params(rows)
    if planned.isna().any():
        return (f"{int(planned.isna().sum())} planned trial(s) have neither a parameter count nor a model shape: "
                "whether the largest planned model produced a result cannot be told")
    short = []
    if planned.max() > details["largest_model_params"]:
        short.append(f"largest planned model {int(planned.max()):,} parameters, compared "
                     f"{int(details['largest_model_params']):,}")
    elif every.notna().any() and every.max() > details["largest_model_params"]:
        top = every_rows[every == every.max()]
        other = {c: sorted(float(v) for v in pd.to_numeric(top[c], errors="coerce").dropna().unique())
                 for c in FIXED if c in top and c in deciding
                 and set(pd.to_numeric(top[c], errors="coerce").dropna()) - set(pd.to_numeric(deciding[c], errors="coerce"))}
        statuses = ", ".join(f"{n} {k}" for k, n in top["status"].astype(str).value_counts().items()) \
            if "status" in top else "?"
        settings = "; ".join(c + " " + ", ".join(f"{x:g}" for x in v) for c, v in other.items())
        short.append(f"largest planned model {int(every.max()):,} parameters, trained only with other settings than "
                     f"the deciding rows{' (' + settings + ')' if settings else ''}, its trials: {statuses}; compared "
                     f"{int(details['largest_model_params']):,}")
    if "smallest_model_params" in details and planned.min() < details["smallest_model_params"]:
        short.append(f"smallest planned model {int(planned.min()):,} parameters, compared "
                     f"{int(details['smallest_model_params']):,}")
    if short:
        return ("a planned model size has no usable ok trial at the deciding settings (" + "; ".join(short) + "): the "
                "claim would be decided "
                "at other sizes than the study asked about")
    return None


def planned_size_guard(df: pd.DataFrame, ok: pd.DataFrame, details: dict, verdict: str) -> tuple[str, str] | None:
    """A guard (:data:`bindscale.core.study.Guard`): :func:`lost_planned_size` for a decided verdict."""
    if verdict == "inconclusive":
        return None
    reason = lost_pretrained_model(df, ok, details) or lost_planned_size(df, ok, details)
    return (reason, "value_at_other_sizes") if reason else None
