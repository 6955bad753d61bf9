"""The geometry study's per-configuration table in its report."""

from __future__ import annotations

import pandas as pd

from bindscale.kit import mean_table, ok_rows

# model.name, model_label: pretrained models (geometry-lm; the label says family, size, base/instruct and the
# stored precision, from the model's files; the parameter count is the table's n_params column)
KEYS = ["model.name", "model_label", "layers", "d_model", "steps", "n_lm"]
# every UUAS / UAS / LAS beside the linear chain's (a probe that does not beat it read no tree); the LM's fit beside the grammar's (the gate);
# the probes' gold-edge relation accuracy beside the word-pair labeller's
METRICS = ["lm_test_loss", "lm_excess_loss", "structural_uuas_pp", "polar_uuas_pp", "chain_uuas_pp",
           "structural_uas_pp", "polar_uas_pp", "chain_uas_pp", "structural_las_pp", "polar_las_pp", "chain_las_pp",
           "identity_las_pp", "structural_uuas_hm", "polar_uuas_hm", "chain_uuas_hm", "structural_las_hm",
           "polar_las_hm", "chain_las_hm", "polar_rel_acc", "polar_rel_bacc", "structural_rel_bacc", "wordpair_rel_bacc",
           "polar_dir_acc",
           "polar_spearman", "untrained_polar_las_pp", "untrained_structural_las_pp", "untrained_polar_uuas_pp",
           "embed_polar_las_pp"]


def config_table(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Means over seeds per model shape × training steps × corpus size (test scores at each probe's best dev layer)."""
    return mean_table(ok_rows(df), KEYS, METRICS)
