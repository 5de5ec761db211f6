"""The interactive app's latency on this machine (issue: options and first token for a 100-word prompt under 1 s,
decode tokens/s, a bounded load test, resident memory flat over 200 requests): `genfeat serve interactive RUN`
in a subprocess on localhost, driven over HTTP as a browser would.

    python -m benchmarks.interactive_latency RUN_DIR        # prints the JSON; benchmarks.interactive records it

    options        POST /api/options for 5 distinct 100-word test prompts: client wall time (median, max)
    first token    POST /api/generate (50 new tokens, 2 topics chosen) on the same prompts: client time to the first
                   token event, and the server's own first_token_s and decode_tokens_per_s (median)
    load           20 clients at once, one generation each (20 new tokens): every response's status (200 complete,
                   429 / 503 refused with Retry-After, anything else counted as a failure), p50 / p95 of the
                   completed ones
    memory         VmRSS of the server after each block of 20 of 200 sequential requests (options and generations
                   alternating, distinct prompts)
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def held_out_prompts(run: Path, n: int, words: int, seed: int):
    """(the run's generators, n prompts of `words` words from the test split of the run's corpus)."""
    from genfeat.config import load_yaml
    from genfeat.data.corpora import load_corpus
    from genfeat.data.prose_topics import encode_stream
    from genfeat.models.interactive.inference import load_run
    from genfeat.tasks.prose_options import prose_prompts

    gen = load_run(run)
    data = load_yaml(run / "config.yaml")["config"]["data"]
    test = encode_stream(load_corpus(data["corpus"])["test"], gen.tokenizer, {w: i for i, w in enumerate(gen.words)})
    return gen, prose_prompts(test, n, words, 25, seed, data["prompt_tokens"][1])


def _generate(client, prompt: str, new: int, topics: list[int]) -> dict[str, Any]:
    t0 = time.perf_counter()
    first, done = None, None
    with client.stream("POST", "/api/generate", json={"prompt": prompt, "topics": topics, "max_new_tokens": new},
                       timeout=120) as r:
        if r.status_code != 200:
            r.read()
            return {"status": r.status_code, "retry_after": r.headers.get("retry-after"),
                    "seconds": time.perf_counter() - t0}
        event = None
        for line in r.iter_lines():
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event == "token" and first is None:
                first = time.perf_counter() - t0
            elif line.startswith("data:") and event == "done":
                done = json.loads(line[5:])
    return {"status": 200, "client_first_s": first, "seconds": time.perf_counter() - t0, **(done or {})}


def app_latency(run: Path, n_prompts: int = 5, clients: int = 20, requests: int = 200, words: int = 100
                ) -> dict[str, Any]:
    import httpx

    gen, held_out = held_out_prompts(run, n_prompts + clients + requests, words, 7)
    prompts = [gen.tokenizer.decode(p.ids).strip() for p in held_out]
    del gen
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "genfeat", "serve", "interactive", str(run), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        t0 = time.perf_counter()
        while True:
            try:
                httpx.get(base + "/api/limits", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if proc.poll() is not None or time.perf_counter() - t0 > 120:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.5)
        startup = time.perf_counter() - t0
        with httpx.Client(base_url=base) as c:
            opts, gens = [], []
            for p in prompts[:n_prompts]:
                t = time.perf_counter()
                c.post("/api/options", json={"prompt": p}, timeout=60).raise_for_status()
                opts.append(time.perf_counter() - t)
                gens.append(_generate(c, p, 50, [0, 1]))
            rss = [_rss_mib(proc.pid)]
            for i, p in enumerate(prompts[n_prompts + clients:]):
                if i % 2:
                    c.post("/api/options", json={"prompt": p}, timeout=60).raise_for_status()
                else:
                    _generate(c, p, 10, [0])
                if (i + 1) % 20 == 0:
                    rss.append(_rss_mib(proc.pid))

        def one(p: str) -> dict[str, Any]:
            with httpx.Client(base_url=base) as cl:
                return _generate(cl, p, 20, [0])

        with ThreadPoolExecutor(clients) as pool:
            load = list(pool.map(one, prompts[n_prompts: n_prompts + clients]))
        alive = proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(10)
    ok = sorted(r["seconds"] for r in load if r["status"] == 200 and not r.get("stopped", True))
    codes = [r["status"] for r in load]
    med = statistics.median
    return {
        "startup_s": startup,
        "options_s": {"median": med(opts), "max": max(opts)},
        "first_token_s": {"median_client": med(g["client_first_s"] for g in gens),
                          "median_server": med(g["first_token_s"] for g in gens),
                          "max_client": max(g["client_first_s"] for g in gens)},
        "decode_tokens_per_s": med(g["decode_tokens_per_s"] for g in gens),
        "load": {"clients": clients, "completed": len(ok), "refused_429": codes.count(429),
                 "refused_503": codes.count(503), "other": len([x for x in codes if x not in (200, 429, 503)]),
                 "retry_after_on_refusals": all(r.get("retry_after") for r in load if r["status"] in (429, 503)),
                 "p50_s": med(ok) if ok else None,
                 "p95_s": ok[min(len(ok) - 1, int(0.95 * len(ok)))] if ok else None, "server_alive": alive},
        "rss_mib": rss, "requests": requests, "prompt_words": words,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path)
    print(json.dumps(app_latency(ap.parse_args().run), indent=2))


if __name__ == "__main__":
    main()
