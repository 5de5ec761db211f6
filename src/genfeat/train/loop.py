"""The training loop: small and explicit. The only one in genfeat.

    for step in range(start, max_steps):
        for update in method.updates(step):        # one for most methods; D then G for a GAN; a schedule's
            for micro in range(grad_accum):        #   alternation for Planetoid (train/step.py)
                loss, n_items = update.loss_fn(model, next(data))   # under autocast; DDP/FSDP gradient
                (loss / grad_accum).backward()                       #   sync only on the last micro-batch
            stop on NaN/inf loss (the last good checkpoint stays), clip, optimizer.step(); its optimizer's
            gradients are zeroed before and after (none is left on a parameter another update shares)
            under torchrun a model that is not DDP/FSDP-wrapped (a Step over several networks, whose updates
            run several forwards per backward and hold networks, which DDP's reducer does not allow) has its
            gradients averaged over the ranks before the step, as DDP would
        every scheduler.step()   (with `plateau_factor` < 1 every learning rate is also multiplied by it after each
                                  evaluation that does not improve on the best: thesis C's "lr ÷ 4")
        log every `log_every` (tqdm on rank 0, metrics.jsonl, TensorBoard), evaluate + checkpoint
        every `eval_every`, stop early after `patience` evaluations without improvement

`loss_fn(model, batch) -> (mean loss tensor, how many items it averaged over)`: target tokens for a language
model, examples for a classifier, named by `fit(..., unit=)` in the logs (`{unit}`, `{unit}_per_s`) and the
progress bar (`{unit}_s`); under torchrun the rank's count, or the global count / W where the ranks' shares differ
(the loop counts W × it); `evaluate(model) -> {name:
value}` (e.g. valid_loss, valid_ppl). The data iterators and the method (`Step.state_dict`: a loss's memory, a
schedule's random stream) are checkpointed with the weights, every optimizer and scheduler and every RNG, so
`fit(..., resume_from=ckpt)` continues exactly: on CPU the weights after k steps + resume + (N - k) steps are
bitwise identical to N steps in one go (tests/train/test_resume.py, and a test per recipe).
"""

from __future__ import annotations

import contextlib
import json
import math
import signal
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn
from tqdm.auto import tqdm

from genfeat.config import ConfigError, atomic_write_text
from genfeat.errors import DivergenceError, Interrupted
from genfeat.train import checkpoint as C
from genfeat.train import distributed as D
from genfeat.train.logging import MetricsLogger, plot_loss_curve, read_metrics
from genfeat.train.optim import adam
from genfeat.train.step import LossFn, OneLoss, Step


@dataclass(frozen=True)
class TrainConfig:
    max_steps: int | None = 1000  # None: the recipe's own budget (seqrec: epochs x steps per epoch)
    lr: float = 3e-4
    min_lr_ratio: float = 0.1  # cosine/linear decay floor, as a fraction of lr
    warmup_steps: int = 100  # at most a fifth of max_steps (at least 1): a shortened run warms up for less
    schedule: Literal["cosine", "linear", "inverse_sqrt", "constant"] = "cosine"
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    grad_accum: int = 1
    clip_norm: float = 1.0  # 0: no clipping
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"  # auto: bf16 on CUDA if supported
    device: str = "auto"
    distributed: Literal["ddp", "fsdp"] = "ddp"
    log_every: int = 10
    eval_every: int = 200  # 0: only at the end
    eval_from: int = 0  # evaluate at eval_from + k * eval_every (k >= 1): a warm-up that is not evaluated
    ckpt_every: int = 0  # 0: at every evaluation
    keep_last: int = 2
    early_stop_metric: str = "valid_loss"
    early_stop_mode: Literal["min", "max"] = "min"
    patience: int = 0  # evaluations without improvement before stopping; 0: never stop early
    plateau_factor: float = 1.0  # every evaluation without improvement multiplies every optimizer's learning rate
    #                              by this, on top of its schedule (the reference code of thesis C §3.2-3.3: 0.25,
    #                              "lr ÷ 4 when validation stops improving"); 1: off
    reschedule: bool = False  # a resume with another max_steps: accept a schedule recomputed over the new budget
    #                           even where it moves the learning rate at the resumed step (`fit`: else refused)

    def __post_init__(self):
        for name in ("max_steps", "grad_accum", "log_every", "keep_last"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        for name in ("warmup_steps", "eval_every", "eval_from", "ckpt_every", "patience"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if not math.isfinite(self.lr) or self.lr <= 0:
            raise ValueError(f"lr must be a finite number > 0, got {self.lr}")
        if not 0.0 <= self.min_lr_ratio <= 1.0:  # below 0 the schedule's last steps would ascend the loss
            raise ValueError(f"min_lr_ratio is a fraction of lr in [0, 1], got {self.min_lr_ratio}")
        if self.weight_decay < 0 or self.clip_norm < 0:
            raise ValueError(f"weight_decay and clip_norm must be >= 0 (clip_norm 0: no clipping), got "
                             f"{self.weight_decay} and {self.clip_norm}")
        if not 0.0 < self.plateau_factor <= 1.0:
            raise ValueError(f"plateau_factor multiplies the learning rate after a bad evaluation: in (0, 1], got "
                             f"{self.plateau_factor}")
        if not all(0.0 <= b < 1.0 for b in self.betas):
            raise ValueError(f"betas must be in [0, 1), got {self.betas}")


@dataclass
class FitResult:
    step: int
    count: int  # the loss functions' items over the whole run (resumes included), in `unit`
    wall_time: float  # everything, including evaluation and checkpoints
    unit: str = "tokens"  # what `count` counts: `fit`'s unit
    train_time: float = 0.0  # inside training steps, over the whole run (resumes included): count_per_s's denominator
    start_step: int = 0  # the step this call started from (a resumed run's checkpoint)
    best_metric: float | None = None
    best_step: int | None = None
    best_eval: dict[str, Any] = field(default_factory=dict)  # the evaluation at best_step (kept across resumes)
    stopped_early: bool = False
    interrupted: bool = False
    evals: list[dict[str, Any]] = field(default_factory=list)

    @property
    def count_per_s(self) -> float:
        return self.count / max(self.train_time, 1e-9)


def check_early_stop_metric(cfg: TrainConfig, metrics: Iterable[str]) -> None:
    """Raise ConfigError unless `cfg.early_stop_metric` is one of `metrics`, the names the run's evaluation will
    report. Recipes that know those names call it before loading data; `fit` checks the metric again at the first
    evaluation, for callers that cannot list them."""
    metrics = list(metrics)
    if cfg.early_stop_metric not in metrics:
        raise ConfigError(f"train.early_stop_metric={cfg.early_stop_metric!r} is not an evaluation metric of this "
                          f"run: {', '.join(metrics)}")


def effective_warmup(warmup: int, max_steps: int) -> int:
    """The warm-up actually used: `warmup` steps, but never more than a fifth of the run (at least one step when
    there is any), so `--train.max_steps` well below a preset's budget shortens the warm-up with it. Every preset's
    warm-up is within a fifth of its budget (the largest: SQuAD's 1,000 of 8,000), so presets keep theirs."""
    return min(warmup, max(1, max_steps // 5)) if warmup else 0


def lr_lambda(cfg: TrainConfig) -> Callable[[int], float]:
    """Multiplier of cfg.lr at step s (0-based): linear warmup (`effective_warmup`), then the chosen decay."""
    w, total, floor = effective_warmup(cfg.warmup_steps, cfg.max_steps), cfg.max_steps, cfg.min_lr_ratio

    def f(s: int) -> float:
        if s < w:
            return (s + 1) / w
        if cfg.schedule == "constant":
            return 1.0
        if cfg.schedule == "inverse_sqrt":
            return math.sqrt(max(w, 1) / (s + 1))
        progress = min(1.0, (s - w) / max(1, total - w))
        if cfg.schedule == "linear":
            return floor + (1 - floor) * (1 - progress)
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))

    return f


def build_optimizer(model: nn.Module, cfg: TrainConfig, fast: Iterable[nn.Parameter] = (),
                    fast_lr: float = 0.0, exclude: Iterable[nn.Parameter] = ()) -> torch.optim.AdamW:
    """AdamW (fused: `train.optim.adam`); no weight decay on biases, norms and other 1-D parameters. With
    `fast_lr` > 0 the parameters in `fast` train at `fast_lr` and the others at cfg.lr (new heads on a pretrained
    encoder); the schedule scales both. `exclude`: parameters another optimizer trains."""
    fast_ids = {id(p) for p in fast} if fast_lr > 0 else set()
    skip = {id(p) for p in exclude}
    decay, no_decay, fast_decay, fast_no_decay = [], [], [], []
    for p in model.parameters():
        if p.requires_grad and id(p) not in skip:
            if id(p) in fast_ids:
                (fast_decay if p.dim() >= 2 else fast_no_decay).append(p)
            else:
                (decay if p.dim() >= 2 else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    groups += [{"params": ps, "weight_decay": wd, "lr": fast_lr}
               for ps, wd in ((fast_decay, cfg.weight_decay), (fast_no_decay, 0.0)) if ps]
    return adam(groups, lr=cfg.lr, betas=cfg.betas)


def _global_count(n: float, device: torch.device) -> int | float:
    """The sum over the ranks of a micro-batch's count (ranks may hold different numbers of tokens or targets)."""
    total = D.all_reduce_sum(torch.tensor(float(n), dtype=torch.float64, device=device)).item()
    return round(total) if float(total).is_integer() else total


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    if precision == "fp32":
        return None
    if precision == "auto":
        return torch.bfloat16 if device.type == "cuda" and torch.cuda.is_bf16_supported() else None
    if precision == "fp16" and device.type != "cuda":
        raise ConfigError("train.precision=fp16 needs a CUDA device; use bf16 or fp32 on CPU")
    return torch.bfloat16 if precision == "bf16" else torch.float16


def _grad_sync(model: nn.Module, sync: bool):
    if isinstance(model, nn.parallel.DistributedDataParallel) and not sync:
        return model.no_sync()
    if hasattr(model, "set_requires_gradient_sync"):  # FSDP2
        model.set_requires_gradient_sync(sync)
    return contextlib.nullcontext()


def _optimizer_step(opts: list[torch.optim.Optimizer], model: nn.Module, clip_norm: float,
                    scaler: torch.amp.GradScaler | None) -> None:
    """Clip once (over the parameters that got gradients in this update), step each optimizer of the update, and
    zero their gradients."""
    if scaler:
        for opt in opts:
            scaler.unscale_(opt)
    if clip_norm > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    for opt in opts:
        scaler.step(opt) if scaler else opt.step()
    if scaler:
        scaler.update()
    for opt in opts:
        opt.zero_grad(set_to_none=True)


class _Plateau:
    """The learning-rate factor of `TrainConfig.plateau_factor`: every optimizer's multiplier is its schedule's
    times `scale` (checkpointed with the trainer state)."""

    def __init__(self, factor: float):
        self.factor, self.scale = factor, 1.0

    def lambdas(self, optimizers: Mapping[str, torch.optim.Optimizer],
                lr_lambdas: Mapping[str, Callable[[int], float]]) -> dict[str, Callable[[int], float]]:
        if self.factor == 1.0:
            return dict(lr_lambdas)
        return {k: self._scaled(lr_lambdas.get(k)) for k in optimizers}

    def _scaled(self, f: Callable[[int], float] | None) -> Callable[[int], float]:
        return lambda s: (f(s) if f else 1.0) * self.scale

    def decay(self, schedulers: Mapping[str, torch.optim.lr_scheduler.LambdaLR]) -> None:
        """After an evaluation without improvement: scale down, and apply it to the learning rates now."""
        self.scale *= self.factor
        for sch in schedulers.values():
            for group, base, f in zip(sch.optimizer.param_groups, sch.base_lrs, sch.lr_lambdas, strict=True):
                group["lr"] = base * f(sch.last_epoch)
            sch._last_lr = [group["lr"] for group in sch.optimizer.param_groups]  # get_last_lr: the rate in use


class _StopFlag:
    """First Ctrl-C (SIGINT) or SIGTERM (what `timeout`, SLURM and Kubernetes send): finish the current step,
    checkpoint, stop. A second one: abort at once."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.set, self._old = False, {}

    def __enter__(self):
        for sig in self.SIGNALS:
            try:
                self._old[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread
                pass
        return self

    def _handle(self, *_):
        if self.set:
            raise KeyboardInterrupt
        self.set = True

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)


def _check_schedule(ckpt: str | Path, schedulers: Mapping[str, torch.optim.lr_scheduler.LambdaLR], plateau: _Plateau,
                    reschedule: bool) -> None:
    """Extending (or shortening) a run: the schedules are recomputed over the new budget. Where that moves a
    learning rate at the step the run resumes from (a cosine or linear decay over another total), the resume is
    refused unless `reschedule`; then the rates continue on the recomputed schedules, from the values printed."""
    state = C.load_trainer_state(ckpt)
    plateau.scale = state.get("lr_scale", 1.0)
    moved = []
    for name, sch in schedulers.items():
        saved = state["schedulers"].get(name, {})
        step, old = saved.get("last_epoch"), saved.get("_last_lr")
        if step is None or old is None:
            continue
        new = [base * f(step) for base, f in zip(sch.base_lrs, sch.lr_lambdas, strict=True)]
        moved += [(name, step, a, b) for a, b in zip(old, new, strict=True) if not math.isclose(a, b, rel_tol=1e-9)]
    if not moved:
        return
    name, step, a, b = moved[0]
    what = f"the learning rate{'' if name == 'model' else f' of {name!r}'} at step {step} goes from {a:.4g} to {b:.4g}"
    if not reschedule:
        raise ConfigError(f"resuming {ckpt} with another step budget recomputes its learning-rate schedule over the "
                          f"new budget: {what}. Resume with the run's own budget, or accept the new schedule with "
                          "--train.reschedule true")
    print(f"train.reschedule: {what}, then follows the schedule over the new budget")


def fit(
    model: nn.Module,
    loss_fn: LossFn | Step,
    train_data: Iterator | Mapping[str, Iterator],
    cfg: TrainConfig,
    run_dir: str | Path,
    evaluate: Callable[[nn.Module], dict[str, float]] | None = None,
    resume_from: str | Path | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    desc: str = "train",
    unit: str = "tokens",
) -> FitResult:
    """Train `model` (already on its device, maybe wrapped for DDP/FSDP) for cfg.max_steps steps.

    `loss_fn` is the one loss of a one-optimizer method (with `optimizer`, or AdamW from `cfg`, and the schedule
    of `cfg`), or a `Step` giving each step's updates, optimizers and schedules (`train/step.py`; cfg's lr, betas,
    weight decay, warmup and schedule are then unused). `train_data` is
    one batch iterator, or several by name for a Step's updates. `model` holds every trained network (an
    `nn.ModuleDict` names them in the weights files). `unit` names what `loss_fn`'s count counts (tokens,
    examples, images) in the logs, the progress bar and the result.

    On CPU this turns on flush-to-zero for subnormal floats (`torch.set_flush_denormal`, process-wide): once an
    LM's distributions sharpen, the softmax backward's exp(log p) underflows into subnormals for most of the
    vocabulary, and CPU arithmetic on subnormals takes a slow path; values below 1.2e-38 become 0."""
    if cfg.max_steps is None:
        raise ConfigError("train.max_steps is not set (this recipe sets it from its epochs)")
    info = D.current()
    average_grads = info.world_size > 1 and not isinstance(model, nn.parallel.DistributedDataParallel) \
        and not hasattr(model, "set_requires_gradient_sync")
    run_dir = Path(run_dir)
    device = next(model.parameters()).device
    if device.type == "cpu":
        torch.set_flush_denormal(True)
    amp = autocast_dtype(cfg.precision, device)
    scaler = torch.amp.GradScaler(device.type) if amp is torch.float16 else None
    if isinstance(loss_fn, Step):
        if optimizer is not None:
            raise TypeError("fit: a Step brings its own optimizers; pass optimizer=None")
        method = loss_fn
    else:
        method = OneLoss(loss_fn, optimizer or build_optimizer(model, cfg), lr_lambda(cfg))
    optimizers = method.optimizers
    plateau = _Plateau(cfg.plateau_factor)
    schedulers = {k: torch.optim.lr_scheduler.LambdaLR(optimizers[k], f)
                  for k, f in plateau.lambdas(optimizers, method.lr_lambdas).items()}
    data = dict(train_data) if isinstance(train_data, Mapping) else {"train": train_data}
    step, count, best, best_step, bad_evals, best_eval, train_time = 0, 0, None, None, 0, {}, 0.0
    sums: dict[str, list] = {}  # logged name -> [sum over the log window, count]
    last_eval = 0  # the step of the last evaluation
    if resume_from is not None:
        done = int(Path(resume_from).name[len("step_"):])
        # checked before the restore, so a refused resume changes nothing. A run whose training is done but whose
        # finishing work (reload the best weights, evaluate, record) never wrote summary.json resumes into it
        finished = (Path(run_dir) / "summary.json").is_file()
        if done > cfg.max_steps or (done == cfg.max_steps and finished):
            raise ConfigError(f"{resume_from} is at step {done} and the run's budget is {cfg.max_steps} steps: "
                              "nothing to train; give a larger budget (train.max_steps, or the recipe's epochs)")
        _check_schedule(resume_from, schedulers, plateau, cfg.reschedule)
        state = C.restore_checkpoint(resume_from, model, optimizers, schedulers)
        step, count, best, best_step, bad_evals, best_eval, train_time, plateau.scale = (
            state["step"], state["count"], state["best"], state["best_step"], state["bad_evals"], state["best_eval"],
            state["train_time"], state["lr_scale"])
        for name, it in data.items():  # each rank's own data position
            if hasattr(it, "load_state_dict"):
                it.load_state_dict(state["data"][name][info.rank])
        method.load_state_dict(state["method"][info.rank])  # the method's own streams (e.g. memory, schedules)
        sums = {k: [v.to(device) if isinstance(v, torch.Tensor) else v, n]  # the log window the run was in
                for k, (v, n) in state["log_window"][info.rank].items()}
        last_eval = state["last_eval"]  # a run stopped before its final evaluation still owes it
        if info.is_main:  # forget what the interrupted run logged after this checkpoint
            rows = [r for r in read_metrics(run_dir) if r.get("step", 0) <= step]
            atomic_write_text(run_dir / "metrics.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    logger = MetricsLogger(run_dir, enabled=info.is_main)
    result = FitResult(step=step, count=count, wall_time=0.0, unit=unit, best_metric=best, best_step=best_step,
                       start_step=step, train_time=train_time)

    def checkpoint() -> Path:
        extra = {"count": count, "train_time": result.train_time, "best": best, "best_step": best_step,
                 "best_eval": best_eval, "bad_evals": bad_evals,
                 "lr_scale": plateau.scale, "last_eval": last_eval,
                 "log_window": D.gather_objects({k: [v.cpu() if isinstance(v, torch.Tensor) else v, n]
                                                 for k, (v, n) in sums.items()}),
                 "data": {k: D.gather_objects(it.state_dict()) for k, it in data.items() if hasattr(it, "state_dict")},
                 "method": D.gather_objects(method.state_dict())}
        return C.save_checkpoint(run_dir, step, model, optimizers, schedulers, extra, cfg.keep_last)

    def run_eval() -> bool:
        """Evaluate, log, keep best weights; return True when early stopping triggers."""
        nonlocal best, best_step, bad_evals, best_eval
        was_training = model.training
        model.eval()
        with torch.no_grad(), torch.autocast(device.type, dtype=amp, enabled=amp is not None):
            metrics = evaluate(model)
        model.train(was_training)
        logger.log(step, **metrics)
        result.evals.append({"step": step, **metrics})
        check_early_stop_metric(cfg, metrics)
        value = metrics[cfg.early_stop_metric]
        # a NaN metric (nothing to validate on) counts as better: the latest weights are kept. A tie with the best
        # keeps the later weights (a small validation split ties often; the later weights trained longer) but is no
        # improvement for `patience`
        better = best is None or math.isnan(value) or (value < best if cfg.early_stop_mode == "min" else value > best)
        tie = not better and value == best
        if better or tie:
            best, best_step, best_eval = value, step, {"step": step, **metrics}
            C.save_model_weights(model, run_dir / C.WEIGHTS)
        bad_evals = 0 if better else bad_evals + 1
        if not better and plateau.factor < 1.0:
            plateau.decay(schedulers)
        bar.write(f"step {step}: " + "  ".join(f"{k}={v:.4g}" for k, v in metrics.items())
                  + ("  (best)" if better else "  (ties the best: kept)" if tie else ""))
        return cfg.patience > 0 and bad_evals >= cfg.patience

    def diverged(loss: torch.Tensor, name: str) -> DivergenceError:
        last = C.latest_checkpoint(run_dir)
        keep = f"last good checkpoint: {last} (step {int(last.name[5:])})" if last else \
            "no checkpoint was written yet (set train.eval_every / train.ckpt_every lower)"
        what = "loss" if name == "loss" else f"loss {name!r}"
        return DivergenceError(f"{what} became {loss.item()} at step {step + 1}; training stopped, {keep}. "
                               "Lower train.lr" + (" or enable train.clip_norm" if cfg.clip_norm <= 0 else ""))

    def evaluating(s: int) -> bool:
        return s > cfg.eval_from and (s - cfg.eval_from) % cfg.eval_every == 0

    bar = tqdm(total=cfg.max_steps, initial=step, desc=desc, disable=not info.is_main, dynamic_ncols=True,
               mininterval=1.0)
    model.train()
    t_start = t_log = time.perf_counter()
    losses: dict[str, None] = {}  # the updates' names, shown on the progress bar
    count_log = 0
    last_ckpt = step
    try:
        with _StopFlag() as stop:
            while step < cfg.max_steps:
                t_step = time.perf_counter()
                drawn: list = []
                for update in method.updates(step):
                    opts = [optimizers[name] for name in update.optimizer_names]
                    for opt in opts:
                        opt.zero_grad(set_to_none=True)  # what another update left on a parameter it shares
                    held = [p for m in update.hold for p in m.parameters() if p.requires_grad]
                    for p in held:
                        p.requires_grad_(False)
                    if update.data is not None:
                        source, drawn = data[update.data], []
                    total = torch.zeros((), device=device)
                    for micro in range(cfg.grad_accum):
                        if update.data is not None:
                            drawn.append(next(source))
                        with _grad_sync(model, micro == cfg.grad_accum - 1):
                            with torch.autocast(device.type, dtype=amp, enabled=amp is not None):
                                loss, n_tok, *parts = update.loss_fn(model, drawn[micro])
                            scaled = loss / cfg.grad_accum
                            (scaler.scale(scaled) if scaler else scaled).backward()
                        total += loss.detach().float()
                        if update.data is not None:  # the count of every rank together
                            n_all = _global_count(n_tok, device) if info.world_size > 1 else n_tok
                            count += n_all
                            count_log += n_all
                        for k, v in (parts[0] if parts else {}).items():
                            entry = sums.setdefault(k, [0.0, 0])
                            entry[0] += v / cfg.grad_accum
                            entry[1] += micro == 0
                    for p in held:
                        p.requires_grad_(True)
                    total /= cfg.grad_accum
                    if not torch.isfinite(total).item():
                        raise diverged(total, update.name)
                    if average_grads:
                        D.average_gradients([p for opt in opts for g in opt.param_groups for p in g["params"]])
                    _optimizer_step(opts, model, cfg.clip_norm, scaler)
                    losses.setdefault(update.name)
                    entry = sums.setdefault(update.name, [torch.zeros((), device=device), 0])
                    entry[0] += total
                    entry[1] += 1
                for scheduler in schedulers.values():
                    scheduler.step()
                step += 1
                bar.update(1)
                if step % cfg.log_every == 0 or step == cfg.max_steps:
                    now = time.perf_counter()
                    means = {k: D.all_reduce_mean(torch.as_tensor(v / n, device=device)).item()
                             for k, (v, n) in sums.items() if n}
                    lr = next(iter(optimizers.values())).param_groups[0]["lr"]
                    rate = count_log / max(now - t_log, 1e-9)
                    logger.log(step, **means, lr=lr, **{f"{unit}_per_s": rate, unit: count})
                    shown = {k: f"{means[k]:.3f}" for k in losses if k in means}
                    bar.set_postfix(**shown, lr=f"{lr:.2e}", **{f"{unit}_s": f"{rate:,.0f}"}, refresh=False)
                    sums.clear()
                    count_log, t_log = 0, now
                t_pause = time.perf_counter()
                result.train_time += t_pause - t_step
                stopping = False
                if evaluate is not None and cfg.eval_every and evaluating(step):
                    stopping = run_eval()
                    last_eval = step
                    result.stopped_early = stopping
                if (cfg.ckpt_every and step % cfg.ckpt_every == 0) or (not cfg.ckpt_every and last_eval == step):
                    checkpoint()
                    last_ckpt = step
                t_log += time.perf_counter() - t_pause  # evaluation and checkpoints do not count in the rate
                synced = not info.enabled or step % cfg.log_every == 0
                if info.enabled and synced:  # rank 0 decides, so every rank stops at the same step
                    stop.set = D.broadcast_object(stop.set)
                if stopping or (stop.set and synced):
                    result.interrupted = stop.set
                    break
        if evaluate is not None and last_eval != step and not result.interrupted:
            run_eval()
        if last_ckpt != step:
            checkpoint()
        if evaluate is None:  # no validation metric: the final weights are the result
            C.save_model_weights(model, run_dir / C.WEIGHTS)
    finally:
        bar.close()
        logger.close()
    result.step, result.count = step, count
    result.wall_time = time.perf_counter() - t_start
    result.best_metric, result.best_step, result.best_eval = best, best_step, best_eval
    if info.is_main:
        plot_loss_curve(run_dir, losses or ("loss",))
    if result.interrupted:
        raise Interrupted(f"interrupted at step {step}; checkpoint written. Continue with "
                           f"`genfeat run --resume {run_dir}`")
    return result

