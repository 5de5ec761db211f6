"""genfeat: generative feature learning in modern PyTorch.

Models of Z. Yang, *Advances in Generative Feature Learning* (2019) and H.-S. Chang, *Modeling the
Multi-mode Distribution in Self-Supervised Language Models* (2022). See README.md and docs/.

Python API (genfeat/api.py): `genfeat.run_recipe(name, cfg, run_dir)`, `genfeat.load(run_dir)`,
`genfeat.generate(...)`, `genfeat.score(...)`, `genfeat.attach_head(hf_model, genfeat.named_head("mfs"))`.
"""

__version__ = "0.1.0"

_API = ("HFBackbone", "attach_head", "generate", "load", "named_head", "run_recipe", "score")


def __getattr__(name: str):
    """The Python API (`genfeat/api.py`), imported on first use: `import genfeat` and `genfeat --version` stay
    free of torch."""
    if name in _API:
        from genfeat import api

        return getattr(api, name)
    raise AttributeError(f"module 'genfeat' has no attribute {name!r}")
