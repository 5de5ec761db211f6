"""Relation extraction by distant supervision, TAC KBP slot filling's protocol (thesis C §3.3.2.1, Table 3.5;
spec multi-facet-universal-schema.md §7) transferred to a KB with held-out heads (`data.debian_schema`):

    queries     (head, relation) for every held-out head of a split and every KB relation; the candidate tails are
                the entities that co-occur with the head in text (the split's entity pairs), each with the
                patterns it was seen with
    score       of a candidate for a relation: the best of its patterns' scores against the relation row
                (`scores`: Eq. 3.11's Sim for the multi-facet model, the cosine for USchema / CUSchema), so an
                extractor answers from any sentence that names the pair
    decision    a candidate is extracted when its score reaches the relation's threshold, tuned on valid for the
                best F1 of that relation (TAC 2012's role; a relation with no valid answer extracts nothing)
    metrics     precision, recall, F1 of the extracted (head, relation, tail) triples against the held-out KB
                cells, micro over relations; `ensemble` takes the elementwise max of two scorers' candidate scores
                ("USchema + X", Verga et al.)

`evaluate(sim)` takes sim (n_rows, n_relations): every row's score against every KB relation row (only the
patterns of held-out pairs are read).
"""

from __future__ import annotations

import numpy as np

from genfeat.data.universal_schema import RELATION, SchemaMatrix

SPLITS = {"valid": 1, "test": 2}


class RelationExtraction:
    def __init__(self, matrix: SchemaMatrix):
        if matrix.pair_split is None or matrix.held_out is None:
            raise ValueError(f"{matrix.name} has no held-out pairs (a matrix with a pair split, as debian-schema)")
        self.matrix = matrix
        self.relations = np.flatnonzero(matrix.row_types == RELATION)  # (R,) KB rows
        rel_col = {int(r): i for i, r in enumerate(self.relations)}
        text = matrix.cells  # a held-out pair's cells are its text (`SchemaMatrix` refuses its KB cells there)
        self.candidates, self.patterns, self.gold = {}, {}, {}
        for split, code in SPLITS.items():
            pairs = np.flatnonzero(matrix.pair_split == code)
            self.candidates[split] = pairs
            keep = np.isin(text[:, 1], pairs)
            self.patterns[split] = text[keep]  # (m, 2) (pattern row, pair) of the split's candidates
            gold = np.zeros((len(pairs), len(self.relations)), dtype=bool)
            where = {int(j): i for i, j in enumerate(pairs)}
            for r, j in matrix.held_out:
                if int(j) in where:
                    gold[where[int(j)], rel_col[int(r)]] = True
            self.gold[split] = gold

    def scores(self, sim: np.ndarray, split: str) -> np.ndarray:
        """(candidates, R): each candidate's best pattern score for each relation (-inf without a pattern)."""
        pairs = self.candidates[split]
        where = {int(j): i for i, j in enumerate(pairs)}
        out = np.full((len(pairs), len(self.relations)), -np.inf)
        rows = self.patterns[split]
        idx = np.array([where[int(j)] for j in rows[:, 1]], dtype=np.int64)
        np.maximum.at(out, idx, sim[rows[:, 0]])
        return out

    @staticmethod
    def thresholds(scores: np.ndarray, gold: np.ndarray) -> np.ndarray:
        """(R,) per relation, the candidate score whose threshold gives the best F1 (+inf with no gold)."""
        out = np.full(scores.shape[1], np.inf)
        for r in range(scores.shape[1]):
            n_gold = int(gold[:, r].sum())
            if not n_gold:
                continue
            order = np.argsort(-scores[:, r], kind="stable")
            s, g = scores[order, r], gold[order, r]
            tp = np.cumsum(g)
            f1 = 2 * tp / (np.arange(1, len(s) + 1) + n_gold)
            last = np.r_[s[1:] != s[:-1], True]  # a threshold keeps every tie of its score
            f1 = np.where(last & np.isfinite(s), f1, -1.0)
            if f1.max() > 0:
                out[r] = s[int(f1.argmax())]
        return out

    @staticmethod
    def prf(scores: np.ndarray, gold: np.ndarray, theta: np.ndarray) -> dict[str, float]:
        pred = scores >= theta[None]
        tp = int((pred & gold).sum())
        p = tp / max(int(pred.sum()), 1)
        r = tp / max(int(gold.sum()), 1)
        return {"p": p, "r": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}

    def evaluate_scores(self, valid: np.ndarray, test: np.ndarray) -> dict[str, float]:
        """valid / test candidate scores -> {valid_p, valid_r, valid_f1, test_p, test_r, test_f1}, thresholds
        tuned on valid."""
        theta = self.thresholds(valid, self.gold["valid"])
        return {f"{split}_{k}": v for split, s in (("valid", valid), ("test", test))
                for k, v in self.prf(s, self.gold[split], theta).items()}

    def evaluate(self, sim: np.ndarray) -> dict[str, float]:
        return self.evaluate_scores(self.scores(sim, "valid"), self.scores(sim, "test"))

    def ensemble(self, sim_a: np.ndarray, sim_b: np.ndarray) -> dict[str, float]:
        """USchema + X: the elementwise max of the two scorers' candidate scores."""
        return self.evaluate_scores(*(np.maximum(self.scores(sim_a, s), self.scores(sim_b, s))
                                      for s in ("valid", "test")))

    def stats(self) -> dict[str, int]:
        return {f"{s}_{k}": v for s in SPLITS for k, v in (
            ("candidates", len(self.candidates[s])), ("gold", int(self.gold[s].sum())))}
