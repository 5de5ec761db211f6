"""Projected adaptive softmax (Grave et al. 2017) as in Transformer-XL (thesis Y §2.1.4; spec §2.7).

Head cluster: the first cutoffs[0] words plus one logit per tail cluster. For a head word w,
log p(w) = log softmax_head(w); for a word in tail cluster c,
log p(w) = log softmax_head(cluster c) + log softmax_c(E_c P_c^T h)[w].

Returns full-vocabulary log-probabilities, in vocabulary order (so per-token losses keep input order,
spec pitfall 16), as `HeadOutput(log_probs, is_log_prob=True)`. Weights can be tied to an
`AdaptiveEmbedding` independently: the cluster embeddings when `tie_weight`, each cluster's projection when
its `tie_projs` entry is set, whatever `tie_weight` says (as the reference and HF, whose `tie_weights()` shares
projections under `tie_word_embeddings=False` too). Parameter names
(`out_layers`, `out_projs`, `cluster_weight`, `cluster_bias`) follow the reference / HF. Tail cluster c's
logit sits at head index shortlist + c - 1 (natural order), as in the TF reference and HF (whose converted
WT103 checkpoint comes from TF); the authors' PyTorch code reads it at index -c (reverse order), so its
checkpoints need `cluster_weight`/`cluster_bias` rows reversed (spec §2.7, quirk).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.heads.base import HeadNeeds, HeadOutput, target_log_softmax, upcast
from genfeat.nn.embeddings import AdaptiveEmbedding, cluster_bounds
from genfeat.nn.outputs import BackboneOutput


class ProjectedAdaptiveLogSoftmax(nn.Module):
    def __init__(self, n_token: int, d_embed: int, d_proj: int, cutoffs: tuple[int, ...] = (), div_val: int = 1,
                 tie_to: AdaptiveEmbedding | None = None, tie_projs: tuple[bool, ...] = (), tie_weight: bool = True):
        super().__init__()
        self.n_token, self.d_embed, self.d_proj, self.div_val = n_token, d_embed, d_proj, div_val
        self.bounds = cluster_bounds(n_token, cutoffs)
        self.n_clusters = len(self.bounds) - 2
        self.shortlist = self.bounds[1]
        if self.n_clusters:
            self.cluster_weight = nn.Parameter(torch.zeros(self.n_clusters, d_embed))
            self.cluster_bias = nn.Parameter(torch.zeros(self.n_clusters))
        self.out_layers = nn.ModuleList()
        self.out_projs = nn.ParameterList()  # one per cluster (none when div_val = 1 and d_embed = d_proj)
        n = len(self.bounds) - 1
        tie_projs = tuple(tie_projs) + (False,) * (n - len(tie_projs))
        for i in range(n if div_val > 1 else 1):
            d_i = d_embed // div_val**i
            size = self.bounds[i + 1] - self.bounds[i] if div_val > 1 else n_token
            layer = nn.Linear(d_i, size)
            if tie_to is not None and tie_weight:
                layer.weight = tie_to.emb_layers[i].weight
            self.out_layers.append(layer)
        if div_val > 1 or d_embed != d_proj:
            for i in range(n):
                d_i = d_embed // div_val**i
                src = i if div_val > 1 else 0  # div_val = 1: every cluster ties to the single input projection
                if tie_to is not None and tie_projs[i] and len(tie_to.emb_projs) > src:
                    self.out_projs.append(tie_to.emb_projs[src])
                else:
                    self.out_projs.append(nn.Parameter(torch.empty(d_proj, d_i)))

    def _logits(self, h: Tensor, i: int, weight: Tensor, bias: Tensor) -> Tensor:
        if len(self.out_projs) > i:
            h = F.linear(h, self.out_projs[i].t())  # (N, d_proj) -> (N, d_i)
        return F.linear(h, weight, bias)

    def _head_logits(self, h: Tensor) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        """Head logits (N, shortlist + n_clusters) and each cluster's output weights and biases."""
        if self.div_val == 1:
            w, b = self.out_layers[0].weight, self.out_layers[0].bias
            weights = [w[lo:hi] for lo, hi in zip(self.bounds[:-1], self.bounds[1:], strict=True)]
            biases = [b[lo:hi] for lo, hi in zip(self.bounds[:-1], self.bounds[1:], strict=True)]
        else:
            weights = [layer.weight for layer in self.out_layers]
            biases = [layer.bias for layer in self.out_layers]
        head_w = torch.cat([weights[0], self.cluster_weight], 0)
        head_b = torch.cat([biases[0], self.cluster_bias], 0)
        return upcast(self._logits(h, 0, head_w, head_b)), weights, biases

    def log_probs(self, h: Tensor) -> Tensor:
        """h (..., d_proj) -> (..., V) log-probabilities in vocabulary order."""
        shape, h = h.shape[:-1], h.reshape(-1, h.size(-1))
        if self.n_clusters == 0:
            w, b = self.out_layers[0].weight, self.out_layers[0].bias
            return torch.log_softmax(upcast(self._logits(h, 0, w, b)), -1).view(*shape, -1)
        logits, weights, biases = self._head_logits(h)
        head = torch.log_softmax(logits, -1)
        parts = [head[:, : self.shortlist]]
        for c in range(1, self.n_clusters + 1):
            tail = torch.log_softmax(upcast(self._logits(h, c, weights[c], biases[c])), -1)
            parts.append(head[:, self.shortlist + c - 1, None] + tail)  # cluster c's logit, natural order
        return torch.cat(parts, -1).view(*shape, -1)

    def target_log_probs(self, h: Tensor, targets: Tensor) -> Tensor:
        """log p(target) only: one head term per position (the target itself, or its cluster's logit), and each
        tail cluster evaluated just for the positions whose target is in it (as the reference's training path).
        h (..., d_proj), targets (...) -> (...); out-of-range targets (ignore_index) score as word 0."""
        shape, h, t = targets.shape, h.reshape(-1, h.size(-1)), targets.reshape(-1)
        if self.n_clusters == 0:
            w, b = self.out_layers[0].weight, self.out_layers[0].bias
            return target_log_softmax(upcast(self._logits(h, 0, w, b)), t.clamp(0, self.n_token - 1)).view(shape)
        logits, weights, biases = self._head_logits(h)
        t = t.clamp(0, self.n_token - 1)
        cluster = torch.bucketize(t, t.new_tensor(self.bounds[1:-1]), right=True)  # 0 = shortlist, c = tail c
        head_t = torch.where(cluster == 0, t, self.shortlist + cluster - 1)
        out = target_log_softmax(logits, head_t)
        for c in range(1, self.n_clusters + 1):
            idx = (cluster == c).nonzero().squeeze(1)
            if idx.numel() == 0:
                continue
            tail = upcast(self._logits(h[idx], c, weights[c], biases[c]))  # (n_c, |c|)
            out = out.index_add(0, idx, target_log_softmax(tail, t[idx] - self.bounds[c]).to(out.dtype))
        return out.view(shape)

    needs = HeadNeeds(targets=True)  # training evaluates only the target clusters

    def forward(self, out: BackboneOutput, input_ids: Tensor | None = None,
                targets: Tensor | None = None) -> HeadOutput:
        if targets is not None:
            return HeadOutput(None, is_log_prob=True, target_log_probs=self.target_log_probs(out.hidden, targets))
        return HeadOutput(self.log_probs(out.hidden), is_log_prob=True)
