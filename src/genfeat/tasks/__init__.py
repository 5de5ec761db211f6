"""Task layer: what a task adds on top of any encoder, kept out of the model families.

An encoder is any module called as `encoder(input_ids, token_type_ids=..., attention_mask=...)` that returns an
object with `.hidden` (B, T, d): genfeat's XLNet, or a Hugging Face model through `genfeat.api.HFBackbone`.

    heads.py    SequenceSummary (pooling), SequenceClassifier (classification / regression), MultipleChoice,
                SpanExtractor (span QA with answerability), KNRM (kernel-pooling ranking)
    inputs.py   input layouts (XLNet's [A, <sep>, B, <sep>, <cls>], left-padded)

The XLNet fine-tuning models (`models/xlnet/heads.py`) are these task models on an XLNet encoder.
"""
