"""The official SQuAD evaluation (v1.1 and v2.0) as a library: the same scores and keys as the
official evaluate-v1.1.py / evaluate-v2.0.py (`keras_bert_cli.squad_eval` is the command)."""

import collections
import re
import string
import sys

_PUNCTUATION = set(string.punctuation)


def normalize_answer(text):
    """Lower case, drop punctuation, the articles a/an/the and extra white space."""
    text = "".join(char for char in text.lower() if char not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _tokens(text):
    return normalize_answer(text).split() if text else []


def exact_score(gold, prediction):
    return int(normalize_answer(gold) == normalize_answer(prediction))


def f1_score(gold, prediction, empty_matches_empty=True):
    gold_tokens, predicted_tokens = _tokens(gold), _tokens(prediction)
    if empty_matches_empty and (not gold_tokens or not predicted_tokens):
        return float(gold_tokens == predicted_tokens)  # v2.0: an empty answer matches only itself
    common = sum((collections.Counter(gold_tokens) & collections.Counter(predicted_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted_tokens), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _questions(dataset):
    for article in dataset:
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


# The keys each evaluation can return (HasAns_/NoAns_ only where such questions exist, best_
# only with null odds).
V1_METRIC_NAMES = ("exact_match", "f1")
V2_METRIC_NAMES = (
    "exact",
    "f1",
    "total",
    *(f"{kind}_{key}" for kind in ("HasAns", "NoAns") for key in ("exact", "f1", "total")),
    "best_exact",
    "best_exact_thresh",
    "best_f1",
    "best_f1_thresh",
)


def evaluate_v1(dataset, predictions):
    """v1.1: mean over all questions (a missing prediction scores 0) of the best match."""
    exact = f1 = total = 0
    for qa in _questions(dataset):
        total += 1
        if qa["id"] not in predictions:
            print(f"Unanswered question {qa['id']} will receive score 0.", file=sys.stderr)
            continue
        golds = [answer["text"] for answer in qa["answers"]]
        prediction = predictions[qa["id"]]
        exact += max(exact_score(gold, prediction) for gold in golds)
        f1 += max(f1_score(gold, prediction, empty_matches_empty=False) for gold in golds)
    return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total}


def _raw_scores(dataset, predictions):
    exact, f1, has_answer = {}, {}, {}
    for qa in _questions(dataset):
        golds = [answer["text"] for answer in qa["answers"] if normalize_answer(answer["text"])] or [""]
        has_answer[qa["id"]] = golds != [""]
        if qa["id"] not in predictions:
            print(f"Missing prediction for {qa['id']}", file=sys.stderr)
            continue
        prediction = predictions[qa["id"]]
        exact[qa["id"]] = max(exact_score(gold, prediction) for gold in golds)
        f1[qa["id"]] = max(f1_score(gold, prediction) for gold in golds)
    return exact, f1, has_answer


def _with_threshold(scores, null_odds, has_answer, threshold):
    return {qid: float(not has_answer[qid]) if null_odds[qid] > threshold else score for qid, score in scores.items()}


def _totals(exact, f1, qids):
    qids = [qid for qid in qids if qid in exact]  # questions without a prediction are left out
    return collections.OrderedDict(
        [
            ("exact", 100.0 * sum(exact[q] for q in qids) / len(qids)),
            ("f1", 100.0 * sum(f1[q] for q in qids) / len(qids)),
            ("total", len(qids)),
        ]
    )


def _best_threshold(predictions, scores, null_odds, has_answer):
    """Sweeps the null-odds threshold: best score and the threshold reaching it."""
    current = best = sum(1 for qid in has_answer if not has_answer[qid])
    best_threshold = 0.0
    for qid in sorted(null_odds, key=null_odds.get):
        if qid not in scores:
            continue
        if has_answer[qid]:
            current += scores[qid]
        else:
            current += -1 if predictions[qid] else 0
        if current > best:
            best, best_threshold = current, null_odds[qid]
    return 100.0 * best / len(scores), best_threshold


def evaluate_v2(dataset, predictions, null_odds=None, null_odds_threshold=1.0):
    """v2.0: the official evaluate-v2.0.py numbers, in its key order."""
    given_odds = null_odds is not None
    null_odds = null_odds if given_odds else {qid: 0.0 for qid in predictions}
    exact_raw, f1_raw, has_answer = _raw_scores(dataset, predictions)
    exact = _with_threshold(exact_raw, null_odds, has_answer, null_odds_threshold)
    f1 = _with_threshold(f1_raw, null_odds, has_answer, null_odds_threshold)
    results = _totals(exact, f1, list(has_answer))
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        qids = [qid for qid, answered in has_answer.items() if answered == wanted]
        if qids:
            for key, value in _totals(exact, f1, qids).items():
                results[f"{prefix}_{key}"] = value
    if given_odds:
        results["best_exact"], results["best_exact_thresh"] = _best_threshold(
            predictions, exact_raw, null_odds, has_answer
        )
        results["best_f1"], results["best_f1_thresh"] = _best_threshold(predictions, f1_raw, null_odds, has_answer)
    return results
