"""Citation prediction with paper embeddings (thesis C §5.3; spec multi2spe.md §4, §6-§7): a paper encoder trained
on (query, cited, not cited) triplets and evaluated by ranking each test query's candidates.

    encode_papers   titles and abstracts -> each paper's [CLS] title [SEP] abstract [SEP] word-piece ids
    PaperTable      every paper's ids, right-padded (N, T), and its length
    embed_papers    the summed embeddings (N, D) (or the facets, (N, K, D)), papers taken in length order and
                    each batch cut to its longest paper (no attention over padding columns)
    TripletLoss     Eq. 5.6 (`losses.paper_triplets.triplet_loss`, λ and lambda_mode) or SPECTER's margin loss on
                    the rows {"triplet": (B, 3) paper ids}
    citation_task   a `tasks.ranking.Ranking` over the papers whose splits are `data.paper_triplets.RankingQueries`
                    (each query's sampled candidates only), scored by cosine (the authors' SciDocs fork), dot or
                    -L2 (SciDocs) between summed embeddings; MAP and nDCG over the whole candidate list; a split's
                    papers are embedded once per state of the weights (`EmbeddingCache`)
    field_macro_f1  SciDocs' MAG protocol on frozen embeddings: a linear SVM (squared hinge) with C chosen by 3-fold
                    grid search over 10^-4 .. 10^2 (7 values) on the training papers, macro-F1 x 100 on the test
                    papers; scikit-learn's LinearSVC in place of `lightning`'s (a documented substitution)
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from tqdm.auto import tqdm

from genfeat.data.paper_triplets import RankingQueries
from genfeat.losses.paper_triplets import specter_margin, triplet_loss
from genfeat.models.bert.tokenizer import encode
from genfeat.tasks.ranking import Ranking, RankingSplit
from genfeat.train import distributed as D

SCORES = ("cosine", "dot", "l2")


@dataclass
class PaperTable:
    ids: Tensor  # (N, T) right-padded with 0
    lengths: Tensor  # (N,)

    @classmethod
    def build(cls, papers: Sequence[np.ndarray], pad_id: int = 0) -> PaperTable:
        T = max(len(p) for p in papers)
        ids = torch.full((len(papers), T), pad_id, dtype=torch.long)
        for i, p in enumerate(papers):
            ids[i, : len(p)] = torch.as_tensor(p)
        return cls(ids, torch.as_tensor([len(p) for p in papers]))

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self, idx: Tensor) -> tuple[Tensor, Tensor]:
        """(ids, attention mask) of papers `idx`, cut to their longest: (b, t) each."""
        t = int(self.lengths[idx].max())
        mask = torch.arange(t)[None] < self.lengths[idx][:, None]
        return self.ids[idx, :t], mask.long()


def encode_papers(tok: Any, titles: Sequence[str], abstracts: Sequence[str], max_len: int) -> list[np.ndarray]:
    """Each paper's [CLS] title [SEP] abstract [SEP] word-piece ids (`tok`: a BERT tokenizer), at most `max_len`."""
    rows = encode(tok, titles, abstracts, max_len=max_len)
    return [ids[mask.bool()].numpy() for ids, mask in zip(rows["input_ids"], rows["attention_mask"], strict=True)]


@torch.no_grad()
def embed_papers(model: nn.Module, table: PaperTable, batch_size: int = 64, facets: bool = False,
                 idx: Tensor | None = None, desc: str | None = None) -> Tensor:
    """Summed embeddings (n, D) (`facets`: (n, K, D)) of papers `idx` (all by default), in their given order; `desc`
    shows a progress bar of papers."""
    net = D.unwrap(model)
    was = net.training
    net.eval()
    device = next(net.parameters()).device
    idx = torch.arange(len(table)) if idx is None else idx
    perm = torch.argsort(table.lengths[idx], stable=True)  # length buckets: little padding per batch
    order = idx[perm]
    out = []
    bar = tqdm(total=len(order), desc=desc, unit="paper", disable=desc is None)
    try:
        for a in range(0, len(order), batch_size):
            ids, mask = table.rows(order[a: a + batch_size])
            f = net(ids.to(device), attention_mask=mask.to(device)).float().cpu()  # (b, K, D)
            out.append(f if facets else f.sum(1))
            bar.update(len(ids))
    finally:
        bar.close()
        net.train(was)
    emb = torch.cat(out)
    back = torch.empty_like(emb)
    back[perm] = emb  # emb[j] is paper idx[perm[j]]
    return back


def candidate_scores(q: Tensor, c: Tensor, score: str = "cosine") -> Tensor:
    """(b, D) queries x (N, D) papers -> (b, N) scores."""
    if score == "cosine":
        return F.normalize(q, dim=-1) @ F.normalize(c, dim=-1).T
    if score == "dot":
        return q @ c.T
    if score == "l2":
        return -torch.cdist(q, c)
    raise ValueError(f"score must be one of {', '.join(SCORES)}, got {score!r}")


class TripletLoss:
    """`train.fit`'s loss on rows {"triplet": (B, 3)}: the three papers' facets through the model's forward."""

    def __init__(self, table: PaperTable, lam: float = 0.1, lambda_mode: str = "logit", kind: str = "softmax",
                 margin: float = 1.0):
        if kind not in ("softmax", "margin"):
            raise ValueError(f"loss kind must be softmax (Eq. 5.6) or margin (SPECTER), got {kind!r}")
        self.table, self.lam, self.lambda_mode, self.kind, self.margin = table, lam, lambda_mode, kind, margin

    def __call__(self, model: nn.Module, batch: Mapping[str, Tensor]) -> tuple[Tensor, int]:
        device = next(model.parameters()).device
        trip = batch["triplet"]  # (B, 3)
        B = trip.size(0)
        ids, mask = self.table.rows(trip.T.reshape(-1))  # q's, then p's, then n's: one pass, (3B, t)
        f = model(ids.to(device), attention_mask=mask.to(device)).float()  # (3B, K, D)
        cq, cp, cn = f[:B], f[B: 2 * B], f[2 * B:]
        if self.kind == "margin":
            return specter_margin(cq.sum(1), cp.sum(1), cn.sum(1), self.margin), B
        return triplet_loss(cq, cp, cn, self.lam, self.lambda_mode), B


class EmbeddingCache:
    """Summed embeddings of the papers asked for, computed once per state of the weights: a paper embedded for one
    split is reused by the next while no parameter has changed (a sha1 of the parameters' bytes is the key: fused
    optimizers leave tensors' version counters alone)."""

    def __init__(self, table: PaperTable, batch_size: int = 64):
        self.table, self.batch_size = table, batch_size
        self.key: str | None = None
        self.emb: Tensor | None = None
        self.done = torch.zeros(len(table), dtype=torch.bool)

    @staticmethod
    def fingerprint(net: nn.Module) -> str:
        h = hashlib.sha1()
        for p in net.parameters():
            h.update(p.detach().cpu().contiguous().numpy().tobytes())
        return h.hexdigest()

    def __call__(self, model: nn.Module, papers: np.ndarray | Tensor, check: bool = True) -> Tensor:
        """(N, D): the rows of `papers` filled (zeros where a paper was not asked for in this state). `check`
        False trusts that the weights are those of the previous call (the later query batches of one pass)."""
        net = D.unwrap(model)
        if check or self.key is None:
            key = self.fingerprint(net)
            if key != self.key:
                self.key, self.emb, self.done = key, None, torch.zeros(len(self.table), dtype=torch.bool)
        want = torch.as_tensor(np.asarray(papers), dtype=torch.long)
        todo = want[~self.done[want]].unique()
        if len(todo):
            new = embed_papers(net, self.table, self.batch_size, idx=todo,
                               desc="embed papers" if len(todo) >= 1000 else None)  # a bar on long passes
            if self.emb is None:
                self.emb = torch.zeros(len(self.table), new.size(1))
            self.emb[todo] = new
            self.done[todo] = True
        return self.emb


def citation_task(table: PaperTable, splits: Mapping[str, RankingQueries], loss: TripletLoss, score: str = "cosine",
                  batch_size: int = 64, cache: EmbeddingCache | None = None) -> Ranking:
    """Ranking of each split's sampled candidates by `score` between summed embeddings (module docstring); only
    the papers a split reads are embedded, through `cache` (a run that embeds other papers too passes its own)."""
    if score not in SCORES:
        raise ValueError(f"score must be one of {', '.join(SCORES)}, got {score!r}")
    cache = cache if cache is not None else EmbeddingCache(table, batch_size)
    read = {name: sq.papers() for name, sq in splits.items()}

    def scorer(model: nn.Module, split: str, q: Tensor) -> Tensor:
        emb = cache(model, read[split], check=int(q[0]) == 0)  # a split's pass starts at query 0
        return candidate_scores(emb[torch.as_tensor(splits[split].queries)[q]], emb, score)

    rank = {name: RankingSplit(sq.positives, candidates=sq.candidates) for name, sq in splits.items()}
    task = Ranking(rank, len(table), scorer, ks=(10,), metric="ap", batch_size=256, loss=loss)
    task.unit = "triplets"  # what the loss counts; evaluation ranks queries
    return task


SVM_C_GRID = tuple(float(c) for c in np.logspace(-4, 2, 7))


def field_macro_f1(x_train: np.ndarray, y_train: Sequence, x_test: np.ndarray, y_test: Sequence, seed: int = 42
                   ) -> dict[str, float]:
    """{"f1": macro-F1 x 100 on the test papers, "C": the chosen C} (module docstring)."""
    from sklearn.metrics import f1_score
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import LinearSVC

    svm = GridSearchCV(LinearSVC(loss="squared_hinge", random_state=seed), {"C": list(SVM_C_GRID)}, cv=3)
    svm.fit(np.asarray(x_train), np.asarray(y_train))
    pred = svm.predict(np.asarray(x_test))
    return {"f1": float(100 * f1_score(np.asarray(y_test), pred, average="macro")), "C": float(svm.best_params_["C"])}
