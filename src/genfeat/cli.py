"""`genfeat` command line.

    genfeat ls                                       recipes and presets
    genfeat run <recipe> [--preset P] [--a.b value ...] [--print-config] [--out DIR]
    genfeat run --config RUN_DIR/config.yaml [--a.b value ...]     re-run a recorded config
    genfeat run --resume RUN_DIR [--a.b value ...]                 continue from the last checkpoint
    genfeat data ls | fetch NAME... [--force] | verify [NAME...]
    genfeat data build TASK [--split-seed S] [--out DIR]      a built task's splits, sizes and sha256 (+ TSVs)
    genfeat generate RUN_DIR [--prompt TEXT] [-n N] [--max-new-tokens N] [--top-k K] [--temperature T]
    genfeat affinity RUN_DIR --archives DIR --submissions FILE --out FILE [--method max-facet|cbow-max|mixture|
                     embedding-max]                  a citation or a multi2spe run
    genfeat embed RUN_DIR --in papers.jsonl --out embeddings.jsonl [--facets]   Multi²SPE paper embeddings (SPECTER)
    genfeat eval entailment RUN_DIR --pairs FILE [--compare RUN_DIR...] [--json]   pattern entailment (Table 3.7)
    genfeat recl RUN_DIR... [--start 16 --step 16 --stop 128] [--r 0.1 1.0]   relative effective context length
    genfeat serve interactive RUN_DIR [--host 127.0.0.1] [--port 8000]    the interactive writing app (thesis C §4)

Errors a user can fix are printed as one line (`genfeat: error: ...`) with exit code 2 (bad
input) or 1 (data, checkpoint, divergence); an interrupted run exits with 130 (see genfeat.errors).
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import json
import signal
import sys
import time
from pathlib import Path

from genfeat import __version__
from genfeat.config import ConfigError, dump_yaml, from_dict, load_yaml, override, to_dict
from genfeat.errors import GenfeatError, Interrupted

RUN_OPTIONS = {"--preset", "--config", "--resume", "--out", "--print-config", "--help"}


def split_overrides(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """Pull config overrides (`--seed 1`, `--train.lr 3e-4`, `--train.lr=3e-4`) out of `run`'s argv."""
    rest: list[str] = []
    out: dict[str, str] = {}
    i = 0
    while i < len(argv):
        tok = argv[i]
        key = tok[2:].split("=", 1)[0]
        if not tok.startswith("--") or tok.split("=", 1)[0] in RUN_OPTIONS:
            rest.append(tok)
            i += 1
        elif "=" in tok:
            out[key] = tok.split("=", 1)[1]
            i += 1
        else:
            if i + 1 >= len(argv) or argv[i + 1].startswith("--"):
                raise ConfigError(f"--{key} needs a value")
            out[key] = argv[i + 1]
            i += 2
    return rest, out


def cmd_ls(_: argparse.Namespace) -> int:
    from genfeat.registry import ALIASES, RECIPES

    for r in RECIPES.values():
        print(f"{r.name:12s} {r.description}")
        for p in r.presets:
            print(f"    --preset {p}{' (default)' if p == r.default_preset else ''}  {_first_sentence(r.presets[p])}")
    for alias, (recipe, preset) in ALIASES.items():
        print(f"{alias:12s} = {recipe} --preset {preset}")
    return 0


def _first_sentence(preset: object) -> str:
    """A preset's one-line description: the first sentence of its docstring (a dataclass's generated
    signature docstring does not count)."""
    doc = " ".join((getattr(preset, "__doc__", None) or "").split())
    if not doc or (isinstance(preset, type) and doc.startswith(preset.__name__ + "(")):
        return ""
    end = doc.find(". ")
    return doc if end < 0 else doc[: end + 1]


def recipe_help(name: str, preset: str | None) -> int:
    """`genfeat run RECIPE [--preset P] --help`: the recipe, its presets and every field with its type, its value
    in the preset (default: the recipe's) and what it is."""
    import textwrap

    from genfeat.config import describe_fields
    from genfeat.registry import get_preset, get_recipe

    recipe, alias_preset = get_recipe(name)
    preset = preset or alias_preset or recipe.default_preset
    cfg = get_preset(recipe, preset)
    print(f"genfeat run {recipe.name} [--preset NAME] [--FIELD VALUE ...] [--out RUN_DIR]\n\n{recipe.description}\n")
    print("presets: " + ", ".join(f"{p}{' (default)' if p == recipe.default_preset else ''}" for p in recipe.presets))
    print(f"\nfields (values of preset {preset}; set any with --FIELD VALUE, e.g. --train.lr 3e-4):")
    for field, tp, value, note in describe_fields(cfg):
        print(f"  --{field} {tp} = {value}")
        if note:
            print(textwrap.fill(note, 112, initial_indent=" " * 6, subsequent_indent=" " * 6))
    return 0


def cmd_run(args: argparse.Namespace, overrides: dict[str, str]) -> int:
    """The config (a recipe's preset, a recorded --config, or the --resume run's own), the overrides on it, then
    `runner.run_recipe`."""
    from genfeat.registry import get_preset, get_recipe
    from genfeat.runner import run_recipe, saved_run

    threads = None
    if args.resume:
        saved = saved_run(args.resume)
        recipe, _ = get_recipe(saved["recipe"])
        preset = saved.get("preset", "?")
        cfg = from_dict(recipe.config_cls, saved["config"])
        threads = saved.get("cpu_threads")
    elif args.config:
        saved = load_yaml(args.config)
        if "recipe" not in saved or "config" not in saved:
            raise ConfigError(f"{args.config} is not a genfeat run config (needs `recipe:` and `config:`)")
        recipe, _ = get_recipe(saved["recipe"])
        preset = saved.get("preset", "custom")
        cfg = from_dict(recipe.config_cls, saved["config"])
        threads = saved.get("cpu_threads")
    else:
        if not args.recipe:
            raise ConfigError("give a recipe (see `genfeat ls`), --config FILE or --resume RUN_DIR")
        recipe, alias_preset = get_recipe(args.recipe)
        preset = args.preset or alias_preset or recipe.default_preset
        cfg = get_preset(recipe, preset)
    cfg = override(cfg, overrides)
    if args.print_config:
        print(dump_yaml({"recipe": recipe.name, "preset": preset, "genfeat_version": __version__,
                         "config": to_dict(cfg)}), end="")
        return 0
    if args.resume:
        run_recipe(args.recipe, cfg, args.resume, preset=args.preset, resume=True, cpu_threads=threads)
    else:
        run_recipe(recipe.name, cfg, args.out, preset=preset, cpu_threads=threads)
    return 0


def cmd_data(args: argparse.Namespace) -> int:
    from genfeat.data import sources as S

    if args.data_cmd == "ls":
        print(f"data home: {S.data_home()}  (set $GENFEAT_DATA to move it)")
        for s in S.SOURCES.values():
            mark = "fetched" if S.is_fetched(s.name) else "-"
            print(f"{s.name:16s} {mark:8s} {s.method:10s} {s.spec:32s} {s.description}")
        return 0
    if args.data_cmd == "clean":
        from genfeat.data.lm_data import clear_streams

        removed = clear_streams()
        print(f"removed {removed} token-stream cache(s) under {S.data_home() / 'streams'}; each is rebuilt by the next "
              "run that reads its corpus")
        return 0
    if args.data_cmd == "build":
        from genfeat.data.built_tasks import build

        task = build(args.task, args.split_seed)
        print(json.dumps(task.describe(), indent=1))
        if args.out:
            for f in task.write(args.out):
                print(f"wrote {f}")
        return 0
    if args.data_cmd == "verify" and not args.names:  # everything fetched; what is not is skipped
        names = [n for n in S.SOURCES if S.is_fetched(n)]
        if not names:
            print(f"nothing fetched under {S.data_home()}")
    else:
        names = list(S.SOURCES) if args.names == ["all"] else args.names
    for name in names:
        if args.data_cmd == "fetch":
            t = time.perf_counter()
            path = S.fetch(name, force=args.force)
            print(f"{name}: {path} ({time.perf_counter() - t:.1f} s)")
        else:
            n = S.verify(name)
            print(f"{name}: {n} files match their sha256")
    return 0


def _load_lm_run(run_dir: Path, device_name: str):
    """(model, tokenizer, config) of a language-model run directory."""
    from genfeat.api import load_with_config

    return load_with_config(run_dir, device_name)


GENERATE_CHUNK = 64  # samples per batch: memory stays bounded however large -n is


def cmd_generate(args: argparse.Namespace) -> int:
    import math

    import torch

    if args.n < 1:
        raise ConfigError(f"-n must be >= 1, got {args.n}")
    if args.top_k is not None and args.top_k < 1:
        raise ConfigError(f"--top-k must be >= 1, got {args.top_k}")
    if args.temperature is not None and not (math.isfinite(args.temperature) and args.temperature > 0):
        raise ConfigError(f"--temperature must be a number > 0, got {args.temperature}")
    if args.max_new_tokens is not None and args.max_new_tokens < 1:
        raise ConfigError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    lm_model, tok, cfg = _load_lm_run(Path(args.run_dir), args.device)
    sc = dataclasses.replace(cfg.sample, prompt=args.prompt if args.prompt is not None else cfg.sample.prompt)
    for field_name in ("max_new_tokens", "top_k", "temperature"):
        if getattr(args, field_name) is not None:
            sc = dataclasses.replace(sc, **{field_name: getattr(args, field_name)})
    from genfeat.tasks.generation import generate_text, stream_text

    option = "--prompt" if args.prompt is not None else "sample.prompt (in the run's config; or give --prompt)"
    if args.n == 1:  # printed token by token as it is drawn
        pieces = stream_text(lm_model, tok, sc, seed=args.seed, prompt_option=option)
        first = next(pieces, "")  # the prompt is checked before it is printed
        print(sc.prompt + (" " if sc.prompt and tok.kind == "word" else "") + first, end="", flush=True)
        for piece in pieces:
            print(piece, end="", flush=True)
        print("\n---", flush=True)
        return 0
    start, size = 0, 1
    while start < args.n:  # printed as they come: chunks of 1, 2, 4, ... GENERATE_CHUNK (the first one at once)
        n = min(size, GENERATE_CHUNK, args.n - start)
        with torch.no_grad():
            texts = generate_text(lm_model, tok, sc, n=n, seed=args.seed + start, prompt_option=option)
        for text in texts:
            print(text)
            print("---", flush=True)
        start, size = start + n, 2 * size
    return 0


def cmd_recl(args: argparse.Namespace) -> int:
    import numpy as np

    from genfeat.analysis.recl import context_losses, recl
    from genfeat.data.lm_data import prepare_lm_data

    if min(args.start, args.step, args.positions) < 1:
        raise ConfigError("--start, --step and --positions must be >= 1")
    if args.stop < args.start:
        raise ConfigError(f"--stop ({args.stop}) must be >= --start ({args.start})")
    if any(not 0 < r <= 1 for r in args.r):
        raise ConfigError(f"--r ratios must be in (0, 1], got {args.r}")
    losses, streams = {}, None
    contexts = list(range(args.start, args.stop + 1, args.step))
    for run in args.run_dirs:
        run_dir = Path(run)
        lm_model, _, cfg = _load_lm_run(run_dir, args.device)
        _, data = prepare_lm_data(cfg.data)
        tokens = data[args.split]
        if streams is not None and len(tokens) != len(streams):
            raise ConfigError("RECL compares models on the same tokens: the runs use different data")
        streams = tokens
        positions = np.linspace(contexts[-1], len(tokens) - 1, args.positions).astype(np.int64)
        print(f"{run_dir}: {len(contexts)} contexts x {len(positions)} positions", file=sys.stderr)
        name = str(run_dir) if str(run_dir) not in losses else f"{run_dir} (#{len(losses) + 1})"
        capped = getattr(getattr(cfg, "model", None), "pos_enc", "") == "absolute"  # vanilla: context <= L
        losses[name] = context_losses(lm_model, tokens, contexts, positions,
                                      max_context=cfg.model.tgt_len if capped else getattr(cfg.model, "max_len", None))
    for r in args.r:
        for name, res in recl(losses, contexts, r=r).items():
            print(f"r={r}  RECL={res.recl}{'+' if res.lower_bound else ''}  {name}")
    return 0


def cmd_facet_words(args: argparse.Namespace) -> int:
    from genfeat.models.facets.inference import facet_neighbours, load_run

    model, vocab, words, table = load_run(args.run_dir)
    print(f"sentence: {args.sentence}")
    for k, row in enumerate(facet_neighbours(model, vocab, words, table, args.sentence, args.top)):
        print(f"facet {k + 1:>2}: " + ", ".join(f"{w} {c:.2f}" for w, c in row))
    return 0


def cmd_embed(args: argparse.Namespace) -> int:
    """Multi²SPE embeddings of the papers in a SPECTER-format JSONL file, in its order, papers batched by length."""
    import torch

    from genfeat.data.scidocs import read_papers_jsonl
    from genfeat.models.multi_cls.inference import load_paper_run
    from genfeat.tasks.paper_ranking import PaperTable, embed_papers, encode_papers

    if args.batch_size < 1:
        raise ConfigError("--batch-size must be >= 1")
    t0 = time.perf_counter()
    model, tok, max_len = load_paper_run(args.run_dir)
    papers = read_papers_jsonl(args.inp)
    ids = encode_papers(tok, [t for _, t, _ in papers], [a for *_, a in papers], max_len)
    facets = embed_papers(model, PaperTable.build(ids), args.batch_size, facets=True, desc="embed")  # (N, K, D)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w") as f:
        for (pid, _, _), fk in zip(papers, facets, strict=True):
            row = {"paper_id": pid, "embedding": [round(float(x), 6) for x in fk.sum(0)]}
            if args.facets:
                row["facets"] = [[round(float(x), 6) for x in v] for v in fk]
            f.write(json.dumps(row) + "\n")
    print(f"{len(papers)} papers, K = {facets.size(1)} facets of {facets.size(2)} -> {out} "
          f"({time.perf_counter() - t0:.1f} s, {torch.get_num_threads()} threads)")
    return 0


def cmd_affinity(args: argparse.Namespace) -> int:
    """Reviewer-paper affinities of a citation or a multi2spe run for a venue in openreview-expertise's layout."""

    import numpy as np
    import torch

    from genfeat.analysis.facet_scores import sif_bag_vectors
    from genfeat.data.citations import paper_inputs
    from genfeat.data.openreview import read_archives, read_submissions
    from genfeat.data.word_vectors import vocab_vectors
    from genfeat.models.citation import affinity as A
    from genfeat.models.citation import load_run
    from genfeat.runner import saved_run

    t0 = time.perf_counter()
    recipe = saved_run(args.run_dir).get("recipe")
    method = args.method or ("embedding-max" if recipe == "multi2spe" else "max-facet")
    if (recipe == "multi2spe") != (method == "embedding-max"):
        raise ConfigError(f"--method {method} is for {'a multi2spe' if method == 'embedding-max' else 'a citation'} "
                          f"run; {args.run_dir} is a {recipe} run")
    archives, subs = read_archives(args.archives), read_submissions(args.submissions)
    reviewers = list(archives)
    papers = [(t, a, r) for r, name in enumerate(reviewers) for t, a in archives[name]]
    if not papers:
        raise ConfigError(f"{args.archives}: the archives hold no papers")
    P = len(papers)
    owner = np.array([r for _, _, r in papers])
    if method == "embedding-max":  # Multi²SPE as OpenReview uses SPECTER: the max cosine over a reviewer's papers
        from genfeat.models.multi_cls.inference import load_paper_run
        from genfeat.tasks.paper_ranking import PaperTable, embed_papers, encode_papers

        enc, tok, max_len = load_paper_run(args.run_dir)
        texts = [(t, a) for t, a, _ in papers] + [(t, a) for _, t, a in subs]
        ids = encode_papers(tok, [t for t, _ in texts], [a for _, a in texts], max_len)
        emb = embed_papers(enc, PaperTable.build(ids), desc="embed").numpy()
        _write_affinities(args.out, subs, reviewers, A.cbow_max_affinity(emb[P:], emb[:P], owner, len(reviewers)))
        print(f"{len(subs)} submissions x {len(reviewers)} reviewers ({P} archive papers), {method}: "
              f"{time.perf_counter() - t0:.1f} s -> {args.out}")
        return 0
    model, info, config = load_run(args.run_dir)
    max_words = max(1, (model.cfg.max_len - 2) if model.cfg.encoder == "transformer" else 512)
    texts = [(t, a) for t, a, _ in papers] + [(t, a) for _, t, a in subs]
    ids, types, _ = paper_inputs([t for t, _ in texts], [a for _, a in texts], np.ones(len(texts), bool),
                                 max_words=max_words, vocab=info["vocab"])
    ids, types = torch.from_numpy(ids), torch.from_numpy(types)
    scores = {}
    if method in ("max-facet", "mixture"):
        trained = config["data"]["source"].startswith("archives:") and set(reviewers) <= set(info["authors"])
        if trained:
            at = {a: i for i, a in enumerate(info["authors"])}
            scores["max-facet"] = A.trained_affinity(model, ids[P:], types[P:],
                                                     torch.tensor([at[r] for r in reviewers]))
        else:
            scores["max-facet"] = A.as_is_affinity(model, ids[P:], types[P:], ids[:P], types[:P],
                                                   torch.from_numpy(owner), len(reviewers))
        how = "the reviewer embeddings of a run trained on these archives" if trained else \
            "as is: each reviewer through the facets of their papers"
        print(f"max-facet: {how}")
    if method in ("cbow-max", "mixture"):
        table, _ = vocab_vectors(info["vocab"], args.vectors)
        v = sif_bag_vectors(ids.numpy(), table, np.asarray(info["word_probs"]))
        scores["cbow-max"] = A.cbow_max_affinity(v[P:], v[:P], owner, len(reviewers))
    s = scores[method] if method != "mixture" else args.lam * scores["max-facet"] + (1 - args.lam) * scores["cbow-max"]
    _write_affinities(args.out, subs, reviewers, s)
    print(f"{len(subs)} submissions x {len(reviewers)} reviewers ({P} archive papers), {method}: "
          f"{time.perf_counter() - t0:.1f} s -> {args.out}")
    return 0


def _write_affinities(path: str, subs: list, reviewers: list[str], scores) -> None:
    """openreview-expertise's rows submission,reviewer,score ((S, R) `scores`)."""
    import csv

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        for i, (sid, _, _) in enumerate(subs):
            for r, name in enumerate(reviewers):
                w.writerow([sid, name, f"{float(scores[i, r]):.6g}"])


def cmd_eval_entailment(args: argparse.Namespace) -> int:
    """Table 3.7 on a labelled pattern-pair file: AP@all and the micro / macro direction accuracies of each run,
    with the Random and Freq Diff baselines."""
    from genfeat.data.re_entailment import read_entailment_pairs
    from genfeat.models.universal_schema import load_run
    from genfeat.tasks.pattern_entailment import PatternEntailment
    from genfeat.tasks.universal_schema import pattern_facets

    pairs = read_entailment_pairs(args.pairs)
    task = PatternEntailment(pairs)
    rows = {"Random": task.random(), "Freq Diff": task.freq_diff()}
    for run_dir in [args.run_dir, *args.compare]:
        model, vocab, m = load_run(run_dir)
        if not model.scores_new_rows:
            raise ConfigError(f"{run_dir}: a {m.kind} model cannot embed new patterns")
        name = f"{m.kind} K={m.k}" + (f" {m.encoder}" if m.kind == "multi_facet" else "") + f" ({run_dir})"
        rows[name] = task.evaluate(pattern_facets(model, vocab, [p.original for p in pairs]),
                                   pattern_facets(model, vocab, [p.replaced for p in pairs]))
    if args.json:
        print(json.dumps({"pairs": str(args.pairs), "labels": task.stats(), "methods": rows}, indent=1))
        return 0
    st = task.stats()
    print(f"{args.pairs}: {len(pairs)} pairs ({st['>']} >, {st['<']} <, {st[':']} :, {st['N']} N)")
    w = max(map(len, rows))
    print(f"{'method':<{w}} {'AP@all':>7} {'micro':>7} {'macro':>7} {'AP (no labels)':>15}")
    for name, r in rows.items():
        print(f"{name:<{w}} {100 * r['ap']:7.1f} {100 * r['micro']:7.1f} {100 * r['macro']:7.1f} "
              f"{100 * r['ap_label_free']:15.1f}")
    return 0


def cmd_facets(args: argparse.Namespace) -> int:
    import torch

    from genfeat.analysis.facets import inspect_facets

    lm_model, tok, _ = _load_lm_run(Path(args.run_dir), args.device)
    ids = tok.encode(args.context)
    if not ids:
        raise ConfigError("the context encodes to no tokens")
    device = next(lm_model.parameters()).device
    rows = inspect_facets(lm_model, torch.tensor(ids, device=device), top=args.top)
    width = max(len(name) for name, _ in rows)
    print(f"context: {args.context}")
    for name, items in rows:
        words = ", ".join(f"{tok.decode([i]).strip() or repr(tok.decode([i]))} {p:.3g}" for i, p in items)
        print(f"{name:<{width}}  {words}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="genfeat", description="generative feature learning in PyTorch")
    p.add_argument("--version", action="version", version=f"genfeat {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("ls", help="list recipes and presets")
    r = sub.add_parser("run", help="run a recipe", epilog="any --section.field VALUE overrides the config")
    r.add_argument("recipe", nargs="?")
    r.add_argument("--preset")
    r.add_argument("--config", help="re-run from a recorded config.yaml")
    r.add_argument("--resume", metavar="RUN_DIR", help="continue a run from its last checkpoint")
    r.add_argument("--out", metavar="RUN_DIR", help="run directory (default runs/<recipe>-<preset>-<time>)")
    r.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    d = sub.add_parser("data", help="list, fetch and verify datasets")
    dsub = d.add_subparsers(dest="data_cmd", required=True)
    dsub.add_parser("ls", help="the known datasets, and which are fetched")
    dsub.add_parser("clean", help="delete the token-stream caches of the language-model corpora (rebuilt on next use)")
    f = dsub.add_parser("fetch", help="download datasets into the data home and check them against their manifests")
    f.add_argument("names", nargs="+", help="dataset names, or `all`")
    f.add_argument("--force", action="store_true", help="fetch again even if present")
    b = dsub.add_parser("build", help="build a task from fetched sources (debian-sections, wordnet-lexnames, "
                        "wordnet-wic, debian-citations, news-patterns, debian-schema, wordnet-schema, cbt-books): "
                        "print its sizes and sha256, optionally write its splits (TSV; a graph: citations.npz + "
                        "citations.json; a matrix: schema.npz + schema.json; a cloze set: {train,valid,test}.jsonl)")
    b.add_argument("task")
    b.add_argument("--split-seed", type=int, default=0)
    b.add_argument("--out", help="write train.tsv / valid.tsv / test.tsv (text_a, text_b, label) here (a graph: "
                   "citations.npz and citations.json)")
    v = dsub.add_parser("verify", help="re-hash fetched datasets against their manifests")
    v.add_argument("names", nargs="*", help="dataset names; none: every fetched dataset")
    g = sub.add_parser("generate", help="sample text from a trained language model run")
    g.add_argument("run_dir")
    g.add_argument("--prompt")
    g.add_argument("-n", type=int, default=3, help="samples, printed as they are drawn (in batches of 1, 2, 4, ... "
                   "64; a batch starting at sample i draws with seed + i)")
    g.add_argument("--max-new-tokens", dest="max_new_tokens", type=int)
    g.add_argument("--top-k", dest="top_k", type=int)
    g.add_argument("--temperature", type=float)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--device", default="auto")
    rc = sub.add_parser("recl", help="relative effective context length of a group of LM runs (thesis Y §2.1.4)")
    rc.add_argument("run_dirs", nargs="+")
    rc.add_argument("--start", type=int, default=16, help="shortest context c_0")
    rc.add_argument("--step", type=int, default=16, help="context step Δ")
    rc.add_argument("--stop", type=int, default=128, help="longest context evaluated")
    rc.add_argument("--positions", type=int, default=500, help="evaluated positions (evenly spaced)")
    rc.add_argument("--r", type=float, nargs="+", default=[0.1, 1.0], help="ratio(s) of hard positions")
    rc.add_argument("--split", default="valid", choices=["valid", "test"])
    rc.add_argument("--device", default="auto")
    fc = sub.add_parser("facets", help="top next words of each facet of a multi-facet LM (thesis C Table 2.3)")
    fc.add_argument("run_dir")
    fc.add_argument("--context", required=True, help="text whose next word is predicted")
    fc.add_argument("--top", type=int, default=5)
    fc.add_argument("--device", default="auto")
    af = sub.add_parser("affinity", help="reviewer-paper affinities of a citation or multi2spe run in "
                        "openreview-expertise's "
                        "layout (rows submission,reviewer,score; thesis C §3.4)")
    af.add_argument("run_dir")
    af.add_argument("--archives", required=True, help="a directory of <reviewer>.jsonl archives")
    af.add_argument("--submissions", required=True, help="submissions.json")
    af.add_argument("--out", required=True, help="the CSV to write")
    af.add_argument("--method", choices=("max-facet", "cbow-max", "mixture", "embedding-max"), default=None,
                    help="a citation run: max-facet (default), cbow-max or their mixture; a multi2spe run: "
                    "embedding-max (default, the max cosine over a reviewer's papers)")
    af.add_argument("--lam", type=float, default=0.2, help="mixture: λ max-facet + (1 - λ) cbow-max")
    af.add_argument("--vectors", default="glove-6b-50d", help="cbow-max: glove-6b-50d or a word-vector file")
    em = sub.add_parser("embed", help="paper embeddings of a multi2spe run in SPECTER's format (JSONL: paper_id, "
                        "title, abstract in; paper_id, embedding out; thesis C §5.3)")
    em.add_argument("run_dir")
    em.add_argument("--in", dest="inp", required=True, help="JSONL, one paper a line: paper_id, title, abstract")
    em.add_argument("--out", required=True, help="the JSONL to write")
    em.add_argument("--facets", action="store_true", help="also write the K facet vectors of each paper")
    em.add_argument("--batch-size", type=int, default=64)
    ev = sub.add_parser("eval", help="evaluate trained runs on a labelled set")
    esub = ev.add_subparsers(dest="eval_cmd", required=True)
    en = esub.add_parser("entailment", help="unsupervised pattern-entailment detection of universal_schema runs "
                         "(thesis C Table 3.7): AP@all, micro / macro direction accuracy, with Random and Freq Diff")
    en.add_argument("run_dir")
    en.add_argument("--pairs", required=True, help="labelled pairs in the release's TSV format "
                    "(label POS pattern pattern n1 n2 n3 n4)")
    en.add_argument("--compare", nargs="*", default=[], metavar="RUN_DIR",
                    help="more runs scored beside it (a single-facet or CUSchema baseline)")
    en.add_argument("--json", action="store_true", help="print the numbers as JSON")
    fw = sub.add_parser("facet-words", help="nearest words of each facet of a multi-facet sentence embedding "
                        "(a `genfeat run facets` run; thesis C Table 3.1)")
    fw.add_argument("run_dir")
    fw.add_argument("--sentence", required=True)
    fw.add_argument("--top", type=int, default=5)
    sv = sub.add_parser("serve", help="local apps over trained runs")
    svsub = sv.add_subparsers(dest="app", required=True)
    si = svsub.add_parser("interactive", help="the interactive writing app of an interactive run (thesis C §4)")
    si.add_argument("run_dir")
    si.add_argument("--host", default="127.0.0.1", help="127.0.0.1 (default) serves this machine only")
    si.add_argument("--port", type=int, default=8000)
    return p


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn
    except ImportError:
        raise ConfigError("serving needs FastAPI and uvicorn: pip install 'genfeat[serve]'") from None
    from genfeat.models.interactive.inference import load_run
    from genfeat.serve.interactive import create_app

    if not 0 < args.port < 65536:
        raise ConfigError(f"--port must be in 1..65535, got {args.port}")
    app = create_app(load_run(args.run_dir))
    print(f"genfeat serve interactive: http://{args.host}:{args.port}/ (API schema at /openapi.json)", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def _sigterm_as_interrupt(*_) -> None:
    raise KeyboardInterrupt  # SIGTERM (timeout, SLURM, Kubernetes) is handled like Ctrl-C


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    except ValueError:  # not the main thread
        previous = None
    try:
        return _main(parser, argv)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        overrides: dict[str, str] = {}
        if argv[:1] == ["run"]:
            argv, overrides = split_overrides(argv)
            named = [a for a in argv[1:] if not a.startswith("-")]
            if {"-h", "--help"} & set(argv) and named:  # the recipe's own fields, not run's generic options
                preset = argv[argv.index("--preset") + 1] if "--preset" in argv[:-1] else None
                return recipe_help(named[0], preset)
        args = parser.parse_args(argv)
        if args.cmd not in ("ls", "run", "data"):  # `run` sets them from its recorded config (runner.run_recipe)
            from genfeat.train.threads import configure_threads

            configure_threads()
        if args.cmd == "ls":
            return cmd_ls(args)
        if args.cmd == "run":
            return cmd_run(args, overrides)
        if args.cmd == "data":
            return cmd_data(args)
        if args.cmd == "recl":
            return cmd_recl(args)
        if args.cmd == "facets":
            return cmd_facets(args)
        if args.cmd == "facet-words":
            return cmd_facet_words(args)
        if args.cmd == "serve":
            return cmd_serve(args)
        if args.cmd == "affinity":
            return cmd_affinity(args)
        if args.cmd == "eval":
            return cmd_eval_entailment(args)
        if args.cmd == "embed":
            return cmd_embed(args)
        return cmd_generate(args)
    except ConfigError as e:
        print(f"genfeat: error: {e}", file=sys.stderr)
        return 2
    except Interrupted as e:
        print(f"genfeat: {e}", file=sys.stderr)
        return 130
    except GenfeatError as e:
        print(f"genfeat: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("genfeat: interrupted", file=sys.stderr)
        return 130
    except OSError as e:  # the machine, not genfeat: one line with the path (exit 1)
        where = f" {e.filename}" if e.filename else ""
        if e.errno == errno.ENOSPC:
            print(f"genfeat: error: the disk is full: no space left writing{where}; free space and run the command "
                  "again (a run continues from its last checkpoint with --resume RUN_DIR)", file=sys.stderr)
        else:
            print(f"genfeat: error: {e.strerror or e}{':' + where if where else ''}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
