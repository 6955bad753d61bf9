"""The toy study's verdict rule: one function per claim, named like the claim."""

import pandas as pd

from bindscale.kit import INCONCLUSIVE, NAN3, NOT_SUPPORTED, SUPPORTED, Verdict, ci_entry, mean_ci, ok_rows


def toy_fits(ok: pd.DataFrame, p, n_boot: int, seed: int) -> Verdict:
    ok = ok_rows(ok, ("width", "score"))
    if ok.empty:
        return Verdict("toy_score", INCONCLUSIVE, NAN3, 0, {"reason": "no ok trials"})
    top = ok[ok["width"] == ok["width"].max()]["score"]
    triple = mean_ci(top, n_boot, seed=seed)
    verdict = SUPPORTED if triple[1] > p["threshold"] else NOT_SUPPORTED if triple[2] < p["threshold"] else INCONCLUSIVE
    return Verdict("toy_score", verdict, triple, len(top),
                   {"reason": f"threshold {p['threshold']}", "score": ci_entry(triple, len(top))})
