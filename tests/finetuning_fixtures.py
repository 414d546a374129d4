"""Shared by the fine-tuning tests: a tiny vocabulary, a tiny "pretrained" Google-format model
directory (a module-scoped fixture), the runners' options and small learnable data sets in each
task's raw format (MRPC TSV, SQuAD JSON, CoNLL, SWAG CSV)."""

import json
import os

import numpy as np
import pytest

from keras_bert_impl.checkpoints.google_checkpoint import save_google_checkpoint
from keras_bert_impl.models.bert_encoder import BertEncoder
from keras_bert_impl.runners.finetuning import FineTuningOptions
from tests.conftest import REPO_ROOT, tiny_bert_config

WORDS = [
    "good",
    "great",
    "fine",
    "bad",
    "awful",
    "poor",
    "the",
    "movie",
    "film",
    "plot",
    "was",
    "is",
    "a",
    "cat",
    "sat",
    "on",
    "mat",
    "where",
    "did",
    "it",
    "?",
    ".",
    "dog",
    "ran",
    "far",
    "away",
    "eu",
    "peter",
    "paris",
]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("model")
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    config = tiny_bert_config(len(VOCAB))
    config.to_json_file(str(root / "bert_config.json"))
    import keras

    keras.utils.set_random_seed(0)  # the same "pretrained" weights on every run
    save_google_checkpoint(BertEncoder.from_bert_config(config), str(root / "bert_model.ckpt"))
    return root


def _options(model_dir, output_dir, options_class=FineTuningOptions, **overrides):
    values = dict(
        bert_config_file=str(model_dir / "bert_config.json"),
        vocab_file=str(model_dir / "vocab.txt"),
        output_dir=str(output_dir),
        init_checkpoint=str(model_dir / "bert_model.ckpt"),
        max_seq_length=16,
        train_batch_size=4,
        eval_batch_size=3,
        predict_batch_size=3,
        learning_rate=1e-3,
        num_train_epochs=4.0,
        save_checkpoints_steps=1000,
        iterations_per_loop=10,
    )
    values.update(overrides)
    return (options_class or FineTuningOptions)(**values)


def _mrpc(tmp_path):
    rng = np.random.default_rng(0)
    rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
    for i in range(24):
        label = i % 2
        words = ["good", "great", "fine"] if label else ["bad", "awful", "poor"]
        rows.append(f"{label}\t{i}\t{i}\tthe movie was {rng.choice(words)}\tthe film is {rng.choice(words)}")
    data = tmp_path / "mrpc"
    data.mkdir()
    (data / "train.tsv").write_text("\n".join(rows) + "\n")
    (data / "dev.tsv").write_text("\n".join(rows[:10]) + "\n")
    (data / "test.tsv").write_text(
        "\n".join(
            ["index\t#1 ID\t#2 ID\t#1 String\t#2 String"]
            + [f"{i}\t1\t2\tthe plot was good\tthe movie is bad" for i in range(4)]
        )
        + "\n"
    )
    return data


def _squad_file(tmp_path):
    context = "the cat sat on the mat . the dog ran far away ."
    qas = [
        {
            "id": "q1",
            "question": "where did the cat sit ?",
            "answers": [{"text": "the mat", "answer_start": 15}],
            "is_impossible": False,
        },
        {
            "id": "q2",
            "question": "where did the dog run ?",
            "answers": [{"text": "far away", "answer_start": 37}],
            "is_impossible": False,
        },
        {"id": "q3", "question": "where did peter sit ?", "answers": [], "is_impossible": True},
    ]
    path = tmp_path / "squad.json"
    path.write_text(
        json.dumps({"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]})
    )
    return path


def _conll(tmp_path):
    sentences = [
        [("eu", "I-ORG"), ("sat", "O")],
        [("peter", "I-PER"), ("ran", "O"), ("paris", "I-LOC")],
        [("the", "O"), ("eu", "I-ORG")],
        [("peter", "I-PER"), ("sat", "O")],
    ]
    text = "-DOCSTART- -X- O O\n\n" + "\n\n".join("\n".join(f"{w} NN O {t}" for w, t in s) for s in sentences) + "\n"
    data = tmp_path / "conll"
    data.mkdir()
    for name in ("eng.train", "eng.testa"):
        (data / name).write_text(text * 3)
    return data


def _swag(tmp_path, endings=("sat on the mat .,ran far away .,is a film .,was awful .",) * 2):
    """SWAG CSVs: 8 rows alternating two contexts, each with its four `endings` (one CSV string)."""
    header = "video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label\n"
    rows = [f"v,{{i}},x,the cat sat,the cat,gold,{endings[0]},0", f"v,{{i}},x,the dog ran,the dog,gold,{endings[1]},1"]
    data = tmp_path / "swag"
    data.mkdir()
    for name in ("train.csv", "val.csv"):
        (data / name).write_text(header + "\n".join(rows[i % 2].format(i=i) for i in range(8)) + "\n")
    return data


def classifier_command(model_dir, data):
    """run_classifier.py on MRPC-format `data` with the fixture model's vocab and config: the
    start of every command-line test's arguments."""
    return [
        os.path.join(REPO_ROOT, "run_classifier.py"),
        "--task_name=MRPC",
        f"--data_dir={data}",
        f"--vocab_file={model_dir}/vocab.txt",
        f"--bert_config_file={model_dir}/bert_config.json",
    ]
