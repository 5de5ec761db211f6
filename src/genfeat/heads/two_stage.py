"""The two-stage reranker baseline Rs2 (thesis C §2.4.1.3, Figure 2.6; spec multi-facet-softmax.md §5.3).

Stage 1 is any head (softmax, MFS, CLR, ...). For every position t, its top-n words (of the stage-1
probabilities, not differentiated) are re-scored by running the decoder again on the context extended by

    [SEP, slot, c_1, ..., c_n]      input embeddings: s, A·f_2, E[c_j]; + segment vector g; position id t

with f_2 = L^f_2(h_t) a new facet (identity init), A, B new D×D maps without bias (N(0, (2·10^-4)^2)), s and g
learned vectors (s ~ N(0, 0.02), g = 0). SEP attends to the context x_<=t and itself, the slot to the context,
SEP and itself, candidate c_j to the context, SEP, the slot and itself (the candidates do not see each other, so
each candidate is scored as if appended alone). The stage-2 logit of c_j is (A f_2)ᵀ B h2_{c_j} (h2: last-layer
output, after the final LayerNorm); the output logits are the detached stage-1 log-probabilities with the
candidates' entries incremented by it (`merge="add"`, the reference default) or replaced (`"assign"`). Training
adds the stage-1 NLL (`HeadOutput.aux`; `genfeat.tasks.language_modeling.lm_loss`) to the stage-2 NLL.

Vectorised, with no KV cache and no per-position re-run: in a causal decoder the keys and values of x_<=t in
layer l are the stage-1 pass's own (block l's input is `all_hidden[l]`), so each layer projects them once from the
stage-1 states and the B·T·(n+2) appended tokens attend to them (masked to <= t) and to their own group (the mask
above). Exact for the GPT decoder in eval mode (tests compare with running the decoder's own blocks on each
explicit sequence [x_0..x_t, SEP, slot, c_j]); with dropout the context's keys and values are the stage-1 pass's
(the reference re-runs the current block's tokens with fresh dropout).

Deviations: SEP is a learned vector (the reference reuses the last vocabulary id); the context is the whole
segment up to t (the reference caches up to the start of a 20-token block and re-runs the block's tokens: the same
states in eval mode). GPT decoder only (Transformer-XL's relative attention and memory are not wired).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from genfeat.heads.base import HeadNeeds, HeadOutput, select_positions, top_indices
from genfeat.heads.dynamic import MERGES
from genfeat.heads.facets import identity_facet
from genfeat.nn.dropout import dropout
from genfeat.nn.outputs import BackboneOutput


class TwoStageReranker(nn.Module):

    def __init__(self, stage1: nn.Module, decoder: nn.Module, n: int = 100, merge: str = "add",
                 init_std: float = 2e-4):
        super().__init__()
        if merge not in MERGES:
            raise ValueError(f"merge must be one of {', '.join(MERGES)}, got {merge!r}")
        d, V = decoder.tok_emb.weight.shape[1], decoder.tok_emb.weight.shape[0]
        if not 1 <= n <= V:
            raise ValueError(f"stage-2 candidates must be in [1, {V}], got {n}")
        self.stage1, self.n, self.merge = stage1, n, merge
        self._decoder = (decoder,)  # the backbone's own modules, not registered twice
        self.facet = identity_facet(d, d)  # L^f_2
        self.A = nn.Linear(d, d, bias=False)
        self.B = nn.Linear(d, d, bias=False)
        nn.init.normal_(self.A.weight, std=init_std)
        nn.init.normal_(self.B.weight, std=init_std)
        self.sep = nn.Parameter(torch.randn(d) * 0.02)
        self.segment = nn.Parameter(torch.zeros(d))
        self.needs = HeadNeeds(all_hidden=True, input_ids=stage1.needs.input_ids, positions=True)

    def _appended_states(self, out: BackboneOutput, slot: Tensor, cand: Tensor) -> Tensor:
        """Last-layer outputs (B, T, n, d) at the candidates of each position's appended group."""
        dec = self._decoder[0]
        B, T, n = cand.shape
        G = n + 2
        pos = dec.pos_emb(torch.arange(T, device=cand.device))[None, :, None, :]  # position id t for the group
        x = torch.cat([self.sep.expand(B, T, 1, -1), slot[:, :, None], dec.tok_emb(cand)], 2) + pos + self.segment
        x = dec.drop(x)  # (B, T, G, d)
        prefix_mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()[None, None, :, None, :]
        g = torch.arange(G, device=x.device)
        group_mask = (g[None, :] == g[:, None]) | (g[None, :] < 2) & (g[None, :] <= g[:, None])  # (G, G)
        mask = torch.cat([prefix_mask.expand(1, 1, T, G, T), group_mask.expand(1, 1, T, G, G)], -1)
        for layer, block in enumerate(dec.blocks):
            attn = block.attn
            H = attn.n_head
            dh = x.size(-1) // H
            k1, v1 = attn.qkv(block.ln1(out.all_hidden[layer])).view(B, T, 3, H, dh).permute(2, 0, 3, 1, 4)[1:]
            q2, k2, v2 = attn.qkv(block.ln1(x)).view(B, T, G, 3, H, dh).permute(3, 0, 4, 1, 2, 5)  # (B,H,T,G,dh)
            scores = torch.cat([torch.einsum("bhtgd,bhsd->bhtgs", q2, k1),
                                torch.einsum("bhtgd,bhtkd->bhtgk", q2, k2)], -1) / math.sqrt(dh)
            p = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
            p = dropout(p, attn.dropout, self.training)
            y = torch.einsum("bhtgs,bhsd->bhtgd", p[..., :T], v1) + torch.einsum("bhtgk,bhtkd->bhtgd", p[..., T:], v2)
            x = x + attn.resid_drop(attn.proj(y.permute(0, 2, 3, 1, 4).reshape(B, T, G, -1)))
            x = x + block.ff(block.ln2(x))
        return dec.ln_f(x[:, :, 2:])

    def forward(self, out: BackboneOutput, input_ids: Tensor | None = None, mem_ids: Tensor | None = None,
                positions: Tensor | None = None) -> HeadOutput:
        if mem_ids is not None:
            raise ValueError("the two-stage reranker works on the GPT decoder (no memory)")
        if out.all_hidden is None:
            raise ValueError("the two-stage reranker needs the decoder's layer inputs (output_all_hidden=True)")
        s1 = self.stage1(out, input_ids)
        logp1 = s1.log_probs()  # (B, T, V)
        cand = top_indices(logp1.detach(), self.n)  # (B, T, n)
        slot = self.A(self.facet(out.hidden))  # A f_2, (B, T, d)
        h2 = self._appended_states(out, slot, cand)
        s2 = torch.einsum("btd,btnd->btn", slot, self.B(h2))
        base = logp1.detach()
        z = base.scatter_add(-1, cand, s2) if self.merge == "add" else base.scatter(-1, cand, s2)
        if positions is not None:
            z = select_positions(z, positions)
            s1 = HeadOutput(select_positions(logp1, positions), is_log_prob=True)
        return HeadOutput(z, is_log_prob=False, aux=s1)
