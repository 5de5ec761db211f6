import json

import numpy as np
import pytest

from genfeat.data.tokenizers import ByteTokenizer, CharTokenizer, HFTokenizer, WordTokenizer, load_tokenizer
from genfeat.errors import DataError


def test_word_tokenizer_ptb_convention(tmp_path):
    lines = ["a b a <unk>", "b c"]
    tok = WordTokenizer.build(lines)
    assert tok.itos[:2] == ["<eos>", "<unk>"] and tok.itos[2:] == ["a", "b", "c"]  # by frequency, then name
    ids = tok.encode_lines(lines)
    assert ids.tolist() == [2, 3, 2, 1, 0, 3, 4, 0]  # <eos> after every line
    assert tok.encode("a zzz") == [2, 1]  # OOV -> <unk>
    tok.save(tmp_path / "t.json")
    again = load_tokenizer(tmp_path / "t.json")
    assert again.itos == tok.itos and again.decode(ids[:4]) == "a b a <unk>"
    assert WordTokenizer.build(lines, max_size=3).vocab_size == 3


def test_char_and_byte_round_trip(tmp_path):
    lines = ["héllo", "wörld"]
    for tok in (CharTokenizer.build(lines), ByteTokenizer()):
        ids = tok.encode_lines(lines)
        assert tok.decode(ids) == "héllo\nwörld\n"
        tok.save(tmp_path / f"{tok.kind}.json")
        assert load_tokenizer(tmp_path / f"{tok.kind}.json").decode(ids) == "héllo\nwörld\n"
    assert len(ByteTokenizer().encode("é")) == 2


def test_gpt2_loader_reads_vocab_and_merges(tmp_path):
    # A miniature GPT-2 style vocabulary: byte-level symbols ("Ġ" is the space byte) and two merges.
    vocab = {c: i for i, c in enumerate(["h", "e", "l", "o", "Ġ", "w", "r", "d", "he", "ll", "<|endoftext|>"])}
    (tmp_path / "encoder.json").write_text(json.dumps(vocab))
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\nh e\nl l\n")
    tok = HFTokenizer.gpt2(tmp_path / "encoder.json", tmp_path / "vocab.bpe")
    assert tok.encode("hello") == [8, 9, 3]
    assert tok.decode(tok.encode("hello world")) == "hello world"
    assert tok.eos_id == 10


@pytest.mark.parametrize("model", ["bpe", "unigram"])
def test_trainable_tokenizers(model, tmp_path):
    lines = [f"the quick brown fox {i} jumps over the lazy dog" for i in range(200)]
    tok = HFTokenizer.train(lines, model, vocab_size=300)  # byte-level BPE starts from 256 symbols
    assert tok.vocab_size <= 300 and tok.eos_id is not None
    ids = tok.encode_lines(lines[:2])
    assert isinstance(ids, np.ndarray) and ids.size > 0
    tok.save(tmp_path / "t.json")
    again = load_tokenizer(tmp_path / "t.json")
    assert again.encode_lines(lines[:2]).tolist() == ids.tolist()
    assert "quick brown" in again.decode(again.encode("the quick brown fox"))


def test_bad_tokenizer_file(tmp_path):
    (tmp_path / "t.json").write_text("{not json")
    with pytest.raises(DataError, match="t.json is missing or corrupt"):
        load_tokenizer(tmp_path / "t.json")


@pytest.mark.parametrize("kind", ["word", "char", "byte", "bpe", "unigram"])
def test_run_directory_tokenizer_reads_in_hugging_face_tokenizers(tmp_path, kind):
    """save_tokenizer writes genfeat's file and HF's tokenizer.json: `tokenizers.Tokenizer.from_file` gives the
    same ids as genfeat's own encode, on seen and unseen text (unknown words, non-ASCII, tabs, newlines)."""
    from tokenizers import Tokenizer as TK

    from genfeat.data.tokenizers import save_tokenizer

    lines = ["the cat 's on the mat , is n't it", "héllo wörld — ünïcode 😀", "a\tb  c"]  # PTB's split words
    tok = {"word": lambda: WordTokenizer.build(lines), "char": lambda: CharTokenizer.build(lines[:2]),
           "byte": ByteTokenizer, "bpe": lambda: HFTokenizer.train(lines * 20, "bpe", 300),
           "unigram": lambda: HFTokenizer.train(lines * 50, "unigram", 60)}[kind]()
    save_tokenizer(tok, tmp_path)
    hf = TK.from_file(str(tmp_path / "tokenizer.json"))
    for text in [*lines, "unseen wörds zzz", "x\ny"]:
        assert hf.encode(text).ids == tok.encode(text), text
    assert load_tokenizer(tmp_path).encode(lines[0]) == tok.encode(lines[0])  # genfeat reads its own file
    from transformers import AutoTokenizer  # and transformers' Auto class, with the special tokens declared

    auto = AutoTokenizer.from_pretrained(tmp_path)  # without tokenizer_config.json: the model type's own class
    # transformers < 5 defaults to cleaning up "cat 's" into "cat's" in decode: the file turns that off
    assert json.loads((tmp_path / "tokenizer_config.json").read_text())["clean_up_tokenization_spaces"] is False
    for text in [*lines, "unseen wörds zzz"]:
        assert auto(text)["input_ids"] == tok.encode(text), text
    if kind == "word":
        assert auto.eos_token == "<eos>" == auto.bos_token == auto.pad_token and auto.unk_token == "<unk>"
        assert auto.eos_token_id == tok.eos_id and auto.decode(tok.encode(lines[0])) == lines[0]


def test_a_run_directory_from_before_the_rename_says_what_to_do(tmp_path):
    from genfeat.errors import DataError

    WordTokenizer.build(["a b"]).save(tmp_path / "tokenizer.json")  # genfeat's format under HF's name
    with pytest.raises(DataError, match="rename it to genfeat_tokenizer.json"):
        load_tokenizer(tmp_path)
