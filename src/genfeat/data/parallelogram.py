"""The planted parallelogram of spec multi-facet-softmax.md §11 S2 (thesis C §2.2's softmax bottleneck made
concrete): frozen D = 16 output embeddings with 24 "parallelogram" words w_{i,j} = u_i + g_j (12 bases x 2
genders, u, g ~ N(0, I)), 72 random words and a (random) separator word. A context is two candidates and a
separator; the target is ½ : ½ on the two candidates. Diagonal pairs {(i,0), (k,1)}, i != k (132 ordered pairs)
have w_a + w_b = w_c + w_d with the interferers c = (i,1), d = (k,0), so a single softmax has CE >= log 4
whatever its hidden state (spec softmax-bottleneck.md R4); edge pairs {(i,0), (i,1)} do not.

Layout A puts the parallelogram words at ids 0..23, layout B at ids 0, 4, 8, ... (all in partition 0 of 4, which
isolates the multi-partition mechanism).
"""

from __future__ import annotations

import torch

D, N_BASE, N_RANDOM = 16, 12, 72
V = 2 * N_BASE + N_RANDOM + 1
SEP = V - 1  # the separator is one more (random) word, never a target


def vocabulary(seed: int, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(W (V, D), the word id of parallelogram word (i, j) as a (12, 2) table)."""
    if layout not in ("A", "B"):
        raise ValueError(f"layout must be A or B, got {layout!r}")
    g = torch.Generator().manual_seed(seed)
    u, gender = torch.randn(N_BASE, D, generator=g), torch.randn(2, D, generator=g)
    para = (u[:, None, :] + gender[None, :, :]).reshape(-1, D)  # row 2i + j
    rand = torch.randn(N_RANDOM + 1, D, generator=g)
    ids = torch.arange(2 * N_BASE) * (4 if layout == "B" else 1)
    W = torch.empty(V, D)  # the separator is the last of the random rows
    others = torch.tensor([x for x in range(V) if x not in set(ids.tolist())])
    W[ids], W[others] = para, rand
    return W, ids.view(N_BASE, 2)


def contexts(table: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every ordered diagonal and edge pair: input_ids (P, 3) = [a, b, SEP], targets (P, 2) = [a, b], diagonal
    (P,) bool."""
    rows, diag = [], []
    for i in range(N_BASE):
        for k in range(N_BASE):
            if i != k:
                rows.append([table[i, 0], table[k, 1]])
                diag.append(True)
        rows.append([table[i, 0], table[i, 1]])
        diag.append(False)
    ids = torch.tensor(rows)
    return {"input_ids": torch.cat([ids, torch.full((len(ids), 1), SEP)], 1), "targets": ids,
            "diagonal": torch.tensor(diag)}
