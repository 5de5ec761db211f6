"""Planetoid (thesis Y §3.3): graph-based semi-supervised learning with embeddings."""

from genfeat.models.planetoid.model import Planetoid, PlanetoidConfig
from genfeat.models.planetoid.sampler import ContextSampler, SamplerConfig
from genfeat.models.planetoid.train import PlanetoidMethod, PlanetoidTrainConfig, planetoid_method

__all__ = ["ContextSampler", "Planetoid", "PlanetoidConfig", "PlanetoidMethod", "PlanetoidTrainConfig", "SamplerConfig",
           "planetoid_method"]
