"""Semi-supervised QA with generated questions and domain adaptation (thesis Y §3.2.4, Algorithm 1; spec gdan.md
§2.6-§2.8) as a `train.step.Step` over a `models.gdan.GDAN`: the compared methods of Table 3.4 are one method
description each.

    Method(pseudo, tags, reward)
      pseudo   "none": D reads the labelled set L only | "context": L + the Context pseudo-questions of the
               unlabelled pairs U (precomputed in U's rows) | "generated": L + questions G draws for U on the fly
      tags     append the domain tags (d_true to L, d_gen to U's questions); test time reads d_true
      reward   None: G fixed (MLE only) | "true": G trained by REINFORCE with D's log P(a | p, q) under d_true
               (GDAN, Eq. 3.9) | "gen": the same under d_gen (dual learning) | "domain": log P(human) of a domain
               classifier on D's mean-pooled paragraph states (Gen + GAN)

One training step = `t_d` D updates then `t_g` G updates (when G is trained); `d_update_budget` turns a budget
and evaluation period counted in D updates into steps, `adaptation_batches` draws the step's data streams:

    D update   data "joint" (a labelled and an unlabelled batch; "labelled" alone when pseudo is "none"):
               -(mean_L log P_D,tag_true(a | p, q) + mean_U log P_D,tag_gen(a | p, q_G)), each batch averaged on its
               own (Eq. 3.8, J's averaging); Gen + GAN adds the domain classifier's cross-entropy on detached states
    G update   data "unlabelled_g": one question sampled per pair, the reward under D in eval mode without gradient,
               the leave-one-out batch-mean baseline, `losses.reinforce.reinforce_loss`; Gen + GAN and Gen + dual
               scale it by λ(p) = 2 / (1 + exp(-10 p)) - 1, p the fraction of training done (thesis ref. [43])

Logged parts: labelled_nll, generated_nll (-J(U_G, d_gen, D) of the D update: Fig. 3.8), reward (the G update's
mean reward). `tail_generated_nll`: the mean generated_nll of the D updates in the last 20 % of the steps (spec
§5.2 Q2). The sampling stream of G's questions and that running mean are the method's state (checkpointed).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from genfeat.data.batches import StreamBatches, ZipBatches
from genfeat.data.qa import trim_rows
from genfeat.errors import ConfigError
from genfeat.losses.reinforce import leave_one_out, reinforce_loss
from genfeat.models.gdan import GDAN
from genfeat.models.gdan.reader import answer_log_likelihood
from genfeat.tasks.word_span_qa import reader_inputs
from genfeat.train.loop import TrainConfig
from genfeat.train.step import Step, Update


@dataclass(frozen=True)
class Method:
    pseudo: str = "none"
    tags: bool = False
    reward: str | None = None

    def __post_init__(self) -> None:
        if self.pseudo not in ("none", "context", "generated"):
            raise ValueError(f"pseudo must be none, context or generated, got {self.pseudo!r}")
        if self.reward not in (None, "true", "gen", "domain"):
            raise ValueError(f"reward must be None, true, gen or domain, got {self.reward!r}")
        if self.reward is not None and self.pseudo != "generated":
            raise ValueError("a trained generator needs pseudo='generated'")
        if self.reward == "gen" and not self.tags:
            raise ValueError("the dual-learning reward reads the d_gen tag: tags=True")

    @property
    def uses_generator(self) -> bool:
        return self.pseudo == "generated"


# Table 3.4's rows, plus the passage-only control (the same as SL; its recipe blanks every question)
METHODS = {
    "sl": Method(), "passage_only": Method(),
    "context": Method("context"), "context_domain": Method("context", tags=True),
    "gen": Method("generated"), "gen_gan": Method("generated", reward="domain"),
    "gen_dual": Method("generated", tags=True, reward="gen"), "gen_domain": Method("generated", tags=True),
    "gdan": Method("generated", tags=True, reward="true"),
}


@dataclass(frozen=True)
class GDANMethodConfig:
    """The `adapt.*` section of a run: the alternation and the two learning rates."""

    t_d: int = 5  # D updates per round (methods that train G)
    t_g: int = 1  # G updates per round
    lr_d: float = 5e-4
    lr_g: float = 1e-4  # G's REINFORCE learning rate (its MLE phase: generator_train.lr)
    greedy: bool = False  # D's generated questions: sampled (default) or greedy

    def __post_init__(self) -> None:
        if min(self.t_d, self.t_g) < 1 or not (self.lr_d > 0 and self.lr_g > 0):
            raise ConfigError("adapt.t_d and t_g must be >= 1, adapt.lr_d and lr_g > 0")


def d_update_budget(train: TrainConfig, method: Method, t_d: int) -> tuple[int, TrainConfig]:
    """(D updates a step, `train` with max_steps and eval_every in steps): a method that trains G takes `t_d` D
    updates a step, so `train`'s counts (D updates) must be multiples of it; the others one."""
    rounds = t_d if method.reward is not None else 1
    if train.max_steps % rounds or train.eval_every % rounds:
        raise ConfigError(f"train.max_steps and train.eval_every count D updates: multiples of adapt.t_d={rounds}")
    return rounds, dataclasses.replace(train, max_steps=train.max_steps // rounds,
                                       eval_every=train.eval_every // rounds)


def adaptation_batches(method: Method, labelled: Any, unlabelled: Any, batch_size: int, rng: np.random.Generator
                       ) -> dict[str, Any]:
    """The step's data streams over `data.qa.qa_rows`, drawn from `rng` in this order: "labelled" (pseudo "none")
    or "joint" (a labelled and an unlabelled batch a D update), and "unlabelled_g" for G's updates."""
    if method.pseudo == "none":
        batches: dict[str, Any] = {"labelled": StreamBatches(labelled, batch_size, rng)}
    else:
        batches = {"joint": ZipBatches({"labelled": StreamBatches(labelled, batch_size, rng),
                                        "unlabelled": StreamBatches(unlabelled, batch_size, rng)})}
    if method.reward is not None:
        batches["unlabelled_g"] = StreamBatches(unlabelled, batch_size, rng)
    return batches


def dann_lambda(progress: float) -> float:
    """λ(p) = 2 / (1 + exp(-10 p)) - 1 (Ganin & Lempitsky 2015, thesis ref. [43])."""
    return 2.0 / (1.0 + math.exp(-10.0 * progress)) - 1.0


class GenerativeAdaptation(Step):
    def __init__(self, model: GDAN, method: Method, *, lr_d: float, lr_g: float, t_d: int = 1, t_g: int = 1,
                 max_steps: int, seed: int = 0, greedy: bool = False):
        if method.uses_generator and model.generator is None:
            raise ValueError("this method needs the model's generator")
        if method.reward == "domain" and model.domain is None:
            raise ValueError("Gen + GAN needs the model's domain classifier")
        if (model.tags is not None) != method.tags:
            raise ValueError("the model's domain tags and the method's disagree")
        self.model, self.method, self.t_d, self.t_g = model, method, t_d, t_g
        self.max_steps, self.greedy, self.step = max_steps, greedy, 0
        self.tail = [0.0, 0]  # sum and count of generated_nll over the last 20 % of the steps
        d_params = list(model.reader.parameters()) + (list(model.domain.parameters()) if model.domain else [])
        self.optimizers = {"d": torch.optim.Adam(d_params, lr=lr_d)}
        if method.reward is not None:
            self.optimizers["g"] = torch.optim.Adam(model.generator.parameters(), lr=lr_g)
        self.gen = torch.Generator().manual_seed(seed)
        data = "labelled" if method.pseudo == "none" else "joint"
        self._d = Update(self.d_loss, "d", data=data, name="d_loss")
        self._g = Update(self.g_loss, "g", data="unlabelled_g", name="g_loss")

    def updates(self, step: int) -> Sequence[Update]:
        self.step = step
        return [self._d] * self.t_d + ([self._g] * self.t_g if self.method.reward is not None else [])

    def questions(self, model: GDAN, rows: Mapping[str, Tensor]) -> dict[str, Tensor]:
        """U's rows with G's questions in place of their own (sampled, or greedy), no gradient to G."""
        g = model.generator
        enc = g.encode(rows["paragraph"], rows["paragraph_mask"], rows["answer_mask"])
        s = g.sample(enc, greedy=self.greedy, generator=self.gen)
        return trim_rows({**rows, "question": s.questions, "question_mask": s.question_mask})

    def d_loss(self, model: GDAN, batch: Any):
        m = self.method
        device = next(model.parameters()).device
        lab = batch if m.pseudo == "none" else batch["labelled"]
        lab = trim_rows({k: v.to(device) for k, v in lab.items()})
        out_l = model.read(**reader_inputs(lab), tag="true")
        nll_l = -answer_log_likelihood(out_l, lab).mean()
        if m.pseudo == "none":
            return nll_l, len(lab["start"])
        unl = trim_rows({k: v.to(device) for k, v in batch["unlabelled"].items()})
        if m.pseudo == "generated":
            unl = self.questions(model, unl)
        out_u = model.read(**reader_inputs(unl), tag="gen")
        nll_u = -answer_log_likelihood(out_u, unl).mean()
        loss = nll_l + nll_u
        parts = {"labelled_nll": nll_l.item(), "generated_nll": nll_u.item()}
        if self.step + 1 > 0.8 * self.max_steps:  # the step's 1-based index in the last 20 %
            self.tail = [self.tail[0] + parts["generated_nll"], self.tail[1] + 1]
        if m.reward == "domain":
            human = model.domain_logit(out_l["states"].detach(), lab["paragraph_mask"])
            generated = model.domain_logit(out_u["states"].detach(), unl["paragraph_mask"])
            dom = F.binary_cross_entropy_with_logits(human, torch.ones_like(human)) + \
                F.binary_cross_entropy_with_logits(generated, torch.zeros_like(generated))
            loss = loss + dom
            parts["domain_loss"] = dom.item()
        return loss, len(lab["start"]) + len(unl["start"]), parts

    def rewards(self, model: GDAN, rows: Mapping[str, Tensor]) -> Tensor:
        """The reward of each row's question (rows hold G's questions) under D in eval mode, without gradient."""
        reader, was = model.reader, model.reader.training
        reader.eval()
        with torch.no_grad():
            tag = "gen" if self.method.reward == "gen" else "true"
            out = model.read(**reader_inputs(rows), tag=tag)
            if self.method.reward == "domain":
                r = F.logsigmoid(model.domain_logit(out["states"], rows["paragraph_mask"]))
            else:
                r = answer_log_likelihood(out, rows)
        reader.train(was)
        return r

    def g_loss(self, model: GDAN, batch: Mapping[str, Tensor]):
        device = next(model.parameters()).device
        rows = trim_rows({k: v.to(device) for k, v in batch.items()})
        g = model.generator
        enc = g.encode(rows["paragraph"], rows["paragraph_mask"], rows["answer_mask"])
        s = g.sample(enc, generator=self.gen)  # REINFORCE needs samples, never greedy (pitfall 4)
        reward = self.rewards(model, {**rows, "question": s.questions, "question_mask": s.question_mask})
        log_prob = g.token_log_probs(enc, s.targets, s.target_mask).sum(1)  # (B,) <eos> included
        weight = 1.0 if self.method.reward == "true" else dann_lambda(self.step / max(self.max_steps, 1))
        loss = weight * reinforce_loss(log_prob, reward, leave_one_out(reward))
        return loss, len(reward), {"reward": reward.mean().item()}

    @property
    def tail_generated_nll(self) -> float | None:
        return self.tail[0] / self.tail[1] if self.tail[1] else None

    def state_dict(self) -> dict[str, Any]:
        return {"gen": self.gen.get_state(), "tail": list(self.tail)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.gen.set_state(state["gen"])
        self.tail = list(state["tail"])
