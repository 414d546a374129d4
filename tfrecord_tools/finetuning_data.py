"""Fine-tuning data directories: `{split}.tfrecord` files, their sidecars and `meta.json`.

One convention everywhere: `create_finetuning_data.py` writes such a directory, and every
fine-tuning runner reads one, either the directory given as `--data_dir` (made once, e.g. on a
bucket for a TPU) or one it writes into its `--output_dir` from raw TSV/JSON/CoNLL/CSV files with
the same functions. `meta.json` records what the features were made with (task, model type,
labels, lengths, casing, the vocabulary's size and digest, record counts), so a runner can refuse
data that does not match its flags before it trains.
"""

import hashlib
import json
import os
import random

from keras_bert_common.errors import UsageError
from keras_bert_common.files import atomic_output, exists

META_FILE = "meta.json"


def split_path(directory, split):
    return os.path.join(directory, f"{split}.tfrecord")


def vocab_digest(vocab_file):
    """sha256 of the vocabulary file, to tell the vocabularies of two models apart."""
    with open(vocab_file, "rb") as reader:
        return hashlib.sha256(reader.read()).hexdigest()


def is_data_dir(directory):
    return bool(directory) and os.path.isfile(os.path.join(directory, META_FILE))


class FineTuningData:
    """A directory that `create_finetuning_data` (or a runner) wrote; see the module docstring."""

    def __init__(self, directory, meta):
        self.directory = directory
        self.meta = meta

    @classmethod
    def open(cls, directory):
        path = os.path.join(directory, META_FILE)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"{path}: missing; --data_dir holds neither meta.json (from create_finetuning_data) "
                "nor the task's raw files"
            )
        try:
            with open(path, encoding="utf-8") as reader:
                meta = json.load(reader)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise UsageError(f"{path}: not valid JSON ({error}); recreate it with create_finetuning_data") from None
        missing = [
            key for key in ("task_name", "model_type", "max_seq_length", "do_lower_case", "counts") if key not in meta
        ]
        if missing:
            raise UsageError(f"{path}: lacks {', '.join(missing)}; recreate it with create_finetuning_data")
        return cls(directory, meta)

    @property
    def labels(self):
        return self.meta.get("labels") or []

    @property
    def model_type(self):
        return self.meta["model_type"]

    def has(self, split):
        return split in self.meta["counts"] and exists(split_path(self.directory, split))

    def count(self, split):
        return self.meta["counts"].get(split)

    def path(self, split):
        path = split_path(self.directory, split)
        if not self.has(split):
            held = ", ".join(sorted(self.meta["counts"])) or "no split"
            raise FileNotFoundError(
                f"{path}: missing (this data directory holds {held}); rerun create_finetuning_data "
                f"with --splits including {split}"
            )
        return path

    def sidecar(self, split, suffix):
        path = split_path(self.directory, split) + suffix
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: missing; recreate the data directory with create_finetuning_data")
        return path

    def check(self, task_names=None, max_seq_length=None, do_lower_case=None, vocab_file=None):
        """Raises ValueError (one line, naming meta.json and the fix) where the data disagrees with
        the flags: made for another task, another sequence length, casing or vocabulary."""
        path = os.path.join(self.directory, META_FILE)
        meta = self.meta
        if task_names is not None and meta["task_name"].lower() not in [name.lower() for name in task_names]:
            raise UsageError(
                f"{path}: made for task {meta['task_name']}, not {'/'.join(task_names)}; "
                "pass the data directory of this task"
            )
        if max_seq_length is not None and meta["max_seq_length"] != max_seq_length:
            raise UsageError(
                f"{path}: features are {meta['max_seq_length']} tokens long but --max_seq_length="
                f"{max_seq_length}; pass --max_seq_length={meta['max_seq_length']} or recreate the data"
            )
        if do_lower_case is not None and bool(meta["do_lower_case"]) != bool(do_lower_case):
            raise UsageError(
                f"{path}: made with do_lower_case={meta['do_lower_case']} but --do_lower_case="
                f"{do_lower_case}; make them agree"
            )
        if vocab_file and meta.get("vocab_sha256") and meta["vocab_sha256"] != vocab_digest(vocab_file):
            with open(vocab_file, encoding="utf-8") as reader:
                tokens = sum(1 for _ in reader)
            raise UsageError(
                f"{path}: tokenized with another vocabulary ({meta.get('vocab_size')} tokens) than {vocab_file} "
                f"({tokens} tokens); recreate the data with this --vocab_file"
            )


def check_output_dir_task(directory, task_name):
    """Before writing a task's features into a run's --output_dir: it holds no other task's."""
    path = os.path.join(directory, META_FILE)
    if not os.path.isfile(path):
        return
    try:
        with open(path, encoding="utf-8") as reader:
            other = json.load(reader).get("task_name", "")
    except (OSError, ValueError, AttributeError):
        return
    if other.lower() != task_name.lower():
        raise UsageError(
            f"{directory}: holds a run of task {other} (meta.json); pass another --output_dir for {task_name}"
        )


def base_meta(task_name, model_type, max_seq_length, tokenizer, **extra):
    return {
        "task_name": task_name,
        "model_type": model_type,
        "max_seq_length": max_seq_length,
        "do_lower_case": tokenizer.do_lower_case,
        "vocab_size": len(tokenizer.inv_vocab),
        "vocab_sha256": vocab_digest(tokenizer.vocab_file),
        "counts": {},
        "skipped_by_split": {},  # rows skipped with a warning, per split ("skipped_rows": their sum)
        **extra,
    }


def write_meta(directory, meta):
    """meta.json, merged with an existing one made with the same settings (other splits kept)."""
    path = os.path.join(directory, META_FILE)
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as reader:
                old = json.load(reader)
        except (OSError, ValueError):
            old = {}
        same = all(
            old.get(key) == meta.get(key)
            for key in ("task_name", "model_type", "max_seq_length", "do_lower_case", "vocab_sha256", "labels")
        )
        if same:
            meta = {
                **old,
                **meta,
                **{key: {**old.get(key, {}), **meta[key]} for key in ("counts", "skipped_by_split")},
            }
    with atomic_output(path) as writer:
        json.dump(meta, writer, indent=2)
        writer.write("\n")
    return meta


def _require_examples(examples, path, what="usable rows", skipped=0, hint="check the file and the task's column flags"):
    """Some examples, and more than were skipped: a file where most rows do not fit is another
    task's (MRPC's --task_name over STS-B's files kept the 2 rows whose score was 0 or 1)."""
    if not examples:
        detail = f" ({skipped} skipped, see the warnings)" if skipped else ""
        raise UsageError(f"{path}: holds no {what}{detail}; {hint}")
    if skipped > len(examples):
        raise UsageError(
            f"{path}: {skipped} rows skipped (see the warnings), only {len(examples)} usable: is this the data of "
            f"another task? Check --task_name; {hint}"
        )


def write_classification_data(processor, task_name, splits, tokenizer, max_seq_length, output_dir):
    """GLUE-style TSV -> {split}.tfrecord (run_classifier's features) and meta.json."""
    from tfrecord_tools.classification_data import write_classification_tfrecord

    check_output_dir_task(output_dir, task_name)
    meta = base_meta(
        task_name,
        "regression" if processor.is_regression else "classifier",
        max_seq_length,
        tokenizer,
        labels=processor.labels,
        is_regression=processor.is_regression,
    )
    examples = {}
    for split in splits:  # every split read and checked before anything is written
        before = processor.skipped
        examples[split] = processor.get_examples(split)
        meta["skipped_by_split"][split] = processor.skipped - before
        if split != "test":
            _require_examples(examples[split], processor.path(split), skipped=processor.skipped - before)
    for split in splits:
        meta["counts"][split] = write_classification_tfrecord(
            examples[split],
            processor.labels,
            max_seq_length,
            tokenizer,
            split_path(output_dir, split),
            processor.is_regression,
        )
    meta["skipped_rows"] = processor.skipped
    return write_meta(output_dir, meta)


def write_squad_data(
    tokenizer,
    max_seq_length,
    output_dir,
    train_file=None,
    predict_file=None,
    version_2_with_negative=False,
    doc_stride=128,
    max_query_length=64,
    warn=print,
):
    """SQuAD JSON -> train.tfrecord (shuffled as Google's run_squad.py) and predict.tfrecord with
    its `.features.jsonl` sidecar (what turns logits back into answer text)."""
    from tfrecord_tools.squad_data import (
        convert_examples_to_features,
        read_squad_examples,
        write_squad_tfrecord,
    )

    check_output_dir_task(output_dir, "squad")
    window = max_seq_length - max_query_length - 3  # context tokens a window holds at the least
    if window < 1:
        raise UsageError(
            f"--max_seq_length={max_seq_length} leaves no room for the context after "
            f"--max_query_length={max_query_length}; raise --max_seq_length"
        )
    meta = base_meta(
        "squad",
        "squad",
        max_seq_length,
        tokenizer,
        version_2_with_negative=version_2_with_negative,
        doc_stride=doc_stride,
        max_query_length=max_query_length,
    )
    inputs = [
        (name, path, name == "train") for name, path in (("train", train_file), ("predict", predict_file)) if path
    ]
    read = {}
    for name, path, is_training in inputs:
        examples, skipped = read_squad_examples(path, is_training, version_2_with_negative, warn=warn)
        _require_examples(examples, path, "questions", skipped, "check the file")
        if is_training:
            random.Random(12345).shuffle(examples)  # as Google's run_squad.py
        read[name] = (examples, skipped, path)
    for name, (examples, skipped, path) in read.items():
        is_training = name == "train"
        features = convert_examples_to_features(
            examples, tokenizer, max_seq_length, doc_stride, max_query_length, is_training
        )
        meta["counts"][name] = write_squad_tfrecord(features, max_seq_length, is_training, split_path(output_dir, name))
        meta[f"{name}_examples"], meta[f"{name}_skipped"] = len(examples), skipped
        meta[f"{name}_file"] = os.path.abspath(path)
    return write_meta(output_dir, meta)


CONLL_FILES = {"train": "eng.train", "dev": "eng.testa", "test": "eng.testb"}
SWAG_FILES = {"train": "train.csv", "dev": "val.csv", "test": "test.csv"}


def write_conll_data(data_dir, splits, tokenizer, max_seq_length, output_dir, warn=print):
    """CoNLL-2003 -> {split}.tfrecord (a tag on each word's first piece) with a `.sentences.jsonl`
    sidecar (words and gold tags, for conlleval), and meta.json."""
    from tfrecord_tools.ner_data import CONLL_LABELS, ConllReader, write_ner_tfrecord

    check_output_dir_task(output_dir, "conll")
    reader = ConllReader(warn=warn)
    meta = base_meta("conll", "ner", max_seq_length, tokenizer, labels=list(CONLL_LABELS))
    sentences = {}
    for split in splits:
        path = os.path.join(data_dir, CONLL_FILES[split])
        before = reader.skipped
        sentences[split] = reader.read(path)
        _require_examples(sentences[split], path, "sentences", reader.skipped - before, "check the file")
    for split in splits:
        meta["counts"][split], kept = write_ner_tfrecord(
            sentences[split], CONLL_LABELS, max_seq_length, tokenizer, split_path(output_dir, split)
        )
        meta[f"{split}_truncated_sentences"] = sum(k < len(s.words) for k, s in zip(kept, sentences[split]))
    meta["skipped_sentences"] = reader.skipped
    return write_meta(output_dir, meta)


def write_swag_data(data_dir, splits, tokenizer, max_seq_length, output_dir, warn=print):
    """SWAG CSV -> {split}.tfrecord (four `[CLS] context [SEP] ending [SEP]` each) and meta.json."""
    from tfrecord_tools.swag_data import NUM_CHOICES, SwagReader, write_swag_tfrecord

    check_output_dir_task(output_dir, "swag")
    reader = SwagReader(warn=warn)
    meta = base_meta("swag", "multiple_choice", max_seq_length, tokenizer, num_choices=NUM_CHOICES)
    examples = {}
    for split in splits:
        path = os.path.join(data_dir, SWAG_FILES[split])
        before = reader.skipped
        examples[split] = reader.read(path)
        meta["skipped_by_split"][split] = reader.skipped - before
        _require_examples(examples[split], path, skipped=reader.skipped - before, hint="check the file")
    for split in splits:
        meta["counts"][split] = write_swag_tfrecord(
            examples[split], max_seq_length, tokenizer, split_path(output_dir, split)
        )
    meta["skipped_rows"] = reader.skipped
    return write_meta(output_dir, meta)
