"""RecBole's own SASRec on the same MovieLens-100K split and metric as benchmarks/seqrec.py (issue: side by side
with the maintained peer); records docs/results/seqrec_recbole.{md,json}.

RecBole is never installed into genfeat's environment (its pins conflict); it runs in a throwaway venv:

    python -m venv /tmp/venv-recbole && /tmp/venv-recbole/bin/pip install torch==2.13.0 recbole==1.2.1 \\
        "numpy<2" "pandas<2.3" "scipy<1.15" "setuptools<81"
    python -m benchmarks.seqrec_recbole --python /tmp/venv-recbole/bin/python [--seeds 0] [--epochs 300]
    python -m benchmarks.seqrec_recbole --python ... --evaluate-saved   # test a finished run's saved best model

Why the pins (recbole 1.2.1 with the newest wheels, 2026-11-21): `ray` (imported by recbole.quick_start) needs
`pkg_resources` (setuptools < 81) and uses `np.bool8` (numpy < 2); pandas 3 / scipy 1.15 need numpy 2. RecBole
pickles its config into checkpoints, which torch >= 2.6 refuses to load by default (weights only): the runner loads
them with `weights_only=False` (RecBole's own files only).

Configuration (the thesis's RecBole settings, spec sequential-recommendation.md §7): the wheel's ml-100k atomic
files, user/item/timestamp columns, leave-one-out in time order (`LS: valid_and_test`, `TO`), full ranking
(history items not masked for sequential models, the padding id excluded), max history 50, CE loss without
negative sampling, Adam 1e-3, batch 128, hidden and attention dropout 0.2, early stopping on validation
NDCG@10 with patience 10, seed per run. Differences from genfeat's table: RecBole ranks ties by `torch.topk`
(genfeat: pessimistic ties) and SASRec scores with the plain tied embedding (genfeat's "Softmax" row adds the
thesis's facet layer; "plain" is RecBole's).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.common import reading, render, result_args, write_results

NAME = "seqrec_recbole"
EPOCH = re.compile(r"epoch \d+ training \[time: ([\d.]+)s")  # RecBole's log line per epoch, colours stripped

RUNNER = r"""
import functools, json, os, sys, recbole, torch
torch.load = functools.partial(torch.load, weights_only=False)  # RecBole 1.2.1 pickles its config in checkpoints
arg = json.loads(sys.argv[1])
if "model_file" in arg:  # a saved best checkpoint, evaluated on the validation and test splits
    from recbole.quick_start import load_data_and_model
    from recbole.utils import get_trainer
    import numpy as np
    np.float = np.float_  # what recbole's Config sets when it is built; one unpickled from a checkpoint is not
    config, model, _, _, valid, test = load_data_and_model(arg["model_file"])
    trainer = get_trainer(config["MODEL_TYPE"], config["model"])(config, model)
    res = {split: trainer.evaluate(data, load_best_model=True, model_file=arg["model_file"])
           for split, data in (("best_valid_result", valid), ("test_result", test))}
else:
    from recbole.quick_start import run_recbole
    arg["data_path"] = os.path.join(os.path.dirname(recbole.__file__), "dataset_example")
    res = run_recbole(model="SASRec", dataset="ml-100k", config_dict=arg)
print("RESULT_JSON " + json.dumps({"version": recbole.__version__, **{k: (dict(v) if hasattr(v, "items") else v)
                                                                      for k, v in res.items()}}))
"""
STAMP = re.compile(r"\w{3} (\d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2})")  # the time stamp of a RecBole log-file line


def recbole_config(seed: int, epochs: int, patience: int, out: str) -> dict[str, Any]:
    return {"USER_ID_FIELD": "user_id", "ITEM_ID_FIELD": "item_id", "TIME_FIELD": "timestamp",
            "load_col": {"inter": ["user_id", "item_id", "timestamp"]}, "MAX_ITEM_LIST_LENGTH": 50,
            "loss_type": "CE", "train_neg_sample_args": None,
            "eval_args": {"split": {"LS": "valid_and_test"}, "order": "TO", "mode": "full"},
            "metrics": ["Hit", "NDCG", "MRR"], "topk": [10], "valid_metric": "NDCG@10", "epochs": epochs,
            "stopping_step": patience, "train_batch_size": 128, "eval_batch_size": 4096, "learning_rate": 0.001,
            "hidden_dropout_prob": 0.2, "attn_dropout_prob": 0.2, "device": "cpu", "use_gpu": False, "seed": seed,
            "reproducibility": True, "show_progress": False, "checkpoint_dir": out, "log_wandb": False}


def newest_first(where: Path, pattern: str) -> list[Path]:
    return sorted(where.glob(pattern), key=lambda f: f.stat().st_mtime, reverse=True)


def training_log(out: Path) -> str:
    """The newest RecBole log file under `out` that records training epochs (an evaluation writes one too)."""
    texts = (re.sub(r"\x1b\[[0-9;]*m", "", f.read_text()) for f in newest_first(out, "log/SASRec/*.log"))
    return next((t for t in texts if EPOCH.search(t)), "")


def run_one(python: str, seed: int, args) -> dict[str, Any]:
    """Train and test RecBole's SASRec with this seed; with --evaluate-saved, test the best checkpoint an earlier
    run left under its output folder instead (its epochs and training time read from that run's log file)."""
    out = Path(f"/tmp/recbole_saved_seed{seed}")
    out.mkdir(parents=True, exist_ok=True)
    if args.evaluate_saved:
        if not (saved := newest_first(out, "*.pth")):
            sys.exit(f"--evaluate-saved: no saved RecBole model (*.pth) under {out}")
        arg = {"model_file": str(saved[0])}
    else:
        arg = recbole_config(seed, args.epochs, args.patience, str(out))
    t0 = time.perf_counter()
    proc = subprocess.run([python, "-c", RUNNER, json.dumps(arg)], capture_output=True, text=True, cwd=out,
                          env={"OMP_NUM_THREADS": str(args.threads), "PATH": "/usr/bin:/bin"})  # its log/ go to out
    wall = time.perf_counter() - t0
    log = proc.stdout + proc.stderr
    line = next((x for x in log.splitlines() if x.startswith("RESULT_JSON ")), None)
    if proc.returncode or line is None:
        sys.exit(f"RecBole run failed (exit {proc.returncode}):\n{log[-3000:]}")
    res = json.loads(line[len("RESULT_JSON "):])
    train_log = training_log(out)
    times = [float(m.group(1)) for m in EPOCH.finditer(train_log)]
    if args.evaluate_saved:  # the training run's wall time: its log file's first to last line
        stamps = [datetime.strptime(m.group(1), "%d %b %Y %H:%M:%S") for m in STAMP.finditer(train_log)]
        wall = (stamps[-1] - stamps[0]).total_seconds() if stamps else float("nan")
    return {"seed": seed, "version": res["version"], "epochs": len(times),
            "epoch_train_s": round(statistics.mean(times), 2) if times else None, "wall_s": round(wall, 1),
            "valid": res["best_valid_result"], "test": res["test_result"],
            **({"evaluated_from": arg["model_file"]} if args.evaluate_saved else {})}


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    rows = "\n".join(f"| {r['seed']} | {100 * r['valid']['hit@10']:.2f} | {100 * r['valid']['ndcg@10']:.2f} | "
                     f"{100 * r['test']['hit@10']:.2f} | {100 * r['test']['ndcg@10']:.2f} | {r['epochs']} | "
                     f"{r['epoch_train_s']} | {r['wall_s']:.0f} |" for r in res["runs"])
    saved = "".join(f"\nSeed {r['seed']}: tested from the best checkpoint its training run saved "
                    f"(`--evaluate-saved`, `{r['evaluated_from']}`); epochs, s / epoch and wall s from that run's "
                    "log file.\n" for r in res["runs"] if "evaluated_from" in r)
    return f"""# RecBole's SASRec on MovieLens-100K (side by side with docs/results/seqrec.md)

{{header}}RecBole {res['runs'][0]['version'] if res['runs'] else '?'} in a throwaway venv (pins in
`benchmarks/seqrec_recbole.py`), SASRec with CE loss, the same leave-one-out split, full ranking with history
items not masked, early stopping on validation NDCG@10 (patience {res['patience']}, at most {res['epochs']}
epochs), {res['threads']} torch thread(s). RecBole breaks score ties by `torch.topk`; SASRec here is the plain
tied softmax (genfeat's "plain" head). ×100.

| seed | valid Hit@10 | valid NDCG@10 | test Hit@10 | test NDCG@10 | epochs | s / epoch | wall s |
|---|---|---|---|---|---|---|---|
{rows}
{saved}
{reading(NAME)}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", required=True, help="the RecBole venv's python")
    ap.add_argument("--epochs", type=int, default=300)
    ap.add_argument("--patience", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--evaluate-saved", action="store_true",
                    help="test the best checkpoint an earlier run saved under /tmp/recbole_saved_seedS (for a run "
                         "whose own test step failed), epochs and times from its log file")
    result_args(ap, [0])
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    runs = [run_one(args.python, s, args) for s in args.seeds]
    print(write_results(NAME, {"epochs": args.epochs, "patience": args.patience, "threads": args.threads,
                               "runs": runs}, markdown, seeds=args.seeds))


if __name__ == "__main__":
    main()
