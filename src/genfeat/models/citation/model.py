"""The multi-facet paper recommender (thesis C §3.4.2, Eqs. 3.13-3.15, Figure 3.8; spec citation-prediction.md §5):
a paper's text -> K facets, one trainable embedding per author and per citing paper, relevance = the largest
facet dot product clipped at 0 (`losses.max_facet`).

    p_k = G^o_k(TD(L_1(e_<eos>) .. L_K(e_<eos>), e))     the facet network (`models.facets`) with K output layers
    p^a_k = ρ_k p_k,  p^c_k = τ_k p_k                     Eq. 3.15: the magnitude heads (`MagnitudeHeads`)
    S(F^a(T_i), a_j) = max(0, max_k a_j · p^a_ik)          Eq. 3.13 (and C, τ for citations)
    p'_i = H Σ_w ν/(ν + p(w)) w                            Eq. B.4: H, a linear map of the SIF-weighted word-vector
                                                           sum into the facet space, for Ω (Eq. B.3)

Inputs: "title <sep> abstract <eos>" word ids, left-padded, type ids 0 (title) / 1 (abstract), as built by
`data.citations.paper_inputs`. Shapes: input_ids, type_ids (B, T) -> `PaperFacets` facets / author / citer
(B, K, d); columns: author (n_authors, d) and citer (n_citers, d) tables.

Deviations (recorded by the recipe): word vectors are GloVe 6B 50d, not Bansal et al.'s 200-d ACM CBOW (not
available offline); the encoder's input table is GloVe's width when started from it (d_model = 50 there).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from genfeat.losses.max_facet import max_facet_scores
from genfeat.models.citation.config import CitationConfig
from genfeat.models.facets.magnitudes import MagnitudeHeads
from genfeat.models.facets.model import FacetModel

KINDS = ("author", "citer")


@dataclass
class PaperFacets:
    facets: Tensor  # (B, K, d) the un-scaled facets p_k (Ω reads their mean)
    author: Tensor  # (B, K, d) p^a = ρ p
    citer: Tensor  # (B, K, d) p^c = τ p

    def of(self, kind: str) -> Tensor:
        return self.author if kind == "author" else self.citer


class CitationModel(nn.Module):
    def __init__(self, cfg: CitationConfig, n_authors: int, n_citers: int, d_word: int = 0,
                 init_embedding: Tensor | None = None):
        """`d_word` > 0: the width of the fixed word vectors of Ω, and H maps them into the facet space."""
        super().__init__()
        self.cfg = cfg
        self.net = FacetModel(cfg, init_embedding)
        self.magnitudes = MagnitudeHeads(cfg.d_target, cfg.d_model, 2, dropout=cfg.magnitude_dropout, n_head=cfg.n_head,
                                         positive=cfg.positive_magnitudes) if cfg.magnitudes else None
        self.author = nn.Embedding(n_authors, cfg.d_target)
        self.citer = nn.Embedding(n_citers, cfg.d_target)
        for table in (self.author, self.citer):
            nn.init.normal_(table.weight, std=cfg.column_init_std)
        self.H = nn.Linear(d_word, cfg.d_target, bias=False) if d_word else None

    def forward(self, input_ids: Tensor, type_ids: Tensor | None = None) -> PaperFacets:
        out = self.net.run(input_ids, type_ids=type_ids if self.cfg.n_types else None)
        p = out.facets  # (B, K, d)
        if self.magnitudes is None:
            return PaperFacets(p, p, p)
        m = self.magnitudes(p, out.slots)  # (B, K, 2): ρ, τ
        return PaperFacets(p, m[..., :1] * p, m[..., 1:] * p)

    def table(self, kind: str) -> nn.Embedding:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        return self.author if kind == "author" else self.citer

    def scores(self, facets: Tensor, kind: str, columns: Tensor | None = None) -> Tensor:
        """(B, n) Eq. 3.13 scores of the papers' `kind` facets (B, K, d) against the columns (ids (n,); all when
        None)."""
        table = self.table(kind).weight if columns is None else self.table(kind)(columns)
        return max_facet_scores(facets, table, self.cfg.truncate)

    @torch.no_grad()
    def paper_facets(self, input_ids: Tensor, type_ids: Tensor | None = None, batch: int = 256) -> PaperFacets:
        """Facets of many left-padded papers in eval mode, on the CPU: shortest first, each chunk cut to its
        longest paper (the padding is masked either way, so only the time changes)."""
        was = self.training
        self.eval()
        device = next(self.parameters()).device
        lengths = (input_ids != self.cfg.pad_id).sum(1)
        order = torch.argsort(lengths, stable=True)
        parts = []
        for a in range(0, input_ids.size(0), batch):
            idx = order[a: a + batch]
            width = int(lengths[idx].max())
            ids = input_ids[idx, input_ids.size(1) - width:].to(device)
            types = None if type_ids is None else type_ids[idx, input_ids.size(1) - width:].to(device)
            parts.append(self(ids, types))
        self.train(was)
        inverse = torch.argsort(order)
        return PaperFacets(*(torch.cat([getattr(p, f).cpu() for p in parts])[inverse]
                             for f in ("facets", "author", "citer")))
