"""Result versions: the rule that ties a study's numbers to its version (tests/integration/reference.py), tried
on synthetic runs, and the committed references' shape."""

import json

import pytest

from bindscale.core import registry
from tests.integration import reference as R


def _run(tmp_path, study, values, version_ok=True):
    d = tmp_path / study / "records"
    d.mkdir(parents=True)
    for tid, metrics in values.items():
        (d / f"{tid}.json").write_text(json.dumps({"trial_id": tid, "status": "ok", "metrics": metrics}))
    (tmp_path / study / "summary.json").write_text(json.dumps({"quick": True}))
    return tmp_path


@pytest.fixture
def ref_dir(tmp_path, monkeypatch):
    d = tmp_path / "ref"
    d.mkdir()
    monkeypatch.setattr(R, "REFERENCE_DIR", d)
    return d


def _ref(ref_dir, study, version, trials):
    (ref_dir / f"{study}.json").write_text(json.dumps({"study": study, "result_version": version, "trials": trials}))


TRIALS = {f"t{i}": {"final_loss": 1.0 + i, "acc": 0.5, "train_seconds": 3.0 + i} for i in range(10)}


def test_same_numbers_pass_and_machine_metrics_are_ignored(tmp_path, ref_dir):
    _ref(ref_dir, "s", 1, {t: {k: v for k, v in m.items() if k != "train_seconds"} for t, m in TRIALS.items()})
    run = {t: {**m, "train_seconds": 99.0} for t, m in TRIALS.items()}
    assert R.check("s", _run(tmp_path / "run", "s", run), 1) is None


def test_float_rounding_on_another_cpu_is_not_a_move(tmp_path, ref_dir):
    _ref(ref_dir, "s", 1, {t: {"final_loss": m["final_loss"], "acc": m["acc"], "n_correct": 243.0}
                           for t, m in TRIALS.items()})
    run = {t: {"final_loss": m["final_loss"] * (1 + 1e-6), "acc": m["acc"]} for t, m in TRIALS.items()}
    run["t0"]["acc"] = 0.52  # one flipped example out of fifty: one value in twenty
    run["t1"]["n_correct"] = 242.0  # a count off by one
    for tid in TRIALS:
        run[tid].setdefault("n_correct", 243.0)
    assert R.check("s", _run(tmp_path / "run", "s", run), 1) is None


@pytest.mark.parametrize("change", ["recipe", "one_gross", "trial_missing"])
def test_moved_numbers_without_a_bump_fail_and_name_the_fix(tmp_path, ref_dir, change):
    _ref(ref_dir, "s", 2, {t: {"final_loss": m["final_loss"], "acc": m["acc"]} for t, m in TRIALS.items()})
    run = {t: {"final_loss": m["final_loss"], "acc": m["acc"]} for t, m in TRIALS.items()}
    if change == "recipe":  # every loss 1% lower: a change of steps or learning rate
        run = {t: {**m, "final_loss": m["final_loss"] * 0.99} for t, m in run.items()}
    elif change == "one_gross":  # one accuracy jumps by 0.3: a metric's definition changed
        run["t3"]["acc"] = 0.8
    else:
        del run["t9"]
    why = R.check("s", _run(tmp_path / "run", "s", run), 2)
    assert why and "moved" in why and "bump it" in why and "result_version is still 2" in why


def test_a_bump_without_new_references_fails_too(tmp_path, ref_dir):
    _ref(ref_dir, "s", 1, {"t0": {"final_loss": 1.0}})
    why = R.check("s", _run(tmp_path / "run", "s", {"t0": {"final_loss": 0.5}}), 2)
    assert why and "reference was made at 1" in why and "regenerate" in why
    assert "no reference numbers" in R.check("other", tmp_path / "run", 1)


def test_every_built_in_study_has_references_at_its_version():
    """The committed references cover every built-in study at the version its code declares."""
    for name, plugin in registry.builtin().items():
        path = R.REFERENCE_DIR / f"{name}.json"
        assert path.exists(), f"{name}: {R._regen()}"
        data = json.loads(path.read_text())
        assert data["result_version"] == plugin.result_version, f"{name}: {R._regen()}"
        assert data["trials"] and all(data["trials"].values())
