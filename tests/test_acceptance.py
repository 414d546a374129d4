"""Real-data acceptance (slow; `make test-slow`): the real MiniLM weights through the Google
checkpoint path, Google's fine-tuning recipe, the data in ../shared/data. Thresholds from the
issue: an independent PyTorch run of the same recipe reached the figures in the comments."""

import os

import pytest

from tests.conftest import SHARED_DATA, minilm_directory

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(minilm_directory() is None or not os.path.isdir(SHARED_DATA), reason="needs ../shared/data and MiniLM"),
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
    import finetune_acceptance

    root = str(tmp_path_factory.mktemp("acceptance"))
    return finetune_acceptance, finetune_acceptance.google_model_dir(root), root


def test_mrpc(model_dir):
    module, directory, root = model_dir
    results = module.run_mrpc(directory, root, print)
    assert results["eval_accuracy"] >= 0.78 and results["eval_f1"] >= 0.85  # [0.792 / 0.860]


def test_sst2_4000_sentences(model_dir):
    module, directory, root = model_dir
    assert module.run_sst2(directory, root, print)["eval_accuracy"] >= 0.83  # [0.838]


def test_conll_5000_sentences(model_dir):
    module, directory, root = model_dir
    assert module.run_conll(directory, root, print)["eval_f1"] >= 0.82  # [0.843]


def test_squad_v2_split_by_article(model_dir):
    module, directory, root = model_dir
    results = module.run_squad_v2(directory, root, print)
    # The "well above all-null"; not met yet: best +4.5, tf-models-official +0.7 (README).
    assert results["f1"] > results["all_null_baseline_f1"] + 10
