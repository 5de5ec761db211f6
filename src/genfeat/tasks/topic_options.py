"""Evaluating topic options and topic-conditioned continuations (thesis C §4.3.2-4.3.3; spec
interactive-generation.md §6.2 and §8.2).

`option_sims(methods, prompts)`: Sim, Sim Diff (Eq. 4.2, `metrics.topics`) of each option method's topics
(Eq. 4.1 of its centres' M nearest words) against each prompt's continuation words Ȳ and its own words X̄,
averaged over the prompts. `chain_claims` measures the synthetic corpus's claims G1-G4 (G5, n = 0 is the base LM,
is an exactness test): option methods on held-out prompts, the coverage of both successor topics, and whether an
inserted topic decides which successor the generator writes about.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from genfeat.analysis.topic_baselines import kmeans_global, kmeans_local, select_global
from genfeat.data.topic_chain import SENTENCE, TopicChain
from genfeat.metrics.topics import sim
from genfeat.models.gpt.insertion import Insertions
from genfeat.models.interactive.topics import topic_vectors
from genfeat.models.sampling import sample


@dataclass
class Prompt:
    ids: np.ndarray  # (T,) model tokens
    prompt_rows: np.ndarray  # (n,) table rows of the prompt's non-stop words (X̄)
    future_rows: np.ndarray  # (O',) table rows of the continuation's first non-stop words (Ȳ)


Centres = Callable[[int], np.ndarray]  # prompt index -> (K, E) centres


def left_pad(seqs: Sequence[np.ndarray], pad_id: int) -> tuple[Tensor, Tensor]:
    """(B, T) ids and key mask, each row right-aligned."""
    T = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, T - len(s):] = torch.as_tensor(s)
    return ids, ids != pad_id


@torch.no_grad()
def model_centres(model: nn.Module, prompts: Sequence[Prompt], pad_id: int, batch: int = 64) -> np.ndarray:
    """The option generator's centres of every prompt, (N, K, E)."""
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    out = []
    for a in range(0, len(prompts), batch):
        ids, _ = left_pad([p.ids for p in prompts[a: a + batch]], pad_id)
        out.append(model(ids.to(device)).float().cpu().numpy())
    model.train(was)
    return np.concatenate(out)


def option_sims(methods: Mapping[str, Centres], prompts: Sequence[Prompt], table: Tensor, m: int,
                exclude: Tensor | None = None) -> dict[str, dict[str, float]]:
    """{method: {"sim", "sim_diff"}}, each a mean over the prompts (Eq. 4.2 × 100)."""
    tab = table.numpy()
    res = {}
    for name, centres in methods.items():
        s, d = [], []
        for i, p in enumerate(prompts):
            t, _ = topic_vectors(torch.as_tensor(centres(i), dtype=torch.float32), table, m, exclude)
            t = t.numpy()
            s.append(sim(t, tab[p.future_rows]))
            d.append(s[-1] - sim(t, tab[p.prompt_rows]))
        res[name] = {"sim": float(np.mean(s)), "sim_diff": float(np.mean(d))}
    return res


def chain_prompts(corpus: TopicChain, docs: np.ndarray, n: int, seed: int) -> tuple[list[Prompt], np.ndarray]:
    """`n` held-out prompts: a document cut at a random sentence boundary (1 .. S-1 sentences), Ȳ the next
    sentence's content words; and each prompt's last topic (n,)."""
    rng = np.random.default_rng(seed)
    S = corpus.cfg.sentences
    out, last = [], []
    for d in rng.choice(docs, n, replace=len(docs) < n):
        s = int(rng.integers(1, S))
        toks = corpus.docs[d]
        prompt, nxt = toks[: s * SENTENCE], toks[s * SENTENCE: (s + 1) * SENTENCE]
        out.append(Prompt(prompt, prompt[~corpus.is_stop[prompt]], nxt[~corpus.is_stop[nxt]]))
        last.append(corpus.doc_topics[d, s - 1])
    return out, np.asarray(last)


@torch.no_grad()
def successor_share(lm: nn.Module, corpus: TopicChain, prompts: Sequence[Prompt], last: np.ndarray,
                    which: int | None, table: Tensor, pad_id: int, m: int = 3, new: int = 8, top_k: int = 5,
                    seed: int = 0) -> dict[str, float]:
    """G4: insert the topic of successor `which` (0: s_1, 1: s_2, None: nothing) of each prompt's last topic (Eq. 4.1
    of the M words nearest its centre) and sample `new` tokens; the shares of the generated content words that
    belong to s_1 and to s_2."""
    device = next(lm.parameters()).device
    ids, mask = left_pad([p.ids for p in prompts], pad_id)
    succ = corpus.successors[last]  # (B, 2)
    kw = {}
    if which is not None:
        centres = torch.as_tensor(corpus.centres[succ[:, which]])  # (B, E)
        t, _ = topic_vectors(centres, table, m, torch.as_tensor(corpus.is_stop))
        kw["inserts"] = Insertions.before_last(t[:, None].to(device), ids.size(1))
    gen = torch.Generator(device=device).manual_seed(seed)
    out = sample(lm, ids.to(device), new, top_k=top_k, generator=gen, key_mask=mask.to(device), **kw)
    drawn = out[:, ids.size(1):].cpu().numpy()  # (B, new)
    topic = np.append(corpus.topic_of, -1)[drawn]  # (B, new); the padding token (the id after the words): -1
    content = topic >= 0
    n = max(int(content.sum()), 1)
    return {"s1": float(((topic == succ[:, :1]) & content).sum() / n),
            "s2": float(((topic == succ[:, 1:]) & content).sum() / n), "content_words": float(content.sum())}


def successor_coverage(centres: np.ndarray, corpus: TopicChain, last: np.ndarray, threshold: float = 0.8) -> float:
    """G2: the share of prompts for which both successors' centres μ have a predicted centre of cosine > 0.8."""
    c = centres / np.maximum(np.linalg.norm(centres, axis=-1, keepdims=True), 1e-12)  # (N, K, E)
    mu = corpus.centres[corpus.successors[last]]  # (N, 2, E)
    best = np.einsum("nke,nse->nsk", c, mu).max(-1)  # (N, 2)
    return float((best > threshold).all(1).mean())


def chain_claims(options: nn.Module, lm: nn.Module, corpus: TopicChain, docs: np.ndarray, table: Tensor, pad_id: int,
                 k: int, m: int = 5, n_prompts: int = 300, n_condition: int = 200, seed: int = 0
                 ) -> dict[str, float]:
    """G1-G4 on held-out documents `docs` (module docstring; spec §8.2's gates are checked by the benchmark)."""
    prompts, last = chain_prompts(corpus, docs, n_prompts, seed)
    exclude = torch.as_tensor(corpus.is_stop)
    tab = table.numpy()
    ours = model_centres(options, prompts, pad_id)
    content = np.flatnonzero(~corpus.is_stop)
    glob = kmeans_global(tab[content], corpus.cfg.n_topics, seed)  # J = T clusters of the vocabulary
    glob_t = topic_vectors(torch.as_tensor(glob, dtype=torch.float32), table, m, exclude)[0].numpy()

    def global_pick(i: int) -> np.ndarray:
        return glob[select_global(glob_t, tab[prompts[i].prompt_rows], k)]

    methods = {"ours": lambda i: ours[i], "kmeans_local": lambda i: kmeans_local(tab[prompts[i].prompt_rows], k, seed),
               "kmeans_global": global_pick}
    sims = option_sims(methods, prompts, table, m, exclude)
    res = {f"{name}_{key}": v for name, d in sims.items() for key, v in d.items()}
    res["coverage"] = successor_coverage(ours, corpus, last)
    cp, cl = chain_prompts(corpus, docs, n_condition, seed + 1)
    for which, name in ((None, "none"), (0, "s1"), (1, "s2")):
        share = successor_share(lm, corpus, cp, cl, which, table, pad_id, seed=seed)
        res[f"cond_{name}_share_s1"], res[f"cond_{name}_share_s2"] = share["s1"], share["s2"]
    return res
