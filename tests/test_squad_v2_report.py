"""bench/squad_v2_report.py: its AUC and bootstrap interval against direct computations."""

import itertools
import random

import numpy as np
import pytest

from tests.conftest import bench_module

squad_v2_report = bench_module("squad_v2_report.py")


def test_null_odds_auc_counts_pairs_and_ties():
    rng = random.Random(3)
    answerable = [rng.random() < 0.5 for _ in range(37)]
    odds = [rng.choice([-1.0, 0.0, 0.5, 2.0, rng.random()]) for _ in range(37)]
    pairs = [(u, a) for u, a in itertools.product(range(37), repeat=2) if not answerable[u] and answerable[a]]
    expected = sum(1.0 if odds[u] > odds[a] else 0.5 if odds[u] == odds[a] else 0.0 for u, a in pairs) / len(pairs)
    assert squad_v2_report.null_odds_auc(answerable, odds) == pytest.approx(expected, abs=1e-12)


def test_gain_interval_brackets_the_mean():
    gains = np.random.default_rng(0).normal(0.05, 0.4, size=500)
    mean, low, high = squad_v2_report.gain_interval(gains)
    assert mean == pytest.approx(100 * gains.mean())
    half_width = 1.96 * 100 * gains.std(ddof=1) / np.sqrt(len(gains))  # normal approximation
    assert low < mean < high
    assert (high - low) / 2 == pytest.approx(half_width, rel=0.15)


def test_report_matches_official_scores():
    dataset = [
        {
            "title": "A",
            "paragraphs": [
                {
                    "context": "x",
                    "qas": [
                        {"id": "1", "answers": [{"text": "the red fox"}]},
                        {"id": "2", "answers": []},
                        {"id": "3", "answers": [{"text": "blue"}]},
                    ],
                }
            ],
        }
    ]
    predictions = {"1": "red fox", "2": "fox", "3": "green"}
    null_odds = {"1": -2.0, "2": 3.0, "3": 1.5}  # 2 and 3 above the 1.0 threshold: no answer
    result = squad_v2_report.report(dataset, predictions, null_odds)["all"]
    assert result["f1"] == pytest.approx(100 * (1 + 1 + 0) / 3)
    assert result["all_null_f1"] == pytest.approx(100 / 3)
    assert result["null_odds_auc"] == pytest.approx(1.0)
