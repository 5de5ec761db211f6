"""Cold-start authorship and citation prediction as a task (thesis C §3.4.1, §3.4.3.3; spec citation-prediction.md
§4, §9): train on the training papers' pairs, rank each split's papers for every author / citing paper.

    loss      Eq. 3.14 on a batch of positive pairs drawn uniformly from both kinds' training pairs
              (`PairBatches`), each with one negative: a uniformly random other training paper with target 0:
                  [α Σ_author + β Σ_citer r (S - y)²  +  γ Σ_pairs Ω(paper, its negative paper)] / pairs
              r the inverse-frequency weights of each kind (mean 1), Ω Eq. B.3 with the pair's own paper as the
              positive and its negative paper as the random other one (R^auto = {(i, i), (i, j_i)}), present when
              the task has SIF word vectors and γ > 0
    metrics   per column (an author, a citing paper) with a positive among the split's papers, all the split's
              papers ranked (the candidates: the split's papers, as the thesis ranks the test papers), with
              scikit-learn's tie rules (`ties="average"`; the truncated scores tie at 0): author_/cite_ ap, auc,
              ndcg, r@k, rcap@k (both recall conventions), ndcg@k; averaged over columns, unweighted
    primary   cite_ap (`metric`)

`evaluate_scores(score_fn, split)` evaluates any scorer (the CBOW baselines, the λ-mixtures) with the same
protocol: score_fn(kind, papers, columns) -> (len(columns), len(papers)) scores. `document_baselines(task, model,
vectors, CitationEvalConfig)`: CBOW Avg / Max (thesis C Table 3.8's document-similarity rows) and each one's
λ-mixture with the model, λ chosen on valid.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from genfeat.analysis.facet_scores import sif_bag_vectors
from genfeat.data.batches import EpochBatches, rank_share
from genfeat.data.citations import KINDS, PAD, CitationData
from genfeat.errors import ConfigError
from genfeat.losses.max_facet import (
    autoencoder_regulariser,
    inverse_frequency_weights,
    max_facet_score,
    weighted_square_loss,
)
from genfeat.metrics.multi_positive import TIES, multi_positive_metrics
from genfeat.models.citation.cbow import CBOWScorer, mix
from genfeat.tasks.ranking import QueryMetricSums, RankingTask, average_query_metrics
from genfeat.train import distributed as D

PREFIX = {"author": "author", "citer": "cite"}
BASELINES = {"cbow_avg": "mean", "cbow_max": "max"}
ScoreFn = Callable[[str, np.ndarray, np.ndarray], Tensor]  # kind, papers (n,), columns (m,) -> (m, n)


class PairBatches:
    """Endless batches of `batch_size` training pairs (both kinds, one epoch permutation at a time), each with a
    negative paper drawn uniformly from the other training papers; the global batch is drawn, then each rank keeps
    its share, so W ranks see what one process does. Yields dicts of tensors: paper, negative, column, kind (0
    author, 1 citer), weight (r) and total (the global batch size). Checkpointed by `state_dict`."""

    def __init__(self, data: CitationData, batch_size: int, seed: int, rank: int = 0, world_size: int = 1):
        rows = {"paper": [], "column": [], "kind": [], "weight": []}
        for k, kind in enumerate(KINDS):
            pairs = torch.from_numpy(data.pairs(kind, "train"))
            if not len(pairs):
                continue
            rows["paper"].append(pairs[:, 0])
            rows["column"].append(pairs[:, 1])
            rows["kind"].append(torch.full((len(pairs),), k))
            rows["weight"].append(inverse_frequency_weights(pairs[:, 1], data.n_columns(kind)))
        if not rows["paper"]:
            raise ValueError(f"{data.name}: no training pairs")
        self.pairs = EpochBatches({k: torch.cat(v) for k, v in rows.items()}, batch_size,
                                  np.random.default_rng([seed, 0]))
        self.train_papers = torch.from_numpy(data.papers("train"))
        if len(self.train_papers) < 2:
            raise ValueError(f"{data.name}: negatives need at least 2 training papers")
        self.rng = np.random.default_rng([seed, 1])
        self.batch_size, self.shard = batch_size, rank_share(batch_size, rank, world_size)

    def __iter__(self) -> PairBatches:
        return self

    def __next__(self) -> dict[str, Tensor]:
        b = next(self.pairs)
        n = len(self.train_papers)
        # a uniform other training paper: draw among n - 1, skip the pair's own paper
        pos = torch.searchsorted(self.train_papers, b["paper"])
        draw = torch.from_numpy(self.rng.integers(n - 1, size=len(pos)))
        b["negative"] = self.train_papers[draw + (draw >= pos).long()]
        b = {k: v[self.shard] for k, v in b.items()}
        return b | {"total": torch.tensor(float(self.batch_size))}

    def state_dict(self) -> dict[str, Any]:
        return {"pairs": self.pairs.state_dict(), "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.pairs.load_state_dict(state["pairs"])
        self.rng.bit_generator.state = state["rng"]


class CitationPrediction(RankingTask):
    unit = "pairs"

    def __init__(self, data: CitationData, alpha: float = 5.0, beta: float = 1.0, gamma: float = 10.0,
                 sif_vectors: np.ndarray | None = None, ks: tuple[int, ...] = (50, 200), ties: str = "average",
                 metric: str = "cite_ap", batch_size: int = 256):
        """`sif_vectors` (n_papers, d_word): Σ_w ν/(ν + p(w)) w of each paper's words (fixed), for Ω."""
        self.data, self.alpha, self.beta, self.gamma = data, alpha, beta, gamma
        self.sif = None if sif_vectors is None else torch.as_tensor(sif_vectors, dtype=torch.float32)
        if self.sif is not None and self.sif.shape[0] != data.n_papers:
            raise ValueError(f"sif_vectors has {self.sif.shape[0]} rows for {data.n_papers} papers")
        self.ks, self.ties, self.metric, self.batch_size = ks, ties, metric, batch_size
        self.splits = ("valid", "test")
        self.input_ids = torch.from_numpy(data.input_ids)
        self.type_ids = torch.from_numpy(data.type_ids)

    def batches(self, batch_size: int, seed: int, rank: int = 0, world_size: int = 1) -> PairBatches:
        return PairBatches(self.data, batch_size, seed, rank, world_size)

    # ------------------------------------------------------------------------------------ training
    def loss(self, model: nn.Module, batch: dict[str, Tensor]) -> tuple[Tensor, int]:
        net = D.unwrap(model)
        device = next(net.parameters()).device
        papers = torch.cat([batch["paper"], batch["negative"]])  # (2b,) positives, then their negatives
        ids, types = self.input_ids[papers], self.type_ids[papers]
        width = int((ids != PAD).sum(1).max())  # left-padded: the leading all-padding columns go
        out = model(ids[:, -width:].to(device), types[:, -width:].to(device))  # PaperFacets (2b, K, d)
        b = len(batch["paper"])
        kind, col = batch["kind"].to(device), batch["column"].to(device)
        is_author = (kind == 0)[:, None]
        columns = torch.zeros(b, net.cfg.d_target, device=device)  # (b, d) each pair's author / citer embedding
        for k, table in enumerate((net.author, net.citer)):  # every non-empty table every step (DDP's reducer)
            if table.num_embeddings:
                columns = torch.where((kind == k)[:, None], table(torch.where(kind == k, col, 0)), columns)
        facets = torch.where(is_author[..., None].repeat(2, 1, 1), out.author, out.citer)  # (2b, K, d)
        s = max_facet_score(facets, columns.repeat(2, 1), net.cfg.truncate)  # (2b,)
        y = torch.cat([torch.ones(b, device=device), torch.zeros(b, device=device)])
        w = batch["weight"].to(device) * torch.where(kind == 0, self.alpha, self.beta)
        loss = weighted_square_loss(s, y, w.repeat(2))
        if self.gamma and self.sif is not None:
            if net.H is None:
                raise ValueError("Ω needs the model's H: build CitationModel with d_word = the word vectors' width")
            target = net.H(self.sif[papers].to(device))  # (2b, d) H p^aw, the word vectors fixed
            loss = loss + self.gamma * autoencoder_regulariser(out.facets[:b], target[:b], target[b:])
        return loss * (D.world_size() / float(batch["total"])), b

    # ------------------------------------------------------------------------------------ evaluation
    def queries(self, kind: str, split: str) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """(the split's papers, the columns with a positive among them, each column's relevant paper positions)."""
        papers = self.data.papers(split)
        pairs = self.data.pairs(kind, split)
        where = np.searchsorted(papers, pairs[:, 0])
        order = np.lexsort((where, pairs[:, 1]))
        cols, starts = np.unique(pairs[order, 1], return_index=True)
        return papers, cols, np.split(where[order], starts[1:]) if len(cols) else []

    def score_metrics(self, score_fn: ScoreFn, split: str) -> Iterator[dict[str, Tensor]]:
        for batch in self.variant_metrics(lambda kind, p, c: {"": score_fn(kind, p, c)}, split):
            yield batch[""]

    def variant_metrics(self, score_fn: Callable[[str, np.ndarray, np.ndarray], dict[str, Tensor]], split: str
                        ) -> Iterator[dict[str, dict[str, Tensor]]]:
        """Per-query metrics of several scorers at once: score_fn returns {variant: (b, n) scores} for a batch of
        columns (the λ-mixtures of two scorers share their parts' scores)."""
        for kind in KINDS:
            papers, cols, relevant = self.queries(kind, split)
            for a in range(0, len(cols), self.batch_size):
                q = cols[a: a + self.batch_size]
                rel = torch.zeros(len(q), len(papers), dtype=torch.bool)
                for r, ids in enumerate(relevant[a: a + self.batch_size]):
                    rel[r, torch.from_numpy(ids)] = True
                out = {}
                for name, scores in score_fn(kind, papers, q).items():
                    if scores.shape != (len(q), len(papers)):
                        raise ValueError(f"a scorer returned {tuple(scores.shape)} for {len(q)} columns x "
                                         f"{len(papers)} papers")
                    m = multi_positive_metrics(scores.double().cpu(), rel, ks=self.ks, ties=self.ties)
                    out[name] = {f"{PREFIX[kind]}_{k}": v for k, v in m.items()}
                yield out

    def model_scores(self, model: nn.Module, split: str) -> ScoreFn:
        papers = self.data.papers(split)
        pf = model.paper_facets(self.input_ids[papers], self.type_ids[papers])
        device = next(model.parameters()).device

        def score(kind: str, p: np.ndarray, columns: np.ndarray) -> Tensor:
            return model.scores(pf.of(kind).to(device), kind, torch.from_numpy(columns).to(device)).T

        return score

    def query_metrics(self, model: nn.Module, split: str) -> Iterator[dict[str, Tensor]]:
        return self.score_metrics(self.model_scores(model, split), split)

    @torch.no_grad()
    def evaluate_scores(self, score_fn: ScoreFn, split: str) -> dict[str, float]:
        return average_query_metrics(self.score_metrics(score_fn, split), split)

    @torch.no_grad()
    def evaluate_variants(self, score_fn: Callable[[str, np.ndarray, np.ndarray], dict[str, Tensor]], split: str
                          ) -> dict[str, dict[str, float]]:
        """{variant: its `evaluate_scores`} in one pass over the columns (`variant_metrics`)."""
        sums: dict[str, QueryMetricSums] = {}
        for batch in self.variant_metrics(score_fn, split):  # summed as they come: a split's batches are not kept
            for v, metrics in batch.items():
                sums.setdefault(v, QueryMetricSums()).add(metrics)
        return {v: acc.means(split) for v, acc in sums.items()}


@dataclass(frozen=True)
class CitationEvalConfig:
    ks: tuple[int, ...] = (50, 200)
    ties: str = "average"  # scikit-learn's, the thesis's evaluation
    baselines: tuple[str, ...] = ("cbow_avg", "cbow_max")
    lambdas: tuple[float, ...] = (0.1, 0.2, 0.3, 0.5, 0.7, 0.9)  # mixtures: λ chosen on valid
    mix_metric: str = "author_ap"  # the thesis picks λ by the K = 1 model's authorship MAP
    metric: str = "cite_ap"  # model selection on valid (archives: author_ap, they have no citations)

    def __post_init__(self) -> None:
        if self.ties not in TIES:
            raise ConfigError(f"eval.ties must be one of {', '.join(TIES)}, got {self.ties!r}")
        bad = sorted(set(self.baselines) - set(BASELINES))
        if bad:
            raise ConfigError(f"eval.baselines: unknown {bad}; known: {', '.join(BASELINES)}")
        if any(not 0 <= x <= 1 for x in self.lambdas):
            raise ConfigError("eval.lambdas must lie in [0, 1]")


def document_baselines(task: CitationPrediction, model: nn.Module, vectors: np.ndarray | None,
                       cfg: CitationEvalConfig) -> dict[str, dict[str, float]]:
    """{name: valid and test metrics} of each CBOW baseline of `cfg.baselines` over SIF-weighted word vectors
    (one-hot words when the data has no vectors), and {model+name: the same of its λ-mixture with `model`, plus
    the λ chosen on valid `cfg.mix_metric`}; rounded to 5 places."""
    if not cfg.baselines:
        return {}
    data = task.data
    vecs = vectors if vectors is not None else np.eye(len(data.vocab))
    paper_vecs = sif_bag_vectors(data.input_ids, vecs, data.word_probs())
    train_pairs = {k: data.pairs(k, "train") for k in KINDS}
    out: dict[str, dict[str, float]] = {}
    cold = {s: task.model_scores(model.eval(), s) for s in task.splits}
    for name in cfg.baselines:
        doc = CBOWScorer(paper_vecs, train_pairs, BASELINES[name])
        res = {}
        for s in task.splits:
            def variants(kind, papers, cols, s=s, doc=doc):
                d, c = doc(kind, papers, cols), cold[s](kind, papers, cols)
                return {"doc": d} | {lam: mix(c, d, lam) for lam in cfg.lambdas}
            res[s] = task.evaluate_variants(variants, s)
        best = max(cfg.lambdas, key=lambda lam: res["valid"][lam][f"valid_{cfg.mix_metric}"])
        out[name] = {k: round(v, 5) for s in task.splits for k, v in res[s]["doc"].items()}
        out[f"model+{name}"] = {k: round(v, 5) for s in task.splits for k, v in res[s][best].items()} | \
            {"lambda": best}
    return out
