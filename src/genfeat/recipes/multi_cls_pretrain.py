"""Recipe `multi_cls_pretrain`: continued pretraining of a BERT checkpoint with K facet CLS tokens (Multi-CLS BERT,
thesis C §5.2), or Table 5.1's MTL baseline.

    genfeat data fetch minilm-l6 bbc-news
    genfeat run multi_cls_pretrain --preset minilm_bbc --model.k 5 --out runs/mcls-k5    # MLM+TF-IDF+SO+MCQT
    genfeat run multi_cls_pretrain --preset minilm_bbc --model.k 1 --out runs/mcls-k1    # Ours, K = 1
    genfeat run multi_cls_pretrain --preset minilm_bbc --objective mtl --out runs/mtl     # Table 5.1's MTL baseline

    data -> task    documents of the BBC News training split (the fine-tuning test articles are never read) or any
                    genfeat corpus, batches of N triples [A; P; H] (`data.multi_cls.TripleBatches`);
                    `tasks.pretraining.MultiCLSPretraining`: validation MCQT loss and how often the positive is
                    ranked first among the 2N candidates on fixed held-out triples (chance: 1 / 2N)
    network         the checkpoint's BERT with K facets and the four heads (`models.multi_cls`, built by
                    `models.multi_cls.inference.build_pretrainer`; the checkpoint's MLM head when it has one)
    paradigm        one phase (`paradigms.fit_task`), the unweighted sum of four losses (`models/multi_cls/pretrain.py`)

Deviations (CPU scale): MiniLM-L6-H384 instead of BERT-Base (inserted maps after blocks 2 and 4 of 6), the
inserted maps start at I + N(0, 0.01²) (spec §4.2 [I]: the checkpoint had no Multi-CLS pretraining), AdamW with
bias correction (the reference's Adam has none), far fewer pretraining tokens. Fine-tuning: `multi_cls_classify`.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genfeat.data.multi_cls import PretrainData, TripleBatches
from genfeat.data.sentences import bbc_documents
from genfeat.errors import ConfigError
from genfeat.models.bert import bert_dir, from_pretrained
from genfeat.models.bert.config import check_max_len
from genfeat.models.bert.hf import mlm_head_from_pretrained
from genfeat.models.bert.tokenizer import load_wordpiece
from genfeat.models.multi_cls import MultiCLSConfig, check_facet_tokens
from genfeat.models.multi_cls.inference import build_pretrainer
from genfeat.paradigms import fit_task
from genfeat.tasks.pretraining import MultiCLSPretraining
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig, build_optimizer, check_early_stop_metric
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


@dataclass(frozen=True)
class MultiCLSPretrainConfig:
    seed: int = 0
    init: str = "minilm-l6"  # the BERT checkpoint to continue from (an HF directory, or minilm-l6)
    data: PretrainData = field(default_factory=PretrainData)
    model: MultiCLSConfig = field(default_factory=lambda: MultiCLSConfig(insert_init="identity"))
    train: TrainConfig = field(default_factory=lambda: TrainConfig(
        max_steps=2000, lr=2e-5, warmup_steps=2, schedule="linear", min_lr_ratio=0.0, weight_decay=0.02,
        clip_norm=1.0, precision="fp32", log_every=20, eval_every=250, keep_last=1, early_stop_metric="valid_loss"))
    heads_lr: float = 0.0  # > 0: what the checkpoint lacks (inserted maps, the four heads) trains at this rate,
    #   the checkpoint's BERT at train.lr (a deviation for short CPU runs; the thesis: one rate, 2e9 tokens)
    train_inserted_layers_in_pretraining: bool = True  # the thesis; False: the released script, whose optimizer
    #   leaves out the inserted maps and the SO projection L^SO (they stay at their initial values; spec §4.2)
    objective: str = "multi_cls"  # multi_cls (K facets, `model`) | mtl (Table 5.1's MTL baseline: QT and SO on
    #   the tanh-pooled [CLS] of plain BERT, no facets: the facet options under `model` are not read)

    def __post_init__(self) -> None:
        if self.objective not in ("multi_cls", "mtl"):
            raise ConfigError(f"objective must be multi_cls or mtl, got {self.objective!r}")
        if self.objective == "mtl" and not self.train_inserted_layers_in_pretraining:
            raise ConfigError("objective=mtl has no inserted layers: train_inserted_layers_in_pretraining does not "
                              "apply to it")


def minilm_bbc() -> MultiCLSPretrainConfig:
    """MiniLM-L6 continued on the BBC News training articles: 2,000 steps of 10 triples (CPU: about an hour)."""
    return MultiCLSPretrainConfig()


def pretrain_tiny() -> MultiCLSPretrainConfig:
    """Seconds; for tests (pass `init` a small BERT directory and a small corpus)."""
    return MultiCLSPretrainConfig(data=PretrainData(max_len=48, n_triples=2, valid_batches=2),
                                  model=MultiCLSConfig(k=2, insert_init="identity"),
                                  train=dataclasses.replace(MultiCLSPretrainConfig().train, max_steps=6, eval_every=3,
                                                            log_every=2, keep_last=2))


PRESETS = {"minilm_bbc": minilm_bbc, "tiny": pretrain_tiny}


PRETRAIN_METRICS = tuple(f"valid_{k}" for k in MultiCLSPretraining.metrics)


def run(cfg: MultiCLSPretrainConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    check_early_stop_metric(cfg.train, PRETRAIN_METRICS)
    info = D.setup(cfg.train.device)
    t0 = time.perf_counter()
    seed_everything(cfg.seed)
    src = bert_dir(cfg.init)
    bert, bcfg = from_pretrained(src)
    check_max_len("data.max_len", cfg.data.max_len, bcfg.max_len)
    tok = load_wordpiece(src)
    k = 0 if cfg.objective == "mtl" else cfg.model.k  # facet tokens in the input
    if k:
        check_facet_tokens(tok.id_to_token, cfg.model.first_facet_id, k)
    pre = build_pretrainer(cfg.objective, cfg.model, bert.train(), cfg.data.hard_negatives, cfg.data.batch_groups)
    head = mlm_head_from_pretrained(src)
    if head is not None:
        pre.load_mlm_head(*head)
    pre = pre.to(info.device)
    docs = bbc_documents(cfg.data.split_seed, cfg.data.limit_docs, cfg.data.corpus)
    budget = cfg.data.max_len - k

    def make(d: list[list[str]], seed: int, rank: int = 0, world: int = 1) -> TripleBatches:
        return TripleBatches(d, tok, cfg.data.n_triples, budget, seed, cfg.data.hard_negatives, rank, world)
    valid_it = make(docs["valid"], 12_345)
    valid = [next(valid_it) for _ in range(cfg.data.valid_batches)]
    n_params = sum(p.numel() for p in pre.parameters())
    if info.is_main:
        print(f"multi_cls_pretrain {cfg.objective} K={k} λ={pre.lam}: {n_params / 1e6:.2f}M parameters, "
              f"{len(docs['train'])} documents, {3 * cfg.data.n_triples} sequences per batch, from {src} (MLM head: "
              f"{'the checkpoint' if head is not None else 'fresh, the checkpoint has none'})")
    train = make(docs["train"], cfg.seed, info.rank, info.world_size)
    if not cfg.train_inserted_layers_in_pretraining:
        pre.encoder.inserted.requires_grad_(False)
        pre.so_proj.requires_grad_(False)
    bert_ids = {id(p) for p in pre.bert.parameters()}
    opt = build_optimizer(pre, cfg.train, [p for p in pre.parameters() if id(p) not in bert_ids and p.requires_grad],
                          cfg.heads_lr)
    task = MultiCLSPretraining(valid, cfg.train.early_stop_metric.removeprefix("valid_"), cfg.train.early_stop_mode)
    res, final = fit_task(D.wrap(pre, info), task, train, cfg.train, run_dir, optimizer=opt,
                          resume_from=resume_from, desc="mtl" if k == 0 else f"multi-cls K={k}")
    title = "MTL pretraining (pooled [CLS])" if k == 0 else f"Multi-CLS BERT pretraining (K={k}, λ={pre.lam})"
    return record_fit(run_dir, title, final,
                      fit=res, started=t0, params=n_params, details={"k": k, "objective": cfg.objective, "lam": pre.lam,
                                                       "init": str(src), "hard_negatives": cfg.data.hard_negatives,
                                                       "heads_lr": cfg.heads_lr,
                                                       "mlm_head": "checkpoint" if head is not None else "fresh"},
                      notes=[f"Validation: {len(valid)} fixed batches of held-out articles; positive-first is the "
                             f"share of anchors whose next sequence scores highest among {2 * cfg.data.n_triples} "
                             f"(chance {1 / (2 * cfg.data.n_triples):.3f})."])
