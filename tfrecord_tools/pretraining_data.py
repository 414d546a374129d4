"""Pretraining TFRecords from raw text, at any corpus size: streaming, parallel, deterministic.

Documents are read in order and grouped into units of `documents_per_unit`. Each unit is
tokenized in one batch (tensorflow-text ops) and turned into instances with its own random
generator (seeded by `random_seed` and the unit's index), so memory is bounded by the unit, not
the corpus, and the output bytes do not depend on `num_workers`. Instances go to the output files
round-robin, each written under a temporary name and renamed when everything succeeded.
"""

import dataclasses
import glob
import multiprocessing
import os
import shutil
import signal

from tfrecord_tools import feature_specs
from tfrecord_tools.files import atomic_outputs
from tfrecord_tools.pretraining_instances import PretrainingInstanceMaker
from tfrecord_tools.progress import LimitedWarnings, Progress


@dataclasses.dataclass
class PretrainingDataOptions:
    """Google's create_pretraining_data.py flags, plus the scaling knobs."""

    vocab_file: str
    do_lower_case: bool = True
    do_whole_word_mask: bool = False
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    random_seed: int = 12345
    dupe_factor: int = 10
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    num_workers: int = 1
    documents_per_unit: int = 256


@dataclasses.dataclass
class Summary:
    documents: int = 0
    empty_documents: int = 0
    bad_lines: int = 0
    instances: int = 0
    tokens: int = 0
    masked_tokens: int = 0
    random_next: int = 0

    def add(self, other):
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

    def lines(self):
        instances = max(self.instances, 1)
        return [
            f"documents: {self.documents} (skipped: {self.empty_documents} empty, {self.bad_lines} lines not UTF-8)",
            f"instances: {self.instances}",
            f"tokens: {self.tokens} (mean length {self.tokens / instances:.1f})",
            f"masked fraction: {self.masked_tokens / max(self.tokens, 1):.4f}",
            f"random-next share: {self.random_next / instances:.4f}",
        ]


def iter_documents(paths, warn):
    """Yields documents (lists of sentence strings): one sentence per line, blank line between
    documents. A line that is not UTF-8 is skipped with a warning naming file and line."""
    bad_lines = 0
    warnings = LimitedWarnings(warn)
    for path in paths:
        document = []
        with open(path, "rb") as reader:
            for line_number, raw in enumerate(reader, start=1):
                try:
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError as error:
                    bad_lines += 1
                    warnings(f"{path}:{line_number}: skipped, not UTF-8 ({error.reason} at byte {error.start})")
                    continue
                if line:
                    document.append(line)
                elif document:
                    yield document, bad_lines
                    document, bad_lines = [], 0
        # A file ends a document, as in Google's reader.
        if document:
            yield document, bad_lines
            document, bad_lines = [], 0
        warnings.finish(path, "lines (not UTF-8)")


def count_documents(paths):
    """Number of documents, for the progress estimate (a fast byte-level pass)."""
    total = 0
    for path in paths:
        in_document = False
        with open(path, "rb") as reader:
            for raw in reader:
                if raw.strip():
                    in_document = True
                elif in_document:
                    total += 1
                    in_document = False
        total += in_document
    return total


_WORKER = {}


def _init_worker(options, in_pool=False):
    """Builds the tokenizer and instance maker once per process (and per set of options). Pool
    workers ignore Ctrl-C: the parent stops them, so one line is printed, not one per worker."""
    if in_pool:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if _WORKER.get("options") == options:
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from tfrecord_tools.tokenization import FullTokenizer  # noqa: PLC0415 -- TF loads per process

    tokenizer = FullTokenizer(options.vocab_file, do_lower_case=options.do_lower_case)
    vocab = tokenizer.vocab
    for token in ("[CLS]", "[SEP]", "[MASK]"):
        if token not in vocab:
            raise ValueError(f"{options.vocab_file}: has no {token} token; BERT pretraining needs it")
    maker = PretrainingInstanceMaker(
        vocab_size=len(tokenizer.inv_vocab),
        cls_id=vocab["[CLS]"],
        sep_id=vocab["[SEP]"],
        mask_id=vocab["[MASK]"],
        continuation_ids=[i for i, token in tokenizer.inv_vocab.items() if token.startswith("##")],
        max_seq_length=options.max_seq_length,
        max_predictions_per_seq=options.max_predictions_per_seq,
        masked_lm_prob=options.masked_lm_prob,
        short_seq_prob=options.short_seq_prob,
        do_whole_word_mask=options.do_whole_word_mask,
    )
    _WORKER.update(options=options, tokenizer=tokenizer, maker=maker)


def _process_unit(task):
    """Makes one unit's examples and writes them to part files, one per output file: record k of
    unit u goes to output (k + u) mod n. Returns (part paths, or None where empty; Summary)."""
    import tensorflow as tf  # noqa: PLC0415

    unit_index, documents, bad_lines, part_prefix, num_outputs = task
    options, tokenizer, maker = _WORKER["options"], _WORKER["tokenizer"], _WORKER["maker"]
    sentences = [sentence for document in documents for sentence in document]
    ids = tokenizer.tokenize_to_ids(sentences)
    tokenized, start = [], 0
    for document in documents:
        tokenized.append([sentence for sentence in ids[start : start + len(document)] if sentence])
        start += len(document)
    summary = Summary(documents=len(documents), bad_lines=bad_lines)
    summary.empty_documents = sum(1 for document in tokenized if not document)
    features = maker.instances_from_documents(tokenized, options.random_seed, unit_index, options.dupe_factor)
    spec = feature_specs.pretraining_spec(options.max_seq_length, options.max_predictions_per_seq)
    records = feature_specs.examples_to_bytes(features, spec)
    summary.instances = len(records)
    summary.tokens = int(features["input_mask"].sum())
    summary.masked_tokens = int(features["masked_lm_weights"].sum())
    summary.random_next = int(features["next_sentence_labels"].sum())
    parts = []
    for output_index in range(num_outputs):
        mine = records[(output_index - unit_index) % num_outputs :: num_outputs]
        if not mine:
            parts.append(None)
            continue
        path = f"{part_prefix}.unit{unit_index:08d}.part{output_index}"
        with tf.io.TFRecordWriter(path) as writer:
            for record in mine:
                writer.write(record)
        parts.append(path)
    return parts, summary


def _units(paths, documents_per_unit, warn):
    unit, bad = [], 0
    index = 0
    for document, bad_lines in iter_documents(paths, warn):
        unit.append(document)
        bad += bad_lines
        if len(unit) == documents_per_unit:
            yield index, unit, bad
            index, unit, bad = index + 1, [], 0
    if unit or bad:
        yield index, unit, bad


def create_pretraining_data(input_paths, output_files, options, log=print, progress_seconds=5.0, warn=None):
    """Writes the TFRecords; returns a `Summary`. On any error, Ctrl-C or SIGTERM no output file
    and no part file is left behind.

    Workers write each unit to part files next to the outputs (TFRecord files concatenate), so
    only file names and summaries cross process boundaries; the parts are appended in unit order.
    """
    total_documents = count_documents(input_paths)
    if not total_documents:
        raise ValueError(
            f"{', '.join(input_paths)}: hold no text (documents are non-blank lines, a blank line "
            "between documents); check --input_file"
        )
    summary = Summary()
    with atomic_outputs(output_files) as temporaries:
        part_prefix = temporaries[0]
        tasks = (
            (index, unit, bad, part_prefix, len(output_files))
            for index, unit, bad in _units(input_paths, options.documents_per_unit, warn=warn or log)
        )
        outputs = [open(path, "wb") for path in temporaries]
        pool = None
        try:
            if options.num_workers > 1:
                # spawn: TensorFlow is not fork-safe once initialised.
                pool = multiprocessing.get_context("spawn").Pool(
                    options.num_workers, initializer=_init_worker, initargs=(options, True)
                )
                results = pool.imap(_process_unit, tasks)
            else:
                _init_worker(options)
                results = map(_process_unit, tasks)
            progress = Progress(total_documents, "documents", log, progress_seconds)
            for parts, unit_summary in results:
                for output, part in zip(outputs, parts):
                    if part is not None:
                        with open(part, "rb") as reader:
                            shutil.copyfileobj(reader, output, 1 << 22)
                        os.remove(part)
                summary.add(unit_summary)
                progress.update(summary.documents, f"instances {summary.instances}")
        finally:
            if pool is not None:
                pool.terminate()  # no-op after a complete run; stops the workers after an error or a signal
                pool.join()
            for output in outputs:
                output.close()
            for leftover in glob.glob(glob.escape(part_prefix) + ".unit*"):
                os.remove(leftover)
    return summary
