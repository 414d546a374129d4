"""How far a SQuAD 2.0 run is above the all-null baseline, and why: F1 minus all-null F1 with a
bootstrap 95% interval over questions, the null odds' AUC (answerable vs unanswerable), and both
per article. Reads what run_squad.py writes.

    .venv/bin/python -m bench.squad_v2_report EVAL.json OUTPUT_DIR [--na-prob-thresh 1.0]

OUTPUT_DIR holds predictions.json and null_odds.json.
"""

import argparse
import json
import os

import numpy as np

from keras_bert_impl.evaluation.squad_eval import evaluate_v2, f1_score, normalize_answer


def question_scores(dataset, predictions, null_odds, na_prob_thresh=1.0):
    """Per question: (article title, F1 as the official script scores it, answerable?, null odds).
    Every question needs a prediction and null odds, as run_squad writes them."""
    rows = []
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                golds = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])] or [""]
                odds = null_odds[qa["id"]]
                prediction = "" if odds > na_prob_thresh else predictions[qa["id"]]
                rows.append((article["title"], max(f1_score(g, prediction) for g in golds), golds != [""], odds))
    return rows


def null_odds_auc(answerable, odds):
    """P(an unanswerable question has higher null odds than an answerable one), ties count half."""
    answerable, odds = np.asarray(answerable, bool), np.asarray(odds, float)
    positive, negative = odds[~answerable], odds[answerable]
    if not len(positive) or not len(negative):
        return float("nan")
    greater = (positive[:, None] > negative[None, :]).sum()
    ties = (positive[:, None] == negative[None, :]).sum()
    return float((greater + 0.5 * ties) / (len(positive) * len(negative)))


def gain_interval(gains, samples=2000, seed=0):
    """Mean of per-question F1 gains (in points) and its bootstrap 95% interval."""
    gains = 100.0 * np.asarray(gains, float)
    rng = np.random.default_rng(seed)
    means = gains[rng.integers(0, len(gains), size=(samples, len(gains)))].mean(axis=1)
    return float(gains.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def load_run(output_dir):
    """run_squad's predictions.json and null_odds.json from its output directory."""
    loaded = []
    for name in ("predictions.json", "null_odds.json"):
        with open(os.path.join(output_dir, name), encoding="utf-8") as reader:
            loaded.append(json.load(reader))
    return loaded


def report(dataset, predictions, null_odds, na_prob_thresh=1.0):
    rows = question_scores(dataset, predictions, null_odds, na_prob_thresh)
    official = evaluate_v2(dataset, predictions, null_odds, na_prob_thresh)["f1"]
    f1 = 100.0 * np.mean([row[1] for row in rows])
    assert abs(f1 - official) < 1e-6, (f1, official)

    def summary(subset):
        gain, low, high = gain_interval([score - (not answerable) for _, score, answerable, _ in subset])
        return {
            "questions": len(subset),
            "f1": 100.0 * np.mean([row[1] for row in subset]),
            "all_null_f1": 100.0 * np.mean([not row[2] for row in subset]),
            "gain": gain,
            "gain_95": [low, high],
            "null_odds_auc": null_odds_auc([row[2] for row in subset], [row[3] for row in subset]),
        }

    titles = list(dict.fromkeys(row[0] for row in rows))
    return {"all": summary(rows), "articles": {t: summary([r for r in rows if r[0] == t]) for t in titles}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("eval_file")
    parser.add_argument("output_dir")
    parser.add_argument("--na-prob-thresh", type=float, default=1.0)
    args = parser.parse_args()
    with open(args.eval_file, encoding="utf-8") as reader:
        dataset = json.load(reader)["data"]
    result = report(dataset, *load_run(args.output_dir), na_prob_thresh=args.na_prob_thresh)
    for title, values in [("all", result["all"]), *result["articles"].items()]:
        low, high = values["gain_95"]
        print(
            f"{title[:28]:28} {values['questions']:5d} q  F1 {values['f1']:5.1f}  "
            f"all-null {values['all_null_f1']:5.1f}  "
            f"gain {values['gain']:+5.1f} [{low:+5.1f}, {high:+5.1f}]  null-odds AUC {values['null_odds_auc']:.3f}"
        )
    print(json.dumps(result["all"]))


if __name__ == "__main__":
    main()
