"""The GDAN training method (spec gdan.md §5.3 tests 2, 7, 9, 10, 11): per-dataset averaging, stop-gradients, the
reward's tag, the test-time tag and the labelling-rate bookkeeping."""

import copy

import numpy as np
import pytest
import torch

from genfeat.data.qa import QAExample, QAVocab, article_split, context_question, labelled_pool, qa_rows
from genfeat.models.gdan import GDAN, GatedAttentionReader, GeneratorConfig, QuestionGenerator, ReaderConfig
from genfeat.paradigms.generative_adaptation import METHODS, GenerativeAdaptation, Method, dann_lambda
from genfeat.tasks.question_generation import compare_generators, generated

PARAS = [tuple(f"w{i} w{i + 1} x{i} . per_{i} moved to city_{i % 3} in y19{i:02d} .".split()) for i in range(8)]


def world():
    lab = [QAExample(p, ("where", "did", f"per_{i}", "move", "?"), (7, 7), f"a{i}") for i, p in enumerate(PARAS)]
    unl = [QAExample(p, None, (9, 9), f"u{i}") for i, p in enumerate(PARAS)]
    vocab = QAVocab.build(lab + unl, questions_first=True)
    return qa_rows(lab, vocab), qa_rows(unl, vocab), vocab


def model_for(method: Method, vocab: QAVocab) -> GDAN:
    torch.manual_seed(0)
    reader = GatedAttentionReader(ReaderConfig(len(vocab), 8, 6, n_hops=2, dropout=0.0))
    gen = QuestionGenerator(GeneratorConfig(len(vocab), 12, 8, 12, max_len=5)) if method.uses_generator else None
    tags = (vocab["<d_true>"], vocab["<d_gen>"]) if method.tags else None
    return GDAN(reader, gen, tags, domain=method.reward == "domain")


def step_for(name: str, model: GDAN, **kw) -> GenerativeAdaptation:
    return GenerativeAdaptation(model, METHODS[name], lr_d=1e-3, lr_g=1e-3, max_steps=10, **kw)


def test_context_question_is_the_window_cut_at_the_edges():
    p = tuple("a b c d e f g h".split())
    assert context_question(p, (3, 4), 2) == ("b", "c", "f", "g")
    assert context_question(p, (0, 1), 3) == ("c", "d", "e")
    assert context_question(p, (6, 7), 3) == ("d", "e", "f")


def test_each_dataset_is_averaged_on_its_own():
    lab, unl, vocab = world()
    method = METHODS["context_domain"]
    model = model_for(method, vocab).eval()
    step = step_for("context_domain", model)
    half = {k: v[:4] for k, v in unl.items()}
    doubled = {k: torch.cat([v[:4], v[:4]]) for k, v in unl.items()}
    a, _, parts_a = step.d_loss(model, {"labelled": lab, "unlabelled": half})
    b, _, parts_b = step.d_loss(model, {"labelled": lab, "unlabelled": doubled})
    assert torch.allclose(a, b, atol=1e-6)
    assert a.item() == pytest.approx(parts_a["labelled_nll"] + parts_a["generated_nll"], rel=1e-5)


def test_test_time_reads_the_true_tag():
    lab, _, vocab = world()
    model = model_for(METHODS["gdan"], vocab).eval()
    args = [lab[k] for k in ("paragraph", "paragraph_mask", "question", "question_mask")]
    default, true = model(*args), model.reader(*args, tag=vocab["<d_true>"])
    assert torch.equal(default["start_log_probs"], true["start_log_probs"])
    assert not torch.equal(default["start_log_probs"], model.reader(*args, tag=vocab["<d_gen>"])["start_log_probs"])


@pytest.mark.parametrize("name,tag", [("gdan", "<d_true>"), ("gen_dual", "<d_gen>")])
def test_the_reward_reads_its_tag_without_gradient(name, tag, monkeypatch):
    lab, unl, vocab = world()
    model = model_for(METHODS[name], vocab)
    step = step_for(name, model)
    seen = []
    forward = model.reader.forward

    def spy(*a, **k):
        seen.append((a[4] if len(a) > 4 else k.get("tag"), model.reader.training, torch.is_grad_enabled()))
        return forward(*a, **k)

    monkeypatch.setattr(model.reader, "forward", spy)
    model.train()
    step.updates(5)  # halfway: Gen + dual's weight λ(0.5) > 0
    loss, n, parts = step.g_loss(model, unl)
    assert seen == [(vocab[tag], False, False)]  # D in eval mode, no gradient, under the method's tag
    assert model.reader.training  # restored
    loss.backward()
    assert all(p.grad is None for p in model.reader.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.generator.parameters())
    assert "reward" in parts


def test_the_d_update_sends_no_gradient_to_g():
    lab, unl, vocab = world()
    model = model_for(METHODS["gdan"], vocab)
    step = step_for("gdan", model)
    loss, n, parts = step.d_loss(model, {"labelled": lab, "unlabelled": unl})
    loss.backward()
    assert n == 16 and set(parts) == {"labelled_nll", "generated_nll"}
    assert all(p.grad is None for p in model.generator.parameters())
    assert any(p.grad is not None for p in model.reader.parameters())


def test_updates_per_round_and_the_schedule():
    _, _, vocab = world()
    model = model_for(METHODS["gdan"], vocab)
    step = step_for("gdan", model, t_d=3, t_g=2)
    assert [u.name for u in step.updates(0)] == ["d_loss"] * 3 + ["g_loss"] * 2
    assert [u.data for u in step.updates(0)] == ["joint"] * 3 + ["unlabelled_g"] * 2
    sl = step_for("sl", model_for(METHODS["sl"], vocab))
    assert [(u.name, u.data) for u in sl.updates(0)] == [("d_loss", "labelled")]
    assert set(sl.optimizers) == {"d"} and set(step.optimizers) == {"d", "g"}
    assert dann_lambda(0.0) == 0.0 and dann_lambda(1.0) == pytest.approx(0.99991, abs=1e-5)
    with pytest.raises(ValueError, match="tags"):
        step_for("gdan", model_for(METHODS["gen"], vocab))


def test_gan_baseline_trains_a_domain_classifier_on_detached_states():
    lab, unl, vocab = world()
    model = model_for(METHODS["gen_gan"], vocab)
    step = step_for("gen_gan", model)
    loss, _, parts = step.d_loss(model, {"labelled": lab, "unlabelled": unl})
    assert "domain_loss" in parts
    reward = step.rewards(model, {**unl})
    assert torch.all(reward <= 0) and not reward.requires_grad  # log P(human)


def test_labelling_rate_and_article_split():
    rng = np.random.default_rng(0)
    exs = [QAExample(("a", "b"), ("q",), (0, 0), f"art{i // 3}", qid=str(i)) for i in range(300)]
    rest, test = article_split(exs, 0.1, rng)
    assert {e.article for e in rest}.isdisjoint({e.article for e in test})
    assert len(test) == 30 and len(rest) == 270
    for rate in (0.1, 0.5, 0.9):
        pool = labelled_pool(rest, rate, len(exs), np.random.default_rng(1))
        assert len(pool) == int(np.floor(rate * 300)) and len({e.qid for e in pool}) == len(pool)
        assert {e.qid for e in pool} <= {e.qid for e in rest}
    with pytest.raises(ValueError, match="pool"):
        labelled_pool(rest, 0.95, len(exs), rng)


def test_the_d_update_tags_labelled_true_and_generated_gen(monkeypatch):
    lab, unl, vocab = world()
    model = model_for(METHODS["gdan"], vocab)
    step = step_for("gdan", model)
    seen = []
    forward = model.reader.forward

    def spy(*a, **k):
        seen.append(a[4] if len(a) > 4 else k.get("tag"))
        return forward(*a, **k)

    monkeypatch.setattr(model.reader, "forward", spy)
    step.d_loss(model, {"labelled": lab, "unlabelled": unl})
    assert seen == [vocab["<d_true>"], vocab["<d_gen>"]]


def test_the_domain_loss_does_not_train_the_reader():
    lab, unl, vocab = world()
    model = model_for(METHODS["gen_gan"], vocab).eval()
    step = step_for("gen_gan", model)

    def reader_grads():
        model.zero_grad()
        step.gen.manual_seed(0)
        step.d_loss(model, {"labelled": lab, "unlabelled": unl})[0].backward()
        return [p.grad.clone() for p in model.reader.parameters() if p.grad is not None]

    before = reader_grads()
    with torch.no_grad():
        model.domain.weight.mul_(5.0)
    after = reader_grads()
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
    assert model.domain.weight.grad.abs().sum() > 0


def test_the_methods_running_mean_is_checkpointed():
    _, _, vocab = world()
    step = step_for("gdan", model_for(METHODS["gdan"], vocab))
    step.tail = [6.0, 3]
    other = step_for("gdan", model_for(METHODS["gdan"], vocab))
    other.load_state_dict(step.state_dict())
    assert other.tail_generated_nll == 2.0


def test_squad_json_to_word_examples_and_the_rate_protocol(tmp_path):
    import json

    from genfeat.data.qa import squad_word_examples

    arts = []
    for a in range(10):
        ctx = f"In 19{a:02d}, the Grand Hotel of Town{a} opened; it had {a + 3} floors."
        arts.append({"title": f"Article {a}", "paragraphs": [{"context": ctx, "qas": [
            {"id": f"q{a}a", "question": f"When did the Grand Hotel of Town{a} open?",
             "answers": [{"text": f"19{a:02d}", "answer_start": 3}]},
            {"id": f"q{a}b", "question": "How many floors?",
             "answers": [{"text": f"{a + 3} floors", "answer_start": ctx.index(f"{a + 3} floors")}]},
            {"id": f"q{a}c", "question": "Who?", "answers": [], "is_impossible": True}]}]})
    path = tmp_path / "train-v2.0.json"
    path.write_text(json.dumps({"version": "v2.0", "data": arts}))
    exs = squad_word_examples(path)
    assert len(exs) == 20  # the unanswerable ones skipped
    e = exs[0]
    assert e.paragraph[:3] == ("in", "1900", ",") and e.answer == "1900" and e.article == "Article 0"
    assert exs[1].answer == "3 floors" and e.question[-1] == "?"
    rest, test = article_split(exs, 0.1, np.random.default_rng(0))
    assert len(test) == 2 and {x.article for x in test}.isdisjoint({x.article for x in rest})
    assert len(labelled_pool(rest, 0.5, len(exs), np.random.default_rng(0))) == 10


def test_truncation_keeps_the_answer_in_its_window():
    from genfeat.data.qa import truncate

    p = tuple(f"t{i}" for i in range(50))
    for span in ((0, 1), (20, 22), (48, 49)):
        e = truncate(QAExample(p, ("q",), span), 10)
        assert len(e.paragraph) == 10 and e.answer == " ".join(p[span[0]:span[1] + 1])
    with pytest.raises(ValueError, match="does not fit"):
        truncate(QAExample(p, ("q",), (0, 20)), 10)


def test_compare_generators_reads_each_generator_and_keeps_the_final_one():
    _, _, vocab = world()
    pairs = [QAExample(p, None, (9, 9), f"u{i}") for i, p in enumerate(PARAS)]
    model = model_for(METHODS["gdan"], vocab)
    mle = copy.deepcopy(model)
    with torch.no_grad():  # the "final" generator: moved away from the MLE one
        for p in model.generator.parameters():
            p.add_(torch.randn_like(p))
    final = {k: v.clone() for k, v in model.generator.state_dict().items()}
    details, rows = compare_generators(model, mle.generator.state_dict(), pairs, vocab, seed=3, n_shown=5)
    assert all(torch.equal(v, final[k]) for k, v in model.generator.state_dict().items())
    mle.reader.load_state_dict(model.reader.state_dict())
    held = qa_rows(pairs, vocab)
    assert details["reward_mle"] == generated(mle, mle.generator, held, vocab, 3)["reward"]
    assert details["reward_final"] == generated(model, model.generator, held, vocab, 3)["reward"]
    assert details["reward_mle"] != details["reward_final"]
    assert [r["answer"] for r in rows] == [e.answer for e in pairs[:5]] and set(rows[0]) == {
        "paragraph", "answer", "mle", "final"}


def test_the_budget_counts_d_updates_and_each_method_draws_the_streams_its_updates_read():
    import numpy as np

    from genfeat.errors import ConfigError
    from genfeat.paradigms.generative_adaptation import METHODS, adaptation_batches, d_update_budget
    from genfeat.train.loop import TrainConfig

    train = TrainConfig(max_steps=300, eval_every=60)
    rounds, tc = d_update_budget(train, METHODS["gdan"], t_d=5)
    assert (rounds, tc.max_steps, tc.eval_every) == (5, 60, 12)
    rounds, tc = d_update_budget(train, METHODS["gen_domain"], t_d=5)  # G fixed: one D update a step
    assert (rounds, tc.max_steps, tc.eval_every) == (1, 300, 60)
    with pytest.raises(ConfigError, match="multiples of adapt.t_d=7"):
        d_update_budget(train, METHODS["gdan"], t_d=7)
    lab, unl = torch.arange(10)[:, None], torch.arange(100, 120)[:, None]
    streams = {name: set(adaptation_batches(METHODS[name], lab, unl, 4, np.random.default_rng(0)))
               for name in ("sl", "context", "gen_domain", "gdan")}
    assert streams == {"sl": {"labelled"}, "context": {"joint"}, "gen_domain": {"joint"},
                       "gdan": {"joint", "unlabelled_g"}}
    b = adaptation_batches(METHODS["gdan"], lab, unl, 4, np.random.default_rng(0))
    joint = next(b["joint"])
    assert joint["labelled"].max() < 10 and joint["unlabelled"].min() >= 100 and next(b["unlabelled_g"]).min() >= 100
