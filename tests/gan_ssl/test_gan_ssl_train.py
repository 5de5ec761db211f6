"""The image GAN-SSL trainer on tiny MNIST-shaped data: every switch runs, D is untouched by G steps."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from genfeat.errors import ConfigError
from genfeat.losses.gan_ssl import uniform_noise
from genfeat.models.gan_ssl.mnist import MNISTDiscriminator, MNISTEncoder, MNISTGenerator
from genfeat.models.gan_ssl.train import GanSSLConfig, assumption_ratios
from genfeat.nn.weight_norm import init_all
from genfeat.paradigms.complement_gan import fit_gan_ssl
from tests.gan_ssl import image_errors

SMALL = dict(sizes=(32, 16), input_noise=0.3, hidden_noise=0.5)


def _data(n=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 10
    x = (torch.rand(n, 1, 28, 28, generator=g) * 0.3 + (y.view(-1, 1, 1, 1) / 10.0)).clamp(0, 0.999)
    return x, y


def _errors(x, y):
    """The first 50 images validate, the rest test."""
    return image_errors(x[:50], y[:50], x[50:], y[50:])


def _cfg(**kw):
    return GanSSLConfig(labeled_per_class=2, batch_labeled=20, batch_unlabeled=50, epochs=2, init_samples=100, **kw)


@pytest.mark.parametrize("kw", [dict(method="supervised"), dict(), dict(lambda_pt=0.8, lambda_ent=0.1),
                                dict(lambda_vi=0.01), dict(lambda_ld=1.0, ld_form="indicator", ld_samples=10)])
def test_every_switch_trains(kw, tmp_path):
    torch.manual_seed(0)
    x, y = _data()
    disc, gen = MNISTDiscriminator(**SMALL), MNISTGenerator(d_z=8, hidden=32)
    enc = MNISTEncoder(d_z=8, hidden=32) if kw.get("lambda_vi") else None

    def logp(img):  # a differentiable stand-in density (pixels ~ N(0.5, 0.3²))
        return -((img.flatten(1) - 0.5) ** 2 / (2 * 0.09)).sum(-1)

    res = fit_gan_ssl(_cfg(**kw), disc, gen, x, y, _errors(x, y), encoder=enc,
                      log_density=logp if kw.get("lambda_ld") else None, run_dir=tmp_path)
    assert len(res.history) == 2
    # the returned discriminator is the best-validation one, and its recorded errors are its own
    assert res.best["valid_errors"] == min(r["valid_errors"] for r in res.history)
    with torch.no_grad():
        assert res.best["test_errors"] == int((res.disc.eval()(x[50:]).argmax(-1) != y[50:]).sum())
    h = res.history[-1]
    if kw.get("method") != "supervised":
        assert "g_fm" in h and ("g_pt" in h) == bool(kw.get("lambda_pt")) and ("g_vi" in h) == bool(kw.get("lambda_vi"))
        assert ("g_ld" in h) == bool(kw.get("lambda_ld")) and (res.epsilon is not None) == bool(kw.get("lambda_ld"))
        r = assumption_ratios(res.disc, x[:50], gen(uniform_noise(50, 8)))
        assert 0 <= r["r_real"] <= 1 and 0 <= r["r_gen"] <= 1


def test_generator_steps_leave_the_discriminator_unchanged(tmp_path):
    torch.manual_seed(0)
    x, y = _data()
    disc, gen = MNISTDiscriminator(**SMALL), MNISTGenerator(d_z=8, hidden=32)
    init_all(disc, x[:100])
    before = {k: v.clone() for k, v in disc.state_dict().items()}
    g_before = [p.detach().clone() for p in gen.parameters()]
    cfg = dataclasses.replace(_cfg(), lr_d=0.0, epochs=1)  # D steps move nothing; only G steps could
    fit_gan_ssl(cfg, disc, gen, x, y, _errors(x, y), run_dir=tmp_path)
    assert all(torch.equal(before[k], v) for k, v in disc.state_dict().items())
    assert any(not torch.equal(a, b) for a, b in zip(g_before, gen.parameters(), strict=True))


def test_config_errors(tmp_path):
    with pytest.raises(ConfigError):
        GanSSLConfig(method="vat")
    for bad, field in [({"ld_form": "hindge"}, "ld_form"), ({"ld_quantile": 150.0}, "ld_quantile"),
                       ({"ld_prob": 1.5}, "ld_prob"), ({"fm_distance": "l2"}, "fm_distance"),
                       ({"ld_samples": 0}, "ld_samples"), ({"lambda_ld": -0.1}, "lambda_ld"),
                       ({"lr_g": -1e-3}, "lr_g")]:
        with pytest.raises(ConfigError, match=field):  # at construction, not at the first LD iteration
            GanSSLConfig(**bad)
    from genfeat.models.gan_ssl.networks import GanNetConfig

    with pytest.raises(ConfigError, match="conv_gen_width"):
        GanNetConfig(conv_gen_width=0)
    x, y = _data(60)
    with pytest.raises(ConfigError, match="encoder"):
        fit_gan_ssl(_cfg(lambda_vi=0.1), MNISTDiscriminator(**SMALL), MNISTGenerator(d_z=8, hidden=32),
                    x, y, image_errors(x, y, x, y), run_dir=tmp_path)


def test_integer_betas_from_a_config_file_are_accepted(tmp_path):
    x, y = _data(100)
    cfg = dataclasses.replace(_cfg(), epochs=1, betas_g=(0, 0.999), betas_d=(0, 0.999))  # YAML gives ints
    fit_gan_ssl(cfg, MNISTDiscriminator(**SMALL), MNISTGenerator(d_z=8, hidden=32), x, y, image_errors(x, y, x, y),
                run_dir=tmp_path)


QUIET = dict(sizes=(32, 16), input_noise=0.0, hidden_noise=0.0)  # no noise layers: the loss curves are smooth


def _run(tmp_path, lr_d=3e-3, lr_g=3e-3, n=1000, epochs=4, **kw):
    torch.manual_seed(0)
    x, y = _data(n)
    disc, gen = MNISTDiscriminator(**QUIET), MNISTGenerator(d_z=8, hidden=32)
    cfg = dataclasses.replace(_cfg(**kw), lr_d=lr_d, lr_g=lr_g, epochs=epochs, lr_floor=1.0)
    return fit_gan_ssl(cfg, disc, gen, x, y, _errors(x, y), run_dir=tmp_path), gen


@torch.no_grad()
def _fm_and_fake(res, gen, n=1000):
    """Measured here, not read from the trainer's log: the feature-matching distance between G's samples and the
    real images under the final D, and the mean P(fake) that D gives G's samples and the real images."""
    from genfeat.losses.gan_ssl import feature_matching, log_fake

    x, _ = _data(n)
    torch.manual_seed(1)
    xg = gen.train()(uniform_noise(n, 8))  # batch statistics, as in training
    d = res.disc.eval()
    return (feature_matching(d.features(xg), d.features(x)).item(), log_fake(d(xg)).exp().mean().item(),
            log_fake(d(x)).exp().mean().item())


def test_generator_minimises_feature_matching(tmp_path):
    """D frozen after its data-dependent init (lr_d = 0; the same D in both runs): the G steps must bring the
    feature means together, compared with the same generator left at its initialisation (lr_g = 0)."""
    trained = _fm_and_fake(*_run(tmp_path / "a", lr_d=0.0))[0]
    untrained = _fm_and_fake(*_run(tmp_path / "b", lr_d=0.0, lr_g=0.0))[0]
    assert trained < 0.5 * untrained, (trained, untrained)


def test_low_density_term_lowers_the_generated_log_density(tmp_path):
    """LD penalises log p(G(z)) above ε: with it (and D frozen) the generated samples' penalised log-density falls."""
    def logp(img):  # pixels ~ N(0.5, 0.3²): the density is highest at mid-grey
        return -((img.flatten(1) - 0.5) ** 2 / (2 * 0.09)).sum(-1)

    torch.manual_seed(0)
    x, y = _data(1000)
    disc, gen = MNISTDiscriminator(**QUIET), MNISTGenerator(d_z=8, hidden=32)
    cfg = dataclasses.replace(_cfg(lambda_ld=10.0, ld_form="hinge", ld_samples=20, ld_quantile=0.0), lr_d=0.0,
                              lr_g=3e-3, epochs=4, lr_floor=1.0)
    res = fit_gan_ssl(cfg, disc, gen, x, y, _errors(x, y), log_density=logp, run_dir=tmp_path)
    lds = [r["g_ld"] for r in res.history]
    assert lds[-1] < 0.5 * lds[0], lds


def test_discriminator_learns_to_reject_generated_samples(tmp_path):
    """G frozen (lr_g = 0): the D step's fake term must be computed on G's samples, which D learns to call fake
    while it calls the real images real."""
    _, p_fake_gen, p_fake_real = _fm_and_fake(*_run(tmp_path, lr_g=0.0, epochs=8))
    assert p_fake_gen - p_fake_real > 0.3, (p_fake_gen, p_fake_real)


def _interruptible_run(run_dir, interrupt_after=None, resume=False, seed=0, density_rows=None, density_sd=0.3):
    """Two epochs of FM + PT + LD (applied with probability 0.5: Python's random stream) with noisy D layers
    (torch's stream); `interrupt_after` sends SIGINT to this process after that many generator calls;
    `density_rows` (a list) receives the row count of every density-model call; `density_sd` is the density
    model's (a Gaussian around grey)."""
    import os
    import signal

    from genfeat.train.checkpoint import latest_checkpoint

    torch.manual_seed(seed)
    x, y = _data(200)
    disc, gen = MNISTDiscriminator(**SMALL), MNISTGenerator(d_z=8, hidden=32)
    calls = [0]

    def count(*_):
        calls[0] += 1
        if calls[0] == interrupt_after:
            os.kill(os.getpid(), signal.SIGINT)

    gen.register_forward_hook(count)
    cfg = _cfg(lambda_pt=0.5, lambda_ld=1.0, ld_prob=0.5, ld_samples=10)

    def logp(img):
        if density_rows is not None:
            density_rows.append(len(img))
        return -((img.flatten(1) - 0.5) ** 2 / (2 * density_sd**2)).sum(-1)

    return fit_gan_ssl(cfg, disc, gen, x, y, _errors(x, y), run_dir=run_dir, log_density=logp,
                       resume_from=latest_checkpoint(run_dir) if resume else None)


def test_interrupted_run_resumes_bit_for_bit(tmp_path):
    """Ctrl-C in the middle of the second epoch, then resume with differently seeded networks: the final
    discriminator, generator and both optimizers equal those of an uninterrupted run exactly (the batch order,
    both permutations, LD's Python stream and the torch RNG all come back from the checkpoint)."""
    from genfeat.errors import Interrupted
    from genfeat.train.checkpoint import load_trainer_state, load_weights

    _interruptible_run(tmp_path / "a")
    with pytest.raises(Interrupted):
        _interruptible_run(tmp_path / "b", interrupt_after=13)  # init + 6 iterations: step 6 of 8, mid-epoch
    assert sorted(d.name for d in (tmp_path / "b/checkpoints").iterdir()) == ["step_00000004", "step_00000006"]
    _interruptible_run(tmp_path / "b", resume=True, seed=7)
    last = "checkpoints/step_00000008"
    wa, wb = load_weights(tmp_path / "a" / last / "model.safetensors"), load_weights(tmp_path / "b" / last /
                                                                                      "model.safetensors")
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    sa, sb = load_trainer_state(tmp_path / "a" / last), load_trainer_state(tmp_path / "b" / last)
    assert set(sa["optimizers"]) == {"discriminator", "generator"}
    for name in sa["optimizers"]:
        for k, st in sa["optimizers"][name]["state"].items():
            assert torch.equal(st["exp_avg_sq"], sb["optimizers"][name]["state"][k]["exp_avg_sq"]), (name, k)
    assert sa["method"] == sb["method"]


def test_a_resumed_run_reads_the_ld_threshold_from_its_checkpoint(tmp_path):
    """The LD threshold ε comes from a density pass over the training images (200 rows here; up to 10,000
    PixelCNN evaluations in a real run): a resumed run evaluates the density model on the four probe images and on
    generated batches (10 rows) only, and takes ε from the checkpoint; a checkpoint taken at another quantile or
    with another density model (other log-densities of the probe images) does not count (the pass runs again)."""
    from genfeat.errors import Interrupted

    first = []
    with pytest.raises(Interrupted):
        _interruptible_run(tmp_path, interrupt_after=13, density_rows=first)
    assert first[:2] == [4, 200] and set(first[2:]) <= {10}
    again = []
    res = _interruptible_run(tmp_path, resume=True, density_rows=again)
    assert again[0] == 4 and set(again[1:]) == {10}
    fresh = _interruptible_run(tmp_path / "fresh")
    assert res.epsilon == fresh.epsilon
    from genfeat.paradigms.complement_gan import _saved_epsilon
    from genfeat.train.checkpoint import latest_checkpoint, load_trainer_state

    ckpt = latest_checkpoint(tmp_path)
    probe = load_trainer_state(ckpt)["method"][0]["density_probe"]
    assert _saved_epsilon(ckpt, 10.0, probe, 0) == res.epsilon and _saved_epsilon(ckpt, 5.0, probe, 0) is None
    assert _saved_epsilon(ckpt, 10.0, [p * (1 + 1e-4) for p in probe], 0) is None
    other = []  # the same checkpoint resumed with a broader density model: ε from that model's own pass
    with pytest.raises(Interrupted):
        _interruptible_run(tmp_path / "other", interrupt_after=13)
    _interruptible_run(tmp_path / "other", resume=True, density_rows=other, density_sd=0.5)
    assert other[:2] == [4, 200]


@pytest.mark.dist
def test_two_ranks_follow_one_process(tmp_path):
    """The GAN under torchrun (gloo): each rank its part of the labeled, unlabeled and noise batches, FM / PT /
    hinge LD on the global batch, gradients averaged before each of the two updates: 2 ranks end with one
    process's weights and logged losses."""
    import os
    import subprocess
    import sys

    from genfeat.train.checkpoint import latest_checkpoint, load_weights
    from genfeat.train.logging import read_metrics
    from tests.dist_run import ROOT
    from tests.gan_ssl.dist_gan import main

    threads = torch.get_num_threads()
    try:
        main(str(tmp_path / "r1"))  # one process: this one (main pins one thread, as each rank has)
    finally:
        torch.set_num_threads(threads)
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}", "OMP_NUM_THREADS": "1", "GENFEAT_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                           str(ROOT / "tests/gan_ssl/dist_gan.py"), str(tmp_path / "r2")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    one, two = (load_weights(latest_checkpoint(tmp_path / f"r{n}") / "model.safetensors") for n in (1, 2))
    assert set(one) == set(two) and any(k.startswith("generator.") for k in one)
    for k, v in one.items():
        torch.testing.assert_close(two[k], v, rtol=1e-4, atol=1e-5, msg=k)
    logged = [[r[k] for r in read_metrics(tmp_path / f"r{n}") if "loss_d" in r for k in ("loss_d", "loss_g")]
              for n in (1, 2)]
    assert len(logged[0]) >= 4 and logged[1] == pytest.approx(logged[0], rel=1e-4)
