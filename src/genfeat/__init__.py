"""genfeat: generative feature learning in modern PyTorch.

Models of Z. Yang, *Advances in Generative Feature Learning* (2019) and H.-S. Chang, *Modeling the
Multi-mode Distribution in Self-Supervised Language Models* (2022). See README.md and docs/.
"""

__version__ = "0.1.0"
