"""Real datasets (sources.py), corpora, tokenizers and token-stream iterators."""
