"""REINFORCE with a baseline (Williams 1992, thesis Y ref. [181]; spec gdan.md §2.6): the score-function
estimate of ∇_θ E_{y ~ p_θ}[r(y)] from one sample per example,

    ∇ ≈ (1/B) Σ_b (r_b - b_b) ∇_θ log p_θ(y_b)

as the surrogate loss whose gradient it is, `reinforce_loss(log_prob, reward, baseline)` = -(1/B) Σ_b
(r_b - b_b) log p_θ(y_b), the rewards and baselines held constant. Baselines that leave the expectation unchanged
(they do not depend on the example's own sample):

    leave_one_out(r)   b_b = mean of the other samples' rewards (the batch's "average reward", unbiased)
    MovingAverage      an exponential moving average of past batches' mean rewards (for batches of one)
"""

from __future__ import annotations

from typing import Any

from torch import Tensor


def leave_one_out(reward: Tensor) -> Tensor:
    """(B,) -> (B,): each example's baseline is the mean reward of the other B - 1 (B >= 2)."""
    B = reward.numel()
    if B < 2:
        raise ValueError("leave_one_out needs at least two samples; use MovingAverage for batches of one")
    return (reward.sum() - reward) / (B - 1)


class MovingAverage:
    """b = the exponential moving average (decay `decay`) of the batches' mean rewards seen before this one."""

    def __init__(self, decay: float = 0.9):
        self.decay, self.value = decay, None

    def __call__(self, reward: Tensor) -> Tensor:
        b = reward.new_full(reward.shape, 0.0 if self.value is None else self.value)
        m = float(reward.mean())
        self.value = m if self.value is None else self.decay * self.value + (1 - self.decay) * m
        return b

    def state_dict(self) -> dict[str, Any]:
        return {"value": self.value}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.value = state["value"]


def reinforce_loss(log_prob: Tensor, reward: Tensor, baseline: Tensor | float = 0.0) -> Tensor:
    """log_prob (B,) = log p_θ(y_b) of each drawn sample (with gradient); reward, baseline (B,) constants ->
    the scalar surrogate whose gradient is the negated REINFORCE estimate (minimise it to ascend E[r])."""
    advantage = (reward - baseline).detach()
    return -(advantage * log_prob).mean()
