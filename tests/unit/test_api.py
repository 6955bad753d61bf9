"""The Python API (bindscale.api): one trial in-process, saved models, results, activations."""

import json
import subprocess
import sys

import pytest
import torch

import bindscale
import bindscale as bs
from bindscale.core import seeding
from bindscale.core.errors import ConfigError
from bindscale.models import HookPoint, run_with_cache
from bindscale.studies.scaling.metrics import r2_within_task
from bindscale.studies.scaling.students import build_model as build_stack
from bindscale.store.records import json_safe, load_records
from bindscale.run.jobs import parse_trial, run_group, run_job
from bindscale.studies.scaling.tasks import HyperTeacher

#: Metrics that are wall-clock timings (they differ between any two runs).
TIMINGS = {"train_seconds", "eval_seconds", "probe_seconds", "timings", "steps_per_s"}

HYPER = {"task": {"M": 6, "K": 2, "holdout": 0.3}, "model": {"kind": "mlp", "width": 16, "depth": 2},
         "train": {"steps": 30, "batch_tasks": 16, "n_evals": 2, "eval_tasks": 32, "probe_tasks": 32,
                   "probe_samples": 2}}
SUBGRAPHS = {"kind": "subgraphs",
             "task": {"family": "maxsubseq", "n_train": 80, "id_max": 3, "ood_max": 4, "n_test": 3},
             "model": {"n_layers": 1, "d_model": 16, "n_heads": 2},
             "train": {"steps": 6, "batch_size": 16, "warmup_steps": 2}}
MODULARITY = {"kind": "modularity", "task": {"n_shapes": 3, "n_colours": 3, "n_train": 120, "n_test": 60},
              "model": {"architecture": "mlp", "width": 8, "depth": 2},
              "train": {"steps": 30, "batch_size": 32, "warmup_steps": 5},
              "mask": {"steps": 10, "batch_size": 32, "n_mask_seeds": 1, "control_mask_seeds": 0}}
MOD_TRANSFORMER = MODULARITY | {"model": {"architecture": "transformer", "width": 8, "depth": 1, "n_heads": 2}}


def same_metrics(a: dict, b: dict) -> None:
    """Every metric but the timings is the same (NaN as None, as in a record file)."""
    a, b = json_safe(a), json_safe(b)
    assert set(a) == set(b)
    assert {k: v for k, v in a.items() if k not in TIMINGS} == {k: v for k, v in b.items() if k not in TIMINGS}


# --------------------------------------------------------------------------- the surface

def test_the_api_is_exported_lazily_and_import_stays_light():
    assert set(bindscale.__all__) >= {"resolve_study", "run_study", "run_trial", "load_results", "load_model",
                                      "build_tasks", "task_family", "build_model", "collect_activations"}
    assert set(bindscale.__all__) <= set(dir(bindscale))
    assert bs.task_family is bs.build_tasks
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        bindscale.nope  # noqa: B018
    code = ("import sys, bindscale; from bindscale import resolve_study; "
            "s = resolve_study('scaling', quick=True); assert s.trials(); "
            "assert 'torch' not in sys.modules and 'pandas' not in sys.modules, 'heavy import'")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_resolve_study_takes_overrides_as_a_mapping_or_as_set_strings():
    a = bs.resolve_study("scaling", quick=True, overrides={"train.steps": 7, "width": [8, 16], "model": "mlp"})
    b = bs.resolve_study("scaling", quick=True, overrides=["train.steps=7", "width=[8,16]", "model=mlp"])
    assert [t.trial_id for t in a.trials()] == [t.trial_id for t in b.trials()]
    assert {t.train.steps for t in a.trials()} == {7} and {t.model.width for t in a.trials()} == {8, 16}
    with pytest.raises(ConfigError, match="train has no field"):
        bs.resolve_study("scaling", overrides={"train.stepz": 1})


def test_run_study_refuses_quick_or_overrides_with_a_resolved_study(tmp_path):
    study = bs.resolve_study("scaling", quick=True)
    with pytest.raises(ConfigError, match="give them to resolve_study"):
        bs.run_study(study, tmp_path / "run", quick=True)


def test_save_models_is_off_by_default_and_changes_no_trial_id():
    off = bs.resolve_study("scaling", quick=True)
    on = bs.resolve_study("scaling", quick=True, overrides={"save_models": True})
    assert off.save_models is False and on.save_models is True
    assert [t.trial_id for t in on.trials()] == [t.trial_id for t in off.trials()]


# --------------------------------------------------------------------------- one trial

@pytest.mark.parametrize("kind", ["mlp", "hypernet"])
def test_run_trial_records_what_a_sweep_records_and_returns_the_trained_member(kind):
    cfg = HYPER | {"model": {"kind": kind, "width": 16 if kind == "mlp" else 8, "depth": 2}}
    torch.set_num_threads(2)  # run_trial trains with one thread, like a sweep's worker, then restores
    record, model = bs.run_trial(cfg)
    assert torch.get_num_threads() == 2
    torch.set_num_threads(1)
    trial = parse_trial(cfg)
    assert record["trial_id"] == trial.trial_id and record["status"] == "ok" and record["study"] == "scaling"
    assert record["trial_config"] == trial.model_dump(mode="json") and record["provenance"]["executor"] == "api"
    same_metrics(record["metrics"], run_group([trial], "cpu")[0].metrics)
    assert type(model).__name__ == {"mlp": "MLP", "hypernet": "Hypernet"}[kind] and not model.training
    # The model is the trained one: it gives the recorded in-distribution R² on the trainer's evaluation set.
    task = HyperTeacher(trial.task, trial.seed)
    ev = task.sample(trial.train.eval_tasks, seeding.generator(trial.seed, "test"))
    with torch.no_grad():
        pred = model(ev.code, ev.x)
    assert float(r2_within_task(ev.y[None], pred[None])[0]) == record["metrics"]["r2_id"]


def test_run_trial_of_a_subgraphs_trial_matches_its_sweep_record_and_saved_model(tmp_path):
    trial = parse_trial(SUBGRAPHS)
    assert run_job([SUBGRAPHS], str(tmp_path), "s", "cpu", "inline", save_models=True) == ["ok"]
    swept = load_records(tmp_path)[trial.trial_id]
    record, model = bs.run_trial(SUBGRAPHS)
    same_metrics(record["metrics"], swept["metrics"])
    assert type(model).__name__ == "Transformer" and not model.training
    loaded = bs.load_model(tmp_path, trial.trial_id)
    assert loaded.max_len == model.max_len  # saved with the weights, not recomputed
    tokens = torch.randint(1, 10, (3, 7))
    with torch.no_grad():
        assert torch.equal(loaded(tokens), model(tokens))
    data = bs.build_tasks(SUBGRAPHS)
    assert len(data.train) == record["metrics"]["n_train_examples"] and data.max_len == model.max_len
    assert len(data.test) == len(data.in_dist) == record["metrics"]["n_test_id"] + record["metrics"]["n_test_ood"]


@pytest.mark.parametrize("cfg", [MODULARITY, MOD_TRANSFORMER], ids=["mlp", "transformer"])
def test_run_trial_of_a_modularity_trial_matches_its_sweep_record_and_saved_model(cfg, tmp_path):
    trial = parse_trial(cfg)
    assert run_job([cfg], str(tmp_path), "m", "cpu", "inline", save_models=True) == ["ok"]
    swept = load_records(tmp_path)[trial.trial_id]
    record, model = bs.run_trial(cfg)
    same_metrics(record["metrics"], swept["metrics"])
    data = bs.build_tasks(cfg)
    x, y = data["compound_test"].xy(model.view)
    with torch.no_grad():
        assert float(((model(x) > 0) == y.bool()).float().mean()) == pytest.approx(record["metrics"]["base_acc_test"])
        assert torch.equal(bs.load_model(tmp_path, trial.trial_id)(x), model(x))


def test_return_models_changes_no_metric_of_any_trainer():
    for cfg in (HYPER, MODULARITY):
        trial = parse_trial(cfg)
        plain, kept = run_group([trial], "cpu")[0], run_group([trial], "cpu", return_models=True)[0]
        assert plain.model is None and kept.model is not None
        same_metrics(plain.metrics, kept.metrics)


def test_a_dict_config_is_validated_with_a_one_line_error():
    with pytest.raises(ConfigError, match="trial config: model.widht: unknown field"):
        bs.run_trial({"model": {"widht": 3}})
    with pytest.raises(ConfigError, match="unknown study kind"):
        bs.build_model({"kind": "nope"})
    with pytest.raises(TypeError, match="trial config"):
        bs.build_model(3)


def test_build_model_is_the_trainers_initialisation():
    for enc in ("identity", "tokens", "fewshot"):
        cfg = HYPER | {"task": HYPER["task"] | {"encoding": enc}}
        trial = parse_trial(cfg)
        task = bs.build_tasks(cfg)
        assert isinstance(task, HyperTeacher) and task.split.train == HyperTeacher(trial.task, 0).split.train
        stack = build_stack(trial.model, task.code_dim, 16, 16, 6, [seeding.generator(trial.seed, "init")])
        model = bs.build_model(cfg)
        assert model.training and model.hidden[0].weight.shape[0] == task.code_dim + 16
        b = task.sample(3, torch.Generator().manual_seed(0))
        with torch.no_grad():
            assert torch.equal(model(b.code, b.x), stack(b.code[None], b.x[None])[0])
    sub = bs.build_model(SUBGRAPHS, max_len=40)
    assert type(sub).__name__ == "Transformer" and sub.max_len == 40
    assert all(torch.equal(p, q) for p, q in zip(sub.parameters(), bs.build_model(SUBGRAPHS).parameters()))
    assert type(bs.build_model(MODULARITY)).__name__ == "MLPNet"


# --------------------------------------------------------------------------- activations

@pytest.mark.parametrize("kind", ["mlp", "hypernet"])
def test_a_members_activations_are_the_stacks_activation_points(kind):
    cfg = HYPER | {"model": {"kind": kind, "width": 12, "depth": 2}}
    trial = parse_trial(cfg)
    task = bs.build_tasks(cfg)
    gens = [seeding.generator(s, "init") for s in (5, trial.seed, 7)]
    stack = build_stack(trial.model, task.code_dim, 16, 16, 6, gens)
    b = task.sample(4, torch.Generator().manual_seed(0))
    code, x = b.code[None].expand(3, -1, -1), b.x[None].expand(3, -1, -1, -1)
    _, acts = run_with_cache(stack, code, x)
    got = bs.collect_activations(stack.member(1), b)
    assert [n for n in got if n.startswith("hook_")] == list(acts)  # same hook names, in forward order
    for name in acts:
        assert torch.equal(got[name], acts[name][1]), name
    for layer in ("input", "hidden.0", "hidden.1", "output"):  # the member's layers output the same points
        assert torch.equal(got[layer], acts[f"hook_{layer}"][1]), layer
    assert bs.collect_activations(stack.member(1), (b.code, b.x), names=["hidden.1"]).keys() == {"hidden.1"}
    with pytest.raises(IndexError):
        stack.member(3)


def test_transformer_activations_give_module_outputs_and_its_points():
    model = bs.build_model(SUBGRAPHS, max_len=32).eval()
    tokens = torch.randint(1, 10, (2, 5))
    acts = bs.collect_activations(model, tokens)
    assert {"embed", "blocks.0.attn.qkv", "blocks.0.mlp.fc", "ln_f", "head", "blocks.0.hook_resid_pre",
            "blocks.0.attn.hook_pattern", "blocks.0.attn.hook_z", "blocks.0.hook_mlp_out", "hook_ln_final"} <= set(acts)
    assert "rope" not in acts  # a module that never runs has no entry
    assert acts["blocks.0.attn.hook_pattern"].shape == (2, 2, 5, 5)
    with torch.no_grad():
        torch.testing.assert_close(acts["head"], model(tokens))
    only = bs.collect_activations(model, {"tokens": tokens}, names=["blocks.0", "blocks.0.attn.hook_pattern"])
    assert list(only) == ["blocks.0", "blocks.0.attn.hook_pattern"]
    with pytest.raises(KeyError, match="no activation named 'blocks.9'.*hook_ln_final"):
        bs.collect_activations(model, tokens, names=["blocks.9"])
    # Hooks are removed: the model runs as before.
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())
    assert not any(isinstance(m, HookPoint) and m.has_hooks for m in model.modules())


def test_hook_points_of_a_wrapped_stack_carry_the_wrappers_prefix():
    model = bs.build_model(MODULARITY)
    x, _ = bs.build_tasks(MODULARITY)["compound_test"].xy("onehot")
    acts = bs.collect_activations(model, x[:5])
    assert set(acts) == {"net.hook_input", "net.hook_hidden.0", "net.hook_hidden.1", "net.hook_output"}
    assert acts["net.hook_hidden.1"].shape == (1, 5, 1, 8)
    assert bs.collect_activations(model, x[:5], names=["net"])["net"].shape == (1, 5, 1, 1)
    # features() reads the same point through its own cache.
    with torch.no_grad():
        torch.testing.assert_close(model.features(x[:5]), acts["net.hook_hidden.1"].reshape(5, -1))
    _, cache = run_with_cache(model, x[:5], names=["net.hook_hidden.1"])
    torch.testing.assert_close(cache["net.hook_hidden.1"], acts["net.hook_hidden.1"])


# --------------------------------------------------------------------------- a run with saved models

TINY_STUDY = """
name: tiny-api
base:
  task: {M: 6, K: 2, holdout: 0.3}
  model: {kind: mlp, width: 8, depth: 1}
  train: {steps: 20, batch_tasks: 8, n_evals: 1, eval_tasks: 16, probe_tasks: 16, probe_samples: 2}
grids:
  - {model: [mlp, hypernet], seed: [0]}
save_models: true
"""


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("api")
    (d / "tiny.yaml").write_text(TINY_STUDY)
    study = bs.resolve_study(d / "tiny.yaml")
    # In this process (the process pool's workers: tests/integration/test_save_models.py).
    summary = bs.run_study(d / "tiny.yaml", d / "run", workers=1, device="cpu")
    torch.set_num_threads(1)
    return study, d / "run", summary


def test_a_sweep_with_save_models_writes_one_model_per_trial_and_load_model_rebuilds_it(saved_run):
    study, run, summary = saved_run
    assert summary["n_trials"] == summary["n_ok"] == 2
    ids = sorted(t.trial_id for t in study.trials())
    assert sorted(p.stem for p in (run / "models").iterdir()) == ids
    payload = torch.load(run / "models" / f"{ids[0]}.pt", weights_only=True)
    assert payload["trial_id"] == ids[0] and payload["format"] == 1 and payload["study"] == "scaling"
    for trial in study.trials():
        model = bs.load_model(run, trial.trial_id)
        record, trained = bs.run_trial(trial)
        assert not model.training
        b = bs.build_tasks(trial).sample(5, torch.Generator().manual_seed(3))
        with torch.no_grad():
            assert torch.equal(model(b.code, b.x), trained(b.code, b.x))  # same seed, one thread: same bits
        swept = json.loads((run / "records" / f"{trial.trial_id}.json").read_text())
        same_metrics(record["metrics"], swept["metrics"])
    with pytest.raises(FileNotFoundError, match="no model file"):
        bs.load_model(run, "0" * 16)


def test_load_results_reads_the_table_when_current_and_the_records_when_not(saved_run, tmp_path):
    import shutil

    import pandas as pd

    study, run, _ = saved_run
    df = bs.load_results(run)
    assert list(df["trial_id"]) == [t.trial_id for t in study.trials()]
    pd.testing.assert_frame_equal(df, pd.read_parquet(run / "results.parquet"))
    # A copy whose table is stale (one record changed since) is read from the records.
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    rec_path = copy / "records" / f"{study.trials()[0].trial_id}.json"
    rec = json.loads(rec_path.read_text())
    rec["status"] = "diverged"
    rec_path.write_text(json.dumps(rec))
    stale = bs.load_results(copy)
    assert list(stale["status"]) == ["diverged", "ok"]
    (copy / "results.parquet").unlink()
    assert list(bs.load_results(copy)["status"]) == ["diverged", "ok"]
    with pytest.raises(ConfigError, match="not a bindscale run directory"):
        bs.load_results(tmp_path / "empty")


# --------------------------------------------------------------------------- plugins without the API hooks

def _fake_plugin(**hooks):
    from bindscale.core.study import StudyPlugin

    return StudyPlugin(name="fake", kind="fake", trial_config="bindscale.studies.scaling.config:TrialConfig", claims=(),
                       description="", **({"trainer": lambda trials, device, progress: []} | hooks))


def test_a_plugin_without_the_hooks_says_so():
    bare = _fake_plugin()
    assert not bare.returns_models()
    with pytest.raises(NotImplementedError, match="cannot hand back trained models"):
        bare.run_group([], "cpu", None, return_models=True)
    with pytest.raises(NotImplementedError, match="no models hook"):
        bare.build_model(None)
    with pytest.raises(NotImplementedError, match="no tasks hook"):
        bare.build_tasks(None)
    # A models builder alone is not enough: the trainer must take return_models.
    assert not _fake_plugin(models="bindscale.studies.scaling.trial:untrained_model").returns_models()
    assert _fake_plugin(models="bindscale.studies.scaling.trial:untrained_model", trainer="bindscale.studies.scaling.trial:run_group").returns_models()


def test_save_models_is_refused_before_anything_is_written_when_the_trainer_cannot_return_models(monkeypatch, tmp_path):
    from bindscale.core.config import StudyConfig

    study = bs.resolve_study("scaling", quick=True, overrides={"save_models": True})
    monkeypatch.setattr(StudyConfig, "plugin", property(lambda self: _fake_plugin()))
    with pytest.raises(ConfigError, match="save_models: the fake study's trainer cannot hand back trained models"):
        bs.run_study(study, tmp_path / "run", device="cpu")
    assert not (tmp_path / "run").exists()
