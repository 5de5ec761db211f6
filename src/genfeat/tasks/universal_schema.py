"""Universal schema as a task (thesis C §3.3.1-3.3.2; spec multi-facet-universal-schema.md §3, §5, §10): train on
a co-occurrence matrix's instances, validate on held-out instances, and score rows against rows.

    instances   each row's entity pairs in chunks of at most 5 (`SchemaMatrix.instances`); 5 % held out: the
                validation loss (the reference's), with its negatives drawn from a fixed seed at every evaluation
    objectives  `FacetObjective`: Eq. 3.9 (+ γ Ω of Eq. B.1 when the rows have SIF vectors and the model H) for
                `MultiFacetSchema`; `LogisticObjective`: USchema / CUSchema's binary cross-entropy with one random
                entity pair per observed one; `objective_for(kind, ...)` the one a model kind trains with
    probes      `synthetic_claims`: the spec §10.2 claims U1-U5 of a model on `data.schema_synthetic`'s probes
    scoring     `pattern_facets`: any model's facets of new pattern texts (entailment, `tasks.pattern_entailment`);
                `relation_scores`: every row against every KB relation row (relation extraction,
                `tasks.relation_extraction`); `extraction_scores`: a run's valid / test re_* (and, with the
                USchema phase's model, uschema_re_* and the max ensemble's ensemble_re_*)

Batch rows: input_ids (n, T) left-padded, row_types (n,), row_ids (n,), pair_ids / pair_mask / pair_counts (n, N),
sif (n, d_word) when given. A loss's count is the batch's real (row, pair) positives ("pairs").
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from genfeat.analysis.facet_coverage import direction, sim_matrix
from genfeat.data.batches import EpochBatches
from genfeat.data.schema_synthetic import SyntheticSchema
from genfeat.data.universal_schema import PAD, PATTERN, RELATION, SchemaMatrix, encode_patterns, split_instances
from genfeat.losses.nnsc import rotation
from genfeat.losses.universal_schema import (
    autoencoder_regulariser,
    inverse_count_weights,
    logistic_pair_loss,
    universal_schema_loss,
)
from genfeat.models.universal_schema.model import all_row_facets
from genfeat.tasks.base import Task
from genfeat.tasks.relation_extraction import RelationExtraction
from genfeat.train import distributed as D

Rows = dict[str, Tensor]


def _trimmed(batch: Rows, device: torch.device) -> Rows:
    """The batch on `device`, its input_ids cut to the longest row (left padding)."""
    width = int((batch["input_ids"] != PAD).sum(1).max())
    return {k: (v[:, -width:] if k == "input_ids" else v).to(device) for k, v in batch.items()}


class FacetObjective:
    """Eq. 3.9 + γ Ω (`losses.universal_schema`) as `loss_fn(model, batch)`; its random stream (the batch
    rotations) is checkpointed. With `batch_groups` G the batch is G contiguous groups, each its own pool of
    negatives (what G ranks, each holding one group, draw with one seed): one process trains what G ranks do."""

    def __init__(self, gamma: float = 0.0, assign: str = "min_dist", seed: int = 0, batch_groups: int = 1):
        self.gamma, self.assign, self.groups = gamma, assign, batch_groups
        self.gen = torch.Generator().manual_seed(seed)

    def negatives(self, batch: Rows, gen: torch.Generator, groups: int) -> Tensor:
        """(B,) each instance's negative instance: a rotation within each group."""
        return rotation(len(batch["row_ids"]), gen, groups)

    def __call__(self, model: nn.Module, batch: Rows, generator: torch.Generator | None = None,
                 groups: int | None = None) -> tuple[Tensor, int, dict[str, float]]:
        """`generator` / `groups`: instead of the objective's own (a validation pass: a fixed seed, one pool)."""
        gen, groups = generator or self.gen, groups or self.groups
        b = _trimmed(batch, next(model.parameters()).device)
        out = model(b)
        weights = torch.cat([inverse_count_weights(c, m)  # mean 1 within each group (a rank's share)
                             for c, m in zip(b["pair_counts"].chunk(groups), b["pair_mask"].chunk(groups),
                                             strict=True)])
        neg = self.negatives(b, gen, groups).to(out.facets.device)
        loss, parts = universal_schema_loss(out.facets, out.facet_mask, out.pairs, b["pair_mask"], weights, neg,
                                            self.assign)
        if self.gamma and out.targets is not None:
            omega = autoencoder_regulariser(out.facets, out.facet_mask, out.targets,
                                            negatives=self.negatives(b, gen, groups).to(out.facets.device))
            loss = loss + self.gamma * omega
            parts["omega"] = float(omega.detach())
        return loss, int(b["pair_mask"].sum()), parts

    def state_dict(self) -> dict[str, Any]:
        return {"gen": self.gen.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.gen.set_state(state["gen"])


class LogisticObjective(FacetObjective):
    """USchema / CUSchema: σ(v_i · e_j) -> 1 for an observed pair, -> 0 for a uniformly random pair."""

    def __init__(self, n_pairs: int, seed: int = 0, batch_groups: int = 1):
        super().__init__(seed=seed, batch_groups=batch_groups)
        self.n_pairs = n_pairs

    def __call__(self, model: nn.Module, batch: Rows, generator: torch.Generator | None = None,
                 groups: int | None = None) -> tuple[Tensor, int, dict[str, float]]:
        gen, groups = generator or self.gen, groups or self.groups
        B, N = batch["pair_ids"].shape
        if B % groups:
            raise ValueError(f"a batch of {B} does not split into {groups} groups")
        rand = torch.randint(self.n_pairs, (B // groups, N), generator=gen).repeat(groups, 1)
        b = _trimmed(batch | {"random_pair_ids": rand}, next(model.parameters()).device)
        out = model(b)
        return logistic_pair_loss(out.facets[:, 0], out.pairs, b["pair_mask"], out.random_pairs), \
            int(b["pair_mask"].sum()), {}


def objective_for(kind: str, n_pairs: int, gamma: float = 0.0, assign: str = "min_dist", seed: int = 0,
                  batch_groups: int = 1) -> FacetObjective:
    """`FacetObjective` for the multi-facet model, `LogisticObjective` over `n_pairs` for USchema / CUSchema."""
    if kind == "multi_facet":
        return FacetObjective(gamma, assign, seed, batch_groups)
    return LogisticObjective(n_pairs, seed, batch_groups)


class SchemaTraining(Task):
    metric, mode, unit = "loss", "min", "pairs"
    splits = ("valid",)

    def __init__(self, matrix: SchemaMatrix, objective: FacetObjective, sif: np.ndarray | None = None,
                 max_pairs: int = 5, valid_share: float = 0.05, seed: int = 0, eval_batch: int = 512):
        """`sif` (n_rows, d_word): Eq. B.2's s^aw of every row (fixed word vectors), for Ω."""
        self.matrix, self.objective, self.eval_batch, self.seed = matrix, objective, eval_batch, seed
        rows, pairs = matrix.instances(max_pairs, seed)
        train, valid = split_instances(len(rows), valid_share, seed)
        counts = torch.from_numpy(matrix.pair_counts())
        ids = torch.from_numpy(matrix.input_ids())
        p = torch.from_numpy(pairs)
        mask = p >= 0
        p = p.clamp_min(0)
        r = torch.from_numpy(rows)
        all_rows = {"input_ids": ids[r], "row_types": torch.from_numpy(matrix.row_types)[r], "row_ids": r,
                    "pair_ids": p, "pair_mask": mask, "pair_counts": torch.where(mask, counts[p], 0)}
        if sif is not None:
            if sif.shape[0] != matrix.n_rows:
                raise ValueError(f"sif has {sif.shape[0]} rows for {matrix.n_rows} matrix rows")
            all_rows["sif"] = torch.as_tensor(sif, dtype=torch.float32)[r]
        self.train_rows = {k: v[torch.from_numpy(train)] for k, v in all_rows.items()}
        self.valid_rows = {k: v[torch.from_numpy(valid)] for k, v in all_rows.items()}

    def batches(self, batch_size: int, seed: int, rank: int = 0, world_size: int = 1) -> EpochBatches:
        return EpochBatches(self.train_rows, batch_size, np.random.default_rng(seed), rank, world_size)

    def loss(self, model: nn.Module, batch: Rows) -> tuple[Tensor, int, dict[str, float]]:
        return self.objective(model, batch)

    @torch.no_grad()
    def predict(self, model: nn.Module, split: str) -> float:
        """The validation loss over the held-out instances, pair-weighted, negatives from a fixed seed."""
        net = D.unwrap(model)
        gen = torch.Generator().manual_seed(self.seed + 1)
        rows, n = self.valid_rows, len(self.valid_rows["row_ids"])
        total, items = 0.0, 0
        for a in range(0, n, self.eval_batch):
            chunk = {k: v[a: a + self.eval_batch] for k, v in rows.items()}
            if len(chunk["row_ids"]) < 2:  # a rotation needs two instances
                break
            loss, count, _ = self.objective(net, chunk, gen, groups=1)
            total, items = total + float(loss) * count, items + count
        return total / max(items, 1)

    def score(self, pred: float, split: str) -> dict[str, float]:
        return {"loss": pred}


def pattern_facets(model: nn.Module, vocab: list[str], texts: list[str]) -> tuple[Tensor, Tensor | None]:
    """Facets (n, K, d) and slot mask of pattern texts ("$ARG1 is a plugin for $ARG2"), through `vocab`."""
    ids = torch.from_numpy(encode_patterns(texts, vocab))
    n = len(texts)
    return all_row_facets(D.unwrap(model), {"input_ids": ids, "row_types": torch.full((n,), PATTERN),
                                            "row_ids": torch.zeros(n, dtype=torch.long)})


@torch.no_grad()
def relation_scores(model: nn.Module, matrix: SchemaMatrix) -> np.ndarray:
    """(n_rows, R) every row's Eq. 3.11 score against every KB relation row (the cosine for one-facet models)."""
    n = matrix.n_rows
    f, m = all_row_facets(D.unwrap(model), {"input_ids": torch.from_numpy(matrix.input_ids()),
                                            "row_types": torch.from_numpy(matrix.row_types),
                                            "row_ids": torch.arange(n)})
    rel = torch.from_numpy(np.flatnonzero(matrix.row_types == RELATION))
    return sim_matrix(f, f[rel], m, None if m is None else m[rel]).double().numpy()


def extraction_scores(model: nn.Module, matrix: SchemaMatrix, uschema: nn.Module | None = None
                      ) -> tuple[dict[str, float], dict[str, Any]]:
    """({split}_re_{metric} of `model` on the held-out heads, and with `uschema` {split}_uschema_re_* and
    {split}_ensemble_re_*, the max of both scorers}, the extraction set's stats). `matrix` has a pair split."""
    task = RelationExtraction(matrix)
    sim = relation_scores(model, matrix)

    def named(scores: dict[str, float], what: str) -> dict[str, float]:  # valid_f1 -> valid_{what}_f1
        return {f"{k.split('_')[0]}_{what}_{k.split('_')[1]}": v for k, v in scores.items()}

    out = named(task.evaluate(sim), "re")
    if uschema is not None:
        us_sim = relation_scores(uschema, matrix)
        out |= named(task.evaluate(us_sim), "uschema_re") | named(task.ensemble(us_sim, sim), "ensemble_re")
    return out, task.stats()


def _unit(x: Tensor) -> Tensor:
    return torch.nn.functional.normalize(x, dim=-1)


@torch.no_grad()
def synthetic_claims(model: nn.Module, syn: SyntheticSchema) -> dict[str, float]:
    """Spec §10.2 on the held-out probes (A: two relations r1, r2; B = A without r2's keyword):

    u1_two_facets     share of A with min_{r1, r2} max_k cos(s_k, μ̄_r) > 0.8 (μ̄_r: the mean of relation r's
                      normalised learned pair embeddings); u1_mean the mean of that min
    u2_one_relation   mean over B of max_k cos(s_k, μ̄_r1) (both K reach > 0.95)
    u3_direction      share of (A, B) with Asym(A -> B) - Asym(B -> A) > 0, ties ½
    u4_top1 / u4_top2 with KB rows: share of B whose best relation by Eq. 3.11 is r1 / of A whose two best are
                      {r1, r2}
    facet_cosine      the mean pairwise cosine of A's facets (U5: Ω must not collapse them; 1 with K = 1)

    Empty for a model that cannot embed new patterns (USchema)."""
    net = D.unwrap(model)
    if not net.scores_new_rows:  # the probes are new patterns
        return {}
    R = len(syn.centres)
    table = _unit(net.pairs.weight.detach().cpu())
    rel = torch.from_numpy(syn.pair_relation)
    centroid = _unit(torch.stack([table[rel == r].mean(0) for r in range(R)]))  # (R, d)

    def facets(ids: np.ndarray, row_type: int) -> tuple[Tensor, Tensor | None]:
        n = len(ids)
        return all_row_facets(net, {"input_ids": torch.from_numpy(ids), "row_types": torch.full((n,), row_type),
                                    "row_ids": torch.zeros(n, dtype=torch.long)})

    rels = torch.from_numpy(syn.probe_relations)
    fa, ma = facets(syn.probe_two, PATTERN)
    fb, mb = facets(syn.probe_one, PATTERN)
    ca = torch.einsum("nkd,rd->nkr", _unit(fa), centroid)  # (n, K, R)
    if ma is not None:
        ca = ca.masked_fill(~ma[..., None], float("-inf"))
    best_a = ca.max(1).values  # (n, R) each relation's best facet
    two = torch.minimum(best_a.gather(1, rels[:, :1]), best_a.gather(1, rels[:, 1:])).squeeze(1)
    cb = torch.einsum("nkd,rd->nkr", _unit(fb), centroid)
    if mb is not None:
        cb = cb.masked_fill(~mb[..., None], float("-inf"))
    one = cb.max(1).values.gather(1, rels[:, :1]).squeeze(1)
    diff = direction(fa, fb, ma, mb)
    K = fa.size(1)
    both = ~torch.eye(K, dtype=torch.bool)[None]  # (1, K, K) two different facets
    both = (both if ma is None else both & ma[:, :, None] & ma[:, None, :]).expand(len(fa), K, K)
    cos = torch.einsum("nkd,njd->nkj", _unit(fa), _unit(fa))
    spread = float(cos[both].mean()) if both.any() else 1.0
    out = {"u1_two_facets": float((two > 0.8).float().mean()), "u1_mean": float(two.mean()),
           "u2_one_relation": float(one.mean()),
           "u3_direction": float(((diff > 0).float() + 0.5 * (diff == 0).float()).mean()),
           "facet_cosine": spread}
    if len(syn.relation_rows):
        rows = torch.from_numpy(syn.relation_rows)
        fr, mr = all_row_facets(net, {"input_ids": torch.from_numpy(syn.matrix.input_ids(syn.relation_rows)),
                                      "row_types": torch.full((R,), RELATION), "row_ids": rows})
        sb = sim_matrix(fb, fr, mb, mr)  # (n, R)
        sa = sim_matrix(fa, fr, ma, mr)
        top2 = sa.topk(2, 1).indices.sort(1).values
        out["u4_top1"] = float((sb.argmax(1) == rels[:, 0]).float().mean())
        out["u4_top2"] = float((top2 == rels.sort(1).values).all(1).float().mean())
    return out
