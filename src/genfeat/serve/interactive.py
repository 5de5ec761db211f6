"""The interactive writing app's JSON API (thesis C §4.1's loop as a local service): FastAPI, server-sent events.

    POST /api/options   {"prompt"}                         -> {"topics": [[word × M] × K], "options_s"}
    POST /api/generate  {"prompt", "topics": [k...], "words": [w...], "max_new_tokens", "seed"}
                        -> text/event-stream: "token" events {"text"} as the continuation is drawn, then one
                           "done" event {"tokens", "first_token_s", "decode_tokens_per_s", "stopped"}
    GET  /api/limits    the caps below;  GET /openapi.json  the schema

Serving contract: the app is meant for 127.0.0.1 (`genfeat serve` binds there unless told otherwise) and sends no
CORS headers; every cap is a 4xx naming it (a body over `max_body_bytes` 413, the others 422, as FastAPI's own
validation errors); one generation runs at a time (a 2-core CPU) and at most `queue` more wait, each up to
`deadline_s`: beyond the queue 429, past the deadline 503, both with Retry-After. A client that disconnects
(the UI's stop button aborts its request) stops the generation within one decoding step: the stream is a
generator drawn one token per step (`models.sampling.stream`), closed when the response ends, and its worker
slot is given back in that close (`Gate.active` is 0 again).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field

from genfeat.models.interactive.inference import InteractiveGenerator
from genfeat.tasks.generation import text_deltas

STATIC = Path(__file__).with_name("static")


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 16_384
    max_prompt_tokens: int = 400
    max_topics: int = 10  # chosen topics per request
    max_words: int = 10  # typed words per request
    max_new_tokens: int = 100
    queue: int = 4  # requests waiting for the worker
    deadline_s: float = 30.0  # longest wait for the worker


class OptionsRequest(BaseModel):
    prompt: str = Field(min_length=1)


class GenerateRequest(BaseModel):
    prompt: str = Field(min_length=1)
    topics: list[int] = Field(default_factory=list)
    words: list[str] = Field(default_factory=list)
    max_new_tokens: int = Field(default=50, ge=1)
    seed: int = 0


class Busy(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


class Gate:
    """One worker and a bounded queue in front of it (thread-safe)."""

    def __init__(self, queue: int, deadline_s: float):
        self.sem = threading.Semaphore(1)
        self.lock = threading.Lock()
        self.queue, self.deadline_s = queue, deadline_s
        self.waiting = self.active = 0

    def enter(self) -> None:
        with self.lock:
            if self.waiting >= self.queue and self.active:
                raise Busy(429, f"the queue is full ({self.queue} waiting, the cap `queue`)")
            self.waiting += 1
        ok = self.sem.acquire(timeout=self.deadline_s)
        with self.lock:
            self.waiting -= 1
            if ok:
                self.active += 1
        if not ok:
            raise Busy(503, f"no worker within the deadline of {self.deadline_s:g} s (the cap `deadline_s`)")

    def leave(self) -> None:
        with self.lock:
            self.active -= 1
        self.sem.release()


def _resume(body: Iterator[str]) -> Iterator[str]:
    """The primed event stream from its first event again; closing this closes `body`."""
    try:
        yield "event: start\ndata: {}\n\n"
        yield from body
    finally:
        body.close()


def create_app(gen: InteractiveGenerator, limits: Limits = Limits()):
    from fastapi import FastAPI, HTTPException, Request
    from fastapi.responses import FileResponse, JSONResponse, StreamingResponse

    class ClosingStream(StreamingResponse):
        """A streaming response that closes its sync generator when the response ends, however it ends.

        Starlette iterates a sync body in a worker thread and never closes it: on a disconnect the generator (and
        the worker slot its `finally` gives back) would wait for garbage collection. Closing it here is safe: the
        thread's `next()` has returned before a cancellation reaches this frame (anyio defers it).
        """

        def __init__(self, content: Iterator[str], **kw):
            super().__init__(content, **kw)
            self.sync_body = content

        async def stream_response(self, send) -> None:
            try:
                await super().stream_response(send)
            finally:
                self.sync_body.close()

    index = {w: i for i, w in enumerate(gen.words)}
    gate = Gate(limits.queue, limits.deadline_s)
    options_of = lru_cache(maxsize=64)(lambda ids: gen.options(ids))  # a prompt's topics: once for options and
    #                                                                      the generation that picks among them
    app = FastAPI(title="genfeat interactive writing", version="1",
                  description="Topic options and topic-controlled continuations (thesis C §4).")
    app.state.gate = gate

    def encode(text: str) -> list[int]:
        """The prompt's model tokens: the run's tokenizer, or (the synthetic corpus) its words themselves."""
        if gen.tokenizer is not None:
            ids = gen.tokenizer.encode(text)
        else:
            words = text.split()
            unknown = [w for w in words if w not in index]
            if unknown:
                raise HTTPException(422, f"words outside the vocabulary: {', '.join(unknown[:5])}")
            ids = [index[w] for w in words]
        if len(ids) > limits.max_prompt_tokens:
            raise HTTPException(422, f"the prompt has {len(ids)} tokens, over the cap max_prompt_tokens="
                                     f"{limits.max_prompt_tokens}")
        if not ids:
            raise HTTPException(422, "the prompt is empty")
        return ids

    def typed_rows(words: list[str]) -> list[int]:
        """Typed words as rows of the word table (lower-cased where the table is real prose's)."""
        keys = [w.lower() for w in words] if gen.tokenizer is not None else words
        unknown = [w for w, k in zip(words, keys, strict=True) if k not in index]
        if unknown:
            raise HTTPException(422, f"words without a word vector: {', '.join(unknown[:5])}")
        return [index[k] for k in keys]

    def texts(tokens: Iterator[int]) -> Iterator[str]:
        if gen.tokenizer is not None:
            yield from text_deltas(gen.tokenizer, tokens)
        else:
            yield from (" " + gen.words[t] for t in tokens)

    @app.middleware("http")
    async def cap_body(request: Request, call_next):
        size = request.headers.get("content-length")
        if size is not None and int(size) > limits.max_body_bytes:
            return JSONResponse({"detail": f"the request body has {size} bytes, over the cap max_body_bytes="
                                           f"{limits.max_body_bytes}"}, status_code=413)
        return await call_next(request)

    @app.exception_handler(Busy)
    async def refuse(_: Request, e: Busy):
        return JSONResponse({"detail": e.detail}, status_code=e.status, headers={"Retry-After": "1"})

    @app.get("/api/limits")
    def get_limits() -> dict:
        return asdict(limits)

    @app.post("/api/options")
    def options(req: OptionsRequest) -> dict:
        ids = encode(req.prompt)
        t0 = time.perf_counter()
        gate.enter()
        try:
            topics = options_of(tuple(ids))
        finally:
            gate.leave()
        return {"topics": [[gen.words[i] for i in row] for row in topics.words.tolist()],
                "options_s": time.perf_counter() - t0}

    @app.post("/api/generate")
    def generate(req: GenerateRequest):
        ids = encode(req.prompt)
        for name, got, cap in (("max_topics", len(req.topics), limits.max_topics),
                               ("max_words", len(req.words), limits.max_words),
                               ("max_new_tokens", req.max_new_tokens, limits.max_new_tokens)):
            if got > cap:
                raise HTTPException(422, f"{got} is over the cap {name}={cap}")
        typed = typed_rows(req.words)
        gate.enter()
        try:
            topics = options_of(tuple(ids))
            if any(not 0 <= k < len(topics.words) for k in req.topics):
                raise HTTPException(422, f"topic indices must be in 0..{len(topics.words) - 1}")
            conditions = gen.conditions(topics, req.topics, typed)
        except BaseException:
            gate.leave()
            raise

        def events() -> Iterator[str]:
            t0 = time.perf_counter()
            first, n, stopped = None, 0, True
            try:
                yield "event: start\ndata: {}\n\n"
                drawn: list[int] = []

                def tap() -> Iterator[int]:
                    for tok in gen.stream(ids, conditions, req.max_new_tokens, seed=req.seed):
                        drawn.append(tok)
                        yield tok

                for piece in texts(tap()):
                    n = len(drawn)
                    first = first if first is not None else time.perf_counter() - t0
                    yield f"event: token\ndata: {json.dumps({'text': piece})}\n\n"
                n, stopped = len(drawn), False
                total = time.perf_counter() - t0
                rate = (n - 1) / (total - first) if n > 1 and total > first else 0.0
                yield ("event: done\ndata: " + json.dumps({"tokens": n, "first_token_s": first,
                                                          "decode_tokens_per_s": rate, "stopped": stopped}) + "\n\n")
            finally:
                gate.leave()

        body = events()
        next(body)  # started: closing it (the response's end or a disconnect) frees the worker
        return ClosingStream(_resume(body), media_type="text/event-stream", headers={"Cache-Control": "no-store"})

    @app.get("/", include_in_schema=False)
    def root():
        return FileResponse(STATIC / "index.html")

    @app.get("/app.js", include_in_schema=False)
    def script():
        return FileResponse(STATIC / "app.js", media_type="text/javascript")

    return app
