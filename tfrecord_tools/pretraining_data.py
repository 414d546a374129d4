"""Pretraining TFRecords from raw text, at any corpus size: parallel, bounded in memory, deterministic.

The inputs are cut into units by bytes (`pretraining_units`); `UnitMaker.make(unit)` reads one
unit, tokenizes it in one batch (tensorflow-text ops) and turns it into serialized instances with
the unit's own random generator (seeded by `random_seed` and the unit's index). That one function
is all a worker runs, here in a process pool and in the Beam pipeline (`pretraining_beam`), so
memory is bounded by the unit and the instances do not depend on how many workers there are.
Locally, instance k of unit u goes to output file (k + u) mod n, each file written under a
temporary name and renamed when everything succeeded: the bytes are the same for any
`num_workers`. The parent process only plans units and appends the workers' part files; it never
reads text nor imports TensorFlow.
"""

import dataclasses
import glob
import multiprocessing
import os
import shutil
import signal

from keras_bert_common import stop
from keras_bert_common.errors import UsageError
from keras_bert_common.files import atomic_outputs, open_binary
from keras_bert_common.lean_import import import_tensorflow_text_without_keras
from keras_bert_common.progress import LimitedWarnings, Progress
from tfrecord_tools.pretraining_units import DEFAULT_UNIT_BYTES, plan_units, read_unit
from tfrecord_tools.vocab_file import check_special_tokens, load_vocab_list


@dataclasses.dataclass(frozen=True)
class PretrainingDataOptions:
    """Google's create_pretraining_data.py flags, plus the scaling knobs and dynamic masking."""

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
    unit_bytes: int = DEFAULT_UNIT_BYTES
    dynamic_masking: bool = False
    # False: masked-LM-only records, RoBERTa's FULL-SENTENCES inputs (DOC-SENTENCES with doc_sentences).
    next_sentence_prediction: bool = True
    doc_sentences: bool = False


@dataclasses.dataclass
class Summary:
    units: int = 0
    text_bytes: int = 0
    documents: int = 0
    empty_documents: int = 0
    bad_lines: int = 0
    instances: int = 0
    tokens: int = 0
    masked_tokens: int = 0
    random_next: int = 0
    single_document_units: int = 0  # units whose text is one document
    empty_units: int = 0  # units in which no document starts (inside a longer one, or only bad lines)

    def add(self, other):
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

    def single_document_warning(self, next_sentence_prediction=True):
        """A warning when most units with text hold one document (documents of about a unit or
        more, such as files without blank lines): their random next segments come from the same
        document, where Google's tool draws them from the whole corpus, so NSP learns less."""
        with_text = self.units - self.empty_units
        if not next_sentence_prediction or self.single_document_units * 2 <= with_text:
            return None
        return (
            f"{self.single_document_units} of {with_text} units with text hold a single document, so their "
            "'random next' segments come from that same document (Google's tool draws them from the whole "
            "corpus); documents this long usually lack the blank lines that separate documents: put one "
            "between documents (or raise --unit_bytes)"
        )

    def lines(self, next_sentence_prediction=True):
        instances = max(self.instances, 1)
        masked = f"{self.masked_tokens / max(self.tokens, 1):.4f}" if self.masked_tokens else "none (dynamic masking)"
        lines = [
            f"documents: {self.documents} in {self.units} units of text "
            f"(skipped: {self.empty_documents} empty, {self.bad_lines} lines not UTF-8)",
            f"instances: {self.instances}",
            f"tokens: {self.tokens} (mean length {self.tokens / instances:.1f})",
            f"masked fraction: {masked}",
        ]
        if next_sentence_prediction:
            lines.append(f"random-next share: {self.random_next / instances:.4f}")
        else:
            lines.append("next-sentence labels: none (masked LM only, one segment)")
        return lines


class UnitMaker:
    """What every worker holds: the tokenizer and the instance maker, built once (TensorFlow is
    imported here, in the worker)."""

    def __init__(self, options):
        from tfrecord_tools import (
            example_wire,
            feature_specs,  # TensorFlow loads per worker
        )
        from tfrecord_tools.pretraining_instances import PretrainingInstanceMaker, documents_of
        from tfrecord_tools.tokenization import FullTokenizer

        self.options = options
        self.tokenizer = FullTokenizer(options.vocab_file, do_lower_case=options.do_lower_case)
        vocab = self.tokenizer.vocab
        check_special_tokens(vocab, options.vocab_file, ("[CLS]", "[SEP]", "[MASK]"), fix="BERT pretraining needs it")
        self.maker = PretrainingInstanceMaker(
            vocab_size=len(self.tokenizer.inv_vocab),
            cls_id=vocab["[CLS]"],
            sep_id=vocab["[SEP]"],
            mask_id=vocab["[MASK]"],
            continuation_ids=[i for i, token in self.tokenizer.inv_vocab.items() if token.startswith("##")],
            max_seq_length=options.max_seq_length,
            max_predictions_per_seq=options.max_predictions_per_seq,
            masked_lm_prob=options.masked_lm_prob,
            short_seq_prob=options.short_seq_prob,
            do_whole_word_mask=options.do_whole_word_mask,
            next_sentence_prediction=options.next_sentence_prediction,
            doc_sentences=options.doc_sentences,
        )
        if options.dynamic_masking:
            self.spec = feature_specs.dynamic_pretraining_spec(options.max_seq_length, options.next_sentence_prediction)
        else:
            self.spec = feature_specs.pretraining_spec(
                options.max_seq_length, options.max_predictions_per_seq, options.next_sentence_prediction
            )
        self._to_bytes = example_wire.examples_to_bytes
        self._documents_of = documents_of

    def make(self, unit, warn=None, opener=open_binary):
        """(serialized tf.train.Examples of `unit`, in order; its `Summary`)."""
        options = self.options
        documents, bad_lines = read_unit(unit, warn, opener)
        sentences = [sentence for document in documents for sentence in document]
        flat_ids, splits = self.tokenizer.tokenize_to_flat_ids(sentences)
        spans = self._documents_of(splits.tolist(), [len(document) for document in documents])
        summary = Summary(units=1, text_bytes=unit.text_bytes, documents=len(documents), bad_lines=bad_lines)
        summary.empty_documents = sum(1 for _, offsets in spans if len(offsets) == 1)
        summary.single_document_units = int(len(spans) - summary.empty_documents == 1)
        summary.empty_units = int(not documents)
        records = []
        for features in self.maker.feature_chunks(
            flat_ids, spans, options.random_seed, unit.index, options.dupe_factor, masked=not options.dynamic_masking
        ):
            records.extend(self._to_bytes(features, self.spec))
            summary.tokens += int(features["input_mask"].sum())
            summary.masked_tokens += int(features["masked_lm_weights"].sum()) if "masked_lm_weights" in features else 0
            summary.random_next += (
                int(features["next_sentence_labels"].sum()) if "next_sentence_labels" in features else 0
            )
        summary.instances = len(records)
        return records, summary


def check_vocab(vocab_file):
    """Before any work (and without TensorFlow): a readable vocabulary with the special tokens
    BERT pretraining needs."""
    tokens = load_vocab_list(vocab_file)
    check_special_tokens(tokens, vocab_file, ("[CLS]", "[SEP]", "[MASK]"), fix="BERT pretraining needs it")


_WORKER = {}


def _init_worker(options, in_pool=False):
    """Builds the unit maker once per process. Pool workers ignore Ctrl-C (the parent stops them,
    so one line is printed, not one per worker), import TensorFlow without Keras (1.4 s less
    start-up each) and keep TensorFlow to one thread, one per core."""
    if in_pool:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import_tensorflow_text_without_keras()
        # What tf.config.threading's setters do; tf.config itself would load tf.distribute's
        # cluster resolvers (googleapiclient with them), 0.13 s of each worker's start-up.
        from tensorflow.python.eager import context

        context.context().intra_op_parallelism_threads = 1
        context.context().inter_op_parallelism_threads = 1
    if _WORKER.get("options") != options:
        _WORKER.update(options=options, maker=UnitMaker(options))


def _process_unit(task):
    """Makes one unit's records and writes them to part files, one per output file: record k of
    unit u goes to output (k + u) mod n. Returns (part paths, or None where empty; Summary; bad lines)."""
    import tensorflow as tf

    unit, part_prefix, num_outputs = task
    warnings = []
    records, summary = _WORKER["maker"].make(unit, warn=warnings.append)
    parts = []
    for output_index in range(num_outputs):
        mine = records[(output_index - unit.index) % num_outputs :: num_outputs]
        if not mine:
            parts.append(None)
            continue
        path = f"{part_prefix}.unit{unit.index:08d}.part{output_index}"
        with tf.io.TFRecordWriter(path) as writer:
            for record in mine:
                writer.write(record)
        parts.append(path)
    return parts, summary, warnings


def _append(path, output):
    """Appends file `path` to the open file `output`, in the kernel where it can (sendfile):
    the parent's copying then takes no CPU from the workers."""
    output.flush()
    with open(path, "rb") as reader:
        size = os.fstat(reader.fileno()).st_size
        try:
            offset = 0
            while offset < size:
                sent = os.sendfile(output.fileno(), reader.fileno(), offset, size - offset)
                if not sent:
                    break
                offset += sent
        except OSError:  # no sendfile between these files: copy in Python
            if offset:
                raise
            reader.seek(0)
            output.seek(0, os.SEEK_END)
            shutil.copyfileobj(reader, output, 1 << 22)


def create_pretraining_data(input_paths, output_files, options, log=print, progress_seconds=5.0, warn=None):
    """Writes the TFRecords; returns a `Summary`. On any error, Ctrl-C or SIGTERM no output file
    and no part file is left behind.

    Workers write each unit to part files next to the outputs (TFRecord files concatenate), so
    only unit descriptions, file names and summaries cross process boundaries; the parent appends
    the parts in unit order.
    """
    check_vocab(options.vocab_file)
    units = plan_units(input_paths, options.unit_bytes)
    total_bytes = sum(unit.text_bytes for unit in units)
    if not total_bytes:
        raise UsageError(f"{', '.join(input_paths)}: hold no text; check --input_file")
    warnings = LimitedWarnings(warn or log)
    summary = Summary()
    with atomic_outputs(output_files) as temporaries:
        part_prefix = temporaries[0]
        tasks = ((unit, part_prefix, len(output_files)) for unit in units)
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
            progress = Progress(total_bytes >> 20, "MB of text", log, progress_seconds)
            for parts, unit_summary, unit_warnings in results:
                for output, part in zip(outputs, parts):
                    if part is not None:
                        _append(part, output)
                        os.remove(part)
                for message in unit_warnings:
                    warnings(message)
                summary.add(unit_summary)
                progress.update(summary.text_bytes >> 20, f"instances {summary.instances}")
                stop.raise_if_requested()
            if not summary.documents:
                raise UsageError(f"{', '.join(input_paths)}: hold no text (only blank lines); check --input_file")
        finally:
            if pool is not None:
                pool.terminate()  # no-op after a complete run; stops the workers after an error or a signal
                pool.join()
            for output in outputs:
                output.close()
            for leftover in glob.glob(glob.escape(part_prefix) + ".unit*"):
                os.remove(leftover)
    warnings.finish(", ".join(input_paths), "lines (not UTF-8)")
    return summary
