"""Recipe `citation`: cold-start citation and authorship prediction with multi-facet paper embeddings (thesis C
§3.4; spec citation-prediction.md).

    genfeat run citation --preset tiny                     # the spec §13 synthetic graph, about a minute
    genfeat run citation --preset tiny --model.k 1         # the single-facet model on the same data
    genfeat run citation --preset r2                       # §13.2 R2: not capacity-limited, K should not matter
    genfeat data fetch debian-packages glove-6b-50d        # after `apt-get update -o Acquire::Languages=en`
    genfeat run citation --preset debian_cpu               # the Debian citation graph at a 2-core budget
    genfeat run citation --preset debian                   # the thesis's transformer network (a GPU)
    genfeat run citation --preset debian --data.source specter:DIR     # or s2orc:FILE, archives:DIR
    genfeat affinity RUN --archives DIR --submissions FILE --out FILE  # OpenReview-style affinities

    data -> task    the synthetic graph (spec §13.1), the Debian graph (`data.debian_citations`), SPECTER / SciDocs
                    or S2ORC files (`data.citation_readers`) or reviewer archives (`data.openreview`, authorship
                    only) as `data.citations.CitationData`; the task `tasks.citation.CitationPrediction`: Eq. 3.14
                    on pairs drawn from both kinds with one random negative paper each, per-column ranking of the
                    split's papers with scikit-learn's tie rules
    network         `models.citation.CitationModel`: the facet network (`model.encoder` transformer | gru | lstm |
                    bow, `model.k`, K output layers G^o_k, the magnitude heads of Eq. 3.15 with
                    `model.magnitudes`), author and citer tables, H for Ω; the input table starts from the word
                    vectors where `model.d_model` is their width
    paradigm        one phase (`paradigms.fit_task`), selecting on valid `eval.metric` (cite_ap); then the CBOW
                    Avg / Max baselines (`eval.baselines`) and their λ-mixtures with the model, λ chosen on valid

Settings of the synthetic presets (the spec's §13 reference): a bag-of-words encoder with 64 hidden units, K linear
maps into R^8, no magnitude heads, Adam at 3e-3 without decay, 64 positive pairs per step, no Ω (the synthetic
words have no vectors). Deviation from the reference: 4,000 steps instead of 1,200, since the joint objective
(authorship and citation pairs, α : β = 5 : 1) is still improving at 1,200 (docs/results/citation_synthetic.md).
The word vocabulary and the longest paper come from the data (`model.vocab_size` and `model.max_len` are set from
them).

Deviations on real data: GloVe 6B 50d instead of Bansal et al.'s 200-d CBOW vectors (not available offline), so
the network is 50 wide and its facets live in R^100 (the reference's `--target_emsize 100`); Ω's targets p^aw
(Eq. B.4) are scaled to unit length (the plain sum grows with a text's length and starts the loss in the
hundreds; docs/results/citation.md compares K = 1 with and without Ω); attention dropout is 0 (SDPA's fused CPU
kernel instead of the explicit softmax and dropout). A run keeps `citation_vocab.json` (its
words, their training probabilities, its author and citer names) for `genfeat affinity`.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from genfeat.analysis.facet_scores import sif_bag_vectors
from genfeat.config import atomic_write_text
from genfeat.data.citation_sources import CitationDataConfig, load_citations
from genfeat.data.citation_synthetic import SyntheticCitationConfig
from genfeat.models.citation import VOCAB, CitationConfig, CitationModel
from genfeat.models.facets import input_table_start
from genfeat.paradigms import fit_task
from genfeat.tasks.citation import CitationEvalConfig, CitationPrediction, document_baselines
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


@dataclass(frozen=True)
class CitationLossConfig:
    alpha: float = 5.0  # authorship (Eq. 3.14)
    beta: float = 1.0  # citation
    gamma: float = 10.0  # Ω (Appendix B.3); used when the data has word vectors


def train_config(**kw: Any) -> TrainConfig:
    base = {"max_steps": 4000, "lr": 3e-3, "warmup_steps": 0, "schedule": "constant", "weight_decay": 0.0,
            "clip_norm": 0.0, "log_every": 100, "eval_every": 200, "precision": "fp32"}
    return TrainConfig(**(base | kw))


def synthetic_model(**kw: Any) -> CitationConfig:
    base = {"encoder": "bow", "decoder": "linear", "d_model": 64, "d_target": 8, "k": 5, "n_types": 0,
            "magnitudes": False, "dropout": 0.0, "column_init_std": 0.3}
    return CitationConfig(**(base | kw))


@dataclass(frozen=True)
class CitationRunConfig:
    seed: int = 0
    data: CitationDataConfig = field(default_factory=CitationDataConfig)
    model: CitationConfig = field(default_factory=synthetic_model)
    loss: CitationLossConfig = field(default_factory=CitationLossConfig)
    train: TrainConfig = field(default_factory=train_config)
    eval: CitationEvalConfig = field(default_factory=CitationEvalConfig)


# ----------------------------------------------------------------------------------------- presets
def tiny() -> CitationRunConfig:
    """The spec §13 synthetic graph (30 topics, 3 per paper, d = 8) and reference configuration: R1."""
    return CitationRunConfig()


def r2() -> CitationRunConfig:
    """§13.2 R2: d = 16, 20 topics, 30 % one-topic and 70 % two-topic papers of 6 words per topic."""
    syn = SyntheticCitationConfig(n_topics=20, topics_per_paper=2, topic_counts=(0.3, 0.7), words_per_paper_topic=6)
    return CitationRunConfig(data=CitationDataConfig(synthetic=syn), model=synthetic_model(d_target=16))


def debian() -> CitationRunConfig:
    """The Debian citation graph (`data.debian_citations`) with the thesis's network at CPU width: a 3-layer
    transformer encoder and decoder of width 50 started from GloVe 6B 50d (the thesis: 200-d CBOW vectors, not
    available offline), K = 5 output layers into R^100 (the reference's `--target_emsize 100`), the magnitude
    heads, type embeddings, Ω; Adam 2e-4 (the reference's) with L2 1e-6 as decoupled decay, batch 50 pairs."""
    model = CitationConfig(d_model=50, d_target=100, n_head=5, d_inner=200, attn_dropout=0.0)
    return CitationRunConfig(
        data=CitationDataConfig(source="debian", batch_size=50), model=model,
        train=train_config(max_steps=20000, lr=2e-4, weight_decay=1e-6, clip_norm=1.0, eval_every=2000,
                           log_every=200, patience=3))


def debian_cpu() -> CitationRunConfig:
    """`debian` at a 2-core CPU budget: the bag-of-words encoder and linear decoder of the spec's §13 reference
    (the transformer and bi-GRU encoders are an order of magnitude slower a step there), 4,000 steps at Adam
    1e-3 (the reference's 2e-4 is tuned for 100 epochs)."""
    cfg = debian()
    return dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, encoder="bow", decoder="linear"),
                               train=dataclasses.replace(cfg.train, max_steps=4000, lr=1e-3, eval_every=2000,
                                                         log_every=100))


PRESETS = {"tiny": tiny, "r2": r2, "debian": debian, "debian_cpu": debian_cpu}


def run(cfg: CitationRunConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    data, vectors = load_citations(cfg.data, cfg.seed)
    print(data.summary())
    sif = None
    if vectors is not None:  # Eq. B.4's p^aw, scaled to unit length (a deviation: the module docstring)
        sif = sif_bag_vectors(data.input_ids, vectors, data.word_probs())
        sif /= np.maximum(np.linalg.norm(sif, axis=1, keepdims=True), 1e-12)
    task = CitationPrediction(data, cfg.loss.alpha, cfg.loss.beta, cfg.loss.gamma, sif, cfg.eval.ks, cfg.eval.ties,
                              cfg.eval.metric)

    info = D.setup(cfg.train.device)
    seed_everything(cfg.seed)
    mcfg = dataclasses.replace(cfg.model, vocab_size=len(data.vocab), max_len=data.input_ids.shape[1])
    d_word = vectors.shape[1] if vectors is not None and cfg.loss.gamma else 0
    init = input_table_start(vectors, mcfg.d_model)  # the input table starts from the word vectors
    model = CitationModel(mcfg, data.n_authors, data.n_citers, d_word, init).to(info.device)
    n_params = sum(p.numel() for p in model.parameters())
    batches = task.batches(cfg.data.batch_size, cfg.seed, info.rank, info.world_size)
    name = f"K={mcfg.k} {mcfg.encoder}"
    if info.is_main:  # what inference on new text needs (`genfeat affinity`, `models.citation.load_run`)
        atomic_write_text(Path(run_dir) / VOCAB, json.dumps(
            {"vocab": data.vocab, "word_probs": data.word_probs().tolist(), "authors": data.author_names,
             "citers": data.citer_names}) + "\n")
    res, scores = fit_task(D.wrap(model, info), task, batches, cfg.train, run_dir, resume_from=resume_from,
                           desc=f"citation {name}")

    baselines = document_baselines(task, model, vectors, cfg.eval)
    return record_fit(
        run_dir, f"Cold-start citation / authorship prediction, {name} on {data.name}", scores, fit=res, started=t0,
        params=n_params, details={"model": name, "dataset": data.stats() | {"name": data.name},
                                  "baselines": baselines},
        notes=[data.summary(), "Per-column ranking of the split's papers, scikit-learn's tie rules; "
               f"`baselines` holds CBOW Avg / Max and their mixtures with the model (λ on valid "
               f"{cfg.eval.mix_metric})."])
