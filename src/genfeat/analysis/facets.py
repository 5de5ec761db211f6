"""Facet inspection (thesis C Table 2.3 style): for a context, the top next words of the final distribution
and of every component of a multi-facet head.

Rows for a `MultiFacetSoftmax`: "final"; with K > 1, "softmax k (π=…)" for each mixture component (the
first one after its partitions and dynamic partitions); with partitions, "partition j facet" (that facet's
own full-vocabulary softmax, a diagnostic of what it points at); with dynamic partitions, "base facet f_1",
"context facet f_C" and "reranker facet R:n" the same way. Other heads give the final row only.
"""

from __future__ import annotations

import torch
from torch import Tensor

from genfeat.heads.multi_facet import MixtureHead, MultiFacetSoftmax
from genfeat.heads.two_stage import TwoStageReranker
from genfeat.models.lm import CausalLM


def _top(logp: Tensor, k: int) -> list[tuple[int, float]]:
    p = logp.exp()
    vals, idx = p.topk(k)
    return list(zip(idx.tolist(), vals.tolist(), strict=True))


@torch.no_grad()
def inspect_facets(lm: CausalLM, ids: Tensor, top: int = 5) -> list[tuple[str, list[tuple[int, float]]]]:
    """ids (T,) context -> [(row name, [(word id, probability)] * top)] for the next word after ids[-1]."""
    lm.eval()
    ids = ids[None]
    head_out, out = lm(ids)
    rows = [("final", _top(head_out.log_probs()[0, -1], top))]
    head = lm.head
    if isinstance(head, TwoStageReranker):
        rows.append(("stage 1 (before reranking)", _top(head_out.aux.log_probs()[0, -1], top)))
        head = head.stage1
    if not isinstance(head, MixtureHead):
        return rows
    if head.needs.all_hidden and out.all_hidden is None:
        out = lm.backbone(ids, output_all_hidden=True)
    logits, log_prior = head.facet_logits(out, ids)
    if head.K > 1:
        for k, z in enumerate(logits):
            weight = "max-pooled" if log_prior is None else f"π={log_prior[0, -1, k].exp():.3f}"
            rows.append((f"softmax {k + 1} ({weight})",
                         _top(torch.log_softmax(z[0, -1].float(), -1), top)))
    if not isinstance(head, MultiFacetSoftmax):  # DOC: one facet per layer, shown as its K softmaxes
        return rows
    q = out.hidden if head.multi_input is None else head.multi_input(out)
    q = q[0, -1]

    def facet_row(name: str, layer: torch.nn.Module) -> None:
        z = layer(q) @ head.weight.T + (0 if head.bias is None else head.bias)
        rows.append((name, _top(torch.log_softmax(z.float(), -1), top)))

    if head.J > 1:
        for j in range(head.J):
            facet_row(f"partition {j} facet", head.facets[j])
    if head.dynamic is not None:
        facet_row("base facet f_1", head.facets[0])
        if head.dynamic.f_context is not None:
            facet_row("context facet f_C", head.dynamic.f_context)
        for n, layer in zip(head.dynamic.reranker_sizes, head.dynamic.f_rerank, strict=True):
            facet_row(f"reranker facet R:{n}", layer)
    return rows
