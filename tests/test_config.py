import dataclasses
from dataclasses import dataclass, field
from typing import Literal

import pytest

from genfeat.config import ConfigError, coerce, dump_yaml, from_dict, load_yaml, override, require_at_least, to_dict


@dataclass(frozen=True)
class Inner:
    lr: float = 1e-3
    steps: int = 10
    mode: Literal["a", "b"] = "a"
    betas: tuple[float, float] = (0.9, 0.99)
    name: str | None = None

    def __post_init__(self):
        if self.steps < 0:
            raise ValueError("steps must be >= 0")


@dataclass(frozen=True)
class Outer:
    seed: int = 0
    flag: bool = False
    inner: Inner = field(default_factory=Inner)


def test_coerce_types():
    assert coerce("3e-4", float, "x") == 3e-4
    assert coerce("1_000", int, "x") == 1000
    assert coerce("1e3", int, "x") == 1000
    assert coerce("yes", bool, "x") is True
    assert coerce("none", int | None, "x") is None
    assert coerce("0.8,0.9", tuple[float, float], "x") == (0.8, 0.9)
    assert coerce("b", Literal["a", "b"], "x") == "b"


@pytest.mark.parametrize(("value", "tp"), [("abc", int), ("1.5", int), ("maybe", bool), ("c", Literal["a", "b"]),
                                           ("1,2,3", tuple[float, float]), (True, int), (True, float),
                                           ("nan", float), (float("inf"), float), ("0.9,-inf", tuple[float, float]),
                                           (float("nan"), float | None)])  # a YAML .nan / .inf too
def test_coerce_rejects(value, tp):
    with pytest.raises(ConfigError, match="field"):
        coerce(value, tp, "field")


def test_override_returns_new_object_and_checks_names():
    cfg = Outer()
    new = override(cfg, {"inner.lr": "0.5", "flag": "true", "inner.mode": "b"})
    assert new.inner.lr == 0.5 and new.flag and new.inner.mode == "b"
    assert cfg.inner.lr == 1e-3  # unchanged
    with pytest.raises(ConfigError, match=r"unknown field inner.lrr; did you mean inner.lr\? \(valid fields of "
                                          r"inner: .*lr"):
        override(cfg, {"inner.lrr": "1"})
    with pytest.raises(ConfigError, match="unknown field nope"):
        override(cfg, {"nope": "1"})
    with pytest.raises(ConfigError, match="inner.steps: expected an integer"):
        override(cfg, {"inner.steps": "many"})
    with pytest.raises(ConfigError, match="steps must be >= 0"):
        override(cfg, {"inner.steps": "-1"})
    with pytest.raises(ConfigError, match="seed is not a config section"):
        override(cfg, {"seed.x": "1"})


def test_overrides_are_validated_together_in_any_order():
    """A constraint between two fields holds after all overrides, not after each (the README's
    `--data.tokenizer bpe --data.vocab_size 8000`)."""
    from genfeat.models.gpt import GPTConfig

    for order in (["n_head", "d_model"], ["d_model", "n_head"]):
        vals = {"n_head": "3", "d_model": "48"}
        cfg = override(GPTConfig(), {k: vals[k] for k in order})
        assert (cfg.n_head, cfg.d_model) == (3, 48)
    with pytest.raises(ConfigError, match="divisible"):
        override(GPTConfig(), {"n_head": "5"})


def test_yaml_round_trip(tmp_path):
    cfg = override(Outer(), {"inner.betas": "0.1,0.2", "inner.name": "x"})
    path = tmp_path / "c.yaml"
    path.write_text(dump_yaml(to_dict(cfg)))
    assert from_dict(Outer, load_yaml(path)) == cfg
    with pytest.raises(ConfigError, match="unknown field inner.bogus"):
        from_dict(Outer, {"inner": {"bogus": 1}})
    path.write_text("a: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_yaml(path)


def test_override_fills_an_optional_section_left_at_none():
    from genfeat.recipes import transformer_xl as T

    cfg = override(T.tiny(), {"model.head.kind": "multi_facet", "model.head.context": "true"})
    assert cfg.model.head.kind == "multi_facet" and cfg.model.head.context and cfg.model.head.num_softmax == 1
    assert T.tiny().model.head is None


def test_every_preset_of_every_recipe_builds():
    """A preset whose config fails its own checks (e.g. a byte-level LM without a sample prompt) is caught here,
    not at the end of a long run."""
    from genfeat.registry import RECIPES, get_preset

    for recipe in RECIPES.values():
        for name in recipe.presets:
            assert get_preset(recipe, name) is not None, (recipe.name, name)


def test_a_named_head_is_selected_the_same_way_on_every_backbone():
    """`--model.head NAME` takes a registry head on the LM and the recommender alike; a field override applies
    to the named head whatever the order of the flags."""
    from genfeat.heads.config import HEADS
    from genfeat.recipes import lm, seqrec

    for cfg in (lm.quickstart(), seqrec.PRESETS["sasrec_ml100k"]()):
        assert override(cfg, {"model.head": "mfs"}).model.head == HEADS["mfs"]
        a = override(cfg, {"model.head.num_softmax": "4", "model.head": "mfs"}).model.head
        b = override(cfg, {"model.head": "mfs", "model.head.num_softmax": "4"}).model.head
        assert a == b == dataclasses.replace(HEADS["mfs"], num_softmax=4)
        with pytest.raises(ConfigError, match="model.head: unknown head 'nope'"):
            override(cfg, {"model.head": "nope"})


def test_require_at_least_names_every_low_field_and_skips_none():
    @dataclass(frozen=True)
    class C:
        a: int = 0
        b: float = -0.5
        c: int | None = None
        d: int = 3

    with pytest.raises(ConfigError, match=r"^train.a=0, train.b=-0.5: must be >= 1$"):
        require_at_least(C(), 1, "a", "b", "c", "d", prefix="train.")
    require_at_least(C(), 0, "a", "c", "d")  # at the minimum, or None: accepted
