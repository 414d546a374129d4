"""Dynamic masking: Google's masked-LM rules applied in tf.data, anew each time an instance is read.

`create_pretraining_data.py --dynamic_masking` writes instances unmasked
(`feature_specs.dynamic_pretraining_spec`); `masker(...)` turns one into the static schema
(`feature_specs.pretraining_spec`), so the model and the Trainer see exactly what static records
give them. Google's rules: `min(max_predictions_per_seq, max(1, round(length * masked_lm_prob)))`
masks over the whole sequence length, never on [CLS] / [SEP], candidates in a uniformly random
order, 80% [MASK] / 10% a random id / 10% unchanged per token; with whole-word masking a word is
masked whole or skipped when it would overshoot the budget.

tensorflow-text's `mask_language_model` does the gathering and scattering; its `RandomItemSelector`
and `MaskValuesChooser` draw with stateful ops, round the count up over the selectable items only
and budget whole words in words, so this module gives it an item selector with Google's rules and
a values chooser, both drawing stateless randomness from a seed folded from the run's seed and the
position of the instance in the input stream. Masks are therefore deterministic, differ between
two reads of the same instance, and survive a checkpoint of the tf.data iterator.
"""

import tensorflow as tf
import tensorflow_text as tf_text

NOT_MASKABLE, WORD_START, WORD_CONTINUATION = 0, 1, 2


class _GoogleItemSelector(tf_text.RandomItemSelector):
    """Selects items of one example (a batch of 1): a uniformly random order of the selectable
    items, taken while they fit the token budget (a word too long for what is left is skipped).
    (tensorflow-text exports no bare ItemSelector; the random one's selection is replaced.)"""

    def __init__(self, selectable, lengths, budget, seed, whole_words):
        super().__init__(max_selections_per_batch=budget, selection_rate=1.0)
        self._selectable, self._lengths, self._budget, self._seed = selectable, lengths, budget, seed
        self._whole_words = whole_words

    def get_selection_mask(self, input_ids, axis=1):
        count = tf.shape(self._selectable)[0]
        keys = tf.where(self._selectable, tf.random.stateless_uniform([count], self._seed), 2.0)
        order = tf.argsort(keys)
        if not self._whole_words:  # every item one token: the first `budget` of the random order
            rank = tf.scatter_nd(order[:, None], tf.range(count), [count])
            return tf.RaggedTensor.from_tensor(((rank < self._budget) & self._selectable)[None, :])
        lengths = tf.gather(self._lengths, order)
        selectable = tf.gather(self._selectable, order)

        def step(index, total, chosen):
            fits = selectable[index] & (total < self._budget) & (total + lengths[index] <= self._budget)
            return index + 1, tf.where(fits, total + lengths[index], total), chosen.write(index, fits)

        _, _, chosen = tf.while_loop(
            lambda index, total, chosen: index < count,
            step,
            (tf.constant(0), tf.constant(0), tf.TensorArray(tf.bool, size=count)),
        )
        mask = tf.scatter_nd(order[:, None], chosen.stack(), [count])  # back to item order
        return tf.RaggedTensor.from_tensor(mask[None, :])


class _StatelessValuesChooser(tf_text.MaskValuesChooser):
    """tensorflow-text's 80/10/10 per token, drawn from a seed."""

    def __init__(self, vocab_size, mask_token, seed):
        super().__init__(vocab_size, mask_token, mask_token_rate=0.8, random_token_rate=0.1)
        self._seed = seed

    def get_mask_values(self, masked_lm_ids):
        ids = masked_lm_ids.flat_values
        draw_seed, token_seed = tf.unstack(tf.random.experimental.stateless_split(self._seed, 2))
        draw = tf.random.stateless_uniform(tf.shape(ids), draw_seed)
        random_ids = tf.random.stateless_uniform(tf.shape(ids), token_seed, 0, self.vocab_size, dtype=tf.int64)
        values = tf.where(
            draw < 0.8, tf.cast(self.mask_token, ids.dtype), tf.where(draw < 0.9, tf.cast(random_ids, ids.dtype), ids)
        )
        return masked_lm_ids.with_flat_values(values)


def masker(vocab_size, max_predictions_per_seq, masked_lm_prob=0.15, do_whole_word_mask=False, seed=12345):
    """A function (stream index, parsed dynamic features of ONE instance) -> the static features."""
    base = tf.constant([seed, 0x6D61736B], tf.int64)  # "mask"
    predictions = max_predictions_per_seq

    def mask(index, features):
        example_seed = tf.random.experimental.stateless_fold_in(base, tf.cast(index, tf.int64))
        select_seed, value_seed = tf.unstack(tf.random.experimental.stateless_split(example_seed, 2))
        width = tf.shape(features["input_ids"])[0]
        length = tf.reduce_sum(tf.cast(features["input_mask"], tf.int32))
        ids = tf.cast(features["input_ids"][:length], tf.int64)
        kinds = tf.cast(features["mlm_candidates"][:length], tf.int32)
        budget = tf.minimum(
            predictions, tf.maximum(1, tf.cast(tf.round(tf.cast(length, tf.float32) * masked_lm_prob), tf.int32))
        )
        if do_whole_word_mask:
            # An item per word: a word start and the continuation pieces after it; [CLS] / [SEP]
            # are items of their own, never selectable.
            starts = tf.cast(kinds != WORD_CONTINUATION, tf.int64)
            item_ids = tf.RaggedTensor.from_value_rowids(ids, tf.cumsum(starts) - 1)
            lengths = tf.cast(item_ids.row_lengths(), tf.int32)
            selectable = tf.gather(kinds, tf.cast(item_ids.row_starts(), tf.int32)) == WORD_START
            items = tf.RaggedTensor.from_row_lengths(item_ids, tf.shape(lengths, tf.int64)[:1])
        else:
            lengths = tf.ones_like(kinds)
            selectable = kinds != NOT_MASKABLE
            items = tf.RaggedTensor.from_tensor(ids[None, :])
        selector = _GoogleItemSelector(selectable, lengths, budget, select_seed, do_whole_word_mask)
        chooser = _StatelessValuesChooser(vocab_size, tf.cast(features["mask_token_id"][0], tf.int64), value_seed)
        masked, positions, labels = tf_text.mask_language_model(items, selector, chooser, axis=1)
        masked, positions, labels = masked.flat_values, positions.flat_values, labels.flat_values
        count = tf.shape(positions)[0]
        padding = [[0, predictions - count]]
        # Static shapes, as the static records have (and TPUs need).
        sequence, slots = [features["input_ids"].shape[0]], [predictions]
        static = {
            "input_ids": tf.ensure_shape(tf.pad(tf.cast(masked, tf.int32), [[0, width - length]]), sequence),
            "input_mask": tf.cast(features["input_mask"], tf.int32),
            "segment_ids": tf.cast(features["segment_ids"], tf.int32),
            "masked_lm_positions": tf.ensure_shape(tf.pad(tf.cast(positions, tf.int32), padding), slots),
            "masked_lm_ids": tf.ensure_shape(tf.pad(tf.cast(labels, tf.int32), padding), slots),
            "masked_lm_weights": tf.ensure_shape(tf.pad(tf.ones([count], tf.float32), padding), slots),
        }
        if "next_sentence_labels" in features:  # masked-LM-only records have none
            static["next_sentence_labels"] = tf.cast(features["next_sentence_labels"], tf.int32)
        return static

    return mask
