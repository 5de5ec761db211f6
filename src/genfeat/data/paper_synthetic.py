"""The synthetic multi-domain citation graph of spec multi2spe.md §13.2 (deterministic per seed; token ids made
directly, no tokenizer): papers about topics of several domains, some with a secondary topic from another domain
(the cross-domain papers), each citing papers that share one of its topics.

    topics      `n_domains` (4) x `topics_per_domain` (3), each owning `words_per_topic` (12) ids drawn without
                replacement from [2000, 29000) (whole words of the bert-base-uncased range), plus `n_generic` (200)
                generic ids
    papers      `n_papers` (480), a primary topic each; with probability `p_cross` (0.3) a secondary topic from a
                different domain
    text        [CLS] title (6 ids) [SEP] abstract (34 ids) [SEP]; each id generic with probability 0.15, else from
                the secondary topic with probability 0.4 (when there is one), else from the primary topic
    citations   `cites` (6) per paper: pick one of its topics uniformly, then a random other paper with that topic
    queries     the first 80 % of papers are training queries, the rest test queries; every paper is a candidate
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CLS, SEP = 101, 102


@dataclass(frozen=True)
class SyntheticPapersConfig:
    n_domains: int = 4
    topics_per_domain: int = 3
    words_per_topic: int = 12
    n_generic: int = 200
    n_papers: int = 480
    p_cross: float = 0.3
    title_len: int = 6
    abstract_len: int = 34
    cites: int = 6
    test_fraction: float = 0.2
    seed: int = 0

    def __post_init__(self) -> None:
        if self.n_domains < 2 or min(self.topics_per_domain, self.words_per_topic, self.n_papers, self.cites) < 1:
            raise ValueError("the synthetic papers need >= 2 domains and positive sizes")
        if not 0 < self.test_fraction < 1:
            raise ValueError(f"test_fraction must be in (0, 1), got {self.test_fraction}")


@dataclass
class SyntheticPapers:
    ids: list[np.ndarray]  # per paper: [CLS] title [SEP] abstract [SEP]
    primary: np.ndarray  # (N,) topic
    secondary: np.ndarray  # (N,) topic or -1
    domain: np.ndarray  # (n_topics,) each topic's domain
    cites: list[np.ndarray]  # per paper: the ids it cites (distinct, not itself)
    train_queries: np.ndarray
    test_queries: np.ndarray

    @property
    def cross_domain(self) -> np.ndarray:
        return self.secondary >= 0


def synthetic_papers(cfg: SyntheticPapersConfig) -> SyntheticPapers:
    rng = np.random.default_rng(cfg.seed)
    T = cfg.n_domains * cfg.topics_per_domain
    pool = rng.choice(np.arange(2000, 29000), T * cfg.words_per_topic + cfg.n_generic, replace=False)
    words = pool[: T * cfg.words_per_topic].reshape(T, cfg.words_per_topic)
    generic = pool[T * cfg.words_per_topic:]
    domain = np.repeat(np.arange(cfg.n_domains), cfg.topics_per_domain)
    N = cfg.n_papers
    primary = rng.integers(0, T, N)
    secondary = np.full(N, -1)
    for i in np.flatnonzero(rng.random(N) < cfg.p_cross):
        others = np.flatnonzero(domain != domain[primary[i]])
        secondary[i] = rng.choice(others)

    def draw(i: int, n: int) -> np.ndarray:
        out = np.empty(n, dtype=np.int64)
        for j in range(n):
            u = rng.random()
            if u < 0.15:
                out[j] = rng.choice(generic)
            elif secondary[i] >= 0 and u < 0.55:
                out[j] = rng.choice(words[secondary[i]])
            else:
                out[j] = rng.choice(words[primary[i]])
        return out

    ids = [np.concatenate([[CLS], draw(i, cfg.title_len), [SEP], draw(i, cfg.abstract_len), [SEP]]) for i in range(N)]
    has = [np.flatnonzero((primary == t) | (secondary == t)) for t in range(T)]
    cites = []
    for i in range(N):
        topics = [primary[i]] + ([secondary[i]] if secondary[i] >= 0 else [])
        got: set[int] = set()
        for _ in range(50 * cfg.cites):
            if len(got) == cfg.cites:
                break
            cand = has[int(rng.choice(topics))]
            j = int(rng.choice(cand))
            if j != i:
                got.add(j)
        cites.append(np.array(sorted(got), dtype=np.int64))
    n_train = int(round(N * (1 - cfg.test_fraction)))
    return SyntheticPapers(ids, primary, secondary, domain, cites, np.arange(n_train), np.arange(n_train, N))
