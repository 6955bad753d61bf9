"""The toy study's figure."""

import pandas as pd

from bindscale.kit import errorbar, new_figure, ok_rows, seed_summary, to_base64


def _score_vs_width(df: pd.DataFrame):
    ok = ok_rows(df, ("width", "score"))
    if ok.empty:
        return None
    fig, ax = new_figure()
    s = seed_summary(ok, "width", "score")
    errorbar(ax, s["width"], s)
    ax.set_xlabel("random features")
    ax.set_ylabel("held-out R²")
    return to_base64(fig)


def figures(study=None):
    return {"score_vs_width": (_score_vs_width, "Held-out R² vs number of random features; mean ± 95% t interval "
                                                "over seeds.")}
