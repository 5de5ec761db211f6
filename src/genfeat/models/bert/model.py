"""BERT encoder (Devlin et al. 2019), the backbone of Multi-CLS BERT (thesis C §5.2; spec multi-cls-bert.md).

    x_0 = LayerNorm(E_tok[x] + E_pos[t] + E_type[s]) -> Dropout                      (B, T, d)
    x_l = LayerNorm(x' + Dropout(W_2 act(W_1 x' + b_1) + b_2)),
          x' = LayerNorm(x_{l-1} + Dropout(W_o Attn(x_{l-1}) + b_o))               post-LN blocks, l = 1..L
    Attn = softmax(Q K^T / sqrt(d_h) + mask) V per head, on `F.scaled_dot_product_attention` (SDPA); the
           padding keys (attention_mask 0) are masked, every query row still attends to the real tokens
    pooler(h) = tanh(W_p h_[CLS] + b_p)                                             (next-sentence head's input)

Shapes: input_ids, token_type_ids, attention_mask (B, T) -> `BackboneOutput.hidden` (B, T, d); with
`output_all_hidden` also `all_hidden` = (embeddings, block 1, ..., block L), as HF's `hidden_states`.
Q, K, V are one fused Linear (d -> 3d): one GEMM instead of three (`hf.py` splits and joins HF's three).
Module names follow HF's roles (`embeddings`, `layers.i.attn`, `ln_attn`, `ffn`, `ln_ffn`, `pooler`), so the
weights map one to one (`models/bert/hf.py`). Deviations: none (same arithmetic as HF's BertModel in eval mode;
dropout draws differ).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.models.bert.config import BertConfig
from genfeat.nn.dropout import Dropout
from genfeat.nn.outputs import BackboneOutput

_ACT = {"gelu": nn.GELU(), "gelu_tanh": nn.GELU(approximate="tanh"), "relu": nn.ReLU()}


class BertEmbeddings(nn.Module):
    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.word = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.position = nn.Embedding(cfg.max_len, cfg.d_model)
        self.token_type = nn.Embedding(cfg.type_vocab_size, cfg.d_model)
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.drop = Dropout(cfg.dropout)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None) -> Tensor:
        T = input_ids.size(1)
        x = self.word(input_ids) + (self.token_type(token_type_ids) if token_type_ids is not None
                                    else self.token_type.weight[0])  # (B, T, d), HF's order of the sums
        return self.drop(self.norm(x + self.position.weight[:T]))


class BertSelfAttention(nn.Module):
    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.n_head, self.p = cfg.n_head, cfg.attn_dropout
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x: Tensor, mask: Tensor | None) -> Tensor:
        """x (B, T, d); mask (B, 1, 1, T) bool, True = attend (None: every key)."""
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, D // self.n_head).permute(2, 0, 3, 1, 4)  # 3 x (B, H, T, dh)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.p if self.training else 0.0)
        return self.out(y.transpose(1, 2).reshape(B, T, D))


class BertLayer(nn.Module):
    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.attn = BertSelfAttention(cfg)
        self.ln_attn = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.ffn = nn.Sequential(nn.Linear(cfg.d_model, cfg.d_inner), _ACT[cfg.activation],
                                 nn.Linear(cfg.d_inner, cfg.d_model))
        self.ln_ffn = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.drop = Dropout(cfg.dropout)

    def forward(self, x: Tensor, mask: Tensor | None) -> Tensor:
        x = self.ln_attn(x + self.drop(self.attn(x, mask)))
        return self.ln_ffn(x + self.drop(self.ffn(x)))


class BertModel(nn.Module):
    """The encoder; `pool(hidden)` is the [CLS] pooler. Called as encoder(input_ids, token_type_ids,
    attention_mask) like every encoder of the task layer."""

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.cfg = cfg
        self.embeddings = BertEmbeddings(cfg)
        self.layers = nn.ModuleList([BertLayer(cfg) for _ in range(cfg.n_layer)])
        self.pooler = nn.Linear(cfg.d_model, cfg.d_model)
        self.apply(self._init)

    def _init(self, m: nn.Module) -> None:
        """HF's BERT init: N(0, init_std^2) weights, zero biases, LayerNorm (1, 0), the padding row 0."""
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, self.cfg.init_std)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)
            if isinstance(m, nn.Embedding) and m.padding_idx is not None:
                with torch.no_grad():
                    m.weight[m.padding_idx].zero_()
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)

    @staticmethod
    def key_mask(attention_mask: Tensor | None) -> Tensor | None:
        """(B, T) 1/0 -> (B, 1, 1, T) bool for SDPA; None when every token is real (the unmasked fast path)."""
        if attention_mask is None or bool(attention_mask.all()):
            return None
        return attention_mask.bool()[:, None, None, :]

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None, attention_mask: Tensor | None = None,
                output_all_hidden: bool = False) -> BackboneOutput:
        if input_ids.size(1) > self.cfg.max_len:
            raise ValueError(f"sequence of {input_ids.size(1)} tokens is longer than the model's {self.cfg.max_len}")
        mask = self.key_mask(attention_mask)
        x = self.embeddings(input_ids, token_type_ids)  # (B, T, d)
        states = [x]
        for layer in self.layers:
            x = layer(x, mask)
            states.append(x)
        return BackboneOutput(hidden=x, all_hidden=tuple(states) if output_all_hidden else None)

    def pool(self, hidden: Tensor) -> Tensor:
        """tanh(W_p h_[CLS] + b_p): (B, T, d) -> (B, d)."""
        return torch.tanh(self.pooler(hidden[:, 0]))


def mean_pool(hidden: Tensor, attention_mask: Tensor) -> Tensor:
    """Mean of the real tokens' states (sentence-transformers' mean pooling): (B, T, d), (B, T) -> (B, d)."""
    m = attention_mask.to(hidden.dtype)[..., None]
    return (hidden * m).sum(1) / m.sum(1).clamp_min(1e-9)
