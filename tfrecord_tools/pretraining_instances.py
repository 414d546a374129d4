"""`PretrainingInstanceMaker`: Google's create_pretraining_data.py algorithm on token ids, and
RoBERTa's inputs for masked-LM-only pretraining.

With next-sentence prediction (Google's default), the same semantics as Google's: NSP pairs with a
random document 50% of the time (label 1), short target lengths with probability `short_seq_prob`,
random front/back truncation of the longer segment, `min(max_predictions, max(1, round(len *
masked_lm_prob)))` masks never on [CLS]/[SEP], 80% [MASK] / 10% random token / 10% unchanged,
whole-word masking over `##` pieces.

One difference, for memory bounded by the shard: the random next segment comes from another
document of the same unit of documents (see `create_pretraining_data.py`), not the whole corpus.

Without it (`next_sentence_prediction=False`), RoBERTa's FULL-SENTENCES inputs (Liu et al. 2019,
section 4.2): `[CLS]` then whole sentences taken contiguously until the next would not fit, crossing
document boundaries with an extra `[SEP]` between two documents, then `[SEP]`; one segment
(`segment_ids` all 0) and no `next_sentence_labels`. `doc_sentences=True` gives DOC-SENTENCES: an
input never crosses a document's end. The masking rules are the same; a sentence longer than an
input is cut into input-sized pieces; `short_seq_prob` shortens the target length of an input as
it does a pair's. Inputs cross documents only within a unit, so the output does not depend on the
number of workers either.
"""

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
        next_sentence_prediction=True,
        doc_sentences=False,
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
        if doc_sentences and next_sentence_prediction:
            raise ValueError("doc_sentences is an input format without next-sentence prediction")
        self.next_sentence_prediction = next_sentence_prediction
        self.doc_sentences = doc_sentences

    def instances_from_documents(self, flat_ids, documents, seed, unit_index, dupe_factor, masked=True):
        """All instances of one unit's documents, `dupe_factor` passes, shuffled as Google does.

        `flat_ids` holds the unit's tokens; a document is `(start, offsets)`: its sentences lie
        one after another from `flat_ids[start]`, sentence s at `start + offsets[s]` to
        `start + offsets[s + 1]` (see `documents_of`). Instances are made from lengths only, as
        spans of `flat_ids`, and packed in one vectorised pass.

        Returns Google's features as numpy arrays, one row per instance: `input_ids`,
        `input_mask`, `segment_ids` [N, max_seq_length], `masked_lm_positions`, `masked_lm_ids`,
        `masked_lm_weights` [N, max_predictions_per_seq], `next_sentence_labels` [N, 1] (with
        next-sentence prediction only). With
        `masked=False` (dynamic masking) the ids stay unmasked and `mlm_candidates` [N, T] and
        `mask_token_id` [N, 1] replace the masked-LM features (see `feature_specs`).
        """
        chunks = list(self.feature_chunks(flat_ids, documents, seed, unit_index, dupe_factor, masked))
        return {name: np.concatenate([chunk[name] for chunk in chunks]) for name in chunks[0]}

    def feature_chunks(self, flat_ids, documents, seed, unit_index, dupe_factor, masked=True):
        """`instances_from_documents` a chunk of rows at a time: what a worker serializes and
        frees before the next, so a unit's memory is its spans and records, not its arrays."""
        rng = random.Random(seed * 1_000_003 + unit_index)
        documents = [document for document in documents if len(document[1]) > 1]
        rng.shuffle(documents)
        flat_ids = np.asarray(flat_ids, np.int64)
        spans = []
        if self.next_sentence_prediction:
            for _ in range(dupe_factor):
                for index in range(len(documents)):
                    spans.extend(self._instances_from_document(documents, index, rng))

            def pack(chunk):
                return self._pack(flat_ids, chunk)

        else:
            stream_ids, elements = self._stream(flat_ids, documents)
            for _ in range(dupe_factor):
                spans.extend(self.one_segment_spans(elements, rng))

            def pack(chunk):
                return self._pack_one_segment(stream_ids, chunk)

        rng.shuffle(spans)
        np_rng = np.random.default_rng([seed, unit_index])
        # Chunks keep the working arrays in cache: several times faster on large units.
        make = self._features if masked else self._unmasked_features
        for i in range(0, max(len(spans), 1), _CHUNK):
            yield make(pack(spans[i : i + _CHUNK]), np_rng)

    def _target_length(self, rng):
        """Google's target: the most tokens an input holds, or with `short_seq_prob` a random shorter one."""
        max_num_tokens = self.max_seq_length - (3 if self.next_sentence_prediction else 2)
        if rng.random() < self.short_seq_prob:
            return _randint(rng, 2, max_num_tokens)
        return max_num_tokens

    def _stream(self, flat_ids, documents):
        """The unit's documents (in their shuffled order) as one stream of ids, `[SEP]` between two
        documents unless `doc_sentences`; and its elements (start, stop, kind) in stream order,
        kind 0 a sentence, 1 the last sentence of a document, 2 a separator."""
        pieces, elements, position = [], [], 0
        for number, (start, offsets) in enumerate(documents):
            if number and not self.doc_sentences:
                pieces.append(np.asarray([self.sep_id], np.int64))
                elements.append((position, position + 1, 2))
                position += 1
            pieces.append(flat_ids[start : start + offsets[-1]])
            for s in range(len(offsets) - 1):
                kind = 1 if s == len(offsets) - 2 else 0
                elements.append((position + offsets[s], position + offsets[s + 1], kind))
            position += offsets[-1]
        stream_ids = np.concatenate(pieces) if pieces else np.zeros(0, np.int64)
        return stream_ids, elements

    def one_segment_spans(self, elements, rng):
        """FULL-SENTENCES (or DOC-SENTENCES) inputs as (start, stop) spans of the stream: whole
        sentences while the next fits the target length; an input never begins or ends with a
        document separator, and with `doc_sentences` it ends at a document's end."""
        spans = []
        target = self._target_length(rng)
        begin = end = None  # the open input: stream[begin:end]
        for start, stop, kind in elements:
            if kind == 2:  # a separator joins the open input only if a sentence follows it
                continue
            if begin is None:
                begin = end = start
            if stop - begin > target:
                if end > begin:
                    spans.append((begin, end))
                    target = self._target_length(rng)
                begin = start
                while stop - begin > target:  # a sentence longer than an input: input-sized pieces
                    spans.append((begin, begin + target))
                    begin += target
                    target = self._target_length(rng)
            end = stop
            if kind == 1 and self.doc_sentences:
                spans.append((begin, end))
                target = self._target_length(rng)
                begin = end = None
        if begin is not None and end > begin:
            spans.append((begin, end))
        return spans

    def _instances_from_document(self, documents, document_index, rng):
        """Google's loop over one document's sentences, on lengths: each instance is
        (a_start, a_stop, b_start, b_stop, is_random_next) in the unit's flat ids."""
        start, offsets = documents[document_index]
        num_sentences = len(offsets) - 1
        max_num_tokens = self.max_seq_length - 3  # [CLS], [SEP], [SEP]
        target_seq_length = max_num_tokens
        if rng.random() < self.short_seq_prob:
            target_seq_length = _randint(rng, 2, max_num_tokens)

        instances = []
        chunk_begin, chunk_size, current_length = 0, 0, 0  # the current chunk: sentences from chunk_begin
        i = 0
        while i < num_sentences:
            if not chunk_size:
                chunk_begin = i
            chunk_size += 1
            current_length += offsets[i + 1] - offsets[i]
            if i == num_sentences - 1 or current_length >= target_seq_length:
                a_end = _randint(rng, 1, chunk_size - 1) if chunk_size >= 2 else 1
                a_start, a_stop = start + offsets[chunk_begin], start + offsets[chunk_begin + a_end]
                is_random_next = False
                if chunk_size == 1 or rng.random() < 0.5:
                    is_random_next = True
                    target_b_length = target_seq_length - (a_stop - a_start)
                    # Ten tries for another document, as Google's code; a unit with one
                    # document can only pair with itself, which Google's code also allows.
                    for _ in range(10):
                        random_document_index = _randint(rng, 0, len(documents) - 1)
                        if random_document_index != document_index:
                            break
                    random_start, random_offsets = documents[random_document_index]
                    first = _randint(rng, 0, len(random_offsets) - 2)
                    # Whole sentences from `first` until B reaches its target length.
                    stop = first + 1
                    while (
                        stop < len(random_offsets) - 1
                        and random_offsets[stop] - random_offsets[first] < target_b_length
                    ):
                        stop += 1
                    b_start, b_stop = random_start + random_offsets[first], random_start + random_offsets[stop]
                    # The unused segments go back to be used next time round.
                    i -= chunk_size - a_end
                else:
                    b_start, b_stop = a_stop, start + offsets[chunk_begin + chunk_size]
                front_a, back_a, front_b, back_b = self.truncate_seq_pair(
                    a_stop - a_start, b_stop - b_start, max_num_tokens, rng
                )
                a_start, a_stop, b_start, b_stop = (
                    a_start + front_a,
                    a_stop - back_a,
                    b_start + front_b,
                    b_stop - back_b,
                )
                if a_stop > a_start and b_stop > b_start:
                    instances.append((a_start, a_stop, b_start, b_stop, int(is_random_next)))
                chunk_size, current_length = 0, 0
            i += 1
        return instances

    @staticmethod
    def truncate_seq_pair(length_a, length_b, max_num_tokens, rng):
        """Google's truncation: drop one token at a time from the longer segment (B on a tie),
        from the front or the back by a fair coin. The coins are drawn in one call per segment:
        the number of front drops is Binomial(drops, 1/2), as with one coin per drop. Returns
        the drops (front of A, back of A, front of B, back of B)."""
        excess = length_a + length_b - max_num_tokens
        if excess <= 0:
            return 0, 0, 0, 0
        # Trim the longer down to the shorter, then alternately (B first on a tie).
        gap = min(abs(length_a - length_b), excess)
        rest = excess - gap
        drop_a = (gap if length_a > length_b else 0) + rest // 2
        drop_b = (gap if length_b > length_a else 0) + (rest + 1) // 2
        front_a = bin(rng.getrandbits(drop_a)).count("1") if drop_a else 0
        front_b = bin(rng.getrandbits(drop_b)).count("1") if drop_b else 0
        return front_a, drop_a - front_a, front_b, drop_b - front_b

    def _pack(self, flat_ids, spans):
        """[CLS] A [SEP] B [SEP], vectorised: input_ids, input_mask, segment_ids, the lengths,
        where masks may go, and the next-sentence labels."""
        length = self.max_seq_length
        spans = np.asarray(spans, np.int64).reshape(-1, 5)
        count = len(spans)
        a_start, length_a = spans[:, 0:1], spans[:, 1:2] - spans[:, 0:1]
        b_start, length_b = spans[:, 2:3], spans[:, 3:4] - spans[:, 2:3]
        lengths = (length_a + length_b + 3)[:, 0]
        columns = np.arange(length)[None, :]
        in_a = (columns >= 1) & (columns <= length_a)
        b_offset = columns - length_a - 2
        in_b = (b_offset >= 0) & (b_offset < length_b)
        index = np.where(in_a, a_start + columns - 1, np.where(in_b, b_start + b_offset, 0))
        input_ids = np.where(in_a | in_b, flat_ids[index] if flat_ids.size else 0, 0)
        rows = np.arange(count)
        input_ids[:, 0] = self.cls_id
        input_ids[rows, length_a[:, 0] + 1] = self.sep_id
        input_ids[rows, lengths - 1] = self.sep_id
        input_mask = (columns < lengths[:, None]).astype(np.int64)
        segment_ids = ((b_offset >= 0) & (input_mask == 1)).astype(np.int64)
        # Google skips [CLS]/[SEP] by token, also where the text itself holds one.
        is_candidate = (in_a | in_b) & (input_ids != self.cls_id) & (input_ids != self.sep_id)
        labels = spans[:, 4:5].copy()
        return input_ids, input_mask, segment_ids, lengths, is_candidate, labels

    def _pack_one_segment(self, stream_ids, spans):
        """[CLS] span [SEP], vectorised, as `_pack` returns it (`segment_ids` 0, labels None);
        separators inside a span are the stream's own [SEP] ids between documents."""
        length = self.max_seq_length
        spans = np.asarray(spans, np.int64).reshape(-1, 2)
        start, size = spans[:, 0:1], spans[:, 1:2] - spans[:, 0:1]
        lengths = size[:, 0] + 2
        columns = np.arange(length)[None, :]
        inside = (columns >= 1) & (columns <= size)
        index = np.where(inside, start + columns - 1, 0)
        input_ids = np.where(inside, stream_ids[index] if stream_ids.size else 0, 0)
        input_ids[:, 0] = self.cls_id
        input_ids[np.arange(len(spans)), lengths - 1] = self.sep_id
        input_mask = (columns < lengths[:, None]).astype(np.int64)
        segment_ids = np.zeros_like(input_mask)
        is_candidate = inside & (input_ids != self.cls_id) & (input_ids != self.sep_id)
        return input_ids, input_mask, segment_ids, lengths, is_candidate, None

    def _word_starts(self, input_ids, is_candidate):
        """A word starts at every candidate that is not a ## piece following another candidate. A
        ## piece right after [CLS] or [SEP] (its start truncated away) is a word of its own;
        Google's loop would join it to the word before the [SEP], across the segments."""
        follows_candidate = np.zeros_like(is_candidate)
        follows_candidate[:, 1:] = is_candidate[:, :-1]
        return is_candidate & ~(self.is_continuation[input_ids] & follows_candidate)

    def _unmasked_features(self, packed, np_rng):
        """For dynamic masking: the packed ids unmasked, and per token 0 (never masked: [CLS],
        [SEP], padding), 1 (the first piece of a word) or 2 (a later piece of that word)."""
        input_ids, input_mask, segment_ids, _, is_candidate, labels = packed
        starts = self._word_starts(input_ids, is_candidate)
        features = {
            "input_ids": input_ids,
            "input_mask": input_mask,
            "segment_ids": segment_ids,
            "mlm_candidates": np.where(starts, 1, np.where(is_candidate, 2, 0)).astype(np.int64),
            "mask_token_id": np.full((len(input_ids), 1), self.mask_id, np.int64),
        }
        if labels is not None:
            features["next_sentence_labels"] = labels
        return features

    def _features(self, packed, np_rng):
        """Masks packed instances (`_pack` or `_pack_one_segment`), vectorised over a chunk of a unit."""
        length, predictions = self.max_seq_length, self.max_predictions_per_seq
        input_ids, input_mask, segment_ids, lengths, is_candidate, next_sentence_labels = packed
        count = len(lengths)
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
        features = {
            "input_ids": masked_ids,
            "input_mask": input_mask,
            "segment_ids": segment_ids,
            "masked_lm_positions": positions,
            "masked_lm_ids": labels,
            "masked_lm_weights": valid.astype(np.float32),
        }
        if next_sentence_labels is not None:
            features["next_sentence_labels"] = next_sentence_labels
        return features

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


def documents_of(row_splits, sentences_per_document):
    """(start, offsets) per document for `instances_from_documents`, from the row splits of the
    unit's tokenized sentences (in order) and each document's number of sentences: empty
    sentences dropped (Google's reader skips them); a document without tokens has offsets [0]."""
    documents, sentence = [], 0
    for count in sentences_per_document:
        splits = row_splits[sentence : sentence + count + 1]
        start = splits[0]
        # Empty sentences add no tokens: the others stay contiguous from `start`.
        offsets = [0, *(end - start for begin, end in zip(splits, splits[1:]) if end > begin)]
        documents.append((start, offsets))
        sentence += count
    return documents


def _randint(rng, low, high):
    """Uniform integer in [low, high], as `random.randint` but several times cheaper."""
    return low + int(rng.random() * (high - low + 1))
