"""`build_wordpiece_vocab`: a BERT WordPiece vocabulary learned from raw text.

Words are split exactly as the tokenizer will split them (Google's BasicTokenizer rules in
`BertTextTokenizer`), counted, and handed to tensorflow-text's WordPiece vocabulary learner.
"""

import collections

import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

from tfrecord_tools.bert_text_tokenizer import BertTextTokenizer
from tfrecord_tools.progress import LimitedWarnings

RESERVED_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def read_lines(paths, warn=print):
    """The non-blank lines of `paths`; a line that is not UTF-8 is skipped and named (the first
    few per file, then counted)."""
    warnings = LimitedWarnings(warn)
    for path in paths:
        with open(path, "rb") as reader:
            for line_number, raw in enumerate(reader, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    warnings(f"{path}:{line_number}: skipped, not UTF-8 ({error.reason} at byte {error.start})")
                    continue
                if line.strip():
                    yield line
        warnings.finish(path, "lines (not UTF-8)")


def count_words(lines, do_lower_case=True, batch_size=4096):
    """Counter of normalized words over an iterable of text lines."""
    # The splitter needs no real vocabulary; WordPiece is not run.
    splitter = BertTextTokenizer(["[UNK]"], do_lower_case=do_lower_case)
    split = tf.function(splitter.split_words, input_signature=[tf.TensorSpec([None], tf.string)])
    counts = collections.Counter()
    batch = []
    for line in lines:
        batch.append(line)
        if len(batch) == batch_size:
            counts.update(word.decode("utf-8") for word in split(tf.constant(batch)).flat_values.numpy())
            batch = []
    if batch:
        counts.update(word.decode("utf-8") for word in split(tf.constant(batch)).flat_values.numpy())
    return counts


def build_wordpiece_vocab(lines, vocab_size, do_lower_case=True, reserved_tokens=RESERVED_TOKENS, min_count=2):
    """Learns a WordPiece vocabulary of at most `vocab_size` tokens, reserved tokens first."""
    counts = count_words(lines, do_lower_case=do_lower_case)
    if not counts:
        raise ValueError("the input holds no words to learn a vocabulary from")
    vocab = learner.learn(
        sorted(counts.items()),
        vocab_size,
        list(reserved_tokens),
        lower_thresh=min_count,
        upper_thresh=max(counts.values()) + 1,
    )
    return list(vocab)
