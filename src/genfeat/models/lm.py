"""A causal language model = causal backbone + output head (the contract: `heads.base.HeadNeeds` / `HeadOutput` and
`nn.outputs.BackboneOffers` / `BackboneOutput`); sampling from it is `models.sampling`.

Any backbone returning a `BackboneOutput` composes with any head returning a `HeadOutput`.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from genfeat.heads.base import HeadNeeds, HeadOutput
from genfeat.nn.outputs import BackboneOffers, BackboneOutput


class CausalLM(nn.Module):
    """backbone (input ids -> `BackboneOutput`) + head (`BackboneOutput` -> `HeadOutput`). The head declares
    what it reads in `head.needs` (`HeadNeeds`); the model passes exactly that."""

    def __init__(self, backbone: nn.Module, head: nn.Module, max_len: int | None = None):
        super().__init__()
        if not isinstance(getattr(head, "needs", None), HeadNeeds):
            raise TypeError(f"{type(head).__name__} does not declare what it reads: a head sets "
                            "`needs = HeadNeeds(...)` (genfeat.heads.base)")
        if not isinstance(getattr(backbone, "offers", None), BackboneOffers):
            raise TypeError(f"{type(backbone).__name__} does not declare what it offers: a backbone sets "
                            "`offers = BackboneOffers(...)` (genfeat.nn.outputs)")
        self.backbone = backbone
        self.head = head
        self.max_len = max_len  # longest context the backbone accepts (None: unbounded)

    def generation_memory(self) -> tuple[()] | None:
        """What `sample` starts from: `()`, an empty memory the backbone fills, for a backbone with a memory
        (`offers.memory = "recurrent"`: Transformer-XL, where it is the model) or with an exact key / value cache
        (`offers.memory = "cache"`: the GPT decoder) whose head reads nothing a cache drops (the earlier positions'
        hidden states, `needs.all_hidden`; their ids without the memory's, `needs.input_ids` without
        `needs.memory_ids`); None: re-read the context at every step."""
        kind = self.backbone.offers.memory
        needs: HeadNeeds = self.head.needs
        if kind == "recurrent" or (kind == "cache" and not needs.all_hidden
                                   and (needs.memory_ids or not needs.input_ids)):
            return ()
        return None

    def forward(self, input_ids: Tensor, targets: Tensor | None = None, last_only: bool = False,
                mem_ids: Tensor | None = None, **backbone_kwargs) -> tuple[HeadOutput, BackboneOutput]:
        """backbone_kwargs: e.g. `mems=` for recurrent backbones (Transformer-XL). `targets` (B, T): a head that
        can (`needs.targets`) computes only log p(target) -- what training needs. `last_only`: scores (B, 1, V)
        for the last position only (generation); a head with `needs.positions` computes nothing else.

        A head that reads the memory's token ids (`needs.memory_ids`, the context partition) also sees the
        tokens held in a backbone's memory: `mem_ids` (B, M), aligned with the memory's positions (-1 where
        unknown), comes back updated as `out.mem_ids`; `out.carry()` is what the next segment's call takes."""
        needs: HeadNeeds = self.head.needs
        if targets is not None and targets.shape != input_ids.shape:
            raise ValueError(f"targets of shape {tuple(targets.shape)} do not align with input_ids of shape "
                             f"{tuple(input_ids.shape)}: targets[:, t] is the token after input_ids[:, t] "
                             "(call lm(ids[:, :-1], targets=ids[:, 1:]))")
        if needs.all_hidden:
            backbone_kwargs.setdefault("output_all_hidden", True)
        out = self.backbone(input_ids, **backbone_kwargs)  # hidden (B, T, d)
        head_kwargs = {"input_ids": input_ids} if needs.input_ids else {}
        if needs.memory_ids and out.mems is not None:
            old = backbone_kwargs.get("mems")
            old_len = old[0].size(1) if old else 0
            if mem_ids is None or mem_ids.size(1) != old_len:
                mem_ids = input_ids.new_full((input_ids.size(0), old_len), -1)
            ids = torch.cat([mem_ids, input_ids], 1)
            end = old_len + max(0, input_ids.size(1) - self.backbone.offers.ext_len)
            out.mem_ids = ids[:, end - out.mems[0].size(1):end]
            if old_len:
                head_kwargs["mem_ids"] = mem_ids
        if targets is not None and needs.targets:
            return self.head(out, targets=targets, **head_kwargs), out
        if last_only:
            if not needs.positions:
                res = self.head(out, **head_kwargs)
                return HeadOutput(res.log_probs()[:, -1:], is_log_prob=True), out
            head_kwargs["positions"] = input_ids.new_full((input_ids.size(0), 1), input_ids.size(1) - 1)
        return self.head(out, **head_kwargs), out
