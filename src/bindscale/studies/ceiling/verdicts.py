"""Verdict rule of the ``ceiling`` study: do models plateau at the claimed 55–60% as they grow?

Rows (:func:`prepare_rows`): ok trials, numeric columns coerced, and two derived training-fit columns for the
claim's competence gates (:data:`GATE_COLUMNS`). The *size sweep* is the trained-transformer rows (``model.kind``
transformer) at the most common training-set size, step count and depth (where they vary); each row is one
(size, seed) point. Real-model rows (``model.kind`` lm) never enter a fit; their numbers are listed in the
details.

**The source's metric, and ours.** The claim's figure ("55–60% constraint satisfaction") has no primary source;
its nearest one, ConstraintBench (Tso et al. 2026, arXiv 2602.22465), scores each task with "a deterministic
verifier [that] checks against every constraint and the solver-proven optimum", and its headline "the best model
achieves only 65.0% constraint satisfaction" sits in the sentence "feasibility, not optimality, is the primary
bottleneck": its satisfaction is a per-task rate of answers that meet *every* constraint (summaries of the paper
call the same 65.0% "feasibility"), beside "joint feasibility and optimality" (no model above 30.5%). bindscale's
old verdict metric, the mean per-instance *share* of constraints met (``sat``, :mod:`.scoring`), is a different,
easier metric: uniform-random answers already meet 0.75 of the colouring constraints and 0.68 of the assignment
ones on the default test instances (:mod:`.baselines`), so a 55–60% level on it would be below chance. The
*verdict metric* (:data:`VERDICT_METRIC`) is therefore the source's kind: feasibility ``feas_f`` (share of
instances answered with every constraint met; chance 0.07 for colouring and assignment) and, for knapsack,
whose empty selection meets its only constraint (feasibility 1.0 for an answer that learned nothing),
``optimal_f`` (feasible *and* optimal, ConstraintBench's joint number; chance 0.01). ``sat`` and its
chance-corrected form ``(sat − chance) / (1 − chance)`` are reported beside it per size
(``details["by_family"][f]["by_metric"]``), each with its chance level.

Fits (:func:`.fits.compare`) of the verdict metric against non-embedding parameters: the saturating curve
``a - b·x^-c``, the power law ``1 - b·x^-c`` and the log power law ``1 - b·(1 + ln x)^-c`` (two curves that
climb to 1; the second slowly). ``ΔAIC_climb = min(AIC_power, AIC_log_power) − AIC_saturating``; the asymptote
``a`` with its expanded-percentile bootstrap interval ``[lo, hi]`` (seeds resampled within each size; the
replicates read at :func:`bindscale.verdicts.stats.expanded_confidence` of the seeds per size, Hesterberg 2015); the *last
gain*: the largest size's mean minus the second-largest's, Welch interval (:func:`bindscale.verdicts.stats.strata_mean_ci`);
the *chance level*: the better of the uniform-random and all-zero answers on the same test instances
(:mod:`.baselines`; a ``chance_<metric>_<family>`` column, which every trained trial records).
The *claimed band* is ``[claimed_low − level_tol, claimed_high + level_tol]`` (default 0.50–0.65: the
hypothesis says "about 55–60%"; ConstraintBench's best model, 65.0%, sits on its upper edge).

- the family *plateaus* when the asymptote is identified (:func:`identified`), ``ΔAIC_climb ≥ delta_aic``
  (the saturating curve clearly beats both curves that reach 1: the sweep shows the flattening rather than
  extrapolating it), ``hi < 1 − margin`` and ``lo >`` the chance level (a plateau at chance is "not learned");
  its *level* is ``inside`` the claimed band (``lo`` and ``hi`` both in it), ``above`` / ``below`` it (the
  whole interval outside) or ``straddles`` an edge;
- it *contradicts* when ``lo ≥ 1 − margin`` with the asymptote identified, or when ``hi ≥ 1 − margin`` and the
  last gain's interval lies above 0 (the metric still climbs over the last doubling and a saturating curve
  cannot place its asymptote below the margin), or when the largest size's own mean (t interval over its
  seeds) lies above the band (models of the sweep already exceed the claimed ceiling), or when it plateaus with
  its level ``above`` or ``below`` the band (a plateau, at another level than claimed). An AIC preference for
  the power law is no test: the power law is the saturating curve with ``a = 1``, so ``ΔAIC ≥ −2`` always.

Supported when every family plateaus inside the band; not supported when any contradicts (the contradicting
family with the highest lower bound decides); inconclusive otherwise (the family with the highest upper bound
decides, i.e. the weakest support). Inconclusive whatever the numbers when the table has no trained rows, an
expected family's column is missing, non-numeric, entirely NaN or holds infinite values, fewer than
``min_sizes`` distinct sizes or fewer than :data:`bindscale.verdicts.engine.MIN_REPLICATES` finite seeds at
some size, every seed of every size sits at the metric's floor 0 or ceiling 1
(:func:`bindscale.verdicts.engine.at_bound`), degenerate values (:func:`bindscale.verdicts.engine.degenerate`),
no chance level, a chance level at or above the band's lower edge (the claimed level is then no evidence of
learning on this metric), or a failed fit; and (guard :func:`planned_size_missing`) when the fitted sweep stops
short of the largest or smallest size any trained row has (ok, failed, diverged, or planned with no record).
A NaN seed is dropped from its family's fit; every size is a deciding cell
(:func:`bindscale.verdicts.engine.deciding_cell`, ``n`` = its fewest finite seeds over the families), so the
engine makes the claim inconclusive when a size lost more seeds than ``min_seeds`` allows and says how many.
``details["seeds_per_cell"]`` is the fewest seeds at any fitted size (the engine's few-seeds caveat);
``details["lost_seeds"]`` counts failed / diverged / missing trials per size.

**Competence gates** (:data:`bindscale.studies.ceiling.CLAIMS`): every size of the sweep must fit its own
*training* instances, scored by the same checker on up to :data:`.trial.N_TRAIN_CHECK` of them per family
(``*_train`` columns): ``train_fit`` (the worst family's training verdict metric: feasibility, knapsack
feasible-and-optimal) ``≥ min_train_fit`` and ``train_sat`` (the worst family's training satisfaction)
``≥ min_train_sat``. A plateau of models that never fitted their training instances is a training limit, not
the structural ceiling the claim asserts; the engine (:func:`bindscale.verdicts.engine.gate_check`) makes such
a verdict inconclusive and names the size and its fit.

The deciding number is the asymptote ``a`` and its interval, shown clipped at 1 (the fit's bound is 1.5).
``details["by_family"][f]["level"]`` says where the interval lies against the band and
``["claimed_55_60_in_interval"]`` whether 0.55–0.60 itself meets it.

Interval coverage (``tests/studies/ceiling/test_fits.py::test_asymptote_interval_coverage``, run with
``-m slow``; ``tests/studies/ceiling/test_fit_coverage.py``): on planted saturating data at 5 sizes × 8 seeds
(a = 0.58) the plain 95% percentile interval covered the planted asymptote in 87 of 100 simulated tables; the
expanded percentile interval used now covers 0.91–0.92 with normal noise, 0.95–0.96 with skewed noise and
0.89–0.93 when the noise grows with size (100 tables each): still at or a little below the low edge of 92–98%,
so an "inside the band" reading is slightly optimistic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from bindscale.kit import (
    MIN_REPLICATES,
    NAN3,
    at_bound,
    ci_entry,
    coerce_numeric,
    deciding_cell,
    degenerate,
    restrict_to_mode,
    Verdict,
    ok_rows,
    mean_ci,
    strata_mean_ci,
)

from .fits import A_MAX, B_MAX, C_MAX, compare
from .problems import FAMILIES

METRICS = ("sat", "feas", "gap", "optimal", "unparsable")
#: The metric each family's verdict fits: the source's kind, feasibility (every constraint met); knapsack's
#: empty answer is feasible, so its share answered feasibly and optimally (module docstring).
VERDICT_METRIC = {"colouring": "feas", "knapsack": "optimal", "assignment": "feas"}
#: The derived training-fit columns the claim's gates read (:func:`prepare_rows`): per trial, the worst family's
#: training-set verdict metric, and the worst family's training-set satisfaction.
GATE_COLUMNS = ("train_fit", "train_sat")
NUMERIC = ("budget", "layers", "n_train", "seed", "steps", "n_params", "n_params_nonembed", "task.max_difficulty",
           "task.n_test", "task.eval_seed", "lm_parsed", *(f"n_{f}" for f in FAMILIES),
           *(f"chance_{m}_{f}" for m in METRICS for f in FAMILIES),
           *(f"{m}_{f}{s}" for m in METRICS for f in FAMILIES for s in ("", "_heldout", "_train")))
#: Resamples of the asymptote's bootstrap (each refits the curve: the engine's 2000 would take minutes). The
#: expanded percentile interval reads them at ~98.9% for 8 seeds, so 1000 leave ~5 replicates beyond each
#: bound (400 left 2: a noisy bound).
N_BOOT = 1000
_FIXED = ("n_train", "steps", "layers")
#: The exponent below which the saturating fit is flat, and the smallest rise ``b`` (in units of the metric) that
#: pins an asymptote: below it the data are flat. The fit's box (``A_MAX``, ``B_MAX``, ``C_MAX``) is :mod:`.fits`'.
C_FLAT, B_MIN = 0.01, 0.02
#: The hypothesised level (the study file's ``claimed_low`` / ``claimed_high`` default to it).
CLAIMED = (0.55, 0.60)


def prepare_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Ok rows with the numeric columns coerced (missing ones added as NaN), ``model_kind`` (transformer / lm)
    and the gates' training-fit columns (:func:`training_fit`)."""
    out = coerce_numeric(ok_rows(df, NUMERIC), NUMERIC)
    kind = out["model.kind"] if "model.kind" in out else pd.Series("transformer", index=out.index)
    out["model_kind"] = kind.fillna("transformer").astype(str)
    if len(out):
        # The engine's parse gate reads ``lm_parsed``; a record without it (an older one) gets the share the
        # rule itself reads (:func:`_parsed_share`), so the gate and the rule never disagree.
        fams = expected_families(out)
        derived = [_parsed_share(r, fams) for _, r in out.iterrows()]
        out["lm_parsed"] = out["lm_parsed"].where(out["lm_parsed"].notna(), pd.Series(derived, index=out.index))
        out.loc[out["model_kind"] != "lm", "lm_parsed"] = math.nan
    return training_fit(out)


def training_fit(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with :data:`GATE_COLUMNS` added: per trial, over the families of its own ``task.families`` (else
    :data:`.problems.FAMILIES`), the lowest ``{VERDICT_METRIC[f]}_{f}_train`` (``train_fit``) and the lowest
    ``sat_{f}_train`` (``train_sat``): the model's fit on up to :data:`.trial.N_TRAIN_CHECK` of its own
    training instances per family, scored like the test set (:mod:`.scoring`). NaN when a family's training
    score is missing (a fit never measured never passes a gate)."""
    rows = rows.copy()
    fams = rows["task.families"] if "task.families" in rows else pd.Series(None, index=rows.index, dtype=object)
    fit, sat = [], []
    for i, spec in zip(rows.index, fams):
        names = [f.strip() for f in str(spec).split(",") if f.strip() in FAMILIES] if isinstance(spec, str) else []
        names = names or list(FAMILIES)
        vals = {}
        for key, metric in (("fit", None), ("sat", "sat")):
            v = [pd.to_numeric(rows.at[i, c], errors="coerce") if c in rows else math.nan
                 for c in (f"{metric or VERDICT_METRIC[f]}_{f}_train" for f in names)]
            vals[key] = min(v) if v and all(np.isfinite(x) for x in v) else math.nan
        fit.append(vals["fit"])
        sat.append(vals["sat"])
    rows["train_fit"], rows["train_sat"] = fit, sat
    return rows


def trained_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The trained-transformer rows that have a budget."""
    if rows.empty:
        return rows
    rows = rows[rows["model_kind"] == "transformer"] if "model_kind" in rows else rows
    return rows[rows["budget"].notna()] if "budget" in rows else rows.iloc[0:0]


def size_sweep(rows: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """The size-sweep rows (see the module docstring) and a note of what was held fixed."""
    return restrict_to_mode(trained_rows(rows), _FIXED)


def _inconclusive(stat: str, n: int, details: dict, reason: str) -> Verdict:
    details["reason"] = reason
    return Verdict(stat, "inconclusive", NAN3, n, details)


def family_fit(rows: pd.DataFrame, family: str, x_col: str, min_sizes: int, n_boot: int, seed: int,
               metric: str = "sat") -> dict:
    """Fits of ``{metric}_{family}`` against ``x_col`` over ``rows``; ``problem`` set when they cannot decide."""
    col = f"{metric}_{family}"
    entry: dict = {"column": col, "x": x_col}
    if col not in rows or rows[col].isna().all():
        entry["problem"] = f"column {col} is missing, empty or not numeric"
        return entry
    g = rows[[x_col, "seed", col]]
    if np.isinf(g[[x_col, col]].to_numpy(float)).any() or g[x_col].isna().any():
        entry["problem"] = f"column {col} or {x_col} has infinite values, or {x_col} NaN ones"
        return entry
    entry["nan_seeds"] = int(g[col].isna().sum())  # dropped here; the engine counts them against min_seeds
    g = g.dropna(subset=[col])
    g = g.groupby([x_col, "seed"], as_index=False)[col].mean()  # a repeated (size, seed) counts once
    sizes = sorted(g[x_col].unique())
    cells = [g.loc[g[x_col] == s, col].to_numpy(float) for s in sizes]
    entry["sizes"] = [float(s) for s in sizes]
    entry["means"] = [float(c.mean()) for c in cells]
    entry["seeds"] = [int(c.size) for c in cells]
    if len(sizes) < min_sizes:
        entry["problem"] = f"{len(sizes)} distinct sizes, fewer than min_sizes={min_sizes:g}"
        return entry
    if min(c.size for c in cells) < MIN_REPLICATES:
        entry["problem"] = f"a size has {min(c.size for c in cells)} finite seeds, fewer than {MIN_REPLICATES}"
        return entry
    why = at_bound({f"{x_col} {s:g}": c for s, c in zip(sizes, cells)}, 0.0, 1.0)
    if why:
        entry["problem"] = f"{col}: {why}"
        return entry
    why = degenerate(cells, discrete=True)
    if why:
        entry["problem"] = why
        return entry
    r = compare(g[x_col].to_numpy(float), g[col].to_numpy(float), n_boot=n_boot, seed=seed)
    sat, pw, lp = r["saturating"], r["power_law"], r["log_power"]
    entry |= {"saturating": sat.params, "power_law": pw.params, "log_power": lp.params, "aic_saturating": sat.aic,
              "aic_power_law": pw.aic, "aic_log_power": lp.aic, "delta_aic": r["delta_aic"],
              "delta_aic_climb": r["delta_aic_climb"], "x_min": r["x_min"],
              "asymptote": ci_entry(tuple(min(v, 1.0) for v in r["asymptote"]), len(g)),
              "asymptote_unclipped": list(r["asymptote"])}
    entry["identified"] = identified(entry) if sat.ok else False
    if not (sat.ok and pw.ok and lp.ok):
        entry["problem"] = f"a fit failed: {sat.error or pw.error or lp.error}"
    elif not all(math.isfinite(v) for v in r["asymptote"]):
        entry["problem"] = "the asymptote's bootstrap interval is undefined"
    # Flattening inside the sweep: the gain over the last doubling, largest minus second-largest, Welch interval.
    entry["last_gain"] = ci_entry(strata_mean_ci([cells[-1], -cells[-2]], [1.0, 1.0]), cells[-2].size + cells[-1].size)
    entry["climb"] = ci_entry(strata_mean_ci([cells[-1], -cells[0]], [1.0, 1.0]), cells[0].size + cells[-1].size)
    entry["largest"] = ci_entry(mean_ci(cells[-1]), cells[-1].size)  # the largest size's own mean, t interval
    lo, hi = entry["asymptote"]["ci_low"], entry["asymptote"]["ci_high"]
    entry["claimed_55_60_in_interval"] = bool(lo <= CLAIMED[1] and hi >= CLAIMED[0])
    return entry


def band(thresholds: Mapping[str, float]) -> tuple[float, float]:
    """The claimed band ``[claimed_low − level_tol, claimed_high + level_tol]`` (module docstring)."""
    tol = float(thresholds.get("level_tol", 0.05))
    return (float(thresholds.get("claimed_low", CLAIMED[0])) - tol,
            float(thresholds.get("claimed_high", CLAIMED[1])) + tol)


def level(lo: float, hi: float, bounds: tuple[float, float]) -> str:
    """Where the interval ``[lo, hi]`` lies against the band: ``inside`` / ``above`` / ``below`` / ``straddles``."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "undefined"
    if lo > bounds[1]:
        return "above"
    if hi < bounds[0]:
        return "below"
    if lo >= bounds[0] and hi <= bounds[1]:
        return "inside"
    return "straddles"


def by_metric(rows: pd.DataFrame, family: str, x_col: str) -> dict:
    """Every accuracy-like metric of one family beside its chance level on the same test instances, per size:
    ``{metric: {"chance", "means"}}`` for ``sat``, ``feas``, ``optimal`` and the chance-corrected satisfaction
    ``sat_corrected`` = ``(sat − chance) / (1 − chance)`` (chance 0; NaN where chance is 1), plus ``sizes``."""
    sizes = sorted(rows[x_col].dropna().unique())
    out: dict = {"sizes": [float(v) for v in sizes]}
    for m in ("sat", "feas", "optimal"):
        col = f"{m}_{family}"
        if col not in rows or rows[col].isna().all():
            continue
        c, _ = chance_level(rows, family, m)
        means = [float(rows.loc[rows[x_col] == v, col].mean()) for v in sizes]
        out[m] = {"chance": c, "means": means}
        if m == "sat" and math.isfinite(c):
            out["sat_corrected"] = {"chance": 0.0, "means": [(v - c) / (1 - c) if c < 1 else math.nan for v in means]}
    return out


def identified(e: dict) -> bool:
    """Whether the saturating fit pins its asymptote down: ``a`` off its upper bound, the rise ``b`` above
    :data:`B_MIN` and the exponent ``c`` above :data:`C_FLAT` (otherwise the curve is flat, or a straight line in
    log N over the sweep and ``a`` trades off with ``b``: any asymptote fits), and ``b`` and ``c`` off their upper
    bounds (:data:`.fits.B_MAX`, :data:`.fits.C_MAX`): a fit pinned to the edge of its box is the box's answer, not
    the data's (at ``c = 5`` the curve is a step after the smallest size, every bootstrap refit hits the same
    edge, and the asymptote's interval is as narrow as the box makes it)."""
    p = e.get("saturating") or {}
    edge = 1e-6
    return (bool(p) and p["a"] < A_MAX - edge and B_MIN < p["b"] < B_MAX - edge
            and C_FLAT < p["c"] < C_MAX - edge)


def _state(e: dict, margin: float, delta: float, bounds: tuple[float, float]) -> tuple[str, str]:
    """(``plateau`` / ``contradicts`` / ``open``, why) for a family entry without a problem (module docstring).

    ``plateau`` is a plateau *inside* the claimed band ``bounds``; a plateau above or below it contradicts."""
    a = e["asymptote"]
    e["level"] = level(a["ci_low"], a["ci_high"], bounds)
    band_words = f"the claimed band [{bounds[0]:g}, {bounds[1]:g}]"
    # What a contradiction says of the side "where scale stops" (the claim's not_supported_means): no ceiling at all
    # (the curve reaches the top or still climbs) is the opposite finding; a level above or below the claimed band
    # only misses the band (a plateau may still be there).
    e["not_supported_means"] = "opposite"
    if identified(e) and a["ci_low"] >= 1 - margin:
        return "contradicts", f"the asymptote's interval lies at or above 1 − margin = {1 - margin:g}"
    if a["ci_high"] >= 1 - margin and e["last_gain"]["ci_low"] > 0:
        return "contradicts", "it still climbs over the last doubling and no asymptote below 1 − margin is pinned"
    big = e["largest"]
    e["not_supported_means"] = "missed_level"
    if math.isfinite(big["ci_low"]) and big["ci_low"] > bounds[1]:
        return "contradicts", (f"the largest size already averages {big['value']:.3f} [{big['ci_low']:.3f}, "
                               f"{big['ci_high']:.3f}], above {band_words}")
    if (identified(e) and e["delta_aic_climb"] >= delta and a["ci_high"] < 1 - margin
            and a["ci_low"] > e["chance"]):
        if e["level"] == "inside":
            return "plateau", f"a plateau inside {band_words}"
        if e["level"] in ("above", "below"):
            return "contradicts", f"a plateau, but its interval lies {e['level']} {band_words}"
        return "open", f"a plateau whose interval straddles an edge of {band_words}"
    return "open", "no clear plateau"


def _mode(rows: pd.DataFrame, col: str):
    v = rows[col].dropna() if col in rows else pd.Series(dtype=object)
    return v.mode().iloc[0] if not v.empty else None


def expected_families(rows: pd.DataFrame) -> list[str]:
    """The sweep's ``task.families`` (its most common value), else :data:`.problems.FAMILIES`."""
    fams = _mode(rows, "task.families")
    return [f.strip() for f in str(fams).split(",") if f.strip()] if fams is not None else list(FAMILIES)


def chance_level(rows: pd.DataFrame, family: str, metric: str) -> tuple[float, dict | None]:
    """The family's chance level on ``metric`` and the baselines behind it (:mod:`.baselines`): a
    ``chance_{metric}_{family}`` column where present (tests), else computed on the sweep's test instances
    (``task.max_difficulty``, ``task.n_test``, ``task.eval_seed``); NaN when neither is available."""
    col = f"chance_{metric}_{family}"
    if col in rows and rows[col].notna().any():
        return float(rows[col].dropna().iloc[0]), None
    task = [_mode(rows, c) for c in ("task.max_difficulty", "task.n_test", "task.eval_seed")]
    if any(v is None or not np.isfinite(v) for v in task) or family not in FAMILIES:
        return math.nan, None
    from .baselines import baselines, chance  # generates (or reads the cached) test instances

    b = baselines(family, *(int(v) for v in task))
    return chance(b, metric), b


def lost_seeds(df: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Trained-transformer trials that are not ok, per budget and status (``{budget: {status: count}}``)."""
    if df.empty or "status" not in df or "budget" not in df:
        return {}
    kinds = df["model.kind"].fillna("transformer") if "model.kind" in df else pd.Series("transformer", index=df.index)
    bad = df[(kinds == "transformer") & (df["status"] != "ok")]
    out: dict = {}
    for (b, st), n in bad.groupby([pd.to_numeric(bad["budget"], errors="coerce"), "status"]).size().items():
        out.setdefault(f"{b:g}", {})[str(st)] = int(n)
    return out


def lm_points(rows: pd.DataFrame) -> list[dict]:
    """Real-model rows as the report lists them: the model's exact name (``lm_model``, else its reference), its
    backend, parameter count and where that number came from (``params``: counted / given / unknown, in words),
    and per family each test metric (``sat``, ``feas``, ``optimal``) beside its chance level on the same
    instances (``chance_<metric>_<family>``), the parse-failure share (``unparsable_<family>``) and the
    instance count (``n_<family>``)."""
    from .llm import PARAMS_WORDS

    out = []
    if rows.empty or "model_kind" not in rows:
        return out
    for _, r in rows[rows["model_kind"] == "lm"].iterrows():
        src = r.get("lm_params_source")
        n = pd.to_numeric(r.get("n_params"), errors="coerce")
        src = src if isinstance(src, str) else ("counted" if n is not None and np.isfinite(n) else "unknown")
        p = {"model": _lm_name(r), "reference": r.get("model_path") if isinstance(r.get("model_path"), str)
             else r.get("model_name"), "backend": r.get("lm_backend"), "endpoint": r.get("endpoint"),
             "n_params": n, "n_params_words": size_words(float(n)) if n is not None else "unknown",
             "params": PARAMS_WORDS.get(src, src), "parsed": r.get("lm_parsed")}
        for f in FAMILIES:
            for m in ("sat", "feas", "optimal", "unparsable", "n"):
                v = r.get(f"{m}_{f}")
                if v is not None and not pd.isna(v):
                    p[f"{m}_{f}"] = float(v)
            for m in ("sat", "feas", "optimal"):
                v = r.get(f"chance_{m}_{f}")
                if v is not None and not pd.isna(v):
                    p[f"chance_{m}_{f}"] = float(v)
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in p.items()})
    return out


def constraint_satisfaction_plateaus(ok: pd.DataFrame, thresholds: Mapping[str, float], n_boot: int = 2000,
                                     seed: int = 0) -> Verdict:
    """The plateau rule (see the module docstring)."""
    stat = "asymptote_feas"  # feasibility (knapsack: feasible and optimal), VERDICT_METRIC
    margin, delta = float(thresholds["margin"]), float(thresholds["delta_aic"])
    min_sizes = int(thresholds["min_sizes"])
    bounds = band(thresholds)
    n_boot = min(int(n_boot), N_BOOT)
    if ok.empty or "budget" not in ok or "seed" not in ok:
        return _inconclusive(stat, 0, {}, "no trials with a budget and a seed")
    if "model_kind" not in ok:
        ok = ok.assign(model_kind="transformer")
    trained = ok[ok["model_kind"] == "transformer"]
    if len(trained) and trained["budget"].isna().all():  # the size axis the claim speaks of
        return _inconclusive(stat, len(trained), {"missing_axis": "budget"},
                             "the table records no budget (model size) for its trained transformers: the size axis "
                             "the plateau is read along is missing")
    rows, note = size_sweep(ok)
    details: dict = dict(note) | {"margin": margin, "delta_aic": delta, "lm_points": lm_points(ok),
                                  "verdict_metric": dict(VERDICT_METRIC), "claimed_band": list(bounds)}
    if rows.empty or rows["seed"].isna().all():
        return _inconclusive(stat, 0, details, "no trained-transformer trials")
    details["sweep_budget_max"], details["sweep_budget_min"] = float(rows["budget"].max()), float(rows["budget"].min())
    x_col = "n_params_nonembed" if "n_params_nonembed" in rows and rows["n_params_nonembed"].notna().all() else "budget"
    families = expected_families(rows)
    details["families"] = families
    n = len(rows)
    absent = [f for f in families if f not in VERDICT_METRIC
              or rows.get(f"{VERDICT_METRIC[f]}_{f}", pd.Series(dtype=float)).isna().all()]
    if absent:
        return _inconclusive(stat, n, details, f"family {absent[0]}: its column "
                             f"{VERDICT_METRIC.get(absent[0], 'sat')}_{absent[0]} is missing, empty or not numeric")
    fixed = {k.removesuffix("_used"): v for k, v in note.items() if k.endswith("_used")}
    # Every size of the sweep decides the fit: its seeds lost (failed, diverged, missing, NaN in a family's
    # verdict metric) count against min_seeds, and its models must pass the claim's training-fit gates.
    cols = [f"{VERDICT_METRIC[f]}_{f}" for f in families]
    details["deciding_cells"] = [
        deciding_cell({**fixed, "budget": b}, min(g.dropna(subset=[c])["seed"].nunique() for c in cols))
        for b, g in rows.groupby("budget")]
    by_family: dict = {}
    for f in families:
        m = VERDICT_METRIC[f]
        e = family_fit(rows, f, x_col, min_sizes, n_boot, seed, metric=m)
        e["metric"] = m
        e["chance"], b = chance_level(rows, f, m)
        if b is not None:
            e["baselines"] = b
        e["by_metric"] = by_metric(rows, f, x_col)
        if "problem" not in e and not math.isfinite(e["chance"]):
            e["problem"] = "no chance level (no task columns to rebuild the test instances)"
        if "problem" not in e and e["chance"] >= bounds[0]:
            e["problem"] = (f"the chance level of {m}_{f} ({e['chance']:.3f}: random or all-zero answers on the "
                            f"same instances) is not below the claimed band's lower edge {bounds[0]:g}: a level "
                            "there is no evidence of learning on this metric")
        if "problem" not in e:
            e["state"], e["why"] = _state(e, margin, delta, bounds)
        by_family[f] = e
    details["by_family"] = by_family
    details["x"] = x_col
    seeds = [min(e["seeds"]) for e in by_family.values() if e.get("seeds")]
    if seeds:
        details["seeds_per_cell"] = int(min(seeds))
    contra = [f for f, e in by_family.items() if e.get("state") == "contradicts"]
    if contra:
        # A family with no ceiling at all decides before one whose ceiling only missed the band.
        f = max(contra, key=lambda k: (by_family[k].get("not_supported_means") == "opposite",
                                       by_family[k]["asymptote"]["ci_low"]))
        details["family_used"] = f
        details["not_supported_means"] = by_family[f].get("not_supported_means", "opposite")
        details["reason"] = f"family {f} ({_words(by_family[f])}): {by_family[f]['why']}"
        return Verdict(stat, "not_supported", _triple(by_family[f]), n, details)
    problems = [f for f, e in by_family.items() if "problem" in e]
    if problems:
        f = problems[0]
        details["family_used"] = f
        e = by_family[f]
        return Verdict(stat, "inconclusive", _triple(e) if "asymptote" in e else NAN3, n, details | {"reason": f"family {f}: {e['problem']}"})
    f = max(by_family, key=lambda k: by_family[k]["asymptote"]["ci_high"])
    details["family_used"] = f
    if all(e["state"] == "plateau" for e in by_family.values()):
        details["reason"] = (f"every family plateaus inside the claimed band [{bounds[0]:g}, {bounds[1]:g}]; the "
                             f"weakest, {f} ({_words(by_family[f])}): asymptote "
                             f"[{by_family[f]['asymptote']['ci_low']:.3f}, {by_family[f]['asymptote']['ci_high']:.3f}]")
        return Verdict(stat, "supported", _triple(by_family[f]), n, details)
    opens = [k for k, v in by_family.items() if v["state"] != "plateau"]
    f = opens[0]
    e = by_family[f]
    details["family_used"] = f
    details["reason"] = (f"family {f} ({_words(e)}): {e['why']} (ΔAIC of the saturating curve over the curves "
                         f"that reach 1: {e['delta_aic_climb']:.2f}, threshold {delta:g}; asymptote interval "
                         f"[{e['asymptote']['ci_low']:.3f}, {e['asymptote']['ci_high']:.3f}] against the claimed "
                         f"band [{bounds[0]:g}, {bounds[1]:g}], 1 − margin = {1 - margin:g} and the chance level "
                         f"{e['chance']:.3f}; gain over the last doubling "
                         f"[{e['last_gain']['ci_low']:.3f}, {e['last_gain']['ci_high']:.3f}]; identified: "
                         f"{e['identified']})")
    return Verdict(stat, "inconclusive", _triple(e), n, details)


def _words(e: dict) -> str:
    """The family's verdict metric in words, with its chance level."""
    what = {"feas": "feasibility", "optimal": "feasible and optimal", "sat": "satisfaction"}.get(e.get("metric"), "")
    return f"{what}, chance {e['chance']:.3f}" if math.isfinite(e.get("chance", math.nan)) else what


def _triple(e: dict) -> tuple[float, float, float]:
    a = e["asymptote"]
    return a["value"], a["ci_low"], a["ci_high"]


def data_fits(rows: pd.DataFrame, min_sizes: int = 3, n_boot: int = 200, seed: int = 0) -> dict:
    """The data axis: per family, satisfaction against training-set size at the budget with most training-set
    sizes (descriptive, not a verdict)."""
    tr = trained_rows(rows)
    if tr.empty or "n_train" not in tr or tr["n_train"].nunique() < 2:
        return {}
    counts = tr.groupby("budget")["n_train"].nunique()
    budget = max(b for b, c in counts.items() if c == counts.max())
    g = tr[tr["budget"] == budget]
    out = {"budget": float(budget)}
    for f in FAMILIES:
        if f"sat_{f}" in g:
            out[f] = family_fit(g, f, "n_train", min_sizes, n_boot, seed)
    return out


def planned_size_missing(df: pd.DataFrame, ok: pd.DataFrame, details: Mapping, verdict: str):
    """Guard: the fitted sweep must reach the largest and the smallest size of the trained rows the guard sees:
    ok, failed, diverged, or planned without a record (status ``missing``: the runner hands the engine the plan,
    :func:`bindscale.verdicts.engine.compute_verdicts`), so a size that never wrote a record is not taken for a
    size never planned. Ok rows trained with other steps / depth / data are left out of the sweep and count as
    lost too. Also records the trials lost per size and says so in the reason."""
    # A rule that fitted nothing says why itself; but when the competence gates left it nothing to fit (the engine
    # reports lost_to_gates_by_cell), the planned sizes lost otherwise are still said.
    if "budget" not in df or ("by_family" not in details and "lost_to_gates_by_cell" not in details):
        return None
    lost = lost_seeds(df)
    if lost and isinstance(details, dict):
        details["lost_seeds"] = lost
        note = f"trials lost (failed / diverged / missing) per size: {lost}; the fit uses the survivors"
        details["reason"] = f"{details['reason']}; {note}" if details.get("reason") else note
    kinds = df["model.kind"].fillna("transformer") if "model.kind" in df else pd.Series("transformer", index=df.index)
    budget = pd.to_numeric(df["budget"], errors="coerce").where(kinds == "transformer")
    if budget.isna().all():
        return None
    short = []
    for end, want, got in (("largest", budget.max(), details.get("sweep_budget_max", math.nan)),
                           ("smallest", budget.min(), details.get("sweep_budget_min", math.nan))):
        if np.isfinite(got) and (got >= want if end == "largest" else got <= want):
            continue
        at = df.loc[budget == want, "status"].astype(str).value_counts() if "status" in df else pd.Series(dtype=int)
        trials = ", ".join(f"{n} {s}" for s, n in at.items())
        fitted = f"{got:g}" if np.isfinite(got) else "none"
        short.append(f"the {end} planned size ({want:g}) is not in the fitted sweep ({end} fitted: {fitted}; its "
                     f"trials: {trials})")
    if short:
        return ("; ".join(short) + " — failed, diverged, missing (planned, no record) or ok but trained with other "
                "settings", "value_without_planned_size")
    return None


# --------------------------------------------------------------------------------------------------------------
# The plateau over real models' sizes (claim ``lm_constraint_satisfaction_plateaus``)
# --------------------------------------------------------------------------------------------------------------

#: Resamples of the last size step's gain (scipy.stats.bootstrap, percentile interval).
LM_N_BOOT = 2000


def size_words(n: float) -> str:
    """A parameter count in words: ``135M``, ``22.7M``, ``1.5B``, ``80k``."""
    if not math.isfinite(n):
        return "unknown"
    for div, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            return f"{n / div:.3g}{unit}"
    return f"{n:g}"


def proportion_ci(rate: float, n: float) -> tuple[float, float]:
    """Exact (Clopper-Pearson) 95% interval of a share ``rate`` of ``n`` instances
    (:meth:`scipy.stats.binomtest(...).proportion_ci`); NaN when ``n`` or ``rate`` is not usable."""
    from scipy.stats import binomtest

    if not (math.isfinite(rate) and math.isfinite(n)) or n < 1 or not 0 <= rate <= 1:
        return math.nan, math.nan
    ci = binomtest(int(round(rate * n)), int(n)).proportion_ci(0.95, method="exact")
    return float(ci.low), float(ci.high)


def gain_ci(big: tuple[float, float], small: tuple[float, float], n_boot: int, seed: int) -> tuple[float, float, float]:
    """The gain ``rate_big − rate_small`` of two (rate, n) shares of 0/1 outcomes with a 95% percentile bootstrap
    interval (:func:`scipy.stats.bootstrap`, the two models' instances resampled independently: the pairing of
    the same instances is not used, so the interval is conservative). Two constant samples: the interval is
    the difference itself."""
    from scipy.stats import bootstrap

    xs = [np.repeat([1.0, 0.0], [int(round(r * n)), int(n) - int(round(r * n))]) for r, n in (big, small)]
    d = float(xs[0].mean() - xs[1].mean())
    if all(np.ptp(x) == 0 for x in xs):
        return d, d, d
    res = bootstrap((xs[0], xs[1]), lambda a, b, axis=-1: a.mean(axis=axis) - b.mean(axis=axis),
                    n_resamples=n_boot, method="percentile", random_state=seed, vectorized=True)
    return d, float(res.confidence_interval.low), float(res.confidence_interval.high)


def _lm_name(r: pd.Series) -> str:
    for c in ("lm_model", "model_path", "model_name"):
        v = r.get(c)
        if isinstance(v, str) and v:
            return v
    return "real model"


def _parsed_share(r: pd.Series, families: list[str]) -> float:
    """The worst family's share of parsable test answers: ``lm_parsed`` when recorded, else from the
    ``unparsable_<family>`` columns (NaN when neither)."""
    v = pd.to_numeric(r.get("lm_parsed"), errors="coerce")
    if v is not None and np.isfinite(v):
        return float(v)
    u = [pd.to_numeric(r.get(f"unparsable_{f}"), errors="coerce") for f in families]
    u = [x for x in u if x is not None and np.isfinite(x)]
    return 1.0 - max(u) if u else math.nan


def _disagree(a: pd.Series, b: pd.Series, families: list[str]) -> str | None:
    """Why two records of one model disagree (a family whose verdict-metric intervals over the instances do not
    overlap), or None."""
    for f in families:
        m = VERDICT_METRIC.get(f)
        if m is None:
            continue
        ra, rb = (pd.to_numeric(x.get(f"{m}_{f}"), errors="coerce") for x in (a, b))
        na, nb = (pd.to_numeric(x.get(f"n_{f}"), errors="coerce") for x in (a, b))
        if not all(v is not None and np.isfinite(v) for v in (ra, rb, na, nb)):
            continue
        (alo, ahi), (blo, bhi) = proportion_ci(float(ra), float(na)), proportion_ci(float(rb), float(nb))
        if ahi < blo or bhi < alo:
            return f"{m}_{f} {float(ra):.3f} [{alo:.3f}, {ahi:.3f}] vs {float(rb):.3f} [{blo:.3f}, {bhi:.3f}]"
    return None


def lm_models(rows: pd.DataFrame, families: list[str], min_parsed: float) -> tuple[list[dict], list[str], list[str]]:
    """The real-model rows that can decide, one per distinct size, why the others cannot, and which of those
    block any decision.

    A row decides nothing when its parameter count is unknown (an endpoint without ``model.params``) or when
    its worst family's share of parsable answers is below ``min_parsed`` (the claim's gate: a model that does
    not answer in the asked format has not been shown to do the task). Of several rows at one size (the same
    model locally and through an endpoint) the one with the most parsable answers is kept (ties: the first).

    A left-out model of unknown size, or one at least as large as the largest model that can decide, blocks the
    verdict (the third list): the plateau is a statement about the largest sizes, and deciding it on the next
    size down when the largest model failed its gate would read the claim at a scale the table does not
    support (the geometry study's planned-size guard says the same of trained models).

    Returns:
        (models sorted by size: ``{"name", "size", "parsed", "row"}``, reasons in words for the rows left out,
        the reasons of the left-out rows that block a decision)
    """
    keep: dict[float, dict] = {}
    seen: dict[str, list[dict]] = {}
    out: list[str] = []
    gated: list[tuple[float, str]] = []  # (size, reason) of rows left out by the parse gate or an unknown size
    for _, r in rows.iterrows():
        name = _lm_name(r)
        size = pd.to_numeric(r.get("n_params"), errors="coerce")
        parsed = _parsed_share(r, families)
        if size is None or not np.isfinite(size):
            out.append(f"{name}: parameter count unknown (an endpoint: give model.params)")
            gated.append((math.inf, out[-1]))
            continue
        if not np.isfinite(parsed) or parsed < min_parsed:
            out.append(f"{name} ({size_words(size)}): {parsed:.0%} of its answers parsable in its worst family, "
                       f"below min_parsed {min_parsed:g}: decides nothing" if np.isfinite(parsed) else
                       f"{name} ({size_words(size)}): no parse-failure share recorded: decides nothing")
            gated.append((float(size), out[-1]))
            continue
        m = {"name": name, "size": float(size), "parsed": float(parsed), "row": r}
        same = [k for k in seen.get(name, []) if _disagree(k["row"], r, families)]
        if same:  # two records of one model whose rates' intervals do not overlap: neither can be read
            gated.append((math.inf, f"{name}: two records disagree ({_disagree(same[0]['row'], r, families)}): "
                                    "the model's rate is not known, whatever their order in the table"))
            out.append(gated[-1][1])
        seen.setdefault(name, []).append(m)
        if float(size) not in keep or parsed > keep[float(size)]["parsed"]:
            if float(size) in keep:
                out.append(f"{keep[float(size)]['name']}: same size as {name}, fewer parsable answers: not used")
            keep[float(size)] = m
        else:
            out.append(f"{name}: same size as {keep[float(size)]['name']}, fewer parsable answers: not used")
    top = max(keep) if keep else -math.inf
    return [keep[s] for s in sorted(keep)], out, [why for size, why in gated if size >= top]


def _lm_family(models: list[dict], family: str, bounds: tuple[float, float], flat_tol: float, min_sizes: int,
               n_boot: int, seed: int, min_ratio: float = 10.0) -> dict:
    """One family's reading over the real models' size range (see :func:`lm_constraint_satisfaction_plateaus`).

    A plateau "whatever the size" is read over the whole range of deciding sizes, never from the last step alone:
    the models must span at least ``min_ratio`` (largest / smallest parameters), every model's interval is checked
    against the band (one above it contradicts the claimed level at its size), and the gain from the smallest to
    the largest model must be flat within ``±flat_tol`` (a curve that climbs over the range, however flat its last
    step, has not plateaued)."""
    m = VERDICT_METRIC[family]
    e: dict = {"metric": m, "column": f"{m}_{family}", "models": []}
    pts = []
    for mod in models:
        r = mod["row"]
        rate = pd.to_numeric(r.get(f"{m}_{family}"), errors="coerce")
        n = pd.to_numeric(r.get(f"n_{family}"), errors="coerce")
        unp = pd.to_numeric(r.get(f"unparsable_{family}"), errors="coerce")
        c = pd.to_numeric(r.get(f"chance_{m}_{family}"), errors="coerce")
        lo, hi = proportion_ci(float(rate) if rate is not None else math.nan, float(n) if n is not None else math.nan)
        row = {"model": mod["name"], "n_params": mod["size"], "value": _f(rate), "ci_low": lo, "ci_high": hi,
               "n": _f(n), "unparsable": _f(unp), "chance": _f(c)}
        e["models"].append(row)
        if math.isfinite(row["value"]) and math.isfinite(lo):
            pts.append(row)
    if len(pts) < min_sizes:
        e["problem"] = (f"{len(pts)} real model size{'s' if len(pts) != 1 else ''} with a finite {m}_{family} "
                        f"({', '.join(size_words(p['n_params']) for p in pts) or 'none'}): the plateau needs at "
                        f"least {min_sizes}")
        return e
    big, small = pts[-1], pts[0]
    e["largest"], e["smallest"] = big, small
    ratio = big["n_params"] / small["n_params"] if small["n_params"] > 0 else math.inf
    e["size_ratio"] = ratio
    if ratio < min_ratio:
        e["problem"] = (f"the real models span {ratio:.1f}x in parameters ({size_words(small['n_params'])} to "
                        f"{size_words(big['n_params'])}): a plateau whatever the size needs a range of at least "
                        f"{min_ratio:g}x")
        return e
    e["chance"] = c = big["chance"]
    if not math.isfinite(c):
        e["problem"] = f"no chance level chance_{m}_{family} recorded for the real models' instances"
        return e
    if c >= bounds[0]:
        e["problem"] = (f"the chance level of {m}_{family} on these instances, {c:.3f}, is not below the claimed band "
                        f"[{bounds[0]:g}, {bounds[1]:g}]: random answers would sit in or above it")
        return e
    if all(p["ci_low"] <= c for p in pts):
        e["problem"] = (f"every real model's {m}_{family} interval reaches down to the chance level {c:.3f} "
                        "(random or all-zero answers on the same instances): a floor decides nothing")
        return e
    d, glo, ghi = gain_ci((big["value"], big["n"]), (small["value"], small["n"]), n_boot, seed)
    e["range_gain"] = {"value": d, "ci_low": glo, "ci_high": ghi}
    for p_ in pts:
        p_["level"] = level(p_["ci_low"], p_["ci_high"], bounds)
    e["level"] = big["level"]
    band_words = f"the claimed band [{bounds[0]:g}, {bounds[1]:g}]"
    span = f"{size_words(small['n_params'])} → {size_words(big['n_params'])} ({ratio:.0f}x)"

    def said(p_: dict) -> str:
        return f"{p_['model']} ({size_words(p_['n_params'])}): {p_['value']:.3f} [{p_['ci_low']:.3f}, {p_['ci_high']:.3f}]"

    above = [p_ for p_ in pts if p_["level"] == "above"]
    e["not_supported_means"] = "missed_level"  # above or below the band: a level missed (see _state)
    if above:
        e["state"], e["why"] = "contradicts", (f"{'a model' if len(above) == 1 else 'models'} already above "
                                               f"{band_words}: {'; '.join(said(p_) for p_ in above)}")
    elif glo > 0:
        e["not_supported_means"] = "opposite"
        e["state"], e["why"] = "contradicts", (f"it still rises over the size range {span}: gain {d:.3f} "
                                               f"[{glo:.3f}, {ghi:.3f}], no plateau over the real models' sizes")
    elif -flat_tol <= glo and ghi <= flat_tol and all(p_["ci_low"] > c for p_ in pts):
        parsed_share = 1.0 - big["unparsable"] if math.isfinite(big["unparsable"]) else math.nan
        among = big["value"] / parsed_share if parsed_share > 0 else math.nan
        levels = {p_["level"] for p_ in pts}
        if levels == {"inside"} and not (math.isfinite(among) and bounds[0] <= among <= bounds[1]):
            # Unparsable answers count as infeasible: a model that formats badly but solves what it parses can
            # land in the band by its parse failures alone; then the band measures formatting, not constraints.
            e["state"], e["why"] = "open", (f"flat over the size range {span}, inside {band_words}, but among the "
                                            f"largest model's parsable answers the rate is {among:.3f}: the level "
                                            "depends on parse failures")
        elif levels == {"inside"}:
            e["state"], e["why"] = "plateau", (f"flat over the size range {span} (gain {d:.3f} [{glo:.3f}, "
                                               f"{ghi:.3f}] within ±{flat_tol:g}), every model inside {band_words}")
        elif levels == {"below"}:
            e["state"], e["why"] = "contradicts", (f"flat over the size range {span} (gain {d:.3f} [{glo:.3f}, "
                                                   f"{ghi:.3f}]) but below {band_words}: {said(big)}")
        else:
            e["state"], e["why"] = "open", (f"flat over the size range {span}, but not every model's interval lies "
                                            f"inside {band_words}: " + "; ".join(said(p_) for p_ in pts))
    else:
        e["state"], e["why"] = "open", (f"neither flat within ±{flat_tol:g} nor rising over the size range {span}: "
                                        f"gain {d:.3f} [{glo:.3f}, {ghi:.3f}]; {said(big)}; chance {c:.3f}")
    return e


def _f(v) -> float:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return math.nan
    return v


def lm_constraint_satisfaction_plateaus(ok: pd.DataFrame, thresholds: Mapping[str, float], n_boot: int = 2000,
                                        seed: int = 0) -> Verdict:
    """The plateau question decided over real language models' sizes, beside the from-scratch
    sweep's :func:`constraint_satisfaction_plateaus` (which real models never enter).

    Data: the ok real-model rows (``model.kind`` lm), each a model answering the same fixed test instances
    per family and difficulty. Per family the verdict metric (:data:`VERDICT_METRIC`: feasibility, knapsack
    feasible-and-optimal, ConstraintBench's kind; Tso et al. 2026, "ConstraintBench", arXiv 2602.22465) of
    each model with its exact Clopper-Pearson 95% interval over its ``n_<family>`` instances (unparsable
    answers count as infeasible; their share is listed beside), and its chance level on the same instances
    (``chance_<metric>_<family>``, :mod:`.baselines`).

    Rule, per family, over the models that can decide (:func:`lm_models`: known size, parsable-answer share
    at least ``min_parsed``, one per size):

    - a model left out by the gate or of unknown size at or above the largest deciding size: inconclusive (the
      plateau would be read below the largest size tested; :func:`lm_models`);
    - fewer than ``min_sizes`` (3) distinct sizes: inconclusive, the sizes named
      ("2 real model sizes (135M, 22.7M): the plateau needs at least 3");
    - a chance level at or above the band's low end: inconclusive (random answers would sit in the band);
    - every model's interval reaching down to the chance level: inconclusive (a floor decides nothing);
    - *contradicts* when the largest model's interval lies above the claimed band
      ``[claimed_low − level_tol, claimed_high + level_tol]`` — or any smaller model's does: "whatever the size"
      — or when the gain over the size range (largest minus smallest deciding model; percentile bootstrap
      interval, :func:`gain_ci`) lies above 0 (still rising: no plateau over these sizes), or when the range is
      flat but every model lies below the band (a plateau at another level);
    - inconclusive when the deciding models span less than ``min_size_ratio`` (default 10: one order of
      magnitude, the factor at which the answer page calls two models another scale) — a plateau read over a
      6% step in size at the top of a climbing curve is no plateau — or when two records of one model disagree
      (their intervals do not overlap), whatever their order in the table;
    - *plateau* when the range's gain lies within ``±flat_tol``, every model's interval inside the band and
      above chance, and the largest model's rate among its parsable answers inside the band too (else open:
      the level would be set by parse failures, which count as infeasible);
    - otherwise open (the intervals cannot tell).

    Supported when every family plateaus; not supported when any contradicts (the first such family decides);
    inconclusive otherwise, and whatever the numbers when the table has no real-model rows, a family's column
    is missing, NaN or empty. Real models have no seeds: the interval is over instances, never over training
    runs, so the claim's "whatever their training" is not tested here.

    Returns:
        :class:`bindscale.kit.Verdict` with statistic ``lm_largest_<metric>``: the deciding family's largest
        model's rate and its exact interval; ``details["models"]`` lists every real model with its exact name,
        parameter count and where it came from, and per family every metric with its parse-failure share and
        chance level.
    """
    bounds = band(thresholds)
    min_sizes = int(thresholds.get("min_sizes", 3))
    min_ratio = float(thresholds.get("min_size_ratio", 10.0))
    min_parsed = float(thresholds.get("min_parsed", 0.9))
    flat_tol = float(thresholds.get("flat_tol", 0.05))
    n_boot = min(int(n_boot), LM_N_BOOT)
    stat = "lm_largest_feas"
    if "model_kind" not in ok:
        ok = ok.assign(model_kind=ok["model.kind"] if "model.kind" in ok else "transformer")
    rows = ok[ok["model_kind"] == "lm"] if len(ok) else ok
    details: dict = {"claimed_band": list(bounds), "min_sizes": min_sizes, "min_parsed": min_parsed,
                     "flat_tol": flat_tol, "verdict_metric": dict(VERDICT_METRIC), "models": lm_points(ok)}
    if rows.empty:
        return _inconclusive(stat, 0, details, "no real-model rows (model.kind lm): nothing to decide over real sizes")
    fams = expected_families(rows)
    models, left_out, blocking = lm_models(rows, fams, min_parsed)
    details["left_out"] = left_out
    details["sizes"] = [m["size"] for m in models]
    n = len(rows)
    tail = f" (left out: {'; '.join(left_out)})" if left_out else ""
    if blocking and models:
        return _inconclusive(stat, n, details, (
            f"a real model of unknown size or at least as large as the largest that can decide "
            f"({size_words(models[-1]['size'])}) was left out ({'; '.join(blocking)}): the plateau would be "
            "read below the largest size tested"))
    if len(models) < min_sizes:
        sizes = ", ".join(size_words(m["size"]) for m in models) or "none"
        return _inconclusive(stat, n, details, f"{len(models)} real model size{'s' if len(models) != 1 else ''} "
                                               f"with valid answers ({sizes}): the plateau needs at least "
                                               f"{min_sizes}{tail}")
    details["deciding_cells"] = [deciding_cell({"model.kind": "lm", "lm_model": m["name"]}, 1) for m in models]
    by_family = {f: _lm_family(models, f, bounds, flat_tol, min_sizes, n_boot, seed, min_ratio) for f in fams
                 if f in VERDICT_METRIC}
    details["by_family"] = by_family

    def triple(e):
        b = e.get("largest")
        return (b["value"], b["ci_low"], b["ci_high"]) if b else NAN3

    contra = [f for f, e in by_family.items() if e.get("state") == "contradicts"]
    if contra:
        f = max(contra, key=lambda k: by_family[k].get("not_supported_means") == "opposite")
        details["not_supported_means"] = by_family[f].get("not_supported_means", "opposite")
        details["family_used"], details["reason"] = f, f"family {f}: {by_family[f]['why']}{tail}"
        return Verdict(f"lm_largest_{by_family[f]['metric']}", "not_supported", triple(by_family[f]), n, details)
    problems = [f for f, e in by_family.items() if "problem" in e]
    if problems or not by_family:
        f = problems[0] if problems else None
        details["family_used"] = f
        why = by_family[f]["problem"] if f else "no family to decide on"
        return Verdict(stat, "inconclusive", NAN3, n, details | {"reason": f"family {f}: {why}{tail}"})
    opens = [f for f, e in by_family.items() if e["state"] != "plateau"]
    f = opens[0] if opens else min(by_family, key=lambda k: by_family[k]["largest"]["ci_low"])
    details["family_used"] = f
    e = by_family[f]
    if not opens:
        details["reason"] = (f"every family flat over the last size step and inside the claimed band; the weakest, "
                             f"{f}: {e['why']}{tail}")
        return Verdict(f"lm_largest_{e['metric']}", "supported", triple(e), n, details)
    details["reason"] = f"family {f}: {e['why']}{tail}"
    return Verdict(f"lm_largest_{e['metric']}", "inconclusive", triple(e), n, details)
