"""D, G and the GAN baseline's domain classifier in one module (thesis Y §3.2.4, Fig. 3.7), so that one weights
file holds a run; `forward` is D at test time: with domain tags, the true-data tag (spec gdan.md §2.4, pitfall 2).

    GDAN(reader, generator=None, tags=(d_true, d_gen) or None, domain=None)
    model(paragraph, paragraph_mask, question, question_mask)   -> the reader's outputs under d_true
    model.read(..., tag="gen")                                   -> under d_gen (or untagged when tags is None)
    model.domain_logit(states, mask)                             -> (B,) logit of "human" from D's mean-pooled
                                                                    last-hop paragraph states (Gen + GAN)
"""

from __future__ import annotations

from torch import Tensor, nn

from genfeat.models.gdan.generator import QuestionGenerator
from genfeat.models.gdan.reader import GatedAttentionReader


class GDAN(nn.Module):
    def __init__(self, reader: GatedAttentionReader, generator: QuestionGenerator | None = None,
                 tags: tuple[int, int] | None = None, domain: bool = False):
        super().__init__()
        self.reader, self.generator, self.tags = reader, generator, tags
        d = 2 * reader.cfg.d_hidden
        self.domain = nn.Linear(d, 1) if domain else None

    def tag_id(self, tag: str) -> int | None:
        if tag not in ("true", "gen"):
            raise ValueError(f"tag must be 'true' or 'gen', got {tag!r}")
        return None if self.tags is None else self.tags[tag == "gen"]

    def read(self, paragraph: Tensor, paragraph_mask: Tensor, question: Tensor, question_mask: Tensor,
             tag: str = "true") -> dict[str, Tensor]:
        return self.reader(paragraph, paragraph_mask, question, question_mask, self.tag_id(tag))

    def forward(self, paragraph: Tensor, paragraph_mask: Tensor, question: Tensor, question_mask: Tensor,
                tag: str = "true") -> dict[str, Tensor]:
        return self.read(paragraph, paragraph_mask, question, question_mask, tag)

    def domain_logit(self, states: Tensor, mask: Tensor) -> Tensor:
        pooled = (states * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)  # (B, d)
        return self.domain(pooled).squeeze(-1)
