"""XLNet pretraining (permutation LM, or the masked-LM baseline on the same network) and fine-tuning on BBC News
with few labels (thesis Y §2.2; spec xlnet.md §2.13, §2.12).

    genfeat data fetch bbc-news
    genfeat run xlnet_pretrain --preset bbc_small --out runs/xlnet-plm                       # permutation LM
    genfeat run xlnet_pretrain --preset bbc_small --objective mlm --out runs/xlnet-mlm       # BERT objective
    genfeat run xlnet_classify --preset bbc_100 --pretrained runs/xlnet-plm --out runs/bbc-plm
    genfeat run xlnet_classify --preset bbc_100 --pretrained runs/xlnet-plm --init scratch --out runs/bbc-scratch

Pretraining corpus: the articles of the BBC News training split (their labels unused; the split is fixed by
`data.split_seed`, the same split the classifier uses, so no test article is seen), or any genfeat LM corpus
(`data.corpus`, e.g. wiki_xml, austen). A SentencePiece unigram vocabulary is trained on it and kept in the run
directory (`tokenizer.json`); documents are separated by <eod>. Batches: `PretrainStream` (reuse part + A <sep>
B <sep> <cls>, memory of the reuse part carried to the next step, about 1/6 of the tokens predicted in spans).
Validation: the same objective on the validation articles.

Fine-tuning: `labels_per_class` labeled training articles per class (class-balanced, drawn with `seed`),
[article head, <sep>, <cls>] left-padded to max_len, summary + linear head, AdamW with linear warm-up and decay;
the checkpoint with the best validation accuracy (validation split) is tested once. `init scratch` is the same
network and tokenizer with random weights (the no-pretraining baseline).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from genfeat.config import atomic_write_text
from genfeat.data.corpora import load_corpus
from genfeat.data.plm import PretrainStream
from genfeat.data.text_classification import load_bbc_news, stratified_split
from genfeat.data.tokenizers import SentencePieceTokenizer, load_tokenizer
from genfeat.errors import ConfigError
from genfeat.losses.nll import nll
from genfeat.losses.plm import mlm_forward, plm_forward
from genfeat.models.xlnet import XLNetConfig, XLNetLM
from genfeat.models.xlnet.heads import XLNetClassifier, pair_inputs
from genfeat.recipes.lm import seed_everything
from genfeat.train import distributed as D
from genfeat.train.checkpoint import load_model_weights, load_weights, save_model_weights
from genfeat.train.logging import MetricsLogger, machine_info
from genfeat.train.loop import TrainConfig, fit


@dataclass(frozen=True)
class PretrainDataConfig:
    corpus: str = "bbc-news"  # bbc-news (training-split articles) | a genfeat LM corpus name (load_corpus)
    split_seed: int = 0  # the BBC train / valid / test split (shared with xlnet_classify)
    vocab_size: int = 8000
    seq_len: int = 128
    reuse_len: int = 64
    num_predict: int = 21  # about seq_len / K, K = 6
    batch_size: int = 16
    bi_data: bool = False  # half of each batch reads the reversed text (model.bi_data follows)
    valid_batches: int = 20
    limit_docs: int = 0  # > 0: the first N documents per split (tests)


@dataclass(frozen=True)
class XLNetPretrainConfig:
    seed: int = 0
    objective: str = "plm"  # plm | mlm
    data: PretrainDataConfig = field(default_factory=PretrainDataConfig)
    model: XLNetConfig = field(default_factory=lambda: XLNetConfig(mem_len=64, dropatt=0.0))
    train: TrainConfig = field(default_factory=lambda: TrainConfig(max_steps=2000, lr=5e-4, warmup_steps=100,
                                                                   schedule="linear", min_lr_ratio=0.0,
                                                                   eval_every=500, patience=0))

    def __post_init__(self) -> None:
        if self.objective not in ("plm", "mlm"):
            raise ConfigError(f"objective must be plm or mlm, got {self.objective!r}")


@dataclass(frozen=True)
class XLNetClassifyConfig:
    seed: int = 0
    pretrained: str = ""  # an xlnet_pretrain run directory: tokenizer, network and (init pretrained) weights
    init: str = "pretrained"  # pretrained | scratch
    labels_per_class: int = 20  # 100 labels over BBC's 5 classes
    split_seed: int = 0
    max_len: int = 256
    steps: int = 400
    batch_size: int = 16
    lr: float = 1e-4
    warmup: int = 40
    weight_decay: float = 0.01
    dropout: float = 0.1
    eval_every: int = 50
    limit_docs: int = 0  # tests

    def __post_init__(self) -> None:
        if self.init not in ("pretrained", "scratch"):
            raise ConfigError(f"init must be pretrained or scratch, got {self.init!r}")


def bbc_small() -> XLNetPretrainConfig:
    """CPU scale (spec §6.1): 4 layers, d 128, 4 heads of 32, d_ff 512, dropout 0.1, no attention dropout (the
    reference's pretraining default; on CPU it is a fifth of the step); 128-token sequences, 64 reused as memory."""
    return XLNetPretrainConfig()


def pretrain_tiny() -> XLNetPretrainConfig:
    return XLNetPretrainConfig(
        data=PretrainDataConfig(vocab_size=200, seq_len=24, reuse_len=8, num_predict=4, batch_size=4,
                                valid_batches=2, limit_docs=40),
        model=XLNetConfig(n_layer=1, d_model=16, n_head=2, d_head=8, d_inner=32, mem_len=8),
        train=TrainConfig(max_steps=6, lr=1e-3, warmup_steps=1, eval_every=3, log_every=2, schedule="linear"))


PRETRAIN_PRESETS = {"bbc_small": bbc_small, "tiny": pretrain_tiny}


def bbc_100() -> XLNetClassifyConfig:
    return XLNetClassifyConfig()


def classify_tiny() -> XLNetClassifyConfig:
    return XLNetClassifyConfig(labels_per_class=2, max_len=32, steps=4, batch_size=4, eval_every=2, limit_docs=40)


CLASSIFY_PRESETS = {"bbc_100": bbc_100, "tiny": classify_tiny}


# ----------------------------------------------------------------------------------------- data
def _bbc_docs(split_seed: int, limit: int) -> dict[str, tuple[list[str], np.ndarray]]:
    docs = load_bbc_news()
    split = stratified_split(docs.labels, split_seed)
    out = {}
    for k, idx in split.items():
        idx = idx[:limit] if limit else idx
        out[k] = ([docs.texts[i] for i in idx], docs.labels[idx])
    return out


def pretrain_documents(cfg: PretrainDataConfig) -> dict[str, list[str]]:
    """{"train", "valid"} -> documents (each a text with newlines)."""
    if cfg.corpus == "bbc-news":
        d = _bbc_docs(cfg.split_seed, cfg.limit_docs)
        return {"train": d["train"][0], "valid": d["valid"][0]}
    splits = load_corpus(cfg.corpus)
    out = {}
    for k in ("train", "valid"):  # a corpus is one document per split; chunk it into 200-line documents
        lines = getattr(splits, k)
        docs = ["\n".join(lines[i: i + 200]) for i in range(0, len(lines), 200)]
        out[k] = docs[: cfg.limit_docs] if cfg.limit_docs else docs
    return out


def encode_documents(tok: SentencePieceTokenizer, docs: list[str]) -> np.ndarray:
    """One stream: each document's lines encoded, then <eod>."""
    eod = tok.ids["<eod>"]
    parts = []
    for doc in docs:
        lines = [line for line in doc.split("\n") if line.strip()]
        parts.append(tok.encode_lines(lines))
        parts.append(np.array([eod]))
    return np.concatenate(parts)


class PretrainLoss:
    """PLM or MLM loss on consecutive batches, carrying the (detached) memory of the reuse part."""

    def __init__(self, objective: str):
        self.forward = plm_forward if objective == "plm" else mlm_forward
        self.mems: tuple[torch.Tensor, ...] | None = None

    def __call__(self, model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, int]:
        device = next(model.parameters()).device
        batch = {k: v.to(device) for k, v in batch.items()}
        if self.mems is not None:
            batch["mems"] = tuple(m.to(device) for m in self.mems)
        out, o = self.forward(model, batch)
        self.mems = o.mems
        return nll(out, batch["labels"]), int((batch["labels"] != -100).sum())

    def state_dict(self) -> dict[str, Any]:
        return {"mems": [m.cpu() for m in self.mems] if self.mems is not None else []}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.mems = tuple(state["mems"]) or None


# ----------------------------------------------------------------------------------------- pretraining
@torch.no_grad()
def evaluate_pretrain(model: torch.nn.Module, batches: list[dict[str, torch.Tensor]], objective: str
                      ) -> dict[str, float]:
    """Mean target NLL over fixed validation batches read in order (with their memory)."""
    was = model.training
    model.eval()
    loss_fn, total, count = PretrainLoss(objective), 0.0, 0
    for b in batches:
        loss, n = loss_fn(model, b)
        total, count = total + float(loss) * n, count + n
    model.train(was)
    return {"valid_loss": total / count}


def run_pretrain(cfg: XLNetPretrainConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    info = D.setup(cfg.train.device)
    t0 = time.perf_counter()
    seed_everything(cfg.seed)
    dc = cfg.data
    docs = pretrain_documents(dc)
    tok_path = run_dir / "tokenizer.json"
    if tok_path.exists():  # a resumed run keeps its vocabulary
        tok = load_tokenizer(tok_path)
    else:
        tok = SentencePieceTokenizer.train((line for d in docs["train"] for line in d.split("\n")), dc.vocab_size)
        if info.is_main:
            tok.save(tok_path)
    streams = {k: encode_documents(tok, v) for k, v in docs.items()}
    model_cfg = dataclasses.replace(cfg.model, vocab_size=tok.vocab_size, reuse_len=dc.reuse_len, bi_data=dc.bi_data)
    if info.is_main:
        atomic_write_text(run_dir / "model_config.json", json.dumps(dataclasses.asdict(model_cfg), indent=1))
    lm_model = XLNetLM(model_cfg).to(info.device)
    n_params = sum(p.numel() for p in lm_model.parameters())
    model = D.wrap(lm_model, info, cfg.train.distributed)

    def stream(tokens: np.ndarray, seed: int, batch: int) -> PretrainStream:
        return PretrainStream(tokens, batch, dc.seq_len, dc.reuse_len, dc.num_predict, tok.ids["<sep>"],
                              tok.ids["<cls>"], tok.word_start, seed, cfg.objective, tok.ids["<mask>"],
                              tok.vocab_size, dc.bi_data)
    n_valid = min(dc.batch_size, max(1, len(streams["valid"]) // (dc.seq_len + dc.reuse_len)))
    valid_stream = stream(streams["valid"], 12_345, n_valid + n_valid % 2 if dc.bi_data else n_valid)
    valid = [next(valid_stream) for _ in range(dc.valid_batches)]
    if info.is_main:
        print(f"xlnet_pretrain ({cfg.objective}): {n_params / 1e6:.2f}M parameters, vocab {tok.vocab_size}, "
              f"{len(streams['train']):,} training tokens ({len(docs['train'])} documents), device {info.device}")
    result = fit(model, PretrainLoss(cfg.objective), stream(streams["train"], cfg.seed + info.rank, dc.batch_size),
                 cfg.train, run_dir, evaluate=lambda m: evaluate_pretrain(m, valid, cfg.objective),
                 resume_from=resume_from, desc=f"xlnet {cfg.objective}")
    load_model_weights(lm_model, run_dir / "model.safetensors")  # the best validation weights
    final = evaluate_pretrain(lm_model, valid, cfg.objective)
    summary = {"objective": cfg.objective, "params": n_params, "vocab_size": tok.vocab_size,
               "train_tokens": int(len(streams["train"])), "steps": result.step, "best_step": result.best_step,
               "valid_loss": round(final["valid_loss"], 4), "train_wall_s": round(result.wall_time, 1),
               "total_wall_s": round(time.perf_counter() - t0, 1), "machine": machine_info(info.device)}
    if info.is_main:
        atomic_write_text(run_dir / "summary.json", json.dumps(summary, indent=1) + "\n")
        print(f"valid target NLL {final['valid_loss']:.4f} ({result.step} steps, {summary['train_wall_s']} s) "
              f"-> {run_dir}")
    return summary


# ----------------------------------------------------------------------------------------- fine-tuning
def load_pretrained(run: str | Path) -> tuple[SentencePieceTokenizer, XLNetConfig, Path]:
    run = Path(run)
    if not (run / "model_config.json").is_file() or not (run / "tokenizer.json").is_file():
        raise ConfigError(f"{run}: not an xlnet_pretrain run directory (model_config.json / tokenizer.json "
                          "missing); train one with `genfeat run xlnet_pretrain`")
    cfg = XLNetConfig(**{k: tuple(v) if isinstance(v, list) else v
                         for k, v in json.loads((run / "model_config.json").read_text()).items()})
    return load_tokenizer(run / "tokenizer.json"), cfg, run / "model.safetensors"


@torch.no_grad()
def accuracy(clf: XLNetClassifier, x: dict[str, torch.Tensor], y: torch.Tensor, batch: int = 32) -> float:
    clf.eval()
    pred = torch.cat([clf(**{k: v[a: a + batch] for k, v in x.items()}).argmax(-1) for a in range(0, len(y), batch)])
    return float((pred == y).float().mean())


def run_classify(cfg: XLNetClassifyConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    if resume_from is not None:
        raise ConfigError("xlnet_classify runs are short and do not resume; start a new run")
    if not cfg.pretrained:
        raise ConfigError("xlnet_classify needs pretrained=RUN_DIR (an xlnet_pretrain run: its tokenizer and network;"
                          " with init=scratch its weights are not used)")
    t0 = time.perf_counter()
    tok, model_cfg, weights = load_pretrained(cfg.pretrained)
    seed_everything(cfg.seed)
    data = _bbc_docs(cfg.split_seed, cfg.limit_docs)
    rng = np.random.default_rng(cfg.seed)
    ytr = data["train"][1]
    labeled = np.sort(np.concatenate([rng.choice(np.flatnonzero(ytr == c), cfg.labels_per_class, replace=False)
                                      for c in np.unique(ytr)]))
    sep, cls, pad = tok.ids["<sep>"], tok.ids["<cls>"], tok.ids["<pad>"]

    def inputs(texts: list[str]) -> dict[str, torch.Tensor]:
        ids = [tok.encode(" ".join(t.split()))[: cfg.max_len - 2] for t in texts]
        return pair_inputs(ids, None, cfg.max_len, sep, cls, pad)
    x_tr = inputs([data["train"][0][i] for i in labeled])
    y_tr = torch.from_numpy(ytr[labeled])
    x_va, y_va = inputs(data["valid"][0]), torch.from_numpy(data["valid"][1])
    x_te, y_te = inputs(data["test"][0]), torch.from_numpy(data["test"][1])
    clf = XLNetClassifier(dataclasses.replace(model_cfg, dropout=cfg.dropout, dropatt=cfg.dropout, mem_len=0),
                          int(ytr.max()) + 1)
    if cfg.init == "pretrained":
        lm_state = {k[len("transformer."):]: v for k, v in load_weights(weights).items()
                    if k.startswith("transformer.")}
        clf.transformer.load_state_dict(lm_state)
    opt = torch.optim.AdamW(clf.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / cfg.warmup, max(0.0, (cfg.steps - s) / max(1, cfg.steps - cfg.warmup))))
    logger = MetricsLogger(run_dir, enabled=True, tensorboard=False)
    best, best_state, best_step = -1.0, None, 0
    order = np.array([], dtype=np.int64)
    bar = tqdm(range(cfg.steps), desc=f"xlnet_classify ({cfg.init})")
    for step in bar:
        if len(order) < cfg.batch_size:
            order = np.concatenate([order, rng.permutation(len(y_tr))])
        idx, order = torch.from_numpy(order[: cfg.batch_size]), order[cfg.batch_size:]
        clf.train()
        loss = clf.loss(clf(**{k: v[idx] for k, v in x_tr.items()}), y_tr[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(clf.parameters(), 1.0)
        opt.step()
        sched.step()
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
            acc = accuracy(clf, x_va, y_va)
            logger.log(step + 1, train_loss=loss.item(), valid_acc=acc)
            bar.set_postfix(valid_acc=f"{acc:.3f}")
            if acc > best:
                best, best_state, best_step = acc, copy.deepcopy(clf.state_dict()), step + 1
    logger.close()
    clf.load_state_dict(best_state)
    test_acc = accuracy(clf, x_te, y_te)
    save_model_weights(clf, run_dir / "model.safetensors")
    summary = {"init": cfg.init, "pretrained": str(cfg.pretrained), "labels": int(len(y_tr)),
               "valid_acc": round(best, 4), "best_step": best_step, "test_acc": round(test_acc, 4),
               "test_docs": int(len(y_te)), "wall_s": round(time.perf_counter() - t0, 1), "machine": machine_info()}
    atomic_write_text(run_dir / "summary.json", json.dumps(summary, indent=1) + "\n")
    print(f"test accuracy {test_acc:.4f} (valid {best:.4f} at step {best_step}; {len(y_tr)} labels) -> {run_dir}")
    return summary
