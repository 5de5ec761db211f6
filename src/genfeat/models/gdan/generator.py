"""GDAN's question generator G: a sequence-to-sequence model with attention and copying that writes a question for
(paragraph, answer span) (thesis Y §3.2.4, Eq. 3.7; spec gdan.md §2.5).

    encoder   x_i = [E p_i ; 1(j <= i <= k)]  (the answer feature, by position)  ->  BiGRU  ->  H (B, T, 2h)
    decoder   s_0 = tanh(W_0 [→h_T ; ←h_1]);  s_t = GRU(E y_{t-1}, s_{t-1})           (B, L, h)
              α_t = softmax_i(s_tᵀ W_a H_i)                                              attention = copy pointer
              c_t = Σ_i α_ti H_i
              p_vocab = softmax(W_o tanh(W_c [s_t ; c_t]))                               over the output vocabulary
                                                                                         (never <pad>, <bos>)
              g_t = σ(w_gᵀ s_t)                                                          the thesis's gate: s_t only
              p(y_t) = g_t p_vocab + (1 - g_t) Σ_{i: p_i = y_t} α_ti                     Eq. 3.7, extended vocabulary

Vocabularies: the source vocabulary (the reader's words) embeds every input; its first `out_vocab` ids are the
output vocabulary; a paragraph word outside it is produced only by copying, through its per-example extended id
(`nn.pointer.extend_ids`); a question word that is neither in the output vocabulary nor in the paragraph is
<unk>. A generated extended id maps back to the paragraph's word, which is the next step's input (no <unk>
inputs). Each question ends with <eos>, which is part of the action (its log-probability counts).

    enc = G.encode(paragraph, mask, answer_mask)
    lp = G.token_log_probs(enc, targets, target_mask)     # (B, L) teacher-forced log p of extended target ids
    out = G.sample(enc, greedy=False, generator=g)        # Sampled: targets (extended ids), target_mask (<eos>
                                                          #   included), questions (source ids, <eos> excluded)
Deviations: the decoder is not input-fed (the attention context enters the output layer only), so teacher forcing
runs the decoder GRU over the whole target at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from genfeat.nn.pointer import BilinearAttention, copy_mixture, extend_ids, from_extended, masked_softmax
from genfeat.nn.recurrent import CELLS, BiRNN


@dataclass(frozen=True)
class GeneratorConfig:
    vocab_size: int  # the source vocabulary
    out_vocab: int  # its first out_vocab ids: the output vocabulary
    d_embed: int = 32
    d_hidden: int = 64
    cell: str = "gru"
    max_len: int = 12  # T': question tokens before <eos>
    pad_id: int = 0
    unk_id: int = 1
    bos_id: int = 2
    eos_id: int = 3
    never: tuple[int, ...] = (0, 2)  # output ids never generated (<pad>, <bos>; a recipe adds the domain tags)

    def __post_init__(self) -> None:
        if not max(self.pad_id, self.unk_id, self.bos_id, self.eos_id) < self.out_vocab <= self.vocab_size:
            raise ValueError(f"generator: need the special ids < out_vocab={self.out_vocab} <= vocab_size="
                             f"{self.vocab_size}")


@dataclass
class Encoded:
    keys: Tensor  # (B, T, 2h) encoder states
    mask: Tensor  # (B, T)
    ext: Tensor  # (B, T) extended ids of the paragraph tokens
    oov: Tensor  # (B, n_ext) source ids of the extended ids
    paragraph: Tensor  # (B, T) source ids
    state: Tensor  # (1, B, h) decoder's initial state


@dataclass
class Sampled:
    targets: Tensor  # (B, L) extended ids, <eos> included, 0 after it
    target_mask: Tensor  # (B, L) True through <eos> (or through max_len tokens when none was drawn)
    questions: Tensor  # (B, L) source ids of the question tokens, <eos> excluded, pad after
    question_mask: Tensor  # (B, L)
    log_probs: Tensor  # (B, L) log p of each drawn token (0 past the mask), no gradient


class QuestionGenerator(nn.Module):
    def __init__(self, cfg: GeneratorConfig):
        super().__init__()
        self.cfg = cfg
        h = cfg.d_hidden
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_embed, padding_idx=cfg.pad_id)
        self.encoder = BiRNN(cfg.d_embed + 1, h, cfg.cell)
        self.init = nn.Linear(2 * h, h)
        if cfg.cell != "gru":
            raise ValueError("the generator's decoder is a GRU (cell='gru')")
        self.decoder = CELLS[cfg.cell](cfg.d_embed, h, batch_first=True)
        self.attention = BilinearAttention(h, 2 * h)
        self.combine = nn.Linear(3 * h, h)
        self.out = nn.Linear(h, cfg.out_vocab)
        self.gate = nn.Linear(h, 1)
        banned = torch.zeros(cfg.out_vocab, dtype=torch.bool)
        banned[list(cfg.never)] = True
        self.register_buffer("banned", banned, persistent=False)

    def encode(self, paragraph: Tensor, mask: Tensor, answer_mask: Tensor) -> Encoded:
        x = torch.cat([self.embed(paragraph), answer_mask.to(self.embed.weight.dtype)[..., None]], -1)
        keys, last = self.encoder(x, mask)  # (B, T, 2h), (B, 2h)
        ext, oov = extend_ids(paragraph, self.cfg.out_vocab, mask)
        return Encoded(keys, mask, ext, oov, paragraph, torch.tanh(self.init(last))[None])

    def distribution(self, enc: Encoded, states: Tensor) -> Tensor:
        """Decoder states (B, L, h) -> p over the extended vocabulary (B, L, out_vocab + n_ext), Eq. 3.7."""
        attn = masked_softmax(self.attention(states, enc.keys, enc.mask), enc.mask[:, None, :])  # (B, L, T)
        ctx = attn @ enc.keys  # (B, L, 2h)
        logits = self.out(torch.tanh(self.combine(torch.cat([states, ctx], -1))))  # (B, L, V)
        p_vocab = logits.masked_fill(self.banned, float("-inf")).softmax(-1)
        gate = torch.sigmoid(self.gate(states))  # (B, L, 1)
        return copy_mixture(p_vocab, attn, enc.ext, gate, enc.oov.size(1))

    def targets(self, enc: Encoded, question: Tensor, question_mask: Tensor) -> tuple[Tensor, Tensor]:
        """A question in source ids (B, L) -> (extended target ids (B, L + 1) with <eos>, their mask): a word
        outside the output vocabulary is its paragraph copy's extended id, or <unk> when the paragraph lacks it."""
        c = self.cfg
        B, L = question.shape
        match = (question[:, :, None] == enc.paragraph[:, None, :]) & enc.mask[:, None, :]  # (B, L, T)
        first = match.float().argmax(-1)  # (B, L) the first occurrence
        copied = torch.where(match.any(-1), enc.ext.gather(1, first), torch.full_like(question, c.unk_id))
        tgt = torch.where(question < c.out_vocab, question, copied).masked_fill(~question_mask, c.pad_id)
        tgt = torch.cat([tgt, tgt.new_full((B, 1), c.pad_id)], 1)
        n = question_mask.sum(1)
        tgt = tgt.scatter(1, n[:, None], c.eos_id)
        mask = torch.arange(L + 1, device=tgt.device)[None, :] <= n[:, None]
        return tgt, mask

    def token_log_probs(self, enc: Encoded, targets: Tensor, target_mask: Tensor) -> Tensor:
        """Teacher-forced log p(y_t | y_<t, p, a) of extended target ids (B, L) -> (B, L), 0 past the mask."""
        B = targets.size(0)
        prev = torch.cat([targets.new_full((B, 1), self.cfg.bos_id), targets[:, :-1]], 1)
        inputs = from_extended(prev.masked_fill(prev < 0, 0), enc.oov, self.cfg.out_vocab)
        states, _ = self.decoder(self.embed(inputs), enc.state)  # (B, L, h)
        p = self.distribution(enc, states).gather(2, targets[..., None]).squeeze(-1)  # (B, L)
        return p.clamp_min(1e-30).log().masked_fill(~target_mask, 0.0)

    @torch.no_grad()
    def sample(self, enc: Encoded, greedy: bool = False, generator: torch.Generator | None = None,
               max_len: int | None = None) -> Sampled:
        """Draw one question per row (greedy: the most likely token), at most max_len tokens before <eos>."""
        c = self.cfg
        L = (max_len or c.max_len) + 1
        B = enc.paragraph.size(0)
        prev = enc.paragraph.new_full((B, 1), c.bos_id)
        state, done = enc.state, torch.zeros(B, dtype=torch.bool, device=prev.device)
        toks, lps, alive = [], [], []
        for _ in range(L):
            out, state = self.decoder(self.embed(prev), state)  # (B, 1, h)
            p = self.distribution(enc, out)[:, 0]  # (B, V + n_ext)
            y = p.argmax(-1) if greedy else torch.multinomial(p, 1, generator=generator).squeeze(1)
            alive.append(~done)
            toks.append(y.masked_fill(done, c.pad_id))
            lps.append(p.gather(1, y[:, None]).squeeze(1).clamp_min(1e-30).log().masked_fill(done, 0.0))
            done = done | (y == c.eos_id)
            prev = from_extended(y, enc.oov, c.out_vocab)[:, None]
            if bool(done.all()):
                break
        tgt, mask, lp = torch.stack(toks, 1), torch.stack(alive, 1), torch.stack(lps, 1)
        words = mask & (tgt != c.eos_id)
        q = from_extended(tgt, enc.oov, c.out_vocab).masked_fill(~words, c.pad_id)
        # questions are right-aligned already (every token before <eos> is a word); an empty one keeps <unk>
        empty = ~words.any(1)
        q[:, 0] = torch.where(empty, torch.full_like(q[:, 0], c.unk_id), q[:, 0])
        words[:, 0] |= empty
        return Sampled(tgt, mask, q, words, lp)

    def forward(self, paragraph: Tensor, paragraph_mask: Tensor, answer_mask: Tensor, question: Tensor,
                question_mask: Tensor) -> Tensor:
        """The MLE loss: mean over questions of -Σ_t log p(q_t | q_<t, p, a), <eos> included."""
        enc = self.encode(paragraph, paragraph_mask, answer_mask)
        tgt, mask = self.targets(enc, question, question_mask)
        return -self.token_log_probs(enc, tgt, mask).sum(1).mean()
