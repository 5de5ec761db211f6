"""Multi-CLS BERT's continued-pretraining objective (thesis C §5.2.1; spec multi-cls-bert.md §3, §5):
L = L_MLM + L_TFIDF + L_SO + L_MCQT, an unweighted sum.

    facet heads   c_k = LayerNorm_k(GELU(W_{O,k} h_k^c)), no bias (§4.3); W_{O,k} carries over to fine-tuning
    Eq. 5.2       Logit(a, b) = λ max_{i,j} cos(c_i^a, c_j^b) + (1 - λ) cos(Σ_i c_i^a, Σ_j c_j^b)
    Eq. 5.3       batch rows [A; P; H] (anchor, the next sequence, the one after): -log softmax over P ∪ H of
                  Logit(A_i, ·) at P_i, plus -log softmax over P ∪ A of Logit(H_i, ·) at P_i (each a mean over i);
                  without hard negatives rows [A; P] and the QT loss over P. No temperature: logits in [-1, 1]
    SO            Linear(2, D)(L^SO([h_1^c; ..; h_K^c])), L^SO: KD -> D with bias, no activation between
    TF-IDF        Linear(D, D) -> GELU -> LayerNorm -> Linear(D, 1) on the text positions, MSE to the targets
    MLM           BERT's transform (Linear, GELU, LayerNorm) -> the tied word embeddings + a bias; CE over the
                  masked positions (labels -100 elsewhere)

`MTLPretrainer` is Table 5.1's MTL baseline: the same objectives on plain BERT, QT and SO on the tanh-pooled
[CLS] instead of facets.

Shapes: facet states (B, K, D) -> c (B, K, D); logits (n, m). Deviations: none from the equations.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.models.bert.model import BertModel
from genfeat.models.multi_cls.model import MultiCLSEncoder, facet_linear


def multi_facet_logits(x: Tensor, y: Tensor, lam: float) -> Tensor:
    """Eq. 5.2 between every row of x (n, K, D) and every row of y (m, K, D): (n, m). The max runs over all K²
    facet pairs; the sums are normalised after summing (a facet's norm is its weight in the sum)."""
    xn, yn = F.normalize(x, dim=-1), F.normalize(y, dim=-1)
    best = torch.einsum("ikd,jld->ijkl", xn, yn).flatten(2).amax(-1)  # (n, m)
    total = F.normalize(x.sum(1), dim=-1) @ F.normalize(y.sum(1), dim=-1).T  # (n, m)
    return lam * best + (1 - lam) * total


def mcqt_loss(c: Tensor, lam: float, hard_negatives: bool = True) -> Tensor:
    """Eq. 5.3 on facet embeddings c (3N, K, D) = rows [A; P; H] (or (2N, K, D) = [A; P] without hard negatives,
    the multi-facet QT loss of Eq. 5.1)."""
    n = c.size(0) // (3 if hard_negatives else 2)
    if c.size(0) != n * (3 if hard_negatives else 2) or n < 1:
        raise ValueError(f"{c.size(0)} rows do not split into {'A, P, H' if hard_negatives else 'A, P'} parts")
    target = torch.arange(n, device=c.device)
    if not hard_negatives:
        a, p = c[:n], c[n:]
        return F.cross_entropy(multi_facet_logits(a, p, lam), target)
    a, p, h = c[:n], c[n:2 * n], c[2 * n:]
    return (F.cross_entropy(multi_facet_logits(a, torch.cat([p, h]), lam), target)
            + F.cross_entropy(multi_facet_logits(h, torch.cat([p, a]), lam), target))


def positive_first(c: Tensor, lam: float, hard_negatives: bool = True) -> tuple[int, int]:
    """(anchors whose positive scores highest, anchors) on the rows `mcqt_loss` splits: each A row's Eq. 5.2
    logits against every P and H row (against the P rows alone without hard negatives)."""
    n = c.size(0) // (3 if hard_negatives else 2)
    logits = multi_facet_logits(c[:n], c[n:], lam)  # (N, 2N) or (N, N): P first
    return int((logits.argmax(-1) == torch.arange(n, device=c.device)).sum()), n


def mcqt_floor(n: int) -> float:
    """The smallest value one term of Eq. 5.3 can take (logits in [-1, 1]) with 2n candidates:
    log(1 + (2n - 1) e^{-2})."""
    return float(torch.log1p(torch.tensor((2 * n - 1) * torch.e ** -2.0)))


class FacetHeads(nn.Module):
    """c_k = LayerNorm_k(GELU(W_{O,k} h_k)); weight (K, D, D) N(0, 0.02²), no bias."""

    def __init__(self, k: int, d: int, eps: float = 1e-12):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, d, d) * 0.02)
        self.norms = nn.ModuleList([nn.LayerNorm(d, eps=eps) for _ in range(k)])

    def forward(self, h: Tensor) -> Tensor:
        z = F.gelu(facet_linear(h, self.weight, None))  # (B, K, D)
        return torch.stack([ln(z[:, i]) for i, ln in enumerate(self.norms)], 1)


def triple_groups(batch: dict[str, Tensor], groups: int, parts: int) -> list[dict[str, Tensor]]:
    """A batch whose rows are `parts` blocks of N ([A; P; H], or [A; P]) as `groups` batches of the same layout,
    group g holding triples g·N/G to (g+1)·N/G: what each of G ranks holds of the global batch."""
    rows = next(iter(batch.values())).size(0)
    n = rows // parts
    if rows != n * parts or n % groups:
        raise ValueError(f"{rows} rows of {parts} blocks do not split into {groups} groups of triples")
    return [{k: v.unflatten(0, (parts, groups, n // groups))[:, g].flatten(0, 1) for k, v in batch.items()}
            for g in range(groups)]


class TextObjectives(nn.Module):
    """The two objectives on the text positions that the Multi-CLS and MTL pretrainers share: MLM (BERT's transform
    -> the tied word embeddings + a bias) and the TF-IDF regression head (module docstring), and the training
    loss: the sum of a subclass's `losses`. With `batch_groups` G > 1 it is the mean over G groups of the batch's
    triples (`triple_groups`) of that sum, each group its own MCQT negatives and token means: under torchrun each
    rank's share is such a group, so one process with G groups trains what G ranks do."""

    batch_groups: int = 1
    hard_negatives: bool = True

    def forward(self, **batch: Tensor) -> Tensor:
        if self.batch_groups == 1:
            return sum(self.losses(batch).values())
        parts = 3 if self.hard_negatives else 2
        return torch.stack([sum(self.losses(g).values())
                            for g in triple_groups(batch, self.batch_groups, parts)]).mean()

    def build_text_heads(self, bert: BertModel) -> None:
        """Called last by a subclass's __init__ (the heads draw their initial weights after the subclass's own)."""
        D, eps = bert.cfg.d_model, bert.cfg.layer_norm_eps
        self.tfidf = nn.Sequential(nn.Linear(D, D), nn.GELU(), nn.LayerNorm(D, eps=eps), nn.Linear(D, 1))
        self.mlm_transform = nn.Sequential(nn.Linear(D, D), nn.GELU(), nn.LayerNorm(D, eps=eps))
        self.mlm_bias = nn.Parameter(torch.zeros(bert.cfg.vocab_size))

    @torch.no_grad()
    def load_mlm_head(self, transform: dict[str, Tensor], bias: Tensor) -> None:
        """Continue from a checkpoint's masked-LM head (`models.bert.hf.mlm_head_from_hf`) instead of a fresh
        transform and a zero bias (the thesis continues bert-base's pretraining, head included)."""
        self.mlm_transform.load_state_dict(transform)
        if bias.shape != self.mlm_bias.shape:
            raise ValueError(f"MLM bias {tuple(bias.shape)} does not fit the vocabulary {tuple(self.mlm_bias.shape)}")
        self.mlm_bias.copy_(bias)

    def text_losses(self, text: Tensor, batch: dict[str, Tensor], word_embedding: Tensor) -> dict[str, Tensor]:
        """{"tfidf", "mlm"} from the states of the input positions (B, T, D)."""
        scored = batch["attention_mask"].bool()
        out = {"tfidf": F.mse_loss(self.tfidf(text).squeeze(-1)[scored], batch["tfidf"][scored].float())}
        masked = batch["mlm_labels"] != -100
        z = F.linear(self.mlm_transform(text[masked]), word_embedding, self.mlm_bias)
        out["mlm"] = F.cross_entropy(z, batch["mlm_labels"][masked])
        return out


class MultiCLSPretrainer(TextObjectives):
    """The encoder and the four pretraining heads; `losses(batch)` -> {mlm, tfidf, so, mcqt}. A batch holds
    BERT inputs without facet tokens (input_ids, token_type_ids, attention_mask (3N, T)), `mlm_labels` (3N, T)
    (-100: not predicted), `tfidf` (3N, T) targets, `so_labels` (3N,) and rows ordered [A; P; H]."""

    LOSSES = ("mcqt", "so", "tfidf", "mlm")  # the keys of `losses`

    def __init__(self, encoder: MultiCLSEncoder, hard_negatives: bool = True, batch_groups: int = 1):
        super().__init__()
        bert, K = encoder.bert, encoder.cfg.k
        D, eps = bert.cfg.d_model, bert.cfg.layer_norm_eps
        self.encoder, self.hard_negatives, self.batch_groups = encoder, hard_negatives, batch_groups
        self.lam = encoder.cfg.lam
        self.facet_heads = FacetHeads(K, D, eps)
        self.so_proj = nn.Linear(K * D, D)  # L^SO
        self.so_out = nn.Linear(D, 2)
        self.build_text_heads(bert)

    @property
    def bert(self) -> BertModel:
        return self.encoder.bert

    def sentence_embeddings(self, batch: dict[str, Tensor]) -> Tensor:
        """What Eq. 5.3 compares: the facet heads' c (B, K, D)."""
        enc = self.encoder
        hidden = enc(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"]).hidden
        return self.facet_heads(enc.facet_states(hidden))

    def losses(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        enc, K = self.encoder, self.encoder.cfg.k
        hidden = enc(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"]).hidden  # (B, T + K, D)
        h_f = enc.facet_states(hidden)  # (B, K, D)
        text = torch.cat([hidden[:, :1], hidden[:, K + 1:]], 1)  # (B, T, D): the input positions
        c = self.facet_heads(h_f)
        out = {"mcqt": mcqt_loss(c, self.lam, self.hard_negatives),
               "so": F.cross_entropy(self.so_out(self.so_proj(h_f.flatten(1))), batch["so_labels"])}
        return out | self.text_losses(text, batch, enc.bert.embeddings.word.weight)



class MTLPretrainer(TextObjectives):
    """Thesis C Table 5.1's MTL baseline: the same four objectives on plain BERT, no facet tokens and no inserted
    maps: QT (Eq. 5.3 with one embedding per sequence, hard negatives as configured) and SO on the tanh-pooled
    [CLS] (BERT's pooler), MLM and TF-IDF on the text positions. `losses(batch)` -> {mlm, tfidf, so, mcqt}; the
    batch layout is `MultiCLSPretrainer`'s."""

    LOSSES = MultiCLSPretrainer.LOSSES

    def __init__(self, bert: BertModel, hard_negatives: bool = True, batch_groups: int = 1):
        super().__init__()
        self.encoder, self.hard_negatives, self.batch_groups = bert, hard_negatives, batch_groups
        self.lam = 1.0  # one embedding per sequence: Eq. 5.2 is its cosine whatever λ
        bert.pooler.requires_grad_(True)  # the [CLS] pooler is the sentence embedding here
        self.so_out = nn.Linear(bert.cfg.d_model, 2)
        self.build_text_heads(bert)

    @property
    def bert(self) -> BertModel:
        return self.encoder

    def sentence_embeddings(self, batch: dict[str, Tensor]) -> Tensor:
        """The pooled [CLS] as one facet: (B, 1, D)."""
        hidden = self.bert(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"]).hidden
        return self.bert.pool(hidden)[:, None]

    def losses(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        hidden = self.bert(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"]).hidden  # (B, T, D)
        pooled = self.bert.pool(hidden)  # (B, D): tanh(W_p h_[CLS] + b_p)
        out = {"mcqt": mcqt_loss(pooled[:, None], self.lam, self.hard_negatives),
               "so": F.cross_entropy(self.so_out(pooled), batch["so_labels"])}
        return out | self.text_losses(hidden, batch, self.bert.embeddings.word.weight)

