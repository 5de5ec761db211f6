"""XLNet (Yang, Dai et al. 2019; thesis Y §2.2): permutation language modeling with two-stream relative attention
on a Transformer-XL backbone.

Per layer m (spec xlnet.md §2.4, §2.6, §2.8), with K = M' + T keys [SG(memory); content]:

    k, v   = [mem; h] W_k, [mem; h] W_v                       keys/values always from the content stream
    score  = [(q + u)·k_j + (q + v_b)·W_r R_{(M'+p)-j} + (q + b_s)·s_{same(p,j)}] / sqrt(d_h)
    h' = LN(h + Attn_h(q = h W_q, content mask)),  g' = LN(g + Attn_g(q = g W_q, query mask))
    h_next = LN(h' + FF(h')),  g_next = LN(g' + FF(g'))      one set of parameters for both streams

with h^0 = Dropout(E[x]) (no embedding scale, no absolute position), g^0 = Dropout(w) (`mask_emb`, one
trainable vector) at the predicted positions only, R the [sin | cos] table of the bidirectional position
sequence [K, ..., -T+1] (negated for the reversed half of a `bi_data` batch), s_+ / s_- = `seg_embed[0 / 1]`
per layer, memory counted as segment 0. Masks: `perm_mask[b, i, j] = 1` forbids i -> j (HF / reference
convention), padding keys (`attention_mask = 0`) are forbidden, memory is visible to every row; the content
stream additionally sees itself (the diagonal is re-enabled), the query stream does not.
Memory: each layer caches its *input* content rows [: reuse_len], appended and truncated to mem_len, detached.

Layout is batch first: input ids (B, T), perm_mask (B, T, T), target_pos (B, P) (positions whose query stream
is computed -- the predicted tokens), memory per layer (B, M', d). The query stream is computed only at the P
target rows, each row's relative positions re-indexed for its own position (`rel_gather`), instead of HF's
scatter to all T rows and back (`target_mapping`); the content scores are one `baddbmm` onto the positional,
segment and mask terms (`attend_with_bias`; SDPA off the CPU).

Deviations from the reference / HF (numerically identical otherwise, see tests/xlnet/test_hf_parity.py):
- a query-stream row with nothing to attend (no memory, every key forbidden) outputs zero attention; the
  reference's -1e30 masking gives it uniform attention over all keys, a leak of its own token (spec pitfall 6).
- `mem_len = 0` means no memory (HF keeps the whole input as memory).
- shared biases (`untie_r=False`) are one (H, d_h) triple for all layers, as the reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.heads.base import HeadOutput
from genfeat.heads.softmax import SoftmaxHead
from genfeat.models.xlnet.config import XLNetConfig
from genfeat.nn.dropout import Dropout
from genfeat.nn.outputs import BackboneOutput
from genfeat.nn.relative_attention import (
    attend_with_bias,
    bidirectional_positions,
    rel_gather,
    rel_shift_bi,
    sinusoid_table,
)


@dataclass
class XLNetOutput:
    """hidden: content stream (B, T, d), last layer after dropout; query: query stream (B, P, d) at target_pos;
    mems: per-layer memory for the next sequence (None without memory); all_hidden: per-layer content input."""

    hidden: Tensor
    query: Tensor | None = None
    mems: tuple[Tensor, ...] | None = None
    all_hidden: tuple[Tensor, ...] | None = None


class XLNetAttention(nn.Module):
    """Two-stream relative multi-head attention + residual + LayerNorm; parameter names as HF's
    `XLNetRelativeAttention` (q, k, v, o, r, seg_embed, layer_norm), stored as Linear weights."""

    def __init__(self, cfg: XLNetConfig):
        super().__init__()
        d, H, dh = cfg.d_model, cfg.n_head, cfg.d_head
        self.n_head, self.d_head, self.scale, self.dropatt = H, dh, dh**-0.5, cfg.dropatt
        self.q, self.k, self.v, self.r = (nn.Linear(d, H * dh, bias=False) for _ in range(4))
        self.o = nn.Linear(H * dh, d, bias=False)
        self.seg_embed = nn.Parameter(torch.zeros(2, H, dh))  # s_+ (same segment), s_- (different)
        self.layer_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.drop = Dropout(cfg.dropout)

    def attend(self, x: Tensor, k: Tensor, v: Tensor, r_head: Tensor, biases: tuple[Tensor, Tensor, Tensor],
               seg_diff: Tensor | None, mask: tuple[Tensor, Tensor | None] | None, pos: Tensor | None,
               qlen: int) -> Tensor:
        """One stream. x (B, L, d): all qlen positions of the segment (pos None) or the rows at pos (B, L);
        k, v (B, H, K, dh); r_head (Rb, H, dh, R); seg_diff (B, 1, L, K) float, 1 = different segments;
        mask: (additive bias (B|1, 1, L, K) with -inf where forbidden, rows with nothing to attend (B|1, L) or
        None) from `additive_mask`."""
        B, L, _ = x.shape
        H, dh, K = self.n_head, self.d_head, k.size(2)
        u, vb, sb = (b[:, None] for b in biases)  # (H, 1, dh)
        q = self.q(x).view(B, L, H, dh).transpose(1, 2)  # (B, H, L, dh)
        qr = (q + vb) * self.scale
        Rb = r_head.size(0)
        bd = (qr.view(Rb, B // Rb, H, L, dh) @ r_head[:, None]).view(B, H, L, -1)  # (B, H, L, R)
        bd = rel_shift_bi(bd, K) if pos is None else rel_gather(bd, pos, qlen, K)  # a view / a fresh tensor
        if seg_diff is not None:
            es = ((q + sb) * self.scale) @ self.seg_embed.permute(1, 2, 0)  # (B, H, L, 2): same, different
            bd = (bd + es[..., :1]).addcmul_(seg_diff, es[..., 1:] - es[..., :1])  # one fresh (B, H, L, K) tensor
        empty = None
        if mask is not None:
            bd = bd + mask[0] if seg_diff is None else bd.add_(mask[0])
            empty = mask[1]
        attn = attend_with_bias(q + u, k, v, bd.to(q.dtype), self.scale, self.dropatt if self.training else 0.0)
        if empty is not None:
            attn = attn.masked_fill(empty[:, None, :, None], 0.0)
        out = self.o(attn.transpose(1, 2).reshape(B, L, H * dh))
        return self.layer_norm(x + self.drop(out))

    def forward(self, h: Tensor, g: Tensor | None, mem: Tensor | None, r: Tensor,
                biases: tuple[Tensor, Tensor, Tensor], seg: tuple[Tensor | None, Tensor | None],
                masks: tuple[tuple | None, tuple | None], target_pos: Tensor | None) -> tuple[Tensor, Tensor | None]:
        B, T, _ = h.shape
        H, dh = self.n_head, self.d_head
        cat = h if mem is None else torch.cat([mem, h], dim=1)  # (B, K, d)
        K = cat.size(1)
        k = self.k(cat).view(B, K, H, dh).transpose(1, 2)  # (B, H, K, dh), shared by both streams
        v = self.v(cat).view(B, K, H, dh).transpose(1, 2)
        Rb, R, _ = r.shape
        r_head = self.r(r).view(Rb, R, H, dh).permute(0, 2, 3, 1)  # (Rb, H, dh, R)
        h_out = self.attend(h, k, v, r_head, biases, seg[0], masks[0], None, T)
        g_out = None if g is None else self.attend(g, k, v, r_head, biases, seg[1], masks[1], target_pos, T)
        return h_out, g_out


class XLNetFeedForward(nn.Module):
    def __init__(self, cfg: XLNetConfig):
        super().__init__()
        self.layer_1 = nn.Linear(cfg.d_model, cfg.d_inner)
        self.layer_2 = nn.Linear(cfg.d_inner, cfg.d_model)
        self.layer_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.drop = Dropout(cfg.dropout)
        self.act = {"gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "gelu": F.gelu, "relu": F.relu}[
            cfg.ff_activation]

    def forward(self, x: Tensor) -> Tensor:
        return self.layer_norm(x + self.drop(self.layer_2(self.drop(self.act(self.layer_1(x))))))


class XLNetLayer(nn.Module):
    def __init__(self, cfg: XLNetConfig):
        super().__init__()
        self.rel_attn = XLNetAttention(cfg)
        self.ff = XLNetFeedForward(cfg)

    def forward(self, h: Tensor, g: Tensor | None, *args) -> tuple[Tensor, Tensor | None]:
        h, g = self.rel_attn(h, g, *args)
        return self.ff(h), None if g is None else self.ff(g)


def additive_mask(mask: Tensor | None, dtype: torch.dtype) -> tuple[Tensor, Tensor | None] | None:
    """Bool (B|1, L, K) mask (True = forbidden) -> (additive bias (B|1, 1, L, K): -inf where forbidden; rows with
    nothing to attend (B|1, L), whose bias is left at 0 and whose output the attention zeroes; None if there are
    none). Built once per forward, shared by the layers."""
    if mask is None:
        return None
    bias = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(mask, float("-inf"))
    empty = mask.all(-1)
    if bool(empty.any()):
        bias.masked_fill_(empty[..., None], 0.0)
        return bias[:, None], empty
    return bias[:, None], None


def uni_mask(qlen: int, mlen: int, same_length: bool, device: torch.device | None = None) -> Tensor:
    """Causal (L, K) mask, True = forbidden, HF / reference `create_mask` convention: key j > mlen + i is
    forbidden; with same_length also the first-L key columns j < i."""
    ones = torch.ones(qlen, qlen + mlen, dtype=torch.bool, device=device)
    mask = torch.triu(ones, diagonal=mlen + 1)
    if same_length:
        mask[:, :qlen] |= torch.tril(ones[:, :qlen], diagonal=-1)
    return mask


class XLNet(nn.Module):
    """The XLNet backbone (content stream, and the query stream at `target_pos`)."""

    def __init__(self, cfg: XLNetConfig):
        super().__init__()
        if cfg.vocab_size < 1:
            raise ValueError("XLNetConfig.vocab_size must be set (the recipe takes it from the tokenizer)")
        self.cfg = cfg
        self.word_embedding = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.mask_emb = nn.Parameter(torch.zeros(cfg.d_model))  # w, the query stream's input
        self.layer = nn.ModuleList(XLNetLayer(cfg) for _ in range(cfg.n_layer))
        n = cfg.n_layer if cfg.untie_r else 1
        self.r_w_bias = nn.Parameter(torch.zeros(n, cfg.n_head, cfg.d_head))  # u
        self.r_r_bias = nn.Parameter(torch.zeros(n, cfg.n_head, cfg.d_head))  # v
        self.r_s_bias = nn.Parameter(torch.zeros(n, cfg.n_head, cfg.d_head))  # b (segment term)
        self.drop = Dropout(cfg.dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """As the reference / HF: weights, biases u/v/b, segment and query vectors N(0, init_std); Linear biases
        zero; LayerNorm (1, 0)."""
        for name, p in self.named_parameters():
            if name.endswith("layer_norm.weight"):
                nn.init.ones_(p)
            elif p.dim() >= 2 or name == "mask_emb":
                nn.init.normal_(p, 0.0, self.cfg.init_std)
            else:
                nn.init.zeros_(p)

    def forbidden(self, B: int, T: int, mlen: int, attention_mask: Tensor | None, perm_mask: Tensor | None,
                  device: torch.device) -> Tensor | None:
        """(B|1, T, K) bool, True = may not attend (before the content stream's diagonal is re-enabled)."""
        forbid = uni_mask(T, mlen, self.cfg.same_length, device)[None] if self.cfg.attn_type == "uni" else None
        data = None if perm_mask is None else perm_mask.bool()
        if attention_mask is not None:
            pad = ~attention_mask.bool()[:, None, :]  # (B, 1, T) padding keys
            data = pad if data is None else data | pad
        if data is not None:
            data = F.pad(data, (mlen, 0), value=False)  # memory is visible to every row
            forbid = data if forbid is None else forbid | data
        return forbid

    def forward(self, input_ids: Tensor | None = None, *, token_type_ids: Tensor | None = None,
                attention_mask: Tensor | None = None, perm_mask: Tensor | None = None,
                target_pos: Tensor | None = None, mems: tuple[Tensor, ...] | None = None,
                inputs_embeds: Tensor | None = None, output_all_hidden: bool = False) -> XLNetOutput:
        cfg = self.cfg
        h = self.word_embedding(input_ids) if inputs_embeds is None else inputs_embeds  # (B, T, d)
        B, T, d = h.shape
        if cfg.bi_data and B % 2:
            raise ValueError(f"bi_data needs an even batch (forward and reversed halves), got {B}")
        if mems is not None and len(mems) != cfg.n_layer:
            raise ValueError(f"expected {cfg.n_layer} memory tensors, got {len(mems)}")
        mlen = 0 if mems is None else mems[0].size(1)
        K = mlen + T
        forbid = self.forbidden(B, T, mlen, attention_mask, perm_mask, h.device)
        mask_h = mask_g = seg_h = seg_g = None
        if forbid is not None:  # every content row sees itself, padded rows too (reference, HF): their states enter
            diag = F.pad(torch.eye(T, dtype=torch.bool, device=h.device), (mlen, 0), value=False)  # (T, K)
            mask_h = forbid & ~diag  # the memory, so later segments depend on them
        if token_type_ids is not None:
            cat_ids = F.pad(token_type_ids, (mlen, 0), value=0)  # memory = segment 0
            seg_h = (token_type_ids[:, :, None] != cat_ids[:, None, :])[:, None].to(h.dtype)  # (B, 1, T, K)
        g = None
        if target_pos is not None:
            P = target_pos.size(1)
            rows = target_pos[:, :, None].expand(B, P, K)
            mask_g = None if forbid is None else forbid.expand(B, T, K).gather(1, rows)
            seg_g = None if seg_h is None else seg_h.gather(2, rows[:, None])
            g = self.drop(self.mask_emb.to(h.dtype).expand(B, P, d))
        pos = bidirectional_positions(T, K, cfg.attn_type, cfg.clamp_len, h.device)
        pos = torch.stack([pos, -pos]) if cfg.bi_data else pos[None]  # the reversed half: negated distances
        r = self.drop(sinusoid_table(pos.flatten(), d).view(*pos.shape, d).to(h.dtype))  # (Rb, R, d)
        h = self.drop(h)
        masks = (additive_mask(mask_h, h.dtype), additive_mask(mask_g, h.dtype))
        new_mems, hids = [], [h]
        for i, layer in enumerate(self.layer):
            mem = None if mems is None else mems[i]
            if cfg.mem_len:
                new_mems.append(self.cache(h, mem))
            j = i if cfg.untie_r else 0
            h, g = layer(h, g, mem, r, (self.r_w_bias[j], self.r_r_bias[j], self.r_s_bias[j]), (seg_h, seg_g),
                         masks, target_pos)
            hids.append(h)
        return XLNetOutput(hidden=self.drop(h), query=None if g is None else self.drop(g),
                           mems=tuple(new_mems) if new_mems else None,
                           all_hidden=tuple(hids) if output_all_hidden else None)

    def cache(self, h: Tensor, mem: Tensor | None) -> Tensor:
        """The layer input's first reuse_len rows appended to the memory, last mem_len rows kept, detached."""
        cur = h[:, : self.cfg.reuse_len] if self.cfg.reuse_len else h
        cat = cur if mem is None else torch.cat([mem, cur], dim=1)
        return cat[:, -self.cfg.mem_len:].detach()


class XLNetLM(nn.Module):
    """XLNet + the tied softmax with bias (`lm_loss` of the reference / HF): logits of the query stream at
    target_pos (pretraining), else of the content stream (at `positions` (B, P) only, when given: the MLM
    baseline's targets)."""

    def __init__(self, cfg: XLNetConfig):
        super().__init__()
        self.transformer = XLNet(cfg)
        self.head = SoftmaxHead(cfg.d_model, cfg.vocab_size, self.transformer.word_embedding, bias=True)

    def forward(self, input_ids: Tensor | None, positions: Tensor | None = None,
                **kw) -> tuple[HeadOutput, XLNetOutput]:
        out = self.transformer(input_ids, **kw)
        if out.query is not None:
            return self.head(BackboneOutput(hidden=out.query)), out
        return self.head(BackboneOutput(hidden=out.hidden), positions=positions), out
