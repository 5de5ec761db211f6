"""Bad inputs and interruptions, as a new user meets them; records docs/results/reliability.{md,json}.

    python -m benchmarks.reliability [--only bad-inputs|interruptions]

Bad inputs: each row runs `genfeat ...` in a fresh process against a tiny trained LM run and a PTB-format corpus
made here, and records the exit code, the last line of stderr, whether a Python traceback was printed, and what
was left on disk. Interruptions: a run of each recipe (LM, Transformer-XL with its memory, XLNet pretraining,
sequential recommendation, GAN-SSL with its two optimizers, the PixelCNN, Planetoid's alternating schedule, XLNet
fine-tuning, Multi-CLS pretraining on MiniLM and fine-tuning, the NNSC facets model with its E-step's random
stream) is sent SIGINT / SIGTERM / SIGKILL at a random moment after its first checkpoint, then resumed
(`--resume`); the final checkpoint's weights are compared bit for bit with an uninterrupted run of the same config.
The image, graph and text-classification runs read the data cache (`GENFEAT_DATA`; fetched when missing).
A row passes when there is no traceback, the exit code is non-zero, stderr ends with one `genfeat: error: ...`
line, and nothing was written that was not asked for.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import write_results

NAME = "reliability"
GENFEAT = [sys.executable, "-m", "genfeat"]


def sh(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*GENFEAT, *map(str, args)], cwd=cwd, env=env, capture_output=True, encoding="utf-8",
                          errors="replace", timeout=timeout)


def corpus(root: Path) -> Path:
    rng = random.Random(0)
    words = [f"w{i}" for i in range(60)]
    d = root / "ptb"
    d.mkdir()
    for split, n in (("train", 1500), ("valid", 150), ("test", 150)):
        (d / f"ptb.{split}.txt").write_text("".join(" " + " ".join(rng.choices(words, k=12)) + " \n"
                                                    for _ in range(n)))
    return d


def bad_inputs(work: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    data = corpus(work)
    run = work / "trained"
    base = ["run", "lm", "--preset", "tiny", "--data.corpus", f"dir:{data}"]
    p = sh([*base, "--out", run], work, env)
    assert p.returncode == 0, p.stderr
    binary = work / "binary.yaml"
    binary.write_bytes(bytes(range(256)))
    wrong = work / "wrong.yaml"
    wrong.write_text("recipe: lm\nconfig:\n  train:\n    lr: [1, 2]\n")
    empty_dir = work / "empty-corpus"
    empty_dir.mkdir()
    for split in ("train", "valid", "test"):
        (empty_dir / f"{split}.txt").write_text("")
    afile = work / "a-file"
    afile.write_text("x")
    bad_prompt = "\udcff"
    cases: list[tuple[str, list[str]]] = [
        ("learning rate NaN", [*base, "--train.lr", "nan"]),
        ("learning rate inf", [*base, "--train.lr", "inf"]),
        ("device cuda without a GPU", [*base, "--train.device", "cuda"]),
        ("unknown device", [*base, "--train.device", "tpu9"]),
        ("binary --config", ["run", "--config", binary]),
        ("wrongly typed --config", ["run", "--config", wrong]),
        ("--config given a run directory", ["run", "--config", run]),
        ("non-UTF-8 prompt", ["generate", run, "--prompt", bad_prompt]),
        ("generate -n 0", ["generate", run, "-n", "0"]),
        ("generate -n -1", ["generate", run, "-n", "-1"]),
        ("--top-k 0", ["generate", run, "--top-k", "0"]),
        ("--temperature 0", ["generate", run, "--temperature", "0"]),
        ("--temperature -1", ["generate", run, "--temperature", "-1"]),
        ("dir: corpus with empty files", ["run", "lm", "--preset", "tiny", "--data.corpus", f"dir:{empty_dir}"]),
        ("--out is a file", [*base, "--out", afile]),
        ("recl --step 0", ["recl", run, "--step", "0"]),
        ("recl start > stop", ["recl", run, "--start", "64", "--stop", "16"]),
        ("recl --positions 0", ["recl", run, "--positions", "0"]),
        ("unknown recipe", ["run", "nosuch"]),
        ("unknown dataset", ["data", "fetch", "nosuch"]),
        ("empty prompt, word tokenizer (valid: starts at <eos>)", ["generate", run, "--prompt", ""]),
        ("override order: n_head before d_model", [*base, "--model.n_head", "3", "--model.d_model", "48"]),
        ("README: bpe tokenizer with vocab_size 8000", [*base, "--data.tokenizer", "bpe", "--data.vocab_size",
                                                         "8000", "--train.max_steps", "2"]),
        ("typo in a field name", [*base, "--train.lrr", "1e-3"]),
        ("--resume with a changed d_model", ["run", "--resume", run, "--model.d_model", "64", "--train.max_steps",
                                             "9"]),
        ("--resume of a finished run, same budget", ["run", "--resume", run]),
        ("--resume with another recipe", ["run", "transformer_xl", "--resume", run, "--train.max_steps", "9"]),
        ("byte tokenizer, no sample prompt", [*base, "--data.tokenizer", "byte"]),
    ]
    rows = []
    for name, args in cases:
        before = sorted(str(q.relative_to(work)) for q in work.rglob("*"))
        t0 = time.perf_counter()
        try:
            p = sh(args, work, env, timeout=120)
            rc, err = p.returncode, p.stderr
        except subprocess.TimeoutExpired:
            rc, err = None, "timed out after 120 s"
        after = sorted(str(q.relative_to(work)) for q in work.rglob("*"))
        lines = [line for line in err.strip().splitlines() if line.strip()]
        new = sorted(set(after) - set(before))
        ok_expected = "valid" in name or name.startswith(("override order", "README"))  # must succeed
        rows.append({"input": name, "exit_code": rc, "traceback": "Traceback" in err,
                     "message": lines[-1] if lines else "", "new_files": new[:5], "n_new_files": len(new),
                     "seconds": round(time.perf_counter() - t0, 1), "valid_input": ok_expected})
        print(json.dumps(rows[-1]), flush=True)
        for q in new:  # keep the next case's view clean
            path = work / q
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            elif path.exists():
                path.unlink()
    rows.append(bounded_generation(run, work, env))
    print(json.dumps(rows[-1]), flush=True)
    return rows


def bounded_generation(run: Path, work: Path, env: dict[str, str], seconds: float = 20.0) -> dict[str, Any]:
    """`generate -n 1000000000` streams its samples: run it for `seconds`, sample its resident memory, stop it."""
    proc = subprocess.Popen([*GENFEAT, "generate", str(run), "-n", "1000000000"], cwd=work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    peak, t0, lines = 0, time.time(), 0
    os.set_blocking(proc.stdout.fileno(), False)
    while time.time() - t0 < seconds and proc.poll() is None:
        try:
            rss = next(int(x.split()[1]) for x in open(f"/proc/{proc.pid}/status") if x.startswith("VmRSS"))
            peak = max(peak, rss)
        except (OSError, StopIteration):
            pass
        chunk = proc.stdout.read() or b""
        lines += chunk.count(b"\n---\n")
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)  # SIGINT is ignored by processes started from a background job
    proc.communicate(timeout=60)
    return {"input": f"generate -n 1000000000 (stopped with SIGTERM after {seconds:.0f} s)",
            "exit_code": proc.returncode, "traceback": False,
            "message": f"{lines} samples printed, peak resident memory {peak / 1024:.0f} MB", "new_files": [],
            "n_new_files": 0, "seconds": seconds, "valid_input": True}


def interruption_runs(work: Path, env: dict[str, str]) -> dict[str, list[str]]:
    """recipe -> the arguments of a run long enough to be interrupted after its first checkpoint. The text
    recipes read a corpus made here; the others read the data cache (GENFEAT_DATA), fetched when missing."""
    data = corpus(work)
    text = ["--data.corpus", f"dir:{data}", "--train.max_steps", "300", "--train.eval_every", "50",
            "--train.log_every", "10", "--train.device", "cpu"]
    for name in ("mnist", "bbc-news", "ml-100k", "minilm-l6", "glove-6b-50d"):
        assert sh(["data", "fetch", name], work, env, timeout=900).returncode == 0
    pre = work / "xlnet_pretrain"
    assert sh(["run", "xlnet_pretrain", "--preset", "tiny", "--out", pre], work, env).returncode == 0
    return {
        "lm": ["--preset", "tiny", *text],
        "transformer_xl": ["--preset", "tiny", *text],
        "xlnet_pretrain": ["--preset", "tiny", "--train.max_steps", "300", "--train.eval_every", "50"],
        "seqrec": ["--preset", "gru4rec_ml100k", "--train.max_steps", "300", "--train.ckpt_every", "50"],
        "gan_ssl": ["--preset", "tiny", "--data.limit_train", "10000", "--train.epochs", "3"],
        "pixelcnn": ["--preset", "tiny", "--data.limit_train", "2000", "--train.epochs", "3", "--train.ckpt_every",
                     "20"],
        "planetoid": ["--preset", "tiny", "--method", "planetoid_t", "--train.t1", "1.5", "--train.n1", "30"],
        "xlnet_classify": ["--preset", "tiny", "--pretrained", str(pre), "--train.max_steps", "200",
                           "--train.eval_every", "20", "--limit_docs", "200"],
        "multi_cls_pretrain": ["--preset", "tiny", "--init", "minilm-l6", "--data.limit_docs", "60",
                               "--train.max_steps", "40", "--train.eval_every", "10"],
        "multi_cls_classify": ["--preset", "tiny", "--pretrained", "minilm-l6", "--train.max_steps", "40",
                               "--train.eval_every", "10"],
        "facets": ["--preset", "tiny", "--model.d_target", "50", "--train.max_steps", "60", "--train.eval_every", "10"],
    }


def interruptions(work: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    from safetensors.torch import load_file

    from genfeat.train.checkpoint import latest_checkpoint

    rows = []
    rng = random.Random(0)
    for recipe, recipe_args in interruption_runs(work, env).items():
        args = ["run", recipe, *recipe_args]
        ref = work / recipe / "uninterrupted"
        t0 = time.perf_counter()
        assert sh([*args, "--out", ref], work, env, timeout=900).returncode == 0
        seconds = time.perf_counter() - t0
        last = latest_checkpoint(ref).relative_to(ref)
        ref_w = load_file(str(ref / last / "model.safetensors"))
        for sig_name in ("SIGINT", "SIGTERM", "SIGKILL"):
            out = work / recipe / sig_name.lower()
            proc = subprocess.Popen([*GENFEAT, *args, "--out", str(out)], cwd=work, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, encoding="utf-8", errors="replace")
            deadline = time.time() + 300
            while time.time() < deadline and not list((out / "checkpoints").glob("step_*")):
                time.sleep(0.05)
            time.sleep(rng.uniform(0.1, 1.5))  # a random moment after the first checkpoint
            proc.send_signal(getattr(signal, sig_name))
            _, err = proc.communicate(timeout=300)
            ckpts = sorted(q.name for q in (out / "checkpoints").glob("step_*"))
            res = sh(["run", "--resume", out], work, env, timeout=900)
            final = out / last / "model.safetensors"
            same = final.is_file() and all(
                (load_file(str(final))[k] == v).all().item() for k, v in ref_w.items())
            rows.append({"recipe": recipe, "signal": sig_name, "exit_code": proc.returncode,
                         "message": (err.strip().splitlines() or [""])[-1], "checkpoints_after_kill": ckpts,
                         "final_step": int(last.name[len("step_"):]), "uninterrupted_s": round(seconds, 1),
                         "resume_exit_code": res.returncode, "final_weights_equal_uninterrupted": bool(same)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def markdown(record: dict[str, Any]) -> str:
    from benchmarks.common import header

    res = record["results"]
    lines = ["# Reliability: bad inputs and interruptions", "", header(record), "", __doc__.split("\n\n", 2)[2].strip(),
             ""]
    if res.get("bad_inputs"):
        lines += ["## Bad inputs", "", "| input | exit code | traceback | last line of stderr | new files |",
                  "|---|---|---|---|---|"]
        for r in res["bad_inputs"]:
            msg = r["message"].replace("|", "\\|")[:160]
            new = r["n_new_files"] if not r["n_new_files"] else f"{r['n_new_files']} ({', '.join(r['new_files'])})"
            lines.append(f"| {r['input']} | {r['exit_code']} | {'**yes**' if r['traceback'] else 'no'} | {msg} | "
                         f"{new} |")
    if res.get("interruptions"):
        lines += ["", "## Interruptions (tiny presets, lengthened; arguments in the JSON)", "",
                  "| recipe | steps | signal | exit code | checkpoints after the kill | resume exit code | final "
                  "weights = uninterrupted run |", "|---|---|---|---|---|---|---|"]
        for r in res["interruptions"]:
            same = "yes (bitwise)" if r["final_weights_equal_uninterrupted"] else "NO"
            lines.append(f"| {r['recipe']} | {r['final_step']} | {r['signal']} | {r['exit_code']} | "
                         f"{', '.join(r['checkpoints_after_kill'])} | "
                         f"{r['resume_exit_code']} | {same} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["bad-inputs", "interruptions"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="genfeat-reliability-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "GENFEAT_DATA": str(work / "data"), "OMP_NUM_THREADS": "1"}
        results: dict[str, Any] = {}
        if args.only in (None, "bad-inputs"):
            (work / "bad").mkdir()
            results["bad_inputs"] = bad_inputs(work / "bad", env)
        if args.only in (None, "interruptions"):
            (work / "int").mkdir()
            cache = os.environ.get("GENFEAT_DATA", str(work / "data"))  # the user's cache: no re-download
            results["interruptions"] = interruptions(work / "int", {**env, "GENFEAT_DATA": cache})
    print(write_results(NAME, results, markdown))


if __name__ == "__main__":
    main()
