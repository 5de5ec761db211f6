"""benchmarks/planetoid_baselines: each baseline's weight is chosen on validation accuracy, never on test, and a run
of the grid really trains with its setting."""

from __future__ import annotations

from benchmarks import planetoid_baselines as B


def _run(method, protocol, over, seed, val, test):
    return {"method": method, "protocol": protocol, "overrides": over, "seed": seed, "valid_acc": val, "test_acc": test}


def test_selected_by_mean_validation_not_test():
    default, small, large = B.grid("manireg_i")[:3]
    assert default == {"baseline.manireg_gamma": "1.0"}  # the library default is the first setting
    runs = [_run("manireg_i", "sbm_a", default, s, 0.60, 0.90) for s in (0, 1)]  # best on test, not on validation
    runs += [_run("manireg_i", "sbm_a", small, 0, 0.70, 0.50), _run("manireg_i", "sbm_a", small, 1, 0.60, 0.50)]
    runs += [_run("manireg_i", "sbm_a", large, 0, 0.80, 0.40), _run("manireg_i", "sbm_a", large, 1, 0.55, 0.40)]
    runs += [_run("manireg_i", "sbm_b", large, s, 0.99, 0.99) for s in (0, 1)]  # another protocol: not counted
    runs += [_run("manireg_t", "sbm_a", large, s, 0.99, 0.99) for s in (0, 1)]  # another method: not counted
    over, chosen = B.selected(runs, "manireg_i", "sbm_a")
    assert over == large  # mean validation 0.675 > 0.65 > 0.60
    assert [r["test_acc"] for r in chosen] == [0.40, 0.40]


def test_ties_go_to_the_earlier_setting():
    default, small = B.grid("semiemb_t")[:2]
    runs = [_run("semiemb_t", "sbm_a", o, 0, 0.7, t) for o, t in ((small, 0.9), (default, 0.1))]
    assert B.selected(runs, "semiemb_t", "sbm_a")[0] == default


def test_a_grid_run_trains_with_its_setting(tmp_path):
    from benchmarks.sweep import Sweep

    records = {}
    for gamma in ("0.01", "10.0"):
        job = B.job("manireg_i", 0, "sbm_a", {"baseline.manireg_gamma": gamma})
        [records[gamma]] = Sweep(tmp_path).results([job])
        assert (tmp_path / job.name / "summary.json").is_file() and (tmp_path / job.name / "config.yaml").is_file()
    assert records["0.01"]["overrides"] == {"baseline.manireg_gamma": "0.01"}
    assert (records["0.01"]["valid_acc"], records["0.01"]["test_acc"]) != (records["10.0"]["valid_acc"],
                                                                           records["10.0"]["test_acc"])
