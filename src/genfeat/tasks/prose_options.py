"""The interactive generators on held-out real prose (thesis C §4.3.2.1 and §4.3.3.1, Tables 4.1 and 4.5; spec
interactive-generation.md §6.2-6.3).

    prose_prompts       n prompts of a given number of words, each ending at a word boundary of a held-out
                        stream (`data.prose_topics`): X̄ its content words, Ȳ the next O' = 25
    option_table        Table 4.1: Sim and Sim Diff (Eq. 4.2) of the option generator's topics against
                        K-means / Sample local (the prompt's words) and K-means / LDA / Sample global (the
                        vocabulary, the training blocks), on the prompts given (long: Sim; short: Sim Short)
    continuation_table  Table 4.5: per prompt, n ~ U{1..K} of the option generator's topics chosen at random;
                        ours (the topics inserted), PPLM-BoW (the union of their M words that are one token,
                        on the generator with nothing inserted, as the thesis) and the plain generator each write
                        one continuation of `new` tokens; Token / Word / Topic hits, the perplexity of the
                        continuations under `judge` (the thesis: GPT-2 medium, not fine-tuned), Dist-1 / 2 and
                        seconds per continuation, all in one process. Prompts whose topics have no one-token word
                        are left out for every method (PPLM's code conditions on one-token words only).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor, nn

from genfeat.analysis.topic_baselines import kmeans_global, kmeans_local, lda_global, sample_local, select_global
from genfeat.data.prose_topics import WORD, ProseStream
from genfeat.losses.nll import nll
from genfeat.metrics.topics import distinct_n, topic_hits
from genfeat.models.interactive import pplm
from genfeat.models.interactive.topics import topic_vectors
from genfeat.tasks.topic_options import Prompt, model_centres, option_sims


def prose_prompts(s: ProseStream, n: int, n_words: int, o: int, seed: int, max_tokens: int) -> list[Prompt]:
    """`n` prompts of the `n_words` words before a random word (cut to the last `max_tokens` tokens), with at
    least one content word in the prompt and in the continuation's first `o`."""
    rng = np.random.default_rng(seed)
    W = len(s.word_starts)
    if W <= n_words:
        raise ValueError(f"a stream of {W} words has no prompt of {n_words}")
    out: list[Prompt] = []
    for j in rng.permutation(np.arange(n_words, W)):
        end = int(s.word_starts[j])
        start = max(int(s.word_starts[j - n_words]), end - max_tokens)
        inside = (s.word_starts >= start) & (s.word_starts < end)
        x, y = s.word_rows[inside], s.future(end - 1, 1, o)[0]
        x, y = x[x >= 0], y[y >= 0]
        if len(x) and len(y) and start < end:
            out.append(Prompt(s.ids[start:end], x, y))
            if len(out) == n:
                return out
    raise ValueError(f"only {len(out)} of {n} prompts of {n_words} words have content words on both sides")


def block_counts(s: ProseStream, block: int, vocab: int, limit: int = 0):
    """(D, V) sparse counts of the content words of each `block`-token block: LDA's documents."""
    from scipy.sparse import csr_matrix

    starts, rows = s.content()
    doc = starts // block
    D = int(doc.max()) + 1 if len(doc) else 0
    keep = doc < limit if limit else np.ones(len(doc), bool)
    return csr_matrix((np.ones(int(keep.sum())), (doc[keep], rows[keep])), shape=(min(D, limit) if limit else D,
                                                                                   vocab))


def option_table(options: nn.Module, prompts: Sequence[Prompt], table: Tensor, pad_id: int, k: int, m: int,
                 globals_: dict[str, np.ndarray], seed: int = 0) -> dict[str, dict[str, float]]:
    """{method: {"sim", "sim_diff"}}: ours, kmeans_local, sample_local and each global centre table
    (`globals_`: name -> (J, E)) with its K topics picked per prompt; sample_global draws K vocabulary words."""
    tab = table.numpy()
    ours = model_centres(options, prompts, pad_id, batch=16)
    picks = {name: (c, topic_vectors(torch.as_tensor(c, dtype=torch.float32), table, m)[0].numpy())
             for name, c in globals_.items()}
    rng = np.random.default_rng(seed)
    draws = [tab[rng.integers(0, len(tab), k)] for _ in prompts]

    def pick(name: str):
        c, t = picks[name]
        return lambda i: c[select_global(t, tab[prompts[i].prompt_rows], k)]

    methods = {"ours": lambda i: ours[i],
               "kmeans_local": lambda i: kmeans_local(tab[prompts[i].prompt_rows], k, seed + i),
               "sample_local": lambda i: sample_local(tab[prompts[i].prompt_rows], k, seed + i),
               "sample_global": lambda i: draws[i], **{name: pick(name) for name in picks}}
    return option_sims(methods, prompts, table, m)


def global_centres(train: ProseStream, table: np.ndarray, j_kmeans: int, j_lda: int, block: int, seed: int,
                   lda_docs: int = 0) -> dict[str, np.ndarray]:
    """The global baselines' centre tables: K-means of the vocabulary (J = 1000 in the thesis), LDA topics of the
    training blocks (J = 150)."""
    return {"kmeans_global": kmeans_global(table, min(j_kmeans, len(table)), seed),
            "lda_global": lda_global(block_counts(train, block, len(table), lda_docs), table, j_lda, seed=seed)}


def words_of(text: str) -> list[str]:
    return [m.group().lower() for m in WORD.finditer(text)]


@torch.no_grad()
def continuation_nll(judge: nn.Module, prompt: Sequence[int], cont: Sequence[int]) -> tuple[float, int]:
    """(summed NLL, tokens) of `cont` after `prompt` under `judge`."""
    ids = torch.as_tensor([list(prompt) + list(cont)])
    targets = ids[:, 1:].clone()
    targets[:, : len(prompt) - 1] = -100
    out, _ = judge(ids[:, :-1])
    return float(nll(out, targets, reduction="sum")), len(cont)


def continuation_table(gen, judge: nn.Module, prompts: Sequence[Prompt], tokenizer, new: int, seed: int,
                       cfg: pplm.PPLMConfig | None = None, top_k: int = 40) -> dict[str, dict[str, float]]:
    """{method: {"token", "word", "topic", "ppl", "dist1", "dist2", "seconds"}} for ours / pplm / plain, and
    {"prompts": n} (module docstring). `gen`: an `InteractiveGenerator`."""
    cfg = cfg or pplm.PPLMConfig()
    rng = np.random.default_rng(seed)
    one_token = {}
    rows: dict[str, list] = {"ours": [], "pplm": [], "plain": []}
    texts: dict[str, list[list[str]]] = {k: [] for k in rows}
    nll_sum = {k: [0.0, 0] for k in rows}
    for i, p in enumerate(prompts):
        topics = gen.options(p.ids)
        K = len(topics.words)
        chosen = sorted(rng.choice(K, int(rng.integers(1, K + 1)), replace=False).tolist())
        words = [[gen.words[w] for w in topics.words[c].tolist()] for c in chosen]
        bow = []
        for w in {w for ws in words for w in ws}:
            if w not in one_token:
                ids = tokenizer.encode(" " + w)
                one_token[w] = ids[0] if len(ids) == 1 else None
            if one_token[w] is not None:
                bow.append(one_token[w])
        if not bow:
            continue
        runs = {"ours": gen.stream(p.ids, gen.conditions(topics, chosen), new, top_k, seed + i),  # lazy: each
                "pplm": pplm.stream(gen.lm, p.ids, bow, new, cfg, torch.Generator().manual_seed(seed + i)),  # starts
                "plain": gen.stream(p.ids, gen.conditions(topics, []), new, top_k, seed + i)}  # when it is read
        for name, tokens in runs.items():
            t0 = time.perf_counter()
            cont = list(tokens)
            dt = time.perf_counter() - t0
            text = words_of(tokenizer.decode(cont))
            texts[name].append(text)
            rows[name].append({**topic_hits(text, words), "seconds": dt})
            s, n = continuation_nll(judge, p.ids, cont)
            nll_sum[name][0] += s
            nll_sum[name][1] += n
    if not rows["ours"]:
        raise ValueError("no prompt had a topic word that is one token")
    res = {}
    for name, r in rows.items():
        res[name] = {key: float(np.mean([x[key] for x in r])) for key in ("token", "word", "topic", "seconds")}
        res[name] |= {"ppl": float(np.exp(nll_sum[name][0] / nll_sum[name][1])),
                      "dist1": 100 * distinct_n(texts[name], 1), "dist2": 100 * distinct_n(texts[name], 2)}
    res["prompts"] = {"n": len(rows["ours"])}
    return res

