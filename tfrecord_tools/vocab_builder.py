"""`build_wordpiece_vocab`: a BERT WordPiece vocabulary learned from raw text.

Words are split exactly as the tokenizer will split them (Google's BasicTokenizer rules in
`BertTextTokenizer`), counted, and handed to tensorflow-text's WordPiece vocabulary learner.
"""

import collections

import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

from keras_bert_common import stop
from keras_bert_common.errors import UsageError
from keras_bert_common.progress import LimitedWarnings, Progress, heartbeat
from tfrecord_tools.bert_text_tokenizer import BertTextTokenizer

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


def count_words(lines, do_lower_case=True, batch_size=4096, log=None, total_bytes=None):
    """Counter of normalized words over an iterable of text lines; with `log`, a progress line
    (KB of text read, of `total_bytes`) every half minute."""
    progress = Progress(total_bytes // 1024 if total_bytes else None, "KB of text read", log) if log else None
    done = 0
    # The splitter needs no real vocabulary; WordPiece is not run.
    splitter = BertTextTokenizer(["[UNK]"], do_lower_case=do_lower_case)
    split = tf.function(splitter.split_words, input_signature=[tf.TensorSpec([None], tf.string)])
    counts = collections.Counter()
    batch = []
    for line in lines:
        batch.append(line)
        if len(batch) == batch_size:
            counts.update(word.decode("utf-8") for word in split(tf.constant(batch)).flat_values.numpy())
            if progress is not None:
                done += sum(len(text.encode("utf-8")) for text in batch)
                progress.update(done // 1024, f"{len(counts)} distinct words")
            batch = []
            stop.raise_if_requested()
    if batch:
        counts.update(word.decode("utf-8") for word in split(tf.constant(batch)).flat_values.numpy())
    return counts


def check_vocab_size(vocab_size, reserved_tokens=RESERVED_TOKENS):
    """Before any text is read: room for the reserved tokens and at least some characters."""
    if vocab_size <= len(reserved_tokens):
        raise UsageError(
            f"--vocab_size={vocab_size}: not even the {len(reserved_tokens)} reserved tokens fit "
            f"({', '.join(reserved_tokens)}); a vocabulary also needs the corpus's characters (usually some "
            "hundreds): raise --vocab_size (BERT's English vocabularies have about 30,000)"
        )


def build_wordpiece_vocab(
    lines,
    vocab_size,
    do_lower_case=True,
    reserved_tokens=RESERVED_TOKENS,
    min_count=2,
    source="the input",
    log=None,
    total_bytes=None,
):
    """Learns a WordPiece vocabulary of at most `vocab_size` tokens, reserved tokens first.

    tensorflow-text's learner searches a count threshold for a vocabulary near its target, but
    the characters it must keep (each alone and as a `##` piece) and its few search steps can
    overshoot, by half on small corpora: the target is lowered until the result fits."""
    check_vocab_size(vocab_size, reserved_tokens)
    counts = count_words(lines, do_lower_case=do_lower_case, log=log, total_bytes=total_bytes)
    log = log or (lambda message: None)
    if not counts:
        raise UsageError(f"{source}: holds no words to learn a vocabulary from; check --input_file")
    frequent = sum(1 for count in counts.values() if count >= min_count)
    log(
        f"{len(counts)} distinct words ({frequent} seen at least --min_count={min_count} times); learning a "
        f"WordPiece vocabulary of at most {vocab_size} tokens (tensorflow-text's learner)"
    )
    items = sorted(counts.items())
    target, best = vocab_size, None
    for attempt in range(1, 6):
        with heartbeat(log, f"learning the vocabulary (attempt {attempt} of at most 5)"):
            vocab = learner.learn(
                items, target, list(reserved_tokens), lower_thresh=min_count, upper_thresh=max(counts.values()) + 1
            )
        if len(vocab) <= vocab_size:
            best = vocab if best is None or len(vocab) > len(best) else best
            if len(vocab) >= 0.95 * vocab_size or target == vocab_size:
                break
            target = min(vocab_size, target + max(1, (vocab_size - len(vocab)) // 2))
        else:
            if target <= len(reserved_tokens) + 1:
                break
            target = max(len(reserved_tokens) + 1, int(target * vocab_size / len(vocab) * 0.97))
        log(f"the learner gave {len(vocab)} tokens; trying again for {target}")
    if best is None:
        raise UsageError(
            f"--vocab_size={vocab_size} is too small for this corpus: its characters alone need "
            f"{len(vocab)} tokens; raise --vocab_size (or lower --min_count)"
        )
    if len(best) < 0.9 * vocab_size:
        log(
            f"warning: only {len(best)} tokens, fewer than --vocab_size={vocab_size}: the corpus has too few words "
            f"seen --min_count={min_count} times for more; lower --min_count or add text"
        )
    return list(best)
