"""Task metrics against scikit-learn / scipy / seqeval, and the SQuAD evaluation against the
official scripts shipped in tf-models-official."""

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from keras_bert_impl.evaluation import conlleval, metrics
from keras_bert_impl.evaluation.squad_eval import evaluate_v1, evaluate_v2
from tests.conftest import REPO_ROOT, SHARED_DATA


def test_classification_metrics_match_sklearn_and_scipy():
    from scipy import stats
    from sklearn import metrics as sk

    rng = np.random.default_rng(0)
    labels, predictions = rng.integers(0, 2, 500), rng.integers(0, 2, 500)
    assert metrics.f1(labels, predictions) == pytest.approx(sk.f1_score(labels, predictions))
    assert metrics.matthews_corrcoef(labels, predictions) == pytest.approx(sk.matthews_corrcoef(labels, predictions))
    assert metrics.accuracy(labels, predictions) == pytest.approx(sk.accuracy_score(labels, predictions))
    x, y = rng.normal(size=300), rng.integers(0, 6, 300).astype(float)  # ties in y
    assert metrics.pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0])
    assert metrics.spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0])
    assert set(metrics.classification_metrics("MRPC", labels, predictions)) == {"eval_accuracy", "eval_f1"}
    assert set(metrics.classification_metrics("CoLA", labels, predictions)) == {"eval_accuracy", "eval_mcc"}


def test_conlleval_matches_seqeval_default_mode():
    from seqeval.metrics import f1_score, precision_score, recall_score

    rng = random.Random(0)
    tags = ["O", "O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-ORG", "I-MISC", "B-MISC"]
    gold = [[rng.choice(tags) for _ in range(rng.randint(1, 15))] for _ in range(300)]
    predicted = [[t if rng.random() < 0.7 else rng.choice(tags) for t in sentence] for sentence in gold]
    ours = conlleval.evaluate(gold, predicted)
    assert ours["f1"] == pytest.approx(f1_score(gold, predicted))
    assert ours["precision"] == pytest.approx(precision_score(gold, predicted))
    assert ours["recall"] == pytest.approx(recall_score(gold, predicted))
    assert conlleval.chunks(["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG"]) == [
        ("PER", 0, 1),
        ("PER", 2, 2),
        ("LOC", 4, 4),
        ("ORG", 5, 5),
    ]


SQUAD = {
    1: os.path.join(SHARED_DATA, "SQuAD", "dev-v1.1-part-a.json"),
    2: os.path.join(SHARED_DATA, "SQuAD", "dev-v2.0-part-a.json"),
}


def _synthetic_predictions(data, seed):
    """Right, partly right, wrong and empty answers, so every branch of the metric is used."""
    rng = random.Random(seed)
    predictions, odds = {}, {}
    for article in data:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                answers = [a["text"] for a in qa["answers"]] or [""]
                choice = rng.random()
                if choice < 0.4:
                    predictions[qa["id"]] = rng.choice(answers)
                elif choice < 0.6:
                    predictions[qa["id"]] = "The " + rng.choice(answers) + " of it!"
                elif choice < 0.8:
                    predictions[qa["id"]] = ""
                else:
                    predictions[qa["id"]] = paragraph["context"][:20]
                odds[qa["id"]] = rng.random() * 4 - 2
    return predictions, odds


@pytest.mark.skipif(not os.path.isfile(SQUAD[2]), reason="needs ../shared/data")
def test_squad_v2_evaluation_equals_official_script(tmp_path):
    from official.nlp.tools import squad_evaluate_v2_0 as official

    with open(SQUAD[2]) as reader:
        data = json.load(reader)["data"][:6]
    predictions, odds = _synthetic_predictions(data, 1)
    ours = evaluate_v2(data, predictions, odds)
    # tf-models-official's copy of evaluate-v2.0.py names the best-threshold keys final_*.
    want = official.evaluate(data, predictions, odds)
    want = {key.replace("final_", "best_"): value for key, value in want.items() if not key.startswith("pr_")}
    assert set(ours) == set(want)
    for key in want:
        assert ours[key] == pytest.approx(want[key]), key
    # The command prints the same JSON.
    (tmp_path / "data.json").write_text(json.dumps({"data": data}))
    (tmp_path / "pred.json").write_text(json.dumps(predictions))
    (tmp_path / "odds.json").write_text(json.dumps(odds))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "keras_bert_cli.squad_eval",
            str(tmp_path / "data.json"),
            str(tmp_path / "pred.json"),
            "--na-prob-file",
            str(tmp_path / "odds.json"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
    )
    printed = json.loads(run.stdout)
    assert list(printed) == [
        "exact",
        "f1",
        "total",
        "HasAns_exact",
        "HasAns_f1",
        "HasAns_total",
        "NoAns_exact",
        "NoAns_f1",
        "NoAns_total",
        "best_exact",
        "best_exact_thresh",
        "best_f1",
        "best_f1_thresh",
    ]
    assert printed == pytest.approx(ours)


@pytest.mark.skipif(not os.path.isfile(SQUAD[1]), reason="needs ../shared/data")
def test_squad_v1_evaluation_equals_official_script():
    from official.nlp.tools import squad_evaluate_v1_1 as official

    with open(SQUAD[1]) as reader:
        data = json.load(reader)["data"][:6]
    predictions, _ = _synthetic_predictions(data, 2)
    ours = evaluate_v1(data, predictions)
    want = official.evaluate(data, predictions)  # tf-models-official's copy returns fractions
    assert set(ours) == {"exact_match", "f1"}
    assert ours["exact_match"] == pytest.approx(100 * want["exact_match"]) and ours["f1"] == pytest.approx(
        100 * want["final_f1"]
    )
