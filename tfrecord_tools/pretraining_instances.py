"""`PretrainingInstanceMaker`: Google's create_pretraining_data.py algorithm on token ids.

The same semantics as Google's: NSP pairs with a random document 50% of the time (label 1),
short target lengths with probability `short_seq_prob`, random front/back truncation of the longer
segment, `min(max_predictions, max(1, round(len * masked_lm_prob)))` masks never on [CLS]/[SEP],
80% [MASK] / 10% random token / 10% unchanged, whole-word masking over `##` pieces.

One difference, for memory bounded by the shard: the random next segment comes from another
document of the same unit of documents (see `create_pretraining_data.py`), not the whole corpus.
"""

import itertools
import random

import numpy as np

_CHUNK = 1024


class PretrainingInstanceMaker:
    """Turns tokenized documents (lists of sentences of ids) into masked LM + NSP instances."""

    def __init__(
        self,
        vocab_size,
        cls_id,
        sep_id,
        mask_id,
        continuation_ids,
        max_seq_length=128,
        max_predictions_per_seq=20,
        masked_lm_prob=0.15,
        short_seq_prob=0.1,
        do_whole_word_mask=False,
    ):
        self.vocab_size = vocab_size
        self.cls_id, self.sep_id, self.mask_id = cls_id, sep_id, mask_id
        self.is_continuation = np.zeros(vocab_size, bool)
        self.is_continuation[list(continuation_ids)] = True
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq
        self.masked_lm_prob = masked_lm_prob
        self.short_seq_prob = short_seq_prob
        self.do_whole_word_mask = do_whole_word_mask

    def instances_from_documents(self, documents, seed, unit_index, dupe_factor, masked=True):
        """All instances of `documents` (one unit), `dupe_factor` passes, shuffled as Google does.

        Returns Google's features as numpy arrays, one row per instance: `input_ids`,
        `input_mask`, `segment_ids` [N, max_seq_length], `masked_lm_positions`, `masked_lm_ids`,
        `masked_lm_weights` [N, max_predictions_per_seq], `next_sentence_labels` [N, 1]. With
        `masked=False` (dynamic masking) the ids stay unmasked and `mlm_candidates` [N, T] and
        `mask_token_id` [N, 1] replace the masked-LM features (see `feature_specs`).
        """
        rng = random.Random(seed * 1_000_003 + unit_index)
        documents = [document for document in documents if document]
        rng.shuffle(documents)
        pairs = []
        for _ in range(dupe_factor):
            for index in range(len(documents)):
                pairs.extend(self._instances_from_document(documents, index, rng))
        rng.shuffle(pairs)
        np_rng = np.random.default_rng([seed, unit_index])
        # Chunks keep the working arrays in cache: several times faster on large units.
        make = self._features if masked else self._unmasked_features
        chunks = [make(pairs[i : i + _CHUNK], np_rng) for i in range(0, max(len(pairs), 1), _CHUNK)]
        return {name: np.concatenate([chunk[name] for chunk in chunks]) for name in chunks[0]}

    def _instances_from_document(self, documents, document_index, rng):
        document = documents[document_index]
        max_num_tokens = self.max_seq_length - 3  # [CLS], [SEP], [SEP]
        target_seq_length = max_num_tokens
        if rng.random() < self.short_seq_prob:
            target_seq_length = _randint(rng, 2, max_num_tokens)

        instances = []
        current_chunk, current_length = [], 0
        i = 0
        while i < len(document):
            segment = document[i]
            current_chunk.append(segment)
            current_length += len(segment)
            if i == len(document) - 1 or current_length >= target_seq_length:
                if current_chunk:
                    a_end = _randint(rng, 1, len(current_chunk) - 1) if len(current_chunk) >= 2 else 1
                    tokens_a = list(itertools.chain.from_iterable(current_chunk[:a_end]))
                    tokens_b = []
                    is_random_next = False
                    if len(current_chunk) == 1 or rng.random() < 0.5:
                        is_random_next = True
                        target_b_length = target_seq_length - len(tokens_a)
                        # Ten tries for another document, as Google's code; a unit with one
                        # document can only pair with itself, which Google's code also allows.
                        for _ in range(10):
                            random_document_index = _randint(rng, 0, len(documents) - 1)
                            if random_document_index != document_index:
                                break
                        random_document = documents[random_document_index]
                        random_start = _randint(rng, 0, len(random_document) - 1)
                        for j in range(random_start, len(random_document)):
                            tokens_b.extend(random_document[j])
                            if len(tokens_b) >= target_b_length:
                                break
                        # The unused segments go back to be used next time round.
                        i -= len(current_chunk) - a_end
                    else:
                        for chunk in current_chunk[a_end:]:
                            tokens_b.extend(chunk)
                    tokens_a, tokens_b = self._truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
                    if tokens_a and tokens_b:
                        instances.append((tokens_a, tokens_b, is_random_next))
                current_chunk, current_length = [], 0
            i += 1
        return instances

    @staticmethod
    def _truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
        """Google's truncation: drop one token at a time from the longer segment (B on a tie),
        from the front or the back by a fair coin. The coins are drawn in one call per segment:
        the number of front drops is Binomial(drops, 1/2), as with one coin per drop."""
        length_a, length_b = len(tokens_a), len(tokens_b)
        excess = length_a + length_b - max_num_tokens
        if excess <= 0:
            return tokens_a, tokens_b
        # Trim the longer down to the shorter, then alternately (B first on a tie).
        gap = min(abs(length_a - length_b), excess)
        rest = excess - gap
        drop_a = (gap if length_a > length_b else 0) + rest // 2
        drop_b = (gap if length_b > length_a else 0) + (rest + 1) // 2
        trimmed = []
        for tokens, drops in ((tokens_a, drop_a), (tokens_b, drop_b)):
            front = bin(rng.getrandbits(drops)).count("1") if drops else 0
            trimmed.append(tokens[front : len(tokens) - (drops - front)])
        return trimmed

    def _pack(self, pairs):
        """[CLS] A [SEP] B [SEP], vectorised: input_ids, input_mask, segment_ids, the lengths and
        where masks may go."""
        count, length = len(pairs), self.max_seq_length
        lengths_a = np.fromiter((len(pair[0]) for pair in pairs), np.int64, count)
        lengths = lengths_a + np.fromiter((len(pair[1]) for pair in pairs), np.int64, count) + 3
        cls, sep = (self.cls_id,), (self.sep_id,)
        flat = np.fromiter(
            itertools.chain.from_iterable(
                itertools.chain(cls, tokens_a, sep, tokens_b, sep) for tokens_a, tokens_b, _ in pairs
            ),
            np.int64,
            int(lengths.sum()),
        )
        columns = np.arange(length)[None, :]
        input_mask = (columns < lengths[:, None]).astype(np.int64)
        input_ids = np.zeros((count, length), np.int64)
        input_ids[input_mask == 1] = flat  # row-major order: each row's tokens in turn
        segment_ids = ((columns >= lengths_a[:, None] + 2) & (input_mask == 1)).astype(np.int64)
        is_candidate = (input_mask == 1) & (input_ids != self.cls_id) & (input_ids != self.sep_id)
        return input_ids, input_mask, segment_ids, lengths, is_candidate

    def _word_starts(self, input_ids, is_candidate):
        """A word starts at every candidate that is not a ## piece following another candidate. A
        ## piece right after [CLS] or [SEP] (its start truncated away) is a word of its own;
        Google's loop would join it to the word before the [SEP], across the segments."""
        follows_candidate = np.zeros_like(is_candidate)
        follows_candidate[:, 1:] = is_candidate[:, :-1]
        return is_candidate & ~(self.is_continuation[input_ids] & follows_candidate)

    def _unmasked_features(self, pairs, np_rng):
        """For dynamic masking: the packed ids unmasked, and per token 0 (never masked: [CLS],
        [SEP], padding), 1 (the first piece of a word) or 2 (a later piece of that word)."""
        input_ids, input_mask, segment_ids, _, is_candidate = self._pack(pairs)
        starts = self._word_starts(input_ids, is_candidate)
        return {
            "input_ids": input_ids,
            "input_mask": input_mask,
            "segment_ids": segment_ids,
            "next_sentence_labels": np.array([int(pair[2]) for pair in pairs], np.int64).reshape(len(pairs), 1),
            "mlm_candidates": np.where(starts, 1, np.where(is_candidate, 2, 0)).astype(np.int64),
            "mask_token_id": np.full((len(pairs), 1), self.mask_id, np.int64),
        }

    def _features(self, pairs, np_rng):
        """Packs [CLS] A [SEP] B [SEP] and masks, vectorised over all instances of a unit."""
        count, length, predictions = len(pairs), self.max_seq_length, self.max_predictions_per_seq
        input_ids, input_mask, segment_ids, lengths, is_candidate = self._pack(pairs)
        # Python's round() (half to even) as in Google's code; np.round agrees.
        num_to_predict = np.minimum(predictions, np.maximum(1, np.round(lengths * self.masked_lm_prob)))
        num_to_predict = num_to_predict.astype(np.int64)
        if self.do_whole_word_mask:
            positions = self._whole_word_positions(input_ids, is_candidate, num_to_predict, np_rng)
        else:
            # A uniformly random subset of the candidates: what shuffling them and taking the
            # first `num_to_predict` (Google) draws.
            keys = np.where(is_candidate, np_rng.random((count, length), np.float32), 2.0)
            if predictions < length:  # the `predictions` smallest keys, then in key order
                smallest = np.argpartition(keys, predictions - 1, axis=1)[:, :predictions]
                order = np.argsort(np.take_along_axis(keys, smallest, axis=1), axis=1)
                positions = np.take_along_axis(smallest, order, axis=1)
            else:  # more prediction slots than tokens (Google's accepts that): pad the unused ones
                positions = np.argsort(keys, axis=1)
                positions = np.pad(positions, ((0, 0), (0, predictions - length)), constant_values=length)
            positions = np.where(np.arange(predictions)[None, :] < num_to_predict[:, None], positions, length)
        positions = np.sort(positions, axis=1)
        valid = positions < length
        positions = np.where(valid, positions, 0)
        rows = np.arange(count)[:, None]
        labels = np.where(valid, input_ids[rows, positions], 0)
        # 80% [MASK], 10% the original token, 10% a random token (per token, as Google's code).
        first, second = np_rng.random((count, predictions)), np_rng.random((count, predictions))
        random_tokens = np_rng.integers(0, self.vocab_size, (count, predictions))
        replacement = np.where(first < 0.8, self.mask_id, np.where(second < 0.5, labels, random_tokens))
        masked_ids = input_ids.copy()
        masked_ids[rows, positions] = np.where(valid, replacement, input_ids[rows, positions])
        return {
            "input_ids": masked_ids,
            "input_mask": input_mask,
            "segment_ids": segment_ids,
            "masked_lm_positions": positions,
            "masked_lm_ids": labels,
            "masked_lm_weights": valid.astype(np.float32),
            "next_sentence_labels": np.array([int(pair[2]) for pair in pairs], np.int64).reshape(count, 1),
        }

    def _whole_word_positions(self, input_ids, is_candidate, num_to_predict, np_rng):
        """Google's whole-word rule: words in random order; a word that would overshoot the
        budget is skipped, not split. Returns [N, P] positions, `length` where unused."""
        count, length = input_ids.shape
        starts = self._word_starts(input_ids, is_candidate)
        positions = np.full((count, self.max_predictions_per_seq), length, np.int64)
        for row in range(count):
            word_starts = np.flatnonzero(starts[row])
            word_ends = np.append(word_starts[1:], length)
            # A word ends at the next start or at the first non-candidate ([SEP], padding).
            stops = np.flatnonzero(~is_candidate[row])
            word_ends = np.minimum(word_ends, stops[np.searchsorted(stops, word_starts)])
            chosen, budget = 0, num_to_predict[row]
            for word in np_rng.permutation(len(word_starts)):
                if chosen >= budget:
                    break
                size = word_ends[word] - word_starts[word]
                if chosen + size > budget:
                    continue
                positions[row, chosen : chosen + size] = np.arange(word_starts[word], word_ends[word])
                chosen += size
        return positions


def _randint(rng, low, high):
    """Uniform integer in [low, high], as `random.randint` but several times cheaper."""
    return low + int(rng.random() * (high - low + 1))
