"""RecBole's own SASRec on the same MovieLens-100K split and metric as `genfeat run seqrec`, for the side-by-side
of docs/results/seqrec.md. Runs in a throwaway venv (RecBole's pins do not fit genfeat's environment):

    python3 -m venv /tmp/rbvenv && /tmp/rbvenv/bin/pip install torch==2.13.0 recbole==1.2.1
    /tmp/rbvenv/bin/pip install "setuptools<70" "numpy<2" "pandas<2.2" "scipy<1.14"   # its imports need these
    /tmp/rbvenv/bin/python scripts/reference/recbole_sasrec.py \
        --data-dir $GENFEAT_DATA/ml-100k/recbole/dataset_example --epochs 300 --out recbole_sasrec.json

Settings as the thesis / genfeat preset `sasrec_ml100k`: leave-one-out in time order (LS valid_and_test, TO),
full ranking, CE loss without negative sampling, history 50, 2 layers, 2 heads, hidden 64, inner 256, dropout
0.2 (hidden and attention), Adam lr 1e-3, batch 128, early stopping on valid NDCG@10 with patience 10.
"""

import argparse
import json
import os
import time

os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # RecBole 1.2.1 pickles its config in checkpoints

from recbole.config import Config
from recbole.data import create_dataset, data_preparation
from recbole.model.sequential_recommender import SASRec
from recbole.trainer import Trainer
from recbole.utils import init_seed

ap = argparse.ArgumentParser()
ap.add_argument("--data-dir", required=True)
ap.add_argument("--epochs", type=int, default=300)
ap.add_argument("--seed", type=int, default=2020)
ap.add_argument("--out", required=True)
args = ap.parse_args()
config = {
    "data_path": args.data_dir, "load_col": {"inter": ["user_id", "item_id", "timestamp"]},
    "user_inter_num_interval": "[0,inf)", "item_inter_num_interval": "[0,inf)", "rm_dup_inter": None,
    "MAX_ITEM_LIST_LENGTH": 50, "eval_args": {"split": {"LS": "valid_and_test"}, "order": "TO", "mode": "full",
                                              "group_by": "user"},
    "train_neg_sample_args": None, "loss_type": "CE", "hidden_size": 64, "inner_size": 256, "n_layers": 2,
    "n_heads": 2, "hidden_dropout_prob": 0.2, "attn_dropout_prob": 0.2, "learning_rate": 1e-3,
    "train_batch_size": 128, "eval_batch_size": 4096, "epochs": args.epochs, "stopping_step": 10,
    "metrics": ["Hit", "NDCG", "MRR"], "topk": [10], "valid_metric": "NDCG@10", "seed": args.seed,
    "reproducibility": True, "device": "cpu", "use_gpu": False, "show_progress": False, "save_dataset": False,
    "checkpoint_dir": "/tmp/recbole_saved",
}
t = time.time()
cfg = Config(model="SASRec", dataset="ml-100k", config_dict=config)  # not quick_start: it imports ray
init_seed(cfg["seed"], cfg["reproducibility"])
dataset = create_dataset(cfg)
print(dataset)
train, valid, test = data_preparation(cfg, dataset)
model = SASRec(cfg, train.dataset)
trainer = Trainer(cfg, model)
best_valid, best_valid_result = trainer.fit(train, valid, saved=True, show_progress=False)
test_result = trainer.evaluate(test, load_best_model=True, show_progress=False)
res = {"best_valid_score": best_valid, "best_valid_result": dict(best_valid_result), "test_result": dict(test_result),
       "users": dataset.user_num - 1, "items": dataset.item_num - 1, "interactions": len(dataset.inter_feat)}
res["wall_s"] = round(time.time() - t, 1)
res["config"] = config
with open(args.out, "w") as f:
    json.dump(res, f, indent=1, default=str)
print(json.dumps(res, indent=1, default=str))
