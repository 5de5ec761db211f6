"""The option generator's baselines (thesis C §4.3.2.3, Appendix C.2; spec interactive-generation.md §6.2):
centres in word-vector space that `models.interactive.topics.topic_vectors` turns into topics as it does the
option generator's.

    kmeans_local     k-means of the prompt's non-stop word vectors into K clusters (scikit-learn, random init,
                     n_init 1, at most 300 EM iterations, the reference's); a prompt with fewer than K distinct
                     words is padded by resampling them with replacement
    sample_local     K random non-stop prompt words
    kmeans_global    J clusters of the vocabulary's unit vectors once (scikit-learn k-means), then per prompt the
                     K topics closest (cosine) to the normalised sum of its non-stop word vectors
    lda_global       J LDA topics of the training documents (scikit-learn's online variational Bayes, in place of
                     gensim's LdaMulticore), each a centre = the probability-weighted mean of its top words'
                     vectors (the reference), selected per prompt as kmeans_global's
    sample_global    K random vocabulary words

Shapes: word vectors (n, E) unit rows -> centres (K, E); global tables (J, E).
"""

from __future__ import annotations

import warnings

import numpy as np


def _padded(vectors: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    uniq = np.unique(vectors, axis=0)
    if len(uniq) >= k:
        return vectors
    return np.concatenate([vectors, uniq[rng.integers(0, len(uniq), k - len(uniq))]])


def kmeans_local(vectors: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    if len(vectors) == 0:
        raise ValueError("the prompt has no non-stop word with a vector")
    rng = np.random.default_rng(seed)
    x = _padded(np.asarray(vectors, dtype=np.float64), k, rng)
    with warnings.catch_warnings():  # a padded prompt repeats its words: fewer distinct clusters than K is expected
        warnings.simplefilter("ignore", ConvergenceWarning)
        return KMeans(k, init="random", n_init=1, max_iter=300, random_state=seed).fit(x).cluster_centers_


def sample_local(vectors: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.asarray(vectors)[rng.integers(0, len(vectors), k)]


def kmeans_global(table: np.ndarray, j: int, seed: int = 0) -> np.ndarray:
    from sklearn.cluster import KMeans

    return KMeans(j, n_init=1, random_state=seed).fit(np.asarray(table, dtype=np.float64)).cluster_centers_


def lda_global(doc_word_counts, table: np.ndarray, j: int, top: int = 20, seed: int = 0) -> np.ndarray:
    """doc_word_counts (D, V) sparse or dense counts over the table's words -> (J, E) centres."""
    from sklearn.decomposition import LatentDirichletAllocation

    lda = LatentDirichletAllocation(j, learning_method="online", random_state=seed).fit(doc_word_counts)
    topics = lda.components_ / lda.components_.sum(1, keepdims=True)  # (J, V)
    best = np.argsort(-topics, 1)[:, :top]
    w = np.take_along_axis(topics, best, 1)  # (J, top)
    return (w[..., None] * np.asarray(table)[best]).sum(1) / w.sum(1, keepdims=True)


def select_global(topics: np.ndarray, prompt_vectors: np.ndarray, k: int) -> np.ndarray:
    """Indices of the K unit topics (J, E) of highest cosine to the normalised sum of the prompt's vectors."""
    q = np.asarray(prompt_vectors).sum(0)
    q = q / max(np.linalg.norm(q), 1e-12)
    return np.argsort(-(np.asarray(topics) @ q), kind="stable")[:k]
