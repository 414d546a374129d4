"""`extend_vocab`: a released model's vocab.txt with N words of a domain's text added.

The words added are the domain's whole words that the base vocabulary splits most wastefully:
each scores `count * (pieces - 1)` (an [UNK] word scores its count), the tokens it would save.
They take the `[unusedK]` slots first, in place (ids and the embedding matrix keep their size),
and the rest are appended; every other token keeps its id. `word_pieces` gives each new word's
pieces under the old vocabulary, from which the model's new rows are initialised (their mean).
"""

import dataclasses
import re

import tensorflow as tf

from keras_bert_common.errors import UsageError
from tfrecord_tools.bert_text_tokenizer import BertTextTokenizer
from tfrecord_tools.vocab_file import UNK_TOKEN

UNUSED = re.compile(r"^\[unused\d+\]$")
# Google's WordPiece gives [UNK] for longer words: such a word can never match a token.
MAX_WORD_CHARS = 100


def word_pieces(tokens, words, do_lower_case=True, batch_size=8192):
    """Each of `words` (normalized, one word each) as WordPiece ids of vocabulary `tokens`."""
    tokenizer = BertTextTokenizer(tokens, do_lower_case=do_lower_case)
    tokenize = tf.function(tokenizer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    pieces = []
    for start in range(0, len(words), batch_size):
        batch = tf.constant([word.encode("utf-8") for word in words[start : start + batch_size]], tf.string)
        pieces += tokenize(batch).to_list()
    return pieces


@dataclasses.dataclass
class VocabExtension:
    """The extended vocabulary and what it changed on the domain text."""

    tokens: list  # the new vocabulary, base ids kept
    added: list  # (id, word, count in the domain text, its piece ids under the base vocabulary)
    in_unused_slots: int
    words: int  # word occurrences in the domain text
    tokens_per_word_before: float
    tokens_per_word_after: float

    def report(self):
        """The JSON-able report written beside the vocabulary."""
        return {
            "added": [
                # A piece is never a replaced [unusedK] slot (no word holds its brackets): same token in both.
                {"id": index, "token": word, "count": count, "base_pieces": [self.tokens[i] for i in pieces]}
                for index, word, count, pieces in self.added
            ],
            "in_unused_slots": self.in_unused_slots,
            "appended": len(self.added) - self.in_unused_slots,
            "vocab_size_before": len(self.tokens) - (len(self.added) - self.in_unused_slots),
            "vocab_size_after": len(self.tokens),
            "domain_words": self.words,
            "tokens_per_word_before": self.tokens_per_word_before,
            "tokens_per_word_after": self.tokens_per_word_after,
        }


def extend_vocab(base_tokens, counts, num_new_tokens, do_lower_case=True, min_count=2, source="the domain text"):
    """`base_tokens` plus up to `num_new_tokens` words of `counts` (normalized word -> count, as
    `vocab_builder.count_words` returns), each seen at least `min_count` times."""
    if num_new_tokens < 1:
        raise UsageError(f"--num_new_tokens={num_new_tokens}: add at least one token")
    if not counts:
        raise UsageError(f"{source}: holds no words to add; check --input_file")
    known = set(base_tokens)
    unk = base_tokens.index(UNK_TOKEN)
    words = sorted(counts)
    base_pieces = dict(zip(words, word_pieces(base_tokens, words, do_lower_case)))
    scored = []
    for word in words:
        ids, count = base_pieces[word], counts[word]
        if count < min_count or word in known or len(word) > MAX_WORD_CHARS:
            continue
        saved = count if ids == [unk] else count * (len(ids) - 1)
        if saved > 0:
            scored.append((-saved, word, ids))
    scored.sort()
    if not scored:
        raise UsageError(
            f"{source}: every word seen at least --min_count={min_count} times is already one token; "
            "lower --min_count or give more text"
        )
    chosen = scored[:num_new_tokens]
    slots = [index for index, token in enumerate(base_tokens) if UNUSED.match(token)]
    tokens = list(base_tokens)
    added = []
    for position, (_, word, ids) in enumerate(chosen):
        if position < len(slots):
            index = slots[position]
            tokens[index] = word
        else:
            index = len(tokens)
            tokens.append(word)
        added.append((index, word, counts[word], ids))
    total = sum(counts.values())
    before = sum(counts[w] * len(base_pieces[w]) for w in words)
    after = sum(counts[w] * len(p) for w, p in zip(words, word_pieces(tokens, words, do_lower_case)))
    return VocabExtension(
        tokens=tokens,
        added=added,
        in_unused_slots=min(len(slots), len(chosen)),
        words=total,
        tokens_per_word_before=before / total,
        tokens_per_word_after=after / total,
    )
