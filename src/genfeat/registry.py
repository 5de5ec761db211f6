"""The one explicit registry of recipes and their presets (no import magic).

A recipe is a config dataclass, named preset functions returning configs, a `run(cfg, run_dir,
resume_from)` function, and, for language models, a loader used by `genfeat generate`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from genfeat.errors import ConfigError
from genfeat.recipes import (
    citation,
    facets,
    gan_ssl,
    gdan,
    heads_synthetic,
    interactive,
    lm,
    multi2spe,
    multi_cls_classify,
    multi_cls_pretrain,
    pixelcnn,
    planetoid,
    seqrec,
    transformer_xl,
    universal_schema,
    xlnet,
    xlnet_classify,
    xlnet_dependency,
    xlnet_race,
    xlnet_squad,
)


@dataclass(frozen=True)
class Recipe:
    name: str
    description: str
    config_cls: type
    presets: dict[str, Callable[[], Any]]
    run: Callable[..., dict[str, Any]]
    default_preset: str
    load_for_generation: Callable[..., Any] | None = None


RECIPES: dict[str, Recipe] = {
    "lm": Recipe("lm", "causal language model (GPT-style decoder + softmax head) on a real corpus",
                 lm.LMRunConfig, lm.PRESETS, lm.run, "quickstart", lm.load_for_generation),
    "transformer_xl": Recipe("transformer_xl", "Transformer-XL LM (thesis Y §2.1) and the vanilla-Transformer baseline",
                             transformer_xl.TXLRunConfig, transformer_xl.PRESETS, transformer_xl.run, "ptb",
                             transformer_xl.load_for_generation),
    "xlnet_pretrain": Recipe("xlnet_pretrain", "XLNet pretraining: permutation LM with two-stream attention and "
                             "memory, or the masked-LM baseline on the same network (thesis Y §2.2)",
                             xlnet.XLNetPretrainConfig, xlnet.PRETRAIN_PRESETS, xlnet.run_pretrain, "bbc_small"),
    "xlnet_classify": Recipe("xlnet_classify", "XLNet fine-tuning: sequence classification / regression (BBC News "
                             "with few labels, GLUE TSVs)", xlnet_classify.XLNetClassifyConfig,
                             xlnet_classify.PRESETS, xlnet_classify.run, "bbc_100"),
    "xlnet_race": Recipe("xlnet_race", "XLNet fine-tuning: RACE multiple choice", xlnet_race.XLNetRaceConfig,
                         xlnet_race.PRESETS, xlnet_race.run, "race"),
    "xlnet_squad": Recipe("xlnet_squad", "XLNet fine-tuning: SQuAD 2.0 span extraction with answerability",
                          xlnet_squad.XLNetSquadConfig, xlnet_squad.PRESETS, xlnet_squad.run, "squad2"),
    "xlnet_dependency": Recipe("xlnet_dependency", "XLNet's mechanism on synthetic data with analytic optima: the "
                               "permutation LM vs a masked LM (D1) or a left-to-right LM (D2) (thesis Y §2.2)",
                               xlnet_dependency.XLNetDependencyConfig, xlnet_dependency.PRESETS, xlnet_dependency.run,
                               "spec"),
    "planetoid": Recipe("planetoid", "graph semi-supervised node classification: Planetoid-T/I/G (thesis Y §3.3) "
                        "and baselines (Feat, LP, GraphEmb, GCN)", planetoid.PlanetoidRunConfig, planetoid.PRESETS,
                        planetoid.run, "linuxdoc"),
    "heads_synthetic": Recipe("heads_synthetic", "an output head's capacity for a multimodal next-word distribution "
                              "on a planted parallelogram (thesis C §2.2-2.4, spec S2)",
                              heads_synthetic.HeadsSyntheticConfig, heads_synthetic.PRESETS, heads_synthetic.run,
                              "s2"),
    "seqrec": Recipe("seqrec", "sequential recommendation: SASRec / GRU4Rec with every output head, RepeatNet "
                     "(thesis C §2.5)", seqrec.SeqRecRunConfig, seqrec.PRESETS, seqrec.run, "sasrec_ml100k"),
    "gan_ssl": Recipe("gan_ssl", "complement-GAN semi-supervised image classification: FM, LD, PT, VI, Ent and the "
                      "supervised baseline (thesis Y §3.1)", gan_ssl.GanSSLRunConfig, gan_ssl.PRESETS, gan_ssl.run,
                      "mnist_100"),
    "facets": Recipe("facets", "multi-facet sentence embeddings: K facets predicting the cluster centres of the "
                     "neighbouring sentences' words, NNSC loss (thesis C §3.2)", facets.FacetRunConfig,
                     facets.PRESETS, facets.run, "bbc_glove50"),
    "multi_cls_pretrain": Recipe("multi_cls_pretrain", "Multi-CLS BERT continued pretraining: K facet CLS tokens, "
                                 "MLM + TF-IDF + SO + MCQT with hard negatives (thesis C §5.2)",
                                 multi_cls_pretrain.MultiCLSPretrainConfig, multi_cls_pretrain.PRESETS,
                                 multi_cls_pretrain.run, "minilm_bbc"),
    "multi_cls_classify": Recipe("multi_cls_classify", "Multi-CLS BERT (or plain BERT) few-shot fine-tuning with the "
                                 "mean-subtracted facet aggregation; accuracy and ECE (thesis C §5.2)",
                                 multi_cls_classify.MultiCLSClassifyConfig, multi_cls_classify.PRESETS,
                                 multi_cls_classify.run, "bbc"),
    "universal_schema": Recipe("universal_schema", "multi-facet universal schema: relation extraction and pattern "
                               "entailment (thesis C §3.3), with the USchema / CUSchema baselines",
                               universal_schema.UniversalSchemaRunConfig, universal_schema.PRESETS,
                               universal_schema.run, "tiny"),
    "interactive": Recipe("interactive", "interactive topic-controlled generation: an option generator of K topics "
                          "and a conditional GPT generator that reads them (thesis C §4)",
                          interactive.InteractiveRunConfig, interactive.PRESETS, interactive.run, "tiny"),
    "citation": Recipe("citation", "cold-start citation and authorship prediction with multi-facet paper embeddings "
                       "(thesis C §3.4)", citation.CitationRunConfig, citation.PRESETS, citation.run, "tiny"),
    "gdan": Recipe("gdan", "GDAN: semi-supervised QA with generated questions, domain tags and REINFORCE (thesis Y "
                   "§3.2)", gdan.GDANRunConfig, gdan.PRESETS, gdan.run, "tiny"),
    "multi2spe": Recipe("multi2spe", "Multi²SPE: a multi-CLS paper encoder trained on citation triplets (thesis C "
                        "§5.3)", multi2spe.Multi2SPERunConfig, multi2spe.PRESETS, multi2spe.run, "tiny"),
    "pixelcnn": Recipe("pixelcnn", "PixelCNN density model of training images (the frozen p(x) of the LD term)",
                       pixelcnn.PixelCNNRunConfig, pixelcnn.PRESETS, pixelcnn.run, "mnist"),
}

# Short names for common (recipe, preset) pairs.
ALIASES: dict[str, tuple[str, str]] = {"quickstart": ("lm", "quickstart")}


def get_recipe(name: str) -> tuple[Recipe, str | None]:
    """Recipe by name or alias; also returns the alias's preset (None for a plain recipe name)."""
    if name in ALIASES:
        recipe, preset = ALIASES[name]
        return RECIPES[recipe], preset
    if name not in RECIPES:
        raise ConfigError(f"unknown recipe {name!r}; available: {', '.join([*RECIPES, *ALIASES])} "
                          "(see `genfeat ls`)")
    return RECIPES[name], None


def get_preset(recipe: Recipe, preset: str) -> Any:
    if preset not in recipe.presets:
        raise ConfigError(f"recipe {recipe.name!r} has no preset {preset!r}; presets: "
                          f"{', '.join(recipe.presets)}")
    return recipe.presets[preset]()
