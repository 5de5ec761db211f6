"""The synthetic citation graph of spec citation-prediction.md §13.1 (deterministic per seed): papers with several
latent topics, citing papers (and authors) with one topic each, so that one paper vector in a space with fewer
dimensions than topics cannot sit close to all its citers (the capacity-limited regime where K facets help).

    topics      `n_topics` (30), each with `words_per_topic` (8) words, plus `n_generic` (20) generic words
    papers      `n_papers` (3,000), each with `topics_per_paper` (3) distinct topics (or a mixture of topic
                counts, `topic_counts` with their probabilities: R2's 30 % one-topic, 70 % two-topic); text = 5
                random words of each of its topics + 3 generic words, shuffled; the last `n_test` (500) papers are
                the cold-start test set, `n_valid` (250) of the others validation
    citers      `n_citers` (200), each with one topic; cites paper i with probability 0.8 when i has its topic
    authors     `n_authors` (150), each with a home topic; writes paper i with probability 0.3 when i has it

`oracle_scores` scores a (column, paper) 1 when the paper has the column's topic (R3's sanity ceiling).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genfeat.data.citations import EOS, SPECIALS, CitationData


@dataclass(frozen=True)
class SyntheticCitationConfig:
    n_topics: int = 30
    words_per_topic: int = 8
    n_generic: int = 20
    n_papers: int = 3000
    n_test: int = 500
    n_valid: int = 250
    topics_per_paper: int = 3
    topic_counts: tuple[float, ...] = ()  # probabilities of 1, 2, ... topics; empty: always topics_per_paper
    words_per_paper_topic: int = 5
    generic_per_paper: int = 3
    n_citers: int = 200
    cite_prob: float = 0.8
    n_authors: int = 150
    author_prob: float = 0.3
    seed: int = 0


@dataclass
class SyntheticCitations:
    data: CitationData
    paper_topics: list[np.ndarray]
    citer_topic: np.ndarray  # (n_citers,)
    author_topic: np.ndarray  # (n_authors,)

    def oracle_scores(self, kind: str, papers: np.ndarray) -> np.ndarray:
        """(n_columns, len(papers)) 1.0 where the paper has the column's topic."""
        topic = self.author_topic if kind == "author" else self.citer_topic
        has = np.zeros((len(papers), int(topic.max()) + 1 if len(topic) else 0), dtype=bool)
        for r, i in enumerate(papers):
            has[r, self.paper_topics[i][self.paper_topics[i] < has.shape[1]]] = True
        return has[:, topic].T.astype(np.float64)


def synthetic_citations(cfg: SyntheticCitationConfig) -> SyntheticCitations:
    rng = np.random.default_rng(cfg.seed)
    s = len(SPECIALS)
    topic_words = s + np.arange(cfg.n_topics * cfg.words_per_topic).reshape(cfg.n_topics, cfg.words_per_topic)
    generic = s + cfg.n_topics * cfg.words_per_topic + np.arange(cfg.n_generic)
    vocab = [*SPECIALS, *(f"t{t}w{w}" for t in range(cfg.n_topics) for w in range(cfg.words_per_topic)),
             *(f"g{g}" for g in range(cfg.n_generic))]
    paper_topics, texts = [], []
    for _ in range(cfg.n_papers):
        m = cfg.topics_per_paper if not cfg.topic_counts else \
            1 + int(rng.choice(len(cfg.topic_counts), p=np.asarray(cfg.topic_counts) / sum(cfg.topic_counts)))
        topics = rng.choice(cfg.n_topics, size=m, replace=False)
        text = np.concatenate([*(rng.choice(topic_words[t], cfg.words_per_paper_topic) for t in topics),
                               rng.choice(generic, cfg.generic_per_paper)])
        paper_topics.append(np.sort(topics))
        texts.append(rng.permutation(text))
    width = max(len(t) for t in texts) + 1
    input_ids = np.zeros((cfg.n_papers, width), dtype=np.int64)
    for i, t in enumerate(texts):
        input_ids[i, width - len(t) - 1:] = [*t, EOS]
    has = np.zeros((cfg.n_papers, cfg.n_topics), dtype=bool)
    for i, t in enumerate(paper_topics):
        has[i, t] = True
    citer_topic = rng.integers(cfg.n_topics, size=cfg.n_citers)
    author_topic = rng.integers(cfg.n_topics, size=cfg.n_authors)

    def links(topic: np.ndarray, p: float) -> np.ndarray:
        hit = has[:, topic] & (rng.random((cfg.n_papers, len(topic))) < p)  # (papers, columns)
        return np.argwhere(hit).astype(np.int64)

    split = np.zeros(cfg.n_papers, dtype=np.int8)
    split[cfg.n_papers - cfg.n_test:] = 2
    split[rng.choice(cfg.n_papers - cfg.n_test, cfg.n_valid, replace=False)] = 1
    data = CitationData(f"synthetic citations (seed {cfg.seed})", input_ids, np.ones_like(input_ids), split,
                        links(author_topic, cfg.author_prob), links(citer_topic, cfg.cite_prob), cfg.n_authors,
                        cfg.n_citers, vocab)
    return SyntheticCitations(data, paper_topics, citer_topic, author_topic)
