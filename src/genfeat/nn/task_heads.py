"""Task heads on any encoder (see `genfeat.tasks`): pooling, classification / regression, multiple choice, span QA
with answerability (thesis Y §2.2.3, the XLNet reference's `function_builder`), kernel-pooling ranking.

    summary     pool the states -> Linear(d, d) -> tanh -> dropout; pool = "last" (XLNet's <cls> at the end),
                "first" (BERT's [CLS] at position 0) or "mean" (the real tokens, attention_mask 1)
    classify    summary -> Linear(d, n_labels); n_labels = 1 is regression (STS-B)
    choice      one sequence per option -> summary -> Linear(d, 1), soft-maxed across the options (RACE)
    span        start / end-given-start / answerability (SpanExtractor's docstring)

The encoder sits under the attribute `transformer` and the layers keep the reference's roles in their names, so
the weights map one to one onto HF's XLNet task models (`models/xlnet/hf.py`).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from genfeat.nn.dropout import Dropout


class SequenceSummary(nn.Module):
    """A position's state -> Linear(d, d) -> tanh -> dropout: the last position (`pool="last"`, XLNet's <cls>), the
    first (`"first"`, BERT's [CLS]), or the mean over the real tokens (`"mean"`, attention_mask 1; HF's summary_type
    "mean" without its padding)."""

    POOLS = ("last", "first", "mean")

    def __init__(self, d_model: int, dropout: float = 0.1, pool: str = "last"):
        super().__init__()
        if pool not in self.POOLS:
            raise ValueError(f"pool must be one of {', '.join(self.POOLS)}, got {pool!r}")
        self.pool = pool
        self.summary = nn.Linear(d_model, d_model)
        self.drop = Dropout(dropout)

    def forward(self, hidden: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        if self.pool == "last":
            x = hidden[:, -1]
        elif self.pool == "first":
            x = hidden[:, 0]
        else:
            m = torch.ones(hidden.shape[:2], device=hidden.device) if attention_mask is None else attention_mask
            m = m.to(hidden.dtype)[..., None]
            x = (hidden * m).sum(1) / m.sum(1).clamp_min(1.0)
        return self.drop(torch.tanh(self.summary(x)))


def _init(layers: tuple[nn.Module, ...], std: float) -> None:
    for lin in layers:
        nn.init.normal_(lin.weight, 0.0, std)
        if lin.bias is not None:
            nn.init.zeros_(lin.bias)


class SequenceClassifier(nn.Module):
    """Sequence classification (n_labels > 1, cross-entropy) or regression (n_labels = 1, squared error) on an
    encoder's pooled states."""

    def __init__(self, encoder: nn.Module, d_model: int, n_labels: int, dropout: float = 0.1, pool: str = "last",
                 init_std: float = 0.02):
        super().__init__()
        if n_labels < 1:
            raise ValueError("n_labels must be >= 1")
        self.transformer = encoder
        self.sequence_summary = SequenceSummary(d_model, dropout, pool)
        self.logits_proj = nn.Linear(d_model, n_labels)
        _init((self.sequence_summary.summary, self.logits_proj), init_std)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None,
                attention_mask: Tensor | None = None) -> Tensor:
        h = self.transformer(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask).hidden
        logits = self.logits_proj(self.sequence_summary(h, attention_mask))
        return logits[:, 0] if logits.size(1) == 1 else logits


class MultipleChoice(nn.Module):
    """Inputs (B, C, T): one sequence per option, each scored by a one-output `SequenceClassifier`; logits (B, C)."""

    def __init__(self, classifier: SequenceClassifier):
        super().__init__()
        self.clf = classifier

    @property
    def transformer(self) -> nn.Module:
        return self.clf.transformer

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None,
                attention_mask: Tensor | None = None) -> Tensor:
        B, C, T = input_ids.shape

        def flat(t):
            return None if t is None else t.reshape(B * C, T)
        return self.clf(flat(input_ids), flat(token_type_ids), flat(attention_mask)).view(B, C)


class SpanExtractor(nn.Module):
    """Span extraction with answerability (SQuAD 2.0; thesis Y §2.2.3, reference `function_builder.get_qa_outputs`).

        start_t  = w_s·h_t                                   (p_mask positions excluded)
        end_t|s  = w_e·LN(tanh(W_0 [h_t; h_s] + b_0))         conditioned on a start s: the gold one in training,
                                                              each of the top `start_n_top` at inference
        answer   = w_c·tanh(W_1 [Σ_t softmax(start)_t h_t ; h_cls] + b_1)   (no bias on w_c; the soft start
                                                              state in both phases, as the reference; HF uses the
                                                              gold start in training)
        loss     = (CE_start + CE_end) / 2 + 0.5 · BCE(answer, is_impossible)
    Inference returns the start_n_top × end_n_top beam (log-probabilities and indices) and the answerability
    logits; `genfeat.data.squad.squad_predictions` turns them into answer strings.
    """

    def __init__(self, encoder: nn.Module, d_model: int, start_n_top: int = 5, end_n_top: int = 5,
                 dropout: float = 0.1, layer_norm_eps: float = 1e-12, init_std: float = 0.02):
        super().__init__()
        d = d_model
        self.transformer = encoder
        self.start_n_top, self.end_n_top = start_n_top, end_n_top
        self.start_logits = nn.Linear(d, 1)
        self.end_dense = nn.Linear(2 * d, d)
        self.end_norm = nn.LayerNorm(d, eps=layer_norm_eps)
        self.end_logits = nn.Linear(d, 1)
        self.answer_dense = nn.Linear(2 * d, d)
        self.answer_logit = nn.Linear(d, 1, bias=False)
        self.drop = Dropout(dropout)
        _init((self.start_logits, self.end_dense, self.end_logits, self.answer_dense, self.answer_logit), init_std)

    def end_scores(self, h: Tensor, h_start: Tensor, p_mask: Tensor) -> Tensor:
        """h (B, T, d), h_start (B, k, d) -> end logits (B, k, T)."""
        B, T, d = h.shape
        k = h_start.size(1)
        x = torch.cat([h[:, None].expand(B, k, T, d), h_start[:, :, None].expand(B, k, T, d)], dim=-1)
        logits = self.end_logits(self.end_norm(torch.tanh(self.end_dense(x))))[..., 0]
        return logits.masked_fill(p_mask.bool()[:, None], -1e30)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor, attention_mask: Tensor, p_mask: Tensor,
                cls_index: Tensor, start_positions: Tensor | None = None, end_positions: Tensor | None = None,
                is_impossible: Tensor | None = None) -> dict[str, Tensor]:
        h = self.drop(self.transformer(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask).hidden)
        rows = torch.arange(h.size(0), device=h.device)
        start = self.start_logits(h)[..., 0].masked_fill(p_mask.bool(), -1e30)  # (B, T)
        soft_start = torch.einsum("bt,btd->bd", start.softmax(-1), h)
        answer = self.answer_logit(self.drop(torch.tanh(self.answer_dense(
            torch.cat([soft_start, h[rows, cls_index]], dim=-1)))))[:, 0]  # (B,)
        if start_positions is not None:
            end = self.end_scores(h, h[rows, start_positions][:, None], p_mask)[:, 0]
            ce = nn.functional.cross_entropy
            loss = (ce(start, start_positions) + ce(end, end_positions)) / 2
            if is_impossible is not None:
                loss = loss + 0.5 * nn.functional.binary_cross_entropy_with_logits(answer, is_impossible.float())
            return {"loss": loss, "start_logits": start, "end_logits": end, "answer_logits": answer}
        start_lp, start_idx = start.log_softmax(-1).topk(min(self.start_n_top, h.size(1)), dim=-1)  # (B, k)
        end_lp = self.end_scores(h, h.gather(1, start_idx[..., None].expand(-1, -1, h.size(-1))), p_mask)
        end_top_lp, end_top_idx = end_lp.log_softmax(-1).topk(min(self.end_n_top, h.size(1)), dim=-1)  # (B, k, k')
        return {"start_top_log_probs": start_lp, "start_top_index": start_idx, "end_top_log_probs": end_top_lp,
                "end_top_index": end_top_idx, "answer_logits": answer}


class KNRM(nn.Module):
    """Kernel pooling ranker (Xiong et al. 2017) over word representations, the thesis's document-ranking use of
    XLNet (§2.2.3: XLNet's representations fed to K-NRM, XLNet not fine-tuned; spec §2.12):

        M_ij = cos(q_i, d_j);  K_k(M_i) = Σ_j exp(-(M_ij - μ_k)² / (2σ_k²));  φ = 0.01 Σ_i log K(M_i);
        score = tanh(w·φ + b)
    kernels: μ = 1 (σ 1e-3, exact match) and μ ∈ {0.9, 0.7, ..., -0.9} (σ 0.1); loss: pairwise hinge."""

    def __init__(self, n_soft: int = 10, sigma: float = 0.1, exact_sigma: float = 1e-3):
        super().__init__()
        mus = [1.0] + [1.0 - 1.0 / n_soft - 2.0 * k / n_soft for k in range(n_soft)]
        self.register_buffer("mu", torch.tensor(mus))
        self.register_buffer("sigma", torch.tensor([exact_sigma] + [sigma] * n_soft))
        self.dense = nn.Linear(len(mus), 1)

    def features(self, q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor) -> Tensor:
        """q (B, Lq, e), d (B, Ld, e), masks 1 = real token -> (B, n_kernels) log soft-TF features."""
        m = torch.einsum("bie,bje->bij", nn.functional.normalize(q, dim=-1), nn.functional.normalize(d, dim=-1))
        k = torch.exp(-((m[..., None] - self.mu) ** 2) / (2 * self.sigma**2))  # (B, Lq, Ld, K)
        k = (k * d_mask[:, None, :, None]).sum(2)  # (B, Lq, K)
        return (torch.log(k.clamp_min(1e-10)) * 0.01 * q_mask[..., None]).sum(1)  # the reference's 0.01 scale

    def forward(self, q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor) -> Tensor:
        return torch.tanh(self.dense(self.features(q, q_mask, d, d_mask)))[:, 0]

    @staticmethod
    def loss(pos: Tensor, neg: Tensor, margin: float = 1.0) -> Tensor:
        return torch.relu(margin - pos + neg).mean()
