"""`ConllReader`: CoNLL-2003 NER files -> token-classification features (label on the first piece).

The paper's NER set-up: each word is WordPiece-tokenized, its label goes on its first piece
(`label_weights` 1) and the other pieces are ignored (`label_weights` 0).
"""

import dataclasses
import json

import numpy as np

from keras_bert_common.files import atomic_output
from keras_bert_common.progress import LimitedWarnings
from tfrecord_tools import example_wire, feature_specs, tfrecord_files

SENTENCES_SUFFIX = ".sentences.jsonl"

# CoNLL-2003's tags (IOB1 as in the original files, plus the B- tags it uses at entity boundaries).
CONLL_LABELS = ("O", "B-MISC", "I-MISC", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC")


@dataclasses.dataclass(frozen=True)
class NerSentence:
    words: list
    labels: list


class ConllReader:
    """Reads `eng.train` / `eng.testa` style files: `word POS chunk TAG` per line, a blank line
    between sentences, `-DOCSTART-` lines between documents."""

    def __init__(self, labels=CONLL_LABELS, warn=print):
        self.labels = list(labels)
        self.warn = warn
        self.skipped = 0
        self._warn = LimitedWarnings(warn)

    def read(self, path):
        sentences, words, tags = [], [], []
        try:
            reader = open(path, encoding="utf-8")
        except FileNotFoundError:
            raise FileNotFoundError(f"{path}: no such file; check --data_dir") from None
        with reader:
            for line_number, line in enumerate(reader, start=1):
                parts = line.split()
                if not parts or parts[0] == "-DOCSTART-":
                    self._finish(sentences, words, tags)
                    words, tags = [], []
                    continue
                if len(parts) < 2:
                    self._warn(f"{path}:{line_number}: a line needs a word and a tag; sentence skipped")
                    words, tags = None, None
                    continue
                if words is None:
                    continue
                if parts[-1] not in self.labels:
                    self._warn(
                        f"{path}:{line_number}: tag {parts[-1]!r} is not one of {', '.join(self.labels)}; "
                        "sentence skipped"
                    )
                    words, tags = None, None
                    continue
                words.append(parts[0])
                tags.append(parts[-1])
        self._finish(sentences, words, tags)
        self._warn.finish(path, "sentences")
        return sentences

    def _finish(self, sentences, words, tags):
        if words is None:
            self.skipped += 1
        elif words:
            sentences.append(NerSentence(words, tags))


def sentences_to_features(sentences, labels, max_seq_length, tokenizer):
    """Returns (features as [N, L] arrays, words kept per sentence). A word without pieces (only
    dropped characters) becomes [UNK] so that every word keeps a position."""
    label_map = {label: index for index, label in enumerate(labels)}
    words = [word for sentence in sentences for word in sentence.words]
    pieces = tokenizer.tokenize_to_ids(words)
    cls_id, sep_id, unk_id = tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"], tokenizer.vocab["[UNK]"]
    count = len(sentences)
    arrays = {
        name: np.zeros((count, max_seq_length), np.int64)
        for name in ("input_ids", "input_mask", "segment_ids", "label_ids")
    }
    arrays["label_weights"] = np.zeros((count, max_seq_length), np.float32)
    kept_words = []
    cursor = 0
    for row, sentence in enumerate(sentences):
        ids, label_ids, weights = [cls_id], [0], [0.0]
        kept = 0
        for word_index, label in enumerate(sentence.labels):
            word_pieces = pieces[cursor + word_index] or [unk_id]
            if len(ids) + len(word_pieces) > max_seq_length - 1:
                break
            ids.extend(word_pieces)
            label_ids.extend([label_map[label]] + [0] * (len(word_pieces) - 1))
            weights.extend([1.0] + [0.0] * (len(word_pieces) - 1))
            kept += 1
        cursor += len(sentence.words)
        ids.append(sep_id)
        label_ids.append(0)
        weights.append(0.0)
        arrays["input_ids"][row, : len(ids)] = ids
        arrays["input_mask"][row, : len(ids)] = 1
        arrays["label_ids"][row, : len(ids)] = label_ids
        arrays["label_weights"][row, : len(ids)] = weights
        kept_words.append(kept)
    return arrays, kept_words


def write_ner_tfrecord(sentences, labels, max_seq_length, tokenizer, output_file):
    """The TFRecord and its `.sentences.jsonl` sidecar (each sentence's words and gold tags, which
    conlleval needs and the records lose where a sentence is cut). Returns (count, words kept)."""
    features, kept_words = sentences_to_features(sentences, labels, max_seq_length, tokenizer)
    records = example_wire.examples_to_bytes(features, feature_specs.tagging_spec(max_seq_length))
    with atomic_output(output_file + SENTENCES_SUFFIX) as writer:
        for sentence in sentences:
            writer.write(json.dumps({"words": sentence.words, "labels": sentence.labels}) + "\n")
    return tfrecord_files.write_tfrecord(records, output_file), kept_words


def read_sentences(path):
    """The sentences of a `.sentences.jsonl` sidecar."""
    with open(path, encoding="utf-8") as reader:
        return [NerSentence(**json.loads(line)) for line in reader if line.strip()]
