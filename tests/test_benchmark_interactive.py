"""The interactive results page from a record: each gate's column says whether it held in every seed."""

from benchmarks.interactive import markdown


def _run(row, seed, **over):
    base = {"row": row, "seed": seed, "wall_s": 25.0, "test_ours_sim": 88.0, "test_ours_sim_diff": 60.0,
            "test_kmeans_local_sim": 20.0, "test_kmeans_local_sim_diff": -60.0, "test_kmeans_global_sim": 30.0,
            "test_kmeans_global_sim_diff": -40.0, "test_coverage": 0.9, "test_cond_s1_share_s1": 0.9,
            "test_cond_s2_share_s2": 0.9, "test_cond_none_share_s1": 0.5, "valid_generator_loss": 2.2,
            "valid_generator_plain_loss": 2.3}
    return base | over


def test_the_gates_read_each_seed():
    runs = [_run("k4", 0), _run("k4", 1, test_cond_s1_share_s1=0.6), _run("k1", 0, test_ours_sim=40.0),
            _run("k1", 1, test_ours_sim=85.0)]
    page = markdown({"results": {"runs": runs}, "command": "x", "date": "d", "machine": {}, "seeds": [0, 1]})
    lines = {ln.split("|")[1].strip(): ln for ln in page.splitlines() if ln.startswith("| G")}
    assert lines["G4 share of s_1 words, s_1 inserted"].rstrip(" |").endswith("False")
    assert lines["G4 share of s_2 words, s_2 inserted"].rstrip(" |").endswith("True")
    g2 = lines["G2 Sim(K=4) − Sim(K=1)"]
    assert "25.50 ± 31.82" in g2 and g2.rstrip(" |").endswith("False")  # 48 and 3 points: seed 1 fails
    assert "| Ours | 88.00 ± 0.00 | 60.00 ± 0.00 | 48.38 | 0.45 |" in page
