"""Topics of the option generator (thesis C §4.2.1.1 and Eq. 4.1; spec interactive-generation.md §3.1, §4.1 and
§9 tests 1-2): a predicted centre c_k is shown as its M nearest words and enters the conditional generator as

    t_k = Σ_m cos(e_m, c_k) e_m / ||Σ_m cos(e_m, c_k) e_m||        e_m: the unit vectors of c_k's M nearest words

The option generator itself is the facet network of §3.2 on a GPT decoder: `option_generator` (no
cross-attention, thesis §4.2.1.1: the K slots read the last prompt position only).

Shapes: centres (K, E) (any norm), table (V, E) unit rows, exclude (V,) bool (stop words, markers) ->
nearest (K, M) word ids, cosines (K, M); topics (K, E) unit rows. Ties in cosine go to the lower word id.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.models.facets import FacetConfig, FacetModel
from genfeat.models.facets.encoders import BackboneEncoder


def option_generator(gpt: nn.Module, cfg: FacetConfig, pad_id: int) -> FacetModel:
    """Prompt (left-padded ids) -> K centres (B, K, E): the facet decoder (`cfg`, cross-attention off) over the
    GPT decoder's state at the last prompt token (§4.2.1.1, Figure 4.3b)."""
    return FacetModel(dataclasses.replace(cfg, cross_attention=False), encoder=BackboneEncoder.from_gpt(gpt, pad_id))


def nearest_words(centres: Tensor, table: Tensor, m: int, exclude: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """The `m` words of highest cosine to each centre: (ids (K, m), cosines (K, m))."""
    cos = F.normalize(centres.float(), dim=-1) @ table.float().T  # (K, V)
    if exclude is not None:
        cos = cos.masked_fill(exclude[None].to(cos.device), float("-inf"))
    if m > int(torch.isfinite(cos[0]).sum()):
        raise ValueError(f"M={m} nearest words asked, the table has {int(torch.isfinite(cos[0]).sum())} candidates")
    order = torch.sort(-cos, dim=-1, stable=True).indices[:, :m]  # stable: ties to the lower id
    return order, cos.gather(1, order)


def topic_vectors(centres: Tensor, table: Tensor, m: int, exclude: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Eq. 4.1: (topics (K, E) unit rows, their words (K, m))."""
    ids, cos = nearest_words(centres, table, m, exclude)
    t = (cos[..., None] * table.float()[ids]).sum(1)  # (K, E)
    return F.normalize(t, dim=-1), ids
