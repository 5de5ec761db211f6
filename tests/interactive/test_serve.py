"""The interactive app's API (FastAPI's test client) on a small trained run: options, a streamed continuation with
its timings, every cap refused with a 4xx naming it, malformed input 422, the bounded queue (429 / 503 with
Retry-After), and a stopped stream giving its worker back within one decoding step."""

from __future__ import annotations

import gc
import json
import threading
import time

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from genfeat.models.interactive.inference import load_run  # noqa: E402
from genfeat.serve.interactive import Limits, create_app  # noqa: E402

PROMPT = "s1 t3w1 t3w2 s2 t3w5 s3 t3w0 ."


@pytest.fixture(scope="module")
def gen(small_run):
    return load_run(small_run)


def _events(text: str) -> list[tuple[str, dict]]:
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_options_and_a_streamed_continuation(gen, monkeypatch):
    seen = []
    real = type(gen).stream
    monkeypatch.setattr(type(gen), "stream", lambda self, ids, cond, *a, **k: seen.append(cond) or real(
        self, ids, cond, *a, **k))
    calls = []
    real_options = type(gen).options
    monkeypatch.setattr(type(gen), "options", lambda self, ids: calls.append(1) or real_options(self, ids))
    app = create_app(gen)
    c = TestClient(app)
    r = c.post("/api/options", json={"prompt": PROMPT})
    assert r.status_code == 200 and len(r.json()["topics"]) == 4 and all(len(t) == 5 for t in r.json()["topics"])
    r = c.post("/api/generate", json={"prompt": PROMPT, "topics": [0, 1], "words": ["t5w0"], "max_new_tokens": 7})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    ev = _events(r.text)
    assert ev[0][0] == "start" and [e for e, _ in ev[1:-1]] == ["token"] * 7 and ev[-1][0] == "done"
    done = ev[-1][1]
    assert done["tokens"] == 7 and done["first_token_s"] > 0 and done["decode_tokens_per_s"] > 0
    topics = gen.options([gen.words.index(w) for w in PROMPT.split()])  # the two topics, then the typed word
    want = gen.conditions(topics, [0, 1], [gen.words.index("t5w0")])
    assert len(seen) == 1 and seen[0].shape == (3, want.size(1)) and bool((seen[0] == want).all())
    assert len(calls) == 2  # the options request's and this check's: the generation picked from the first
    assert app.state.gate.active == 0
    assert "access-control-allow-origin" not in r.headers
    assert "/api/generate" in c.get("/openapi.json").json()["paths"]
    assert c.get("/").status_code == 200 and "Interactive writing" in c.get("/").text


@pytest.mark.parametrize("body, status, names", [
    ({"prompt": PROMPT, "max_new_tokens": 101}, 422, "max_new_tokens=100"),
    ({"prompt": PROMPT, "topics": list(range(11))}, 422, "max_topics=10"),
    ({"prompt": PROMPT, "words": ["t1w1"] * 11}, 422, "max_words=10"),
    ({"prompt": " ".join(["s1"] * 401)}, 422, "max_prompt_tokens=400"),
    ({"prompt": PROMPT, "topics": [9]}, 422, "topic indices"),
    ({"prompt": "zombie apocalypse"}, 422, "outside the vocabulary: zombie"),
    ({"prompt": ""}, 422, "prompt"),
    ({"prompt": PROMPT, "max_new_tokens": "many"}, 422, "max_new_tokens"),
])
def test_caps_and_bad_input_are_4xx_naming_the_problem(gen, body, status, names):
    app = create_app(gen)
    c = TestClient(app)
    r = c.post("/api/generate", json=body)
    assert r.status_code == status and names in json.dumps(r.json())
    assert app.state.gate.active == 0 and c.post("/api/options", json={"prompt": PROMPT}).status_code == 200


def test_an_oversized_body_and_malformed_json(gen):
    c = TestClient(create_app(gen, Limits(max_body_bytes=200)))
    r = c.post("/api/options", content=json.dumps({"prompt": "s1 " * 100}), headers={"content-type":
                                                                                    "application/json"})
    assert r.status_code == 413 and "max_body_bytes=200" in r.json()["detail"]
    r = c.post("/api/options", content="{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422


def test_the_queue_refuses_beyond_its_bound(gen):
    app = create_app(gen, Limits(queue=1, deadline_s=0.2))
    gate = app.state.gate
    c = TestClient(app)
    gate.enter()  # the worker is busy
    try:
        waiter = threading.Thread(target=lambda: c.post("/api/options", json={"prompt": PROMPT}))
        waiter.start()  # one waits (and times out after 0.2 s with 503)
        while gate.waiting == 0 and waiter.is_alive():
            pass
        r = c.post("/api/options", json={"prompt": PROMPT})
        assert r.status_code == 429 and r.headers["retry-after"] == "1" and "queue" in r.json()["detail"]
        waiter.join()
        r = c.post("/api/generate", json={"prompt": PROMPT})
        assert r.status_code == 503 and r.headers["retry-after"] == "1" and "deadline_s" in r.json()["detail"]
    finally:
        gate.leave()
    assert c.post("/api/options", json={"prompt": PROMPT}).status_code == 200


def test_stopping_a_stream_frees_the_worker_within_a_step(gen, monkeypatch):
    """A client that stops reading closes the response: the decoding loop stops and the worker slot is free."""
    app = create_app(gen)
    steps = []
    real = type(gen).stream

    def counted(self, *a, **k):
        for t in real(self, *a, **k):
            steps.append(t)
            yield t
    monkeypatch.setattr(type(gen), "stream", counted)
    c = TestClient(app)
    gc.disable()  # the slot must come back from the response closing its stream, never from garbage collection
    try:
        with c.stream("POST", "/api/generate", json={"prompt": PROMPT, "max_new_tokens": 100}) as r:
            lines = r.iter_lines()
            got = 0
            for line in lines:
                got += line.startswith("event: token")
                if got == 3:
                    break
        for _ in range(100):  # the app's event loop closes the stream after the client has let go
            if app.state.gate.active == 0:
                break
            time.sleep(0.05)
        assert app.state.gate.active == 0
    finally:
        gc.enable()
    assert len(steps) <= 5  # a step or two past what was read, never the 100 asked for


def test_serve_refuses_bad_input_in_one_line(small_run, tmp_path, capsys):
    from genfeat.cli import main

    assert main(["serve", "interactive", str(small_run), "--port", "70000"]) == 2
    assert "--port must be in 1..65535" in capsys.readouterr().err
    assert main(["serve", "interactive", str(tmp_path)]) == 2
    assert "not a finished interactive run directory" in capsys.readouterr().err
