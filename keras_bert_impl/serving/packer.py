"""`Packer`: Google's `[CLS] A [SEP] B [SEP]` packing and truncation as graph ops, for SavedModels
that take raw text. Tokens come from `BertTextTokenizer` (the same ids as `FullTokenizer`)."""

import tensorflow as tf


class Packer:
    """Google's packing in graph ops: truncation as `truncate_pair_from_end`, [CLS]/[SEP].

    Built from flat tensors and index arithmetic on the [B, T] output rather than ragged ops:
    the same ids, a graph of a few hundred nodes instead of ten thousand (at batch 1 the
    per-node cost, not the text, is what a client waits for)."""

    def __init__(self, tokenizer, cls_id, sep_id, max_seq_length, variable_seq_length):
        self.tokenizer = tokenizer
        self.cls_id, self.sep_id = cls_id, sep_id
        self.max_seq_length = max_seq_length
        self.variable_seq_length = variable_seq_length

    @staticmethod
    def same_rows(text_a, text_b):
        """`text_a` after checking that `text_b` has as many rows: a client's mismatched lists are
        an error that names them, never a silent broadcast of one text over the batch."""
        check = tf.debugging.assert_equal(
            tf.shape(text_a)[0],
            tf.shape(text_b)[0],
            message="text_a and text_b must have the same number of rows (text_b[i] is text_a[i]'s pair)",
        )
        with tf.control_dependencies([check]):
            return tf.identity(text_a)

    def budgets(self, length_a, length_b, max_query_length=None):
        """How many tokens of A and of B fit (Google's truncation of the longer, or of the query to
        `max_query_length`), as tensors."""
        if length_b is None:
            keep_a = tf.minimum(length_a, self.max_seq_length - 2)
            if max_query_length is not None:
                keep_a = tf.minimum(keep_a, max_query_length)
            return keep_a, None
        budget = tf.cast(self.max_seq_length - 3, length_a.dtype)
        if max_query_length is not None:  # SQuAD: the question first, the context fills the rest
            keep_a = tf.minimum(length_a, max_query_length)
            return keep_a, tf.minimum(length_b, budget - keep_a)
        # Popping one token at a time from the longer list (B on a tie) ends here.
        keep_a = tf.minimum(length_a, tf.maximum(budget - length_b, (budget + 1) // 2))
        keep_b = tf.minimum(length_b, tf.maximum(budget - length_a, budget // 2))
        fits = length_a + length_b <= budget
        return tf.where(fits, length_a, keep_a), tf.where(fits, length_b, keep_b)

    def pack(self, text_a, text_b=None, max_query_length=None):
        """Returns a dict of [B, T] tensors: the model inputs, tokens and byte offsets. With
        `max_query_length` (SQuAD), A keeps at most that many tokens and B fills the rest."""
        if text_b is not None:
            text_a = self.same_rows(text_a, text_b)
        batch = tf.shape(text_a)[0]
        # One tokenizer pass over A and B together: at batch 1 the cost is per op, not per text.
        texts = text_a if text_b is None else tf.concat([text_a, text_b], axis=0)
        ids, rows, begins, ends = self.tokenizer.tokenize_flat_with_offsets(texts)
        count = tf.shape(texts)[0]
        lengths = tf.math.bincount(tf.cast(rows, tf.int32), minlength=count, maxlength=count)
        starts = tf.cumsum(lengths, exclusive=True)  # each text's first token in the flat tensors
        length_a, start_a = lengths[:batch], starts[:batch]
        single_a, _ = self.budgets(length_a, None, max_query_length)
        if text_b is None:
            keep_a, keep_b, start_b, has_b = (
                single_a,
                tf.zeros_like(length_a),
                tf.zeros_like(length_a),
                tf.zeros_like(length_a, tf.bool),
            )
        else:
            length_b, start_b = lengths[batch:], starts[batch:]
            pair_a, pair_b = self.budgets(length_a, length_b, max_query_length)
            has_b = length_b > 0  # as Google's: a B that tokenizes to nothing makes a single sequence
            keep_a, keep_b = tf.where(has_b, pair_a, single_a), tf.where(has_b, pair_b, 0)
        total = keep_a + 2 + tf.where(has_b, keep_b + 1, 0)
        if self.variable_seq_length:
            # At least [CLS] [SEP]: an empty batch packs to [0, 2], which the pooler can take.
            width = tf.minimum(tf.reduce_max(tf.concat([total, [2]], axis=0)), self.max_seq_length)
        else:
            width = self.max_seq_length
        # Position j of row i: 0 [CLS], 1..ka A, ka+1 [SEP], then (with B) B and a last [SEP].
        j = tf.range(width)[None, :]  # [1, T]
        ka, kb, sa, sb, hb = (x[:, None] for x in (keep_a, keep_b, start_a, start_b, has_b))  # [B, 1]
        in_a = (j >= 1) & (j <= ka)
        in_b = hb & (j >= ka + 2) & (j < ka + 2 + kb)
        last_sep = hb & (j == ka + kb + 2)
        padding = tf.size(ids)  # the index of the pad value appended to each flat tensor
        index = tf.where(in_a, sa + j - 1, tf.where(in_b, sb + j - ka - 2, padding))

        def take(values, pad):
            return tf.gather(tf.concat([values, tf.constant([pad], values.dtype)], axis=0), index)

        input_ids = tf.where(
            j == 0, self.cls_id, tf.where((j == ka + 1) | last_sep, self.sep_id, tf.cast(take(ids, 0), tf.int32))
        )
        padded = {
            "input_ids": input_ids,
            "input_mask": tf.cast(j < total[:, None], tf.int32),
            "segment_ids": tf.cast(in_b | last_sep, tf.int32),
            "token_start_offsets": take(begins, -1),  # -1 marks [CLS], [SEP] and padding
            "token_end_offsets": take(ends, -1),
        }
        padded["tokens"] = tf.where(padded["input_mask"] > 0, self.tokenizer.ids_to_tokens(input_ids), "")
        return padded
