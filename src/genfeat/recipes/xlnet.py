"""XLNet pretraining: the permutation LM, or the masked-LM baseline on the same network (thesis Y §2.2; spec
xlnet.md §2.13). Fine-tuning: `recipes/xlnet_classify.py`, `xlnet_race.py`, `xlnet_squad.py`.

    genfeat data fetch bbc-news
    genfeat run xlnet_pretrain --preset bbc_small --out runs/xlnet-plm                       # permutation LM
    genfeat run xlnet_pretrain --preset bbc_small --objective mlm --out runs/xlnet-mlm       # BERT objective

Pretraining corpus: the articles of the BBC News training split (their labels unused; the split is fixed by
`data.split_seed`, the same split the classifier uses, so no test article is seen), or any genfeat LM corpus
(`data.corpus`, e.g. wiki-xml, austen), or several joined with "+" (bbc-news+ptb: the BBC articles and PTB's WSJ
text). A SentencePiece unigram vocabulary is trained on it and kept in the run directory (`genfeat_tokenizer.json`,
and `spiece.model`); documents are separated by <eod>. Batches: `PretrainStream` (reuse
part + A <sep> B <sep> <cls>, memory of the reuse part carried to the next step, about 1/6 of the tokens predicted
in spans). Validation: the same objective on the validation articles. Distributed: `torchrun ... genfeat run
xlnet_pretrain ...` (each rank reads its own stream, seeded by rank).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from genfeat.config import atomic_write_text
from genfeat.data.plm import PretrainStream
from genfeat.data.plm_corpus import encode_documents, pretrain_documents
from genfeat.data.tokenizers import GENFEAT_FILE, SPM_FILE, SentencePieceTokenizer, load_tokenizer, save_tokenizer
from genfeat.errors import ConfigError
from genfeat.models.xlnet import XLNetConfig, XLNetLM
from genfeat.models.xlnet.hf import save_pretrained
from genfeat.models.xlnet.inference import MODEL_CONFIG
from genfeat.paradigms import fit_task
from genfeat.tasks.pretraining import PermutationLMPretraining
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig, check_early_stop_metric
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


@dataclass(frozen=True)
class PretrainDataConfig:
    corpus: str = "bbc-news"  # bbc-news (training-split articles) | a genfeat LM corpus name (load_corpus); "+" joins
    split_seed: int = 0  # the BBC train / valid / test split (shared with xlnet_classify)
    vocab_size: int = 8000
    seq_len: int = 128
    reuse_len: int = 64
    num_predict: int = 21  # about seq_len / K, K = 6
    batch_size: int = 16  # rows per step, all ranks together (each rank keeps its share)
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


def bbc_small() -> XLNetPretrainConfig:
    """CPU scale (spec §6.1): 4 layers, d 128, 4 heads of 32, d_ff 512, dropout 0.1, no attention dropout (the
    reference's pretraining default; on CPU it is a fifth of the step); 128-token sequences, 64 reused as memory."""
    return XLNetPretrainConfig()


def pretrain_tiny() -> XLNetPretrainConfig:
    """Seconds; for tests."""
    return XLNetPretrainConfig(
        data=PretrainDataConfig(vocab_size=200, seq_len=24, reuse_len=8, num_predict=4, batch_size=4,
                                valid_batches=2, limit_docs=40),
        model=XLNetConfig(n_layer=1, d_model=16, n_head=2, d_head=8, d_inner=32, mem_len=8),
        train=TrainConfig(max_steps=6, lr=1e-3, warmup_steps=1, eval_every=3, log_every=2, schedule="linear"))


PRETRAIN_PRESETS = {"bbc_small": bbc_small, "tiny": pretrain_tiny}


# ----------------------------------------------------------------------------------------- pretraining
def run_pretrain(cfg: XLNetPretrainConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    check_early_stop_metric(cfg.train, ("valid_loss",))  # what PermutationLMPretraining reports
    info = D.setup(cfg.train.device)
    t0 = time.perf_counter()
    seed_everything(cfg.seed)
    dc = cfg.data
    docs = pretrain_documents(dc.corpus, dc.split_seed, dc.limit_docs)
    if info.is_main and not (run_dir / GENFEAT_FILE).exists():  # rank 0 trains it; a resumed run keeps its own
        save_tokenizer(SentencePieceTokenizer.train((line for d in docs["train"] for line in d.split("\n")),
                                                    dc.vocab_size), run_dir)
    D.barrier()
    tok = load_tokenizer(run_dir)
    streams = {k: encode_documents(tok, v) for k, v in docs.items()}
    model_cfg = dataclasses.replace(cfg.model, vocab_size=tok.vocab_size, reuse_len=dc.reuse_len, bi_data=dc.bi_data)
    if info.is_main:
        atomic_write_text(run_dir / MODEL_CONFIG, json.dumps(dataclasses.asdict(model_cfg), indent=1))
    lm_model = XLNetLM(model_cfg).to(info.device)
    n_params = sum(p.numel() for p in lm_model.parameters())
    model = D.wrap(lm_model, info, cfg.train.distributed)

    def stream(tokens: np.ndarray, seed: int, batch: int, rank: int = 0, world: int = 1) -> PretrainStream:
        return PretrainStream(tokens, batch, dc.seq_len, dc.reuse_len, dc.num_predict, tok.ids["<sep>"],
                              tok.ids["<cls>"], tok.word_start, seed, cfg.objective, tok.ids["<mask>"],
                              tok.vocab_size, dc.bi_data, rank, world)
    n_valid = min(dc.batch_size, max(1, len(streams["valid"]) // (dc.seq_len + dc.reuse_len)))
    valid_stream = stream(streams["valid"], 12_345, n_valid + n_valid % 2 if dc.bi_data else n_valid)
    valid = [next(valid_stream) for _ in range(dc.valid_batches)]
    if info.is_main:
        print(f"xlnet_pretrain ({cfg.objective}): {n_params / 1e6:.2f}M parameters, vocab {tok.vocab_size}, "
              f"{len(streams['train']):,} training tokens ({len(docs['train'])} documents), device {info.device}")
    train = stream(streams["train"], cfg.seed, dc.batch_size, info.rank, info.world_size)  # this rank's rows
    task = PermutationLMPretraining(cfg.objective, valid, cfg.train.early_stop_metric.removeprefix("valid_"),
                                    cfg.train.early_stop_mode)
    result, final = fit_task(model, task, train, cfg.train, run_dir, resume_from=resume_from,
                             desc=f"xlnet {cfg.objective}")  # the best validation weights
    if info.is_main:  # the same weights as a Hugging Face directory: AutoModel / AutoTokenizer.from_pretrained(hf/)
        save_pretrained(lm_model, run_dir / "hf")
        shutil.copyfile(run_dir / SPM_FILE, run_dir / "hf" / SPM_FILE)
    summary = record_fit(
        run_dir, f"XLNet pretraining ({cfg.objective})", final, fit=result, started=t0, params=n_params,
        details={"objective": cfg.objective, "vocab_size": tok.vocab_size, "train_tokens": int(len(streams["train"])),
                 "train_wall_s": round(result.wall_time, 1)},
        notes=[f"valid_loss: the mean target NLL of {len(valid)} held-out batches (best-validation weights)."])
    if info.is_main:
        print(f"valid target NLL {final['valid_loss']:.4f} ({result.step} steps, {summary['train_wall_s']} s) "
              f"-> {run_dir}")
    return summary
