"""XLNet fine-tuned for SQuAD 2.0 (thesis Y §2.2.3, Table 2.3; spec xlnet.md §2.12), from an `xlnet_pretrain` run
(`init scratch`: the same network with random weights).

    genfeat run xlnet_squad --train_file train-v2.0.json --dev_file dev-v2.0.json --pretrained runs/xlnet-plm

    data        `data.squad`: SQuAD JSON into windows of `max_len` tokens with stride `doc_stride`, questions cut to
                `max_query` tokens (`squad_features`)
    task        `tasks.span_qa.SpanQA`: start / end logits and the answerability score; answers up to
                `max_answer` tokens; dev EM / F1 with the null threshold 0 and with the threshold that maximises
                dev F1 (the reference's reported setting); predictions.json holds the dev answers
    network     `models.xlnet.heads.XLNetForSquad` on the pretrained run (`models.xlnet.inference`)
    paradigm    the reference's fine-tuning (`paradigms.finetune`, layer-wise decay 0.75), no model selection: the
                last weights
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genfeat.config import atomic_write_text
from genfeat.data.squad import load_squad_json, squad_features
from genfeat.errors import ConfigError
from genfeat.models.xlnet.heads import XLNetForSquad
from genfeat.models.xlnet.inference import check_init, finetune_network
from genfeat.paradigms.finetune import FinetuneConfig, finetune
from genfeat.tasks.span_qa import SpanQA
from genfeat.train import distributed as D
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


@dataclass(frozen=True)
class XLNetSquadConfig:
    seed: int = 0
    pretrained: str = ""  # an xlnet_pretrain run directory
    init: str = "pretrained"  # pretrained | scratch | body (the pretrained layers, fresh word embeddings)
    train_file: str = ""
    dev_file: str = ""
    max_len: int = 512
    doc_stride: int = 128
    max_query: int = 64
    max_answer: int = 64
    train: FinetuneConfig = field(default_factory=lambda: FinetuneConfig(batch_size=48, lr=3e-5, max_steps=8000,
                                                                         warmup_steps=1000, eval_every=8000,
                                                                         layer_decay=0.75, adam_eps=1e-6))

    def __post_init__(self) -> None:
        check_init(self.init)


def squad2() -> XLNetSquadConfig:
    """SQuAD 2.0 with the reference's settings (512 tokens, stride 128, batch 48, lr 3e-5, layer decay 0.75)."""
    return XLNetSquadConfig()


def tiny() -> XLNetSquadConfig:
    """Seconds; for tests."""
    return XLNetSquadConfig(max_len=64, doc_stride=32, max_query=16,
                            train=FinetuneConfig(max_steps=3, batch_size=4, eval_every=3, warmup_steps=1))


PRESETS = {"squad2": squad2, "tiny": tiny}


def run(cfg: XLNetSquadConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    if not cfg.train_file or not cfg.dev_file:
        raise ConfigError("xlnet_squad needs train_file and dev_file (SQuAD JSON)")
    seed_everything(cfg.seed)  # before the task head is initialised
    model, tok = finetune_network(XLNetForSquad, cfg.pretrained, cfg.init, cfg.train.dropout,
                                  dropout=cfg.train.dropout)
    model.to(D.setup(cfg.train.device).device)
    examples = {k: load_squad_json(f) for k, f in (("train", cfg.train_file), ("dev", cfg.dev_file))}
    task = SpanQA(examples, {k: squad_features(v, tok, cfg.max_len, cfg.doc_stride, cfg.max_query)
                             for k, v in examples.items()}, cfg.max_answer)
    res, _ = finetune(model, task, cfg.train, cfg.seed, run_dir, f"xlnet_squad ({cfg.init})", resume_from,
                      select=False, final_splits=())
    out = task.predict(model, "dev")
    scores = task.score(out, "dev")
    if D.current().is_main:
        atomic_write_text(run_dir / "predictions.json", json.dumps(task.answers(out, "dev")[0], indent=1))
    summary = record_fit(
        run_dir, f"XLNet on SQuAD 2.0 (init {cfg.init})",
        {f"dev_{k}": round(v, 2) for k, v in scores.items() if k != "null_threshold"},
        fit=res, started=t0, params=sum(p.numel() for p in model.parameters()), last_weights=True,
        details={"init": cfg.init, "pretrained": str(cfg.pretrained), "best_threshold": scores["null_threshold"],
                 "dev_questions": len(examples["dev"])},
        notes=["The last weights (no model selection); EM / F1 with the null threshold 0 and with the threshold "
               "that maximises dev F1 (the reference's reported setting)."])
    if D.current().is_main:
        print(f"SQuAD dev EM {scores['exact']:.2f} F1 {scores['f1']:.2f} (best threshold: F1 "
              f"{scores['f1_best_threshold']:.2f}) -> {run_dir}")
    return summary
