# %% [markdown]
# # bindscale from Python
#
# Train one tiny hyperteacher trial in this process, probe a hidden layer of the trained
# network for the task's constituents, then run a tiny study and read its results into
# pandas. Runs in seconds on a CPU: `python examples/notebook.py`, or open it as a notebook
# (VS Code / Jupytext read the `# %%` cells).

# %%
import tempfile
from pathlib import Path

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression, RidgeCV

import bindscale as bs

out = Path(tempfile.mkdtemp(prefix="bindscale-example-"))

# %% [markdown]
# ## One trial: train it, get its record and the trained model
#
# A trial config is a plain dict (or `bs.resolve_study(...).trials()[i]`); no `kind` means a
# hyperteacher trial. `run_trial` returns the record a sweep would write (same metrics) and
# the trained network, here a plain MLP with named layers `input`, `hidden.0`, `hidden.1`, `output`.

# %%
config = {
    "task": {"M": 6, "K": 2, "holdout": 0.3},
    "model": {"kind": "mlp", "width": 64, "depth": 2},
    "train": {"steps": 300, "batch_tasks": 32, "n_evals": 2, "eval_tasks": 64, "probe_tasks": 32,
              "probe_samples": 2},
    "seed": 0,
}
record, model = bs.run_trial(config)
m = record["metrics"]
print(f"trial {record['trial_id']}: {record['status']}, held-out R² {m['r2_heldout']:.3f}, "
      f"in-distribution R² {m['r2_id']:.3f}, decodability (recorded) {m['decod_cv']:.3f}")
print(model)

# %% [markdown]
# ## Probe a hidden layer
#
# `build_tasks` gives the trial's task family (its teacher, split and encoding). Sample tasks
# from the training combinations and from the held-out ones, read the last hidden layer with
# `collect_activations` (forward hooks by module name), and fit linear probes for the
# constituents `z` (the weighted k-hot code of each task) on seen combinations, scored on
# unseen ones.

# %%
tasks = bs.build_tasks(config)
gen = torch.Generator().manual_seed(123)
seen = tasks.sample(512, gen)  # training combinations
unseen = tasks.sample(256, gen, pool="heldout")


def features(batch):
    acts = bs.collect_activations(model, batch, names=["hidden.1"])
    return acts["hidden.1"].mean(dim=1).numpy()  # (tasks, width): averaged over each task's inputs


X_fit, X_test = features(seen), features(unseen)
ridge = RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(X_fit, seen.z.numpy())
print(f"ridge probe hidden.1 -> z: R² on held-out combinations {ridge.score(X_test, unseen.z.numpy()):.3f}")
active = LogisticRegression(max_iter=2000).fit(X_fit, seen.z[:, 0].numpy() > 0)
print(f"logistic probe 'module 0 active?': accuracy on held-out combinations "
      f"{active.score(X_test, unseen.z[:, 0].numpy() > 0):.3f}")

# %% [markdown]
# ## A tiny study: run it, load its results and a saved model
#
# A study is a YAML file (or a built-in name: `bs.resolve_study("scaling", quick=True)`);
# `save_models: true` writes each trained model to `models/<trial_id>.pt` beside its record.
# `workers=1` trains in this process (more workers from a script need an
# `if __name__ == "__main__":` guard).

# %%
(out / "tiny.yaml").write_text("""
name: example
base:
  task: {M: 6, K: 2, holdout: 0.3}
  model: {kind: mlp, width: 32, depth: 2}
  train: {steps: 60, batch_tasks: 16, n_evals: 2, eval_tasks: 32, probe_tasks: 32, probe_samples: 2}
grids:
  - {model: [mlp, hypernet], seed: [0, 1]}
save_models: true
""")
study = bs.resolve_study(out / "tiny.yaml")
summary = bs.run_study(study, out / "run", workers=1, device="cpu")
df = bs.load_results(out / "run")
print(df.groupby("model")[["r2_id", "r2_heldout", "n_params"]].mean())

# %%
best = df.sort_values("r2_heldout").iloc[-1]
net = bs.load_model(out / "run", best["trial_id"])
print(f"best trial {best['trial_id']} ({best['model']}, seed {best['seed']}): {type(net).__name__}, "
      f"report at {out / 'run' / 'report.html'}")
