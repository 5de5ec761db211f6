"""XLNet pretrain -> fine-tune at small scale (thesis Y §2.2.3 direction; spec xlnet.md §6.2 D3): permutation-LM
pretraining vs the masked-LM objective on the same network and budget vs no pretraining, each fine-tuned on BBC News
with 100 labels; records docs/results/xlnet_bbc.{md,json}.

    genfeat data fetch bbc-news
    python -m benchmarks.xlnet_bbc [--seeds 0 1 2] [--pretrain-steps 2000] [--finetune-steps 300]
                                   [--finetune-lr 1e-3] [--max-len 128]
    python -m benchmarks.xlnet_bbc --train-only          # a worker (resumable; several may share --runs; a
                                                         # pretraining whose worker stopped resumes at its checkpoint)
    python -m benchmarks.xlnet_bbc --collect             # record from the kept runs

Pretraining (`xlnet_pretrain --preset bbc_small`, one run per objective, seed 0): the BBC training-split articles
(labels unused; the test articles are never seen), SentencePiece unigram 8k, 128-token sequences with 64 reused as
memory, 1/6 of the tokens predicted in spans. The scratch baseline is the same network and tokenizer with random
weights; the body diagnostic (`init=body`) keeps the PLM network's layers but not its tied word embeddings, and
the probes report how far those embeddings have collapsed together (mean pairwise cosine by piece frequency).
Fine-tuning (`xlnet_classify --preset bbc_100`): 20 labeled articles per class drawn with the seed, model
selection on the validation split, one test evaluation (444 articles).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
from pathlib import Path
from typing import Any

from benchmarks.common import mean_std, reading, render, result_args, write_results
from benchmarks.sweep import Job, Sweep
from genfeat.data.few_labels import per_class_subset
from genfeat.data.labelled import load_labelled
from genfeat.data.plm_corpus import encode_documents, pretrain_documents
from genfeat.models.xlnet.inference import load_pretrained
from genfeat.registry import RECIPES

NAME = "xlnet_bbc"
CORPORA = {"bbc-news": "the BBC training-split articles",
           "bbc-news+ptb": "the BBC training-split articles and PTB's WSJ text (Mikolov's training split)"}
INITS = {"plm": "permutation LM (XLNet)", "mlm": "masked LM (BERT objective, same network)",
         "scratch": "no pretraining",
         "body": "permutation LM layers, fresh word embeddings (diagnostic)"}  # init=body of xlnet_classify
SOURCE = {"plm": "plm", "mlm": "mlm", "scratch": "plm", "body": "plm"}  # the pretraining run each init reads


def pretrain(objective: str, args) -> Job:
    cfg = RECIPES["xlnet_pretrain"].presets["bbc_small"]()
    keep = args.pretrain_steps // cfg.train.eval_every + 1 if args.probe_every else cfg.train.keep_last
    cfg = dataclasses.replace(cfg, objective=objective, data=dataclasses.replace(cfg.data, corpus=args.corpus),
                              train=dataclasses.replace(cfg.train, max_steps=args.pretrain_steps, keep_last=keep))

    return Job(f"pretrain-{objective}", {"objective": objective}, "xlnet_pretrain", cfg, group=f"pretrain:{objective}",
               preset="bbc_small")


def finetune(init: str, seed: int, args) -> Job:
    source = Path(args.runs) / f"pretrain-{SOURCE[init]}"
    base = RECIPES["xlnet_classify"].presets["bbc_100"]()
    cfg = dataclasses.replace(base, seed=seed, pretrained=str(source),
                              init=init if init in ("scratch", "body") else "pretrained", max_len=args.max_len,
                              train=dataclasses.replace(base.train, max_steps=args.finetune_steps, lr=args.finetune_lr))
    return Job(f"finetune-{init}-seed{seed}", {"init_name": init, "seed": seed}, "xlnet_classify", cfg,
               group=f"finetune:{init}", needs=(source,), preset="bbc_100")


def probes(args) -> dict[str, Any]:
    """Diagnostics without fine-tuning, same labeled subsets (seeds): logistic regression on the frozen network's
    mean-pooled last-layer content states (PLM / MLM / random weights), and on TF-IDF word counts (what a
    bag-of-words model gets from the same 100 labels); with kept checkpoints, the PLM / MLM probe at every
    `--probe-every` pretraining steps (`curve`: {objective: [[step, accuracies], ...]})."""
    import numpy as np
    import torch
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    from genfeat.data.pair_inputs import encode_pairs
    from genfeat.models.xlnet import XLNet
    from genfeat.train.checkpoint import checkpoint_dirs, load_weights

    data = load_labelled("bbc")[0]  # the splits xlnet_classify reads (bbc_100 keeps every example)
    texts = {k: [a for a, _ in v[0]] for k, v in data.items()}
    ys = {k: v[1] for k, v in data.items()}

    def fit_eval(xtr, xte):
        out = []
        for seed in args.seeds:
            idx = per_class_subset(ys["train"], 20, seed)  # the draw xlnet_classify makes with this seed
            clf = LogisticRegression(max_iter=2000, C=10.0).fit(xtr[idx], ys["train"][idx])
            out.append(float((clf.predict(xte) == ys["test"]).mean()))
        return out

    def network(run: Path, weights: Path | None) -> XLNet:
        cfg = load_pretrained(run)[1]
        torch.manual_seed(0)
        net = XLNet(dataclasses.replace(cfg, mem_len=0, reuse_len=0, bi_data=False, dropout=0.0, dropatt=0.0))
        if weights is not None:
            sd = load_weights(weights)
            net.load_state_dict({k[len("transformer."):]: v for k, v in sd.items() if k.startswith("transformer.")})
        return net.eval()

    def mean_cos(unit: torch.Tensor) -> float:
        """Mean cosine over the distinct pairs of these unit-norm rows: 0 for random directions, 1 for one."""
        n = len(unit)
        return float(((unit.sum(0) @ unit.sum(0)) - n) / (n * n - n))

    @functools.cache
    def inputs(run: Path) -> dict[str, dict[str, torch.Tensor]]:
        """The labeled articles in this run's tokenizer, encoded once for every probe of the run."""
        tok = load_pretrained(run)[0]
        return {k: encode_pairs(tok, [(t, None) for t in texts[k]], args.max_len) for k in ("train", "test")}

    def probe(run: Path, net: XLNet) -> list[float]:
        feats = {}
        for k, x in inputs(run).items():
            with torch.no_grad():
                h = torch.cat([net(x["input_ids"][a: a + 64], token_type_ids=x["token_type_ids"][a: a + 64],
                                   attention_mask=x["attention_mask"][a: a + 64]).hidden
                               for a in range(0, len(texts[k]), 64)])
            m = x["attention_mask"][..., None].float()
            feats[k] = ((h * m).sum(1) / m.sum(1)).numpy()
        return fit_eval(feats["train"], feats["test"])

    runs = {o: Path(args.runs) / f"pretrain-{o}" for o in ("plm", "mlm")}
    tok = load_pretrained(runs["plm"])[0]
    docs = pretrain_documents(args.corpus)
    counts = np.bincount(encode_documents(tok, docs["train"]), minlength=tok.vocab_size) + 0.5
    valid = encode_documents(tok, docs["valid"])
    res: dict[str, Any] = {"unigram_valid_ce": [float(-np.log(counts / counts.sum())[valid].mean())]}
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2).fit(texts["train"])
    res["tfidf"] = fit_eval(vec.transform(texts["train"]), vec.transform(texts["test"]))
    by_freq = np.argsort(-counts)
    res["embedding_cos"] = {}
    for init in ("plm", "mlm", "scratch"):
        run = runs[SOURCE[init]]
        weights = None if init == "scratch" else run / "model.safetensors"
        net = network(run, weights)
        res[f"probe_{init}"] = probe(run, net)
        emb = torch.nn.functional.normalize(net.word_embedding.weight.detach(), dim=1)
        res["embedding_cos"][init] = {band: mean_cos(emb[by_freq[a:b]]) for band, (a, b) in COS_BANDS.items()}
    if args.probe_every:
        res["curve"] = {o: [[int(c.name[5:]), probe(run, network(run, c / "model.safetensors"))]
                            for c in checkpoint_dirs(run) if int(c.name[5:]) % args.probe_every == 0]
                        for o, run in runs.items()}
    return res


COS_BANDS = {"500 most frequent pieces": (0, 500), "frequency ranks 500-2000": (500, 2000),
             "the rarer pieces (rank > 2000)": (2000, None)}


PROBES = {"tfidf": "TF-IDF bag of words", "probe_plm": "mean-pooled states, PLM-pretrained network",
          "probe_mlm": "mean-pooled states, MLM-pretrained network",
          "probe_scratch": "mean-pooled states, random weights"}


def _ms(v: list[float]) -> str:
    return mean_std(v, 1, scale=100)


def curve(points: dict[str, list] | None) -> str:
    """The frozen-network probe along pretraining (test accuracy %, mean ± std over the seeds' labeled sets)."""
    if not points:
        return ""
    steps = sorted({s for v in points.values() for s, _ in v})
    acc = {o: dict(v) for o, v in points.items()}
    rows = [f"| {s:,} | " + " | ".join(_ms(acc[o][s]) if s in acc[o] else "–" for o in ("plm", "mlm")) + " |"
            for s in steps]
    return ("\nThe same probe along pretraining (kept checkpoints):\n\n| pretraining step | PLM | MLM |\n"
            "|---|---|---|\n" + "\n".join(rows) + "\n")


def cos_table(cos: dict[str, dict[str, float]] | None) -> str:
    """Mean pairwise cosine of the tied word embeddings by training frequency (pieces ranked by their count)."""
    if not cos:
        return ""
    head = "| word embeddings | " + " | ".join(COS_BANDS) + " |\n|---|" + "---|" * len(COS_BANDS) + "\n"
    rows = [f"| {INITS[i]} | " + " | ".join(f"{v[b]:.3f}" for b in COS_BANDS) + " |" for i, v in cos.items()]
    return ("\nMean pairwise cosine of the word embeddings, pieces grouped by their frequency in the pretraining text "
            "(0 for random directions):\n\n" + head + "\n".join(rows) + "\n")


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    rows = []
    for init, label in INITS.items():
        runs = [r for r in res["runs"] if r["init_name"] == init]
        if not runs:
            continue

        def ms(k, runs=runs):
            return _ms([r[k] for r in runs])
        pre = res["pretrain"].get(init, {})
        nll = f"{pre['valid_loss']:.3f}" if "valid_loss" in pre else "–"
        rows.append(f"| {label} | {ms('test_accuracy')} | {ms('valid_accuracy')} | {nll} | {len(runs)} |")
    pre = res["pretrain"].get("plm", {})
    n_test = res["runs"][0]["test_examples"] if res["runs"] else "held-out"
    return f"""# XLNet pretrain -> fine-tune on BBC News with 100 labels

{{header}}Pretraining: {res['pretrain_steps']} steps of 16 × 128 tokens per objective ({pre.get('params', 0) / 1e6:.2f}M
parameters, 4 layers, d 128), on {CORPORA.get(res.get('corpus', 'bbc-news'), res.get('corpus'))}
({pre.get('train_tokens', 0):,} SentencePiece tokens); fine-tuning: {res['finetune_steps']} steps of 16 articles
cut to their first {res.get('max_len', 256)} pieces, AdamW lr {res.get('finetune_lr', 1e-4)} (chosen on the
validation split of the PLM model, seed 0), 100 labeled articles (20 per class, drawn with the seed),
checkpoint chosen on the validation split, accuracy (%) on the {n_test} test articles, mean ± std over seeds
{record['seeds']}. The pretraining target NLL is each objective's own (not comparable across objectives).

| initialisation | test accuracy | validation accuracy | pretraining valid target NLL | seeds |
|---|---|---|---|---|
{chr(10).join(rows)}

Diagnostics on the same labeled subsets, no fine-tuning: logistic regression on frozen features (test accuracy %).

| features | test accuracy |
|---|---|
{chr(10).join(f"| {PROBES[k]} | {_ms(v)} |" for k, v in res.get('probes', {}).items() if k in PROBES)}
{cos_table(res.get('probes', {}).get('embedding_cos'))}
Unigram cross-entropy of the validation text's pieces (training-text counts):
{res.get('probes', {}).get('unigram_valid_ce', [float('nan')])[0]:.3f} nats.
{curve(res.get('probes', {}).get('curve'))}
{reading(record['name'])}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pretrain-steps", type=int, default=2000)
    ap.add_argument("--finetune-steps", type=int, default=300)
    ap.add_argument("--finetune-lr", type=float, default=1e-3, help="chosen on the validation split (PLM, seed 0: "
                    "1e-4 -> 48.9%%, 5e-4 -> 59.9%%, 2e-3 -> 60.8%%)")
    ap.add_argument("--max-len", type=int, default=128, help="fine-tuning input: the article's first pieces")
    ap.add_argument("--corpus", default="bbc-news", help="pretraining corpus (data.corpus; bbc-news+ptb adds PTB's "
                    "WSJ text to the BBC training articles)")
    ap.add_argument("--probe-every", type=int, default=0, help="keep every pretraining checkpoint and probe the "
                    "frozen network at each multiple of this many steps")
    ap.add_argument("--name", default=NAME, help="results page docs/results/NAME.{md,json}")
    result_args(ap, [0, 1, 2], runs="runs/bench_xlnet_bbc")
    args = ap.parse_args()
    if args.render_only:
        print(render(args.name, markdown))
        return
    sweep = Sweep.from_args(args)
    pre = {r["objective"]: r for r in sweep.results(pretrain(objective, args) for objective in ("plm", "mlm"))}
    runs = sweep.results(finetune(init, seed, args) for seed in args.seeds for init in INITS)
    if args.train_only:
        return
    diag = probes(args)
    print(json.dumps(diag))
    print(write_results(args.name, {"pretrain_steps": args.pretrain_steps, "finetune_steps": args.finetune_steps,
                                    "corpus": args.corpus, "probes": diag, "max_len": args.max_len,
                                    "finetune_lr": args.finetune_lr, "pretrain": pre,
                                    "runs": runs},
                        markdown, seeds=args.seeds, machine=sweep.machine()))


if __name__ == "__main__":
    main()
