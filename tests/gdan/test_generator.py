"""GDAN's question generator and REINFORCE (spec gdan.md §5.3 tests 3, 4, 8): the answer feature, the copy path
of the extended vocabulary, teacher forcing agreeing with sampling, and an unbiased policy-gradient estimate."""

import torch

from genfeat.data.qa import QAExample, QAVocab, qa_rows
from genfeat.losses.reinforce import MovingAverage, leave_one_out, reinforce_loss
from genfeat.models.gdan import GeneratorConfig, QuestionGenerator


def make(out_vocab=8, vocab=20):
    torch.manual_seed(0)
    return QuestionGenerator(GeneratorConfig(vocab, out_vocab, d_embed=8, d_hidden=12, max_len=6))


def test_answer_feature_marks_exactly_the_span():
    ex = QAExample(tuple("a b c d e f".split()), ("q",), (2, 4))
    rows = qa_rows([ex, QAExample(("x", "y"), None, (1, 1))], QAVocab.build([ex]))
    assert rows["answer_mask"][0].tolist() == [False, False, True, True, True, False]
    assert rows["answer_mask"][1].tolist()[:2] == [False, True]
    assert rows["question"][1].tolist()[0] == 1  # an unlabelled pair's question: one <unk>


def test_targets_copy_words_outside_the_output_vocabulary():
    g = make()
    p = torch.tensor([[9, 5, 15, 9, 0]])
    pm = p != 0
    enc = g.encode(p, pm, torch.zeros_like(pm))
    q = torch.tensor([[15, 6, 17]])  # 15 in the paragraph (copied), 6 in the output vocabulary, 17 neither
    tgt, mask = g.targets(enc, q, torch.ones_like(q, dtype=torch.bool))
    assert enc.oov.tolist() == [[9, 15]]
    assert tgt.tolist() == [[8 + 1, 6, 1, 3]]  # extended id of 15, 6, <unk>, <eos>
    assert mask.all()
    lp = g.token_log_probs(enc, tgt, mask)
    assert torch.all(lp <= 0) and torch.all(torch.isfinite(lp))


def test_teacher_forcing_scores_what_sampling_drew():
    g = make().eval()
    p = torch.tensor([[9, 5, 15, 9, 7, 0], [4, 6, 11, 12, 13, 14]])
    pm = p != 0
    am = torch.zeros_like(pm)
    am[:, 1:3] = True
    enc = g.encode(p, pm, am)
    s = g.sample(enc, generator=torch.Generator().manual_seed(1))
    lp = g.token_log_probs(enc, s.targets, s.target_mask)
    assert torch.allclose(lp, s.log_probs, atol=1e-5)
    # the questions are the drawn tokens mapped back to the paragraph's words, <eos> excluded
    from genfeat.nn.pointer import from_extended
    words = from_extended(s.targets, enc.oov, 8)
    for b in range(2):
        n = int(s.question_mask[b].sum())
        assert s.questions[b, :n].tolist() == words[b, :n].tolist() or n == 1
    assert not torch.any(torch.isin(s.targets[s.target_mask], torch.tensor([0, 2])))  # never <pad> or <bos>


def test_mle_loss_decreases():
    g = make()
    p = torch.tensor([[9, 5, 15, 9, 7, 6]])
    pm = torch.ones_like(p, dtype=torch.bool)
    am = torch.zeros_like(pm)
    q = torch.tensor([[15, 6, 7]])
    qm = torch.ones_like(q, dtype=torch.bool)
    opt = torch.optim.Adam(g.parameters(), lr=1e-2)
    first = g(p, pm, am, q, qm).item()
    for _ in range(60):
        opt.zero_grad()
        g(p, pm, am, q, qm).backward()
        opt.step()
    assert g(p, pm, am, q, qm).item() < 0.1 * first
    s = g.sample(g.encode(p, pm, am), greedy=True)
    assert s.questions[0, :3].tolist() == [15, 6, 7]  # 15 only through copying


def test_reinforce_estimates_the_exact_gradient():
    rewards = torch.tensor([1.0, -2.0, 0.5, 3.0, 0.0])
    theta = torch.tensor([0.3, -0.1, 0.2, 0.0, -0.4], requires_grad=True)
    p = theta.softmax(0)
    (exact,) = torch.autograd.grad((p * rewards).sum(), theta)
    gen = torch.Generator().manual_seed(0)
    n, B = 4000, 8
    est = {"none": torch.zeros(5), "loo": torch.zeros(5)}
    for _ in range(n):
        y = torch.multinomial(theta.detach().softmax(0), B, replacement=True, generator=gen)
        for kind in est:
            lp = theta.log_softmax(0)[y]
            r = rewards[y]
            b = leave_one_out(r) if kind == "loo" else 0.0
            (g,) = torch.autograd.grad(-reinforce_loss(lp, r, b), theta)
            est[kind] += g / n
    for kind in est:
        assert torch.allclose(est[kind], exact, atol=0.03), (kind, est[kind], exact)


def test_baselines():
    r = torch.tensor([1.0, 2.0, 6.0])
    assert torch.allclose(leave_one_out(r), torch.tensor([4.0, 3.5, 1.5]))
    ma = MovingAverage(0.5)
    assert ma(r).tolist() == [0.0, 0.0, 0.0]
    assert ma(torch.tensor([1.0])).item() == 3.0
    assert ma.state_dict() == {"value": 2.0}
    lp = torch.zeros(3, requires_grad=True)
    reinforce_loss(lp, r.requires_grad_(), torch.zeros(3)).backward()
    assert torch.allclose(lp.grad, -r.detach() / 3)


def test_the_encoder_reads_the_answer_feature():
    g = make().eval()
    p = torch.tensor([[9, 5, 15, 9, 7, 6]])
    pm = torch.ones_like(p, dtype=torch.bool)
    a, b = torch.zeros_like(pm), torch.zeros_like(pm)
    a[0, 1], b[0, 4] = True, True
    assert not torch.allclose(g.encode(p, pm, a).keys, g.encode(p, pm, b).keys)
