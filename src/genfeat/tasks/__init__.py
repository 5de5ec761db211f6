"""Task layer: what a task adds on top of any encoder, kept out of the model families.

An encoder is any module called as `encoder(input_ids, token_type_ids=..., attention_mask=...)` that returns an
object with `.hidden` (B, T, d): genfeat's XLNet, or a Hugging Face model through `genfeat.api.HFBackbone`.

    base.py                  the task contract (Task: splits, loss, predict, score, evaluate, primary metric)
    language_modeling.py     LanguageModeling (next-token NLL, perplexity, bits per character; any backbone's pass)
    classification.py        SequenceClassification (classification / regression), MultipleChoice
    span_qa.py               SpanQA (SQuAD 2.0: spans with abstention, EM / F1, the null-threshold sweep)
    ranking.py               Ranking (several relevant candidates per query, any candidate set), NextItemRanking
                             (full ranking of the next item; the recommenders)
    similarity.py            Similarity (correlation with human judgements, and on the low half)
    node_classification.py   NodeClassification (labels of a graph's nodes; its scores are
                             `metrics.classification.split_accuracy`, which Planetoid's training reads directly)
    image_classification.py  SemiSupervisedImageClassification (errors on labeled images; the complement GAN's
                             evaluation, `paradigms.complement_gan.fit_gan_ssl`)

The task models (pooling, classification, multiple choice, span extraction, KNRM) are `nn.task_heads`; XLNet's
input layout is `data.pair_inputs`.

`paradigms.fit_task` trains a network on a task.

The XLNet fine-tuning models (`models/xlnet/heads.py`) are those task models on an XLNet encoder.
"""
