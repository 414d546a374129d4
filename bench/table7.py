"""The paper's Table 7 in miniature: CoNLL-2003 dev F1 of all-MiniLM-L6-v2's frozen layers under a
two-layer BiLSTM (run_ner --feature_based), every row of the paper, beside fine-tuning the same
model, all on the same training sample. The layers are computed once per row into a shared
cache, so other seeds train the BiLSTM only.

    .venv/bin/python -m bench.table7 [--train_sentences=2000] [--seeds=3] [--output_root=/tmp/table7]

Prints a markdown table (mean and spread over the seeds beside the paper's BERT-base numbers) and
writes every run's metrics to OUTPUT_ROOT/table7.json.
"""

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bench.finetune_acceptance import SHARED_DATA, google_model_dir, options  # noqa: E402

# Devlin et al. 2019, Table 7: CoNLL-2003 dev F1, BERT-base.
PAPER = {
    "embeddings": 91.0,
    "second_to_last": 95.6,
    "last": 94.9,
    "sum_last_four": 95.9,
    "concat_last_four": 96.1,
    "weighted_sum_all": 95.5,
    "fine-tuning": 96.4,
}


def run_row(model_dir, root, row, seed, args, log):
    """One run: dev metrics and wall seconds."""
    from keras_bert_impl.runners.run_ner import NerOptions, run_ner

    settings = dict(
        data_dir=os.path.join(SHARED_DATA, "CoNLL2003"),
        max_train_sentences=args.train_sentences,
        random_seed=seed,
        eval_batch_size=64,
        save_checkpoints_steps=100000,
        iterations_per_loop=50,
    )
    if row.startswith("fine-tuning"):
        _, learning_rate, epochs = row.split(", ")  # "fine-tuning, lr 5e-05, 3 epochs"
        settings.update(learning_rate=float(learning_rate.split()[1]), num_train_epochs=float(epochs.split()[0]))
    else:
        settings.update(
            feature_based=row,
            lstm_size=args.lstm_size,
            learning_rate=args.learning_rate,
            num_train_epochs=args.epochs,
            feature_cache_dir=os.path.join(root, "layer_cache"),
        )
    output_dir = os.path.join(root, f"{row}-seed{seed}")
    start = time.perf_counter()
    results = run_ner(options(model_dir, output_dir, NerOptions, **settings), log=log).eval
    return {"row": row, "seed": seed, "f1": 100 * results["eval_f1"], "seconds": time.perf_counter() - start}


def table(runs):
    lines = [
        "| features | dev F1, MiniLM-L6 (mean ± sd, seeds) | paper, BERT-base | minutes per run |",
        "|---|---|---|---|",
    ]
    names = [row for row in PAPER if row != "fine-tuning"]
    names += sorted({run["row"] for run in runs if run["row"].startswith("fine-tuning")})
    for row in names:
        mine = [run for run in runs if run["row"] == row]
        if not mine:
            continue
        f1 = [run["f1"] for run in mine]
        spread = f" ± {statistics.stdev(f1):.1f}" if len(f1) > 1 else ""
        minutes = statistics.mean(run["seconds"] for run in mine) / 60
        paper = PAPER[row.split(",")[0]]
        lines.append(f"| {row} | {statistics.mean(f1):.1f}{spread} ({len(f1)}) | {paper} | {minutes:.1f} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_root", default="/tmp/table7")
    parser.add_argument("--train_sentences", type=int, default=2000)
    parser.add_argument("--rows", default=",".join(PAPER))
    parser.add_argument("--seeds", type=int, default=3, help="for concat_last_four and fine-tuning")
    parser.add_argument("--other_seeds", type=int, default=1, help="for the other feature rows")
    parser.add_argument("--epochs", type=float, default=4.0)
    parser.add_argument(
        "--finetune_recipes",
        default="5e-5:3,1e-4:4",
        help="learning_rate:epochs of each fine-tuning row (Google's recipe; the feature rows' steps at 1e-4)",
    )
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--lstm_size", type=int, default=None, help="default: the hidden size (384)")
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(SHARED_DATA, "CoNLL2003")):
        sys.exit(f"{SHARED_DATA}/CoNLL2003: not there; this bench needs the shared data")
    os.makedirs(args.output_root, exist_ok=True)
    model_dir = google_model_dir(args.output_root)
    results_path = os.path.join(args.output_root, "table7.json")
    runs = json.load(open(results_path)) if os.path.exists(results_path) else []

    def log(message):
        if message.startswith(("step ", "eval:", "computing", "reusing")):
            print(f"  {message}", flush=True)

    rows = []
    for row in args.rows.split(","):
        if row == "fine-tuning":
            for recipe in args.finetune_recipes.split(","):
                learning_rate, epochs = (float(value) for value in recipe.split(":"))
                rows.append((f"fine-tuning, lr {learning_rate:g}, {epochs:g} epochs", args.seeds))
        else:
            rows.append((row, args.seeds if row == "concat_last_four" else args.other_seeds))
    for row, seeds in rows:
        for seed in range(1, seeds + 1):
            if any(run["row"] == row and run["seed"] == seed for run in runs):
                continue  # done in an earlier call: the bench resumes row by row
            print(f"{row}, seed {seed}", flush=True)
            runs.append(run_row(model_dir, args.output_root, row, seed, args, log))
            print(f"  -> F1 {runs[-1]['f1']:.2f} in {runs[-1]['seconds']:.0f} s", flush=True)
            with open(results_path, "w") as writer:
                json.dump(runs, writer, indent=1)
    print(table(runs))


if __name__ == "__main__":
    main()
