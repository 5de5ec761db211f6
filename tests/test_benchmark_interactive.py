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


def test_prose_sections_read_the_records():
    from benchmarks.interactive import prose_markdown

    prose = [{"row": "prose", "seed": s, "wall_s": 600.0, "vocab": 7837, "valid_generator_loss": 4.0 + s,
              "valid_generator_plain_loss": 4.5, **{f"test_{m}_{k}": 10.0 * (i + 1) + s
                                                    for i, m in enumerate(("ours", "kmeans_local", "sample_local",
                                                                           "kmeans_global", "lda_global",
                                                                           "sample_global"))
                                                    for k in ("sim", "sim_short", "sim_diff", "sim_short_diff")}}
             for s in (0, 1)]
    lm = {"row": "lm", "params": 16_090_880, "steps": 1500, "valid_ppl": 80.0, "test_ppl": 90.0, "train_s": 4500.0}

    def cont(t_ours, t_pplm):
        row = {"token": 1.0, "word": 1.0, "topic": 1.0, "ppl": 50.0, "dist1": 40.0, "dist2": 80.0}
        return {"ours": row | {"seconds": t_ours}, "pplm": row | {"seconds": t_pplm}, "plain": row | {"seconds": 1.0},
                "prompts": {"n": 28}, "torch_threads": 2}

    res = {"runs": [lm, *prose], "continuations": {"0": cont(1.0, 30.0), "1": cont(2.0, 20.0)}}
    page = prose_markdown(res)
    assert "| Local Ours | 10.50 ± 0.71 | 10.50 ± 0.71 | 10.50 ± 0.71 | 10.50 ± 0.71 | 48.38 | 46.29 | 0.45 |" in page
    assert "| Global Sample | 60.50 ± 0.71 |" in page
    assert "| PPLM-BoW | 1.00 ± 0.00 | 1.00 ± 0.00 | 1.00 ± 0.00 | 50.00 ± 0.00 | 40.00 ± 0.00 | 80.00 ± 0.00 | " \
           "25.000 ± 7.071 |" in page
    assert "validation perplexity 80.0, test\n90.0" in page or "validation perplexity 80.0, test 90.0" in page
    assert "4.500 ± 0.707 / 4.500 ± 0.000" in page
    assert prose_markdown({"runs": prose}) == ""  # no LM record: nothing to say yet
    lat = {"startup_s": 3.0, "options_s": {"median": 0.2, "max": 0.4},
           "first_token_s": {"median_client": 0.3, "median_server": 0.25, "max_client": 0.5},
           "decode_tokens_per_s": 40.0, "rss_mib": [300.0, 301.0, 299.0], "requests": 200, "prompt_words": 100,
           "load": {"clients": 20, "completed": 5, "refused_429": 15, "refused_503": 0, "other": 0,
                    "retry_after_on_refusals": True, "server_alive": True, "p50_s": 1.0, "p95_s": 2.0}}
    page = prose_markdown(res | {"latency": lat})
    assert "| continuation time, PPLM / ours (Table 4.5, same process) | 20.0 ± 14.1× | ≥ 20× |" in page
    assert "| 20 concurrent clients: completed / 429 / 503 / other | 5 / 15 / 0 / 0 |" in page
    assert "300 → 299 MiB (max 301)" in page
