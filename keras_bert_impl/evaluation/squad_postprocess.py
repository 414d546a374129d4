"""`write_predictions`: start/end logits -> answer text, n-best lists and null odds (Google's
run_squad.py post-processing), without its crash when every n-best entry is the null answer."""

import collections
import json
import math

from keras_bert_common.files import atomic_output

# Null odds given when a question has no non-null candidate at all: the null answer is certain.
NO_CANDIDATE_NULL_ODDS = 1e6


def _best_indexes(logits, n_best_size):
    return sorted(range(len(logits)), key=lambda index: logits[index], reverse=True)[:n_best_size]


def _softmax(scores):
    if not scores:
        return []
    top = max(scores)
    exps = [math.exp(score - top) for score in scores]
    total = sum(exps)
    return [value / total for value in exps]


def _strip_spaces(text):
    chars, positions = [], {}
    for index, char in enumerate(text):
        if char != " ":
            positions[len(chars)] = index
            chars.append(char)
    return "".join(chars), positions


def final_text(predicted_text, original_text, normalized_words):
    """Projects the tokenized answer back onto the original text (Google's get_final_text).

    `normalized_words` are the original text's words as the BasicTokenizer rules give them
    (lower-cased and stripped of accents when the model is uncased)."""
    tokenized_text = " ".join(normalized_words)
    start = tokenized_text.find(predicted_text)
    if start == -1:
        return original_text
    end = start + len(predicted_text) - 1
    original_stripped, original_map = _strip_spaces(original_text)
    tokenized_stripped, tokenized_map = _strip_spaces(tokenized_text)
    if len(original_stripped) != len(tokenized_stripped):
        return original_text
    to_stripped = {value: key for key, value in tokenized_map.items()}
    if start not in to_stripped or end not in to_stripped:
        return original_text
    original_start = original_map.get(to_stripped[start])
    original_end = original_map.get(to_stripped[end])
    if original_start is None or original_end is None:
        return original_text
    return original_text[original_start : original_end + 1]


def compute_predictions(
    examples,
    features,
    results,
    text_tokenizer,
    n_best_size=20,
    max_answer_length=30,
    version_2_with_negative=False,
    null_score_diff_threshold=0.0,
):
    """`results`: {unique_id: (start_logits, end_logits)}. Returns (predictions, nbest, null_odds)."""
    by_example = collections.defaultdict(list)
    for feature in features:
        by_example[feature.example_index].append(feature)
    candidates_of = {}
    for example_index, example in enumerate(examples):
        prelim = []
        score_null, null_feature, null_start, null_end = math.inf, 0, 0.0, 0.0
        for feature_index, feature in enumerate(by_example[example_index]):
            start_logits, end_logits = results[feature.unique_id]
            if version_2_with_negative and start_logits[0] + end_logits[0] < score_null:
                score_null = start_logits[0] + end_logits[0]
                null_feature, null_start, null_end = feature_index, start_logits[0], end_logits[0]
            for start in _best_indexes(start_logits, n_best_size):
                for end in _best_indexes(end_logits, n_best_size):
                    if (
                        start >= len(feature.tokens)
                        or end >= len(feature.tokens)
                        or start not in feature.token_to_orig_map
                        or end not in feature.token_to_orig_map
                        or not feature.token_is_max_context.get(start, False)
                        or end < start
                        or end - start + 1 > max_answer_length
                    ):
                        continue
                    prelim.append((feature_index, start, end, start_logits[start], end_logits[end]))
        if version_2_with_negative:
            prelim.append((null_feature, 0, 0, null_start, null_end))
        prelim.sort(key=lambda p: p[3] + p[4], reverse=True)
        candidates_of[example_index] = (prelim, score_null, null_start, null_end)

    # Project every candidate span back to the original text with one batched word split.
    texts = {}
    for example_index, (prelim, *_rest) in candidates_of.items():
        for feature_index, start, end, _, _ in prelim[: 4 * n_best_size]:
            if start > 0:
                feature = by_example[example_index][feature_index]
                words = examples[example_index].doc_tokens[
                    feature.token_to_orig_map[start] : feature.token_to_orig_map[end] + 1
                ]
                texts.setdefault(" ".join(words), None)
    originals = list(texts)
    for original, words in zip(originals, text_tokenizer(originals)):
        texts[original] = words

    predictions, all_nbest, null_odds = collections.OrderedDict(), collections.OrderedDict(), collections.OrderedDict()
    for example_index, example in enumerate(examples):
        prelim, score_null, null_start, null_end = candidates_of[example_index]
        seen, nbest = set(), []
        for feature_index, start, end, start_logit, end_logit in prelim:
            if len(nbest) >= n_best_size:
                break
            if start > 0:
                feature = by_example[example_index][feature_index]
                pieces = " ".join(feature.tokens[start : end + 1]).replace(" ##", "").replace("##", "")
                original = " ".join(
                    example.doc_tokens[feature.token_to_orig_map[start] : feature.token_to_orig_map[end] + 1]
                )
                if texts.get(original) is None:  # beyond the batched candidates: split now
                    texts[original] = text_tokenizer([original])[0]
                text = final_text(" ".join(pieces.split()), original, texts[original])
            else:
                text = ""
            if text in seen:
                continue
            seen.add(text)
            nbest.append((text, start_logit, end_logit))
        if version_2_with_negative and "" not in seen:
            nbest.append(("", null_start, null_end))
        if not nbest:
            nbest.append(("empty", 0.0, 0.0))
        probabilities = _softmax([s + e for _, s, e in nbest])
        all_nbest[example.qas_id] = [
            collections.OrderedDict(text=text, probability=p, start_logit=float(s), end_logit=float(e))
            for (text, s, e), p in zip(nbest, probabilities)
        ]
        best_non_null = next((entry for entry in nbest if entry[0]), None)
        if not version_2_with_negative:
            predictions[example.qas_id] = nbest[0][0]
        elif best_non_null is None:
            null_odds[example.qas_id] = NO_CANDIDATE_NULL_ODDS
            predictions[example.qas_id] = ""
        else:
            difference = float(score_null - best_non_null[1] - best_non_null[2])
            null_odds[example.qas_id] = difference
            predictions[example.qas_id] = "" if difference > null_score_diff_threshold else best_non_null[0]
    return predictions, all_nbest, null_odds


def write_json(value, path):
    with atomic_output(path) as writer:
        json.dump(value, writer, indent=4)
        writer.write("\n")
