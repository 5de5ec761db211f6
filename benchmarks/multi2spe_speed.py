"""Paper-embedding throughput (issue: Multi²SPE's embedding pass at least 1.3x transformers' `BertModel` at the same
config and batch size on the CPU, the gain from not computing padding): `tasks.paper_ranking.embed_papers` (papers
in length order, each batch cut to its longest, K = 3 facet tokens, inserted maps, tanh, the summed embedding)
against transformers' `BertModel` (sdpa attention) reading the same papers in their given order, each batch padded to
its longest (what `tokenizer(batch, padding=True)` gives), its [CLS] state taken. MiniLM-L6's configuration with
random weights (both models hold the same ones); one process, interleaved rounds, medians.

    python -m benchmarks.multi2spe_speed [--papers 512] [--batch 32] [--repeats 3] [--threads 2]

Papers: BBC News articles as title [SEP] first paragraph (real variable-length text), word-pieced with the bert-base
vocabulary of all-MiniLM-L6-v2 (`genfeat data fetch minilm-l6`), at most 256 tokens. Writes
docs/results/multi2spe_speed.{md,json}.
"""

from __future__ import annotations

import argparse
import tempfile

import numpy as np
import torch

from benchmarks.common import interleaved_median_seconds, reading, render, timing_args, write_results
from genfeat.models.bert import BertConfig, BertModel, save_pretrained
from genfeat.models.multi_cls import MultiCLSConfig, MultiCLSEncoder
from genfeat.models.multi_cls.model import facet_token_ids
from genfeat.models.multi_cls.paper import PaperEncoder
from genfeat.tasks.paper_ranking import PaperTable, embed_papers

NAME = "multi2spe_speed"
MINILM = BertConfig(vocab_size=30522, d_model=384, n_layer=6, n_head=12, d_inner=1536, max_len=512)
MAX_TOKENS = 256


def papers(n: int) -> list[np.ndarray]:
    from genfeat.data.text_classification import load_bbc_news
    from genfeat.models.bert import bert_dir
    from genfeat.models.bert.tokenizer import encode, load_wordpiece

    tk = load_wordpiece(bert_dir("minilm-l6"))
    lines = [[ln.strip() for ln in t.splitlines() if ln.strip()] for t in load_bbc_news().texts[:n]]
    enc = encode(tk, [x[0] for x in lines], [x[1] if len(x) > 1 else "" for x in lines], MAX_TOKENS)
    return [ids[mask > 0].numpy() for ids, mask in zip(enc["input_ids"], enc["attention_mask"], strict=True)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--papers", type=int, default=512)
    ap.add_argument("--batch", type=int, default=32)
    timing_args(ap, repeats=3, threads=2)
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    torch.set_num_threads(args.threads)
    from transformers import BertModel as HFBert

    docs = papers(args.papers)
    table = PaperTable.build(docs)
    torch.manual_seed(0)
    bert = BertModel(MINILM)
    with tempfile.TemporaryDirectory() as d:
        save_pretrained(bert, d)
        ref = HFBert.from_pretrained(d, attn_implementation="sdpa").eval()
    unused = {f"[unused{j}]": 1 + j for j in range(10)}  # bert-base-uncased's ids
    ours = PaperEncoder(MultiCLSEncoder(bert, MultiCLSConfig(
        k=3, insert_after=(2, 4, 6), cls_facet=True, insert_bias=True, mean_subtract=True, insert_init="eye",
        facet_ids=facet_token_ids(unused.get, 2))), "tanh").eval()

    @torch.no_grad()
    def hf_pass() -> None:
        for a in range(0, len(table), args.batch):
            idx = torch.arange(a, min(a + args.batch, len(table)))
            ids, mask = table.rows(idx)  # padded to the batch's longest, in the given order
            ref(input_ids=ids, attention_mask=mask).last_hidden_state[:, 0]

    def ours_pass() -> None:
        embed_papers(ours, table, args.batch)

    secs = interleaved_median_seconds({"genfeat": ours_pass, "transformers": hf_pass}, args.repeats)
    lengths = table.lengths.float()
    padded = sum(int(table.lengths[a: a + args.batch].max()) * len(table.lengths[a: a + args.batch])
                 for a in range(0, len(table), args.batch))
    order = torch.sort(table.lengths).values
    bucketed = sum(int(order[a: a + args.batch].max()) * len(order[a: a + args.batch])
                   for a in range(0, len(order), args.batch))
    res = {"papers": len(table), "batch": args.batch, "threads": args.threads,
           "tokens": {"real": int(lengths.sum()), "padded_in_order": padded, "bucketed": bucketed,
                      "median_length": float(lengths.median()), "max_length": int(lengths.max())},
           "seconds": secs, "papers_per_s": {k: len(table) / v for k, v in secs.items()},
           "speedup": secs["transformers"] / secs["genfeat"]}
    print(write_results(NAME, res, markdown, machine=None))


def markdown(record: dict) -> str:
    r = record["results"]
    t = r["tokens"]
    ps = r["papers_per_s"]
    return f"""# Multi²SPE: paper-embedding throughput

{{header}}{r['papers']} BBC News articles as title [SEP] first paragraph ({t['median_length']:.0f} word pieces median,
{t['max_length']} at most), batch {r['batch']}, {r['threads']} torch threads, MiniLM-L6's configuration, median of
interleaved rounds.

| Implementation | papers / s | tokens computed (with padding) |
|---|---|---|
| genfeat `embed_papers` (Multi²SPE K = 3, length order) | {ps['genfeat']:.1f} | {t['bucketed']:,} (+ 2 a paper) |
| transformers `BertModel`, given order, padded per batch | {ps['transformers']:.1f} | {t['padded_in_order']:,} |

Speed-up: **{r['speedup']:.2f}×** (goal ≥ 1.3×); the real tokens are {t['real']:,}.

{reading(NAME)}
"""


if __name__ == "__main__":
    main()
