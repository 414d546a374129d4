"""Export to Hugging Face: every weight gets transformers' name once, with its layout, and the
round trip ours -> Hugging Face -> ours is bit-identical; the directory is what transformers reads."""

import json
import shutil

import numpy as np
import pytest

from keras_bert_impl.checkpoints.google_checkpoint import google_weights
from keras_bert_impl.checkpoints.hf_weights import (
    google_to_hf_names,
    hf_to_google_names,
    load_hf_directory,
    write_hf_directory,
)
from keras_bert_impl.errors import CheckpointMismatchError
from keras_bert_impl.tasks.registry import task_class
from tests.conftest import tiny_bert_config
from tests.finetuning_fixtures import _mrpc, _options, model_dir  # noqa: F401 -- model_dir: a fixture

LAYER = [  # transformers' BertLayer parameters (modeling_bert.py), [out, in] for Linear weights
    ("attention.self.query.weight", (32, 32)),
    ("attention.self.query.bias", (32,)),
    ("attention.self.key.weight", (32, 32)),
    ("attention.self.key.bias", (32,)),
    ("attention.self.value.weight", (32, 32)),
    ("attention.self.value.bias", (32,)),
    ("attention.output.dense.weight", (32, 32)),
    ("attention.output.dense.bias", (32,)),
    ("attention.output.LayerNorm.weight", (32,)),
    ("attention.output.LayerNorm.bias", (32,)),
    ("intermediate.dense.weight", (37, 32)),
    ("intermediate.dense.bias", (37,)),
    ("output.dense.weight", (32, 37)),
    ("output.dense.bias", (32,)),
    ("output.LayerNorm.weight", (32,)),
    ("output.LayerNorm.bias", (32,)),
]


def _expected_encoder(prefix, config):
    names = {
        f"{prefix}embeddings.word_embeddings.weight": (config.vocab_size, 32),
        f"{prefix}embeddings.position_embeddings.weight": (config.max_position_embeddings, 32),
        f"{prefix}embeddings.token_type_embeddings.weight": (2, 32),
        f"{prefix}embeddings.LayerNorm.weight": (32,),
        f"{prefix}embeddings.LayerNorm.bias": (32,),
        f"{prefix}pooler.dense.weight": (32, 32),
        f"{prefix}pooler.dense.bias": (32,),
    }
    for layer in range(config.num_hidden_layers):
        names.update({f"{prefix}encoder.layer.{layer}.{name}": shape for name, shape in LAYER})
    return names


def _model(task_name, config, **kwargs):
    import keras

    from keras_bert_impl.tasks.registry import create_task

    keras.utils.set_random_seed(3)
    model = create_task(task_name, config, 16, **kwargs).build_model()
    for weight in model.weights:  # no zeros or ones left: a swapped pair cannot pass
        if "seed_generator" not in weight.path:
            weight.assign(np.random.default_rng(len(weight.path)).normal(size=weight.shape).astype(np.float32))
    return model


@pytest.mark.parametrize(
    "task_name, kwargs, heads",
    [
        (
            "pretrainer",
            {},
            {
                "cls.predictions.transform.dense.weight": (32, 32),
                "cls.predictions.transform.dense.bias": (32,),
                "cls.predictions.transform.LayerNorm.weight": (32,),
                "cls.predictions.transform.LayerNorm.bias": (32,),
                "cls.predictions.bias": (99,),
                "cls.seq_relationship.weight": (2, 32),
                "cls.seq_relationship.bias": (2,),
            },
        ),
        (
            "masked_lm",
            {},
            {
                "cls.predictions.transform.dense.weight": (32, 32),
                "cls.predictions.transform.dense.bias": (32,),
                "cls.predictions.transform.LayerNorm.weight": (32,),
                "cls.predictions.transform.LayerNorm.bias": (32,),
                "cls.predictions.bias": (99,),
            },
        ),
        ("classifier", {"label_names": ["a", "b", "c"]}, {"classifier.weight": (3, 32), "classifier.bias": (3,)}),
        ("regression", {}, {"classifier.weight": (1, 32), "classifier.bias": (1,)}),
        ("squad", {}, {"qa_outputs.weight": (2, 32), "qa_outputs.bias": (2,)}),
        (
            "ner",
            {"label_names": ["O", "B-X", "I-X", "B-Y", "I-Y"]},
            {"classifier.weight": (5, 32), "classifier.bias": (5,)},
        ),
        ("multiple_choice", {}, {"classifier.weight": (1, 32), "classifier.bias": (1,)}),
    ],
)
def test_every_weight_is_named_once_and_the_round_trip_is_exact(task_name, kwargs, heads):
    config = tiny_bert_config(99)
    model = _model(task_name, config, **kwargs)
    ours = google_weights(model)
    hf = google_to_hf_names(ours)
    want = {**_expected_encoder("bert.", config), **heads}
    assert {name: value.shape for name, value in hf.items()} == want
    # The MLM decoder is tied to the word embeddings (transformers re-ties it on load).
    assert "cls.predictions.decoder.weight" not in hf
    architecture = {"ner": "BertForTokenClassification", "multiple_choice": "BertForMultipleChoice"}.get(task_name)
    back = hf_to_google_names(hf, architecture=architecture)
    assert back.keys() == ours.keys()
    for name in ours:
        assert back[name].dtype == ours[name].dtype and np.array_equal(back[name], ours[name]), name


def test_hugging_face_directory_reads_back_bit_identical(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    config = tiny_bert_config(99)  # hidden_act "gelu": Google's tanh form
    model = _model("classifier", config, label_names=["no", "yes"])
    ours = google_weights(model)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(f"w{i}" for i in range(99)) + "\n")
    out = tmp_path / "hf"
    write_hf_directory(config, ours, str(vocab), True, str(out), task_class("classifier"), label_names=["no", "yes"])
    assert sorted(p.name for p in out.iterdir()) == [
        "config.json",
        "model.safetensors",
        "tokenizer_config.json",
        "vocab.txt",
    ]
    values = json.loads((out / "config.json").read_text())
    assert values["architectures"] == ["BertForSequenceClassification"]
    assert values["hidden_act"] == "gelu_new"  # transformers' tanh GELU
    assert values["id2label"] == {"0": "no", "1": "yes"} and values["label2id"] == {"no": 0, "yes": 1}
    assert json.loads((out / "tokenizer_config.json").read_text())["do_lower_case"] is True
    # The safetensors library (independent of our writer) reads what we wrote.
    reference = safetensors_numpy.load_file(str(out / "model.safetensors"))
    hf = google_to_hf_names(ours)
    assert reference.keys() == hf.keys()
    for name in hf:
        assert np.array_equal(reference[name], hf[name]), name
    read_config, read = load_hf_directory(str(out))
    assert read_config.to_dict() == config.to_dict()
    for name in ours:
        assert np.array_equal(read[name], ours[name]), name
    with pytest.raises(FileExistsError):
        write_hf_directory(config, ours, str(vocab), True, str(out), task_class("classifier"))


def test_a_missing_head_is_named(tmp_path):
    config = tiny_bert_config(99)
    encoder_only = google_weights(_model("encoder", config))
    with pytest.raises(CheckpointMismatchError, match="no cls/predictions"):
        write_hf_directory(
            config, encoder_only, str(tmp_path / "v"), True, str(tmp_path / "o"), task_class("pretrainer")
        )
    assert not (tmp_path / "o").exists()


def test_convert_checkpoint_google_to_hugging_face_and_back(tmp_path):
    """The command line: a Google directory with a pretraining head -> Hugging Face (its
    architecture found from the weights) -> Google again, bit-identical."""
    import os
    import subprocess
    import sys

    from keras_bert_impl.checkpoints.google_checkpoint import save_google_checkpoint
    from keras_bert_impl.runners.convert_checkpoint import ConvertOptions, convert_checkpoint
    from tests.conftest import REPO_ROOT, subprocess_env
    from tests.pretraining_fixtures import assert_same_checkpoints

    config = tiny_bert_config(99)
    google = tmp_path / "google"
    google.mkdir()
    config.to_json_file(str(google / "bert_config.json"))
    save_google_checkpoint(_model("pretrainer", config), str(google / "bert_model.ckpt"))
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(f"w{i}" for i in range(99)) + "\n")
    run = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO_ROOT, "convert_checkpoint.py"),
            "--from=google",
            "--to=huggingface",
            f"--input_dir={google}",
            f"--output_dir={tmp_path / 'hf'}",
            f"--vocab_file={vocab}",
        ],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "huggingface pretrainer" in run.stderr
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["architectures"] == ["BertForPreTraining"]
    assert convert_checkpoint(
        ConvertOptions("huggingface", "google", str(tmp_path / "hf"), str(tmp_path / "back")), log=print
    ) == ("pretrainer")
    assert_same_checkpoints(google / "bert_model.ckpt", tmp_path / "back" / "bert_model.ckpt")
    assert (tmp_path / "back" / "vocab.txt").read_text() == vocab.read_text()


def test_a_regression_head_converts_to_transformers_one_label_classifier(tmp_path):
    """STS-B's head -> BertForSequenceClassification with num_labels=1, which transformers trains
    and serves as regression (run_glue.py's STS-B); back to Google's names bit-identical."""
    from keras_bert_impl.checkpoints.google_checkpoint import save_google_checkpoint
    from keras_bert_impl.runners.convert_checkpoint import ConvertOptions, convert_checkpoint
    from tests.pretraining_fixtures import assert_same_checkpoints

    config = tiny_bert_config(99)
    google = tmp_path / "google"
    google.mkdir()
    config.to_json_file(str(google / "bert_config.json"))
    (google / "vocab.txt").write_text("\n".join(f"w{i}" for i in range(99)) + "\n")
    save_google_checkpoint(_model("regression", config), str(google / "bert_model.ckpt"))
    options = ConvertOptions("google", "huggingface", str(google), str(tmp_path / "hf"), model_type="regression")
    assert convert_checkpoint(options, log=print) == "regression"
    values = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert values["architectures"] == ["BertForSequenceClassification"] and values["id2label"] == {"0": "LABEL_0"}
    # Casing unsaid: from the vocabulary (no upper case here: lower-cased), not guessed.
    assert json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())["do_lower_case"] is True
    _, weights = load_hf_directory(str(tmp_path / "hf"))
    assert weights["output_weights"].shape == (1, 32) and weights["output_bias"].shape == (1,)
    convert_checkpoint(ConvertOptions("huggingface", "google", str(tmp_path / "hf"), str(tmp_path / "back")), log=print)
    assert_same_checkpoints(google / "bert_model.ckpt", tmp_path / "back" / "bert_model.ckpt")
    cased = tmp_path / "cased"
    shutil.copytree(google, cased)
    (cased / "vocab.txt").write_text("\n".join(["The"] + [f"w{i}" for i in range(98)]) + "\n")
    convert_checkpoint(
        ConvertOptions("google", "huggingface", str(cased), str(tmp_path / "hf_cased"), model_type="regression"),
        log=print,
    )
    assert json.loads((tmp_path / "hf_cased" / "tokenizer_config.json").read_text())["do_lower_case"] is False
    # A classifier's three outputs are no regression.
    from keras_bert_common.errors import UsageError

    save_google_checkpoint(_model("classifier", config, label_names=["a", "b", "c"]), str(google / "bert_model.ckpt"))
    options = ConvertOptions("google", "huggingface", str(google), str(tmp_path / "hf3"), model_type="regression")
    with pytest.raises(UsageError, match="the checkpoint's head has 3 outputs, a regression head 1"):
        convert_checkpoint(options, log=print)
    assert not (tmp_path / "hf3").exists()


@pytest.mark.parametrize(
    "task_name, architecture", [("ner", "BertForTokenClassification"), ("multiple_choice", "BertForMultipleChoice")]
)
def test_classifier_named_heads_read_back_by_their_architecture(tmp_path, task_name, architecture):
    """transformers calls three different heads `classifier`: config.json's architecture says whose."""
    config = tiny_bert_config(99)
    kwargs = {"label_names": ["O", "B-X", "I-X"]} if task_name == "ner" else {}
    ours = google_weights(_model(task_name, config, **kwargs))
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(f"w{i}" for i in range(99)) + "\n")
    write_hf_directory(
        config, ours, str(vocab), True, str(tmp_path / "hf"), task_class(task_name), kwargs.get("label_names")
    )
    values = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert values["architectures"] == [architecture]
    _, read = load_hf_directory(str(tmp_path / "hf"))
    assert read.keys() == ours.keys()
    for name in ours:
        assert np.array_equal(read[name], ours[name]), name


def test_a_fine_tuned_runner_output_converts_with_its_labels(model_dir, tmp_path):  # noqa: F811
    """run_classifier's --output_dir (ckpt-N, meta.json) -> BertForSequenceClassification with
    its labels, holding the fine-tuned weights (not the initial checkpoint's)."""
    import tensorflow as tf

    from keras_bert_impl.checkpoints.google_checkpoint import read_google_checkpoint
    from keras_bert_impl.runners.convert_checkpoint import ConvertOptions, convert_checkpoint
    from keras_bert_impl.runners.run_classifier import run_classifier
    from tfrecord_tools.classification_data import ClassificationProcessor

    data = _mrpc(tmp_path)
    out = tmp_path / "out"
    options = _options(model_dir, out, do_train=True, num_train_epochs=1.0, learning_rate=1e-2)
    run_classifier(options, "MRPC", str(data), ClassificationProcessor.for_task("MRPC", str(data)), log=print)
    assert tf.train.latest_checkpoint(str(out))
    hf = tmp_path / "hf"
    written = convert_checkpoint(
        ConvertOptions(
            "google",
            "huggingface",
            str(out),
            str(hf),
            vocab_file=str(model_dir / "vocab.txt"),
            bert_config_file=str(model_dir / "bert_config.json"),
        ),
        log=print,
    )
    assert written == "classifier"
    values = json.loads((hf / "config.json").read_text())
    assert values["architectures"] == ["BertForSequenceClassification"] and values["id2label"] == {"0": "0", "1": "1"}
    _, weights = load_hf_directory(str(hf))
    initial = read_google_checkpoint(str(model_dir / "bert_model.ckpt"))
    name = "bert/encoder/layer_0/attention/self/query/kernel"
    assert weights[name].shape == initial[name].shape and not np.array_equal(weights[name], initial[name])
    assert weights["output_weights"].shape == (2, 32)


@pytest.mark.parametrize("task_name, kwargs", [("squad", {}), ("ner", {"label_names": ["O", "B-X", "I-X"]})])
def test_a_head_trained_in_transformers_without_a_pooler_loads_and_serves(tmp_path, task_name, kwargs):
    """transformers' BertForQuestionAnswering and BertForTokenClassification have no pooler: their
    checkpoints convert and load into our squad / ner models (which never read it) with nothing
    left at its initialisation, and give the original model's logits; a classifier still needs it."""
    from keras_bert_impl.checkpoints.hf_weights import read_safetensors, write_safetensors
    from keras_bert_impl.checkpoints.init_checkpoint import initialize_from_checkpoint
    from keras_bert_impl.runners.convert_checkpoint import ConvertOptions, convert_checkpoint
    from keras_bert_impl.tasks.registry import create_task

    config = tiny_bert_config(99)
    model = _model(task_name, config, **kwargs)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(f"w{i}" for i in range(99)) + "\n")
    hf = tmp_path / "hf"
    write_hf_directory(
        config, google_weights(model), str(vocab), True, str(hf), task_class(task_name), kwargs.get("label_names")
    )
    tensors = read_safetensors(str(hf / "model.safetensors"))
    write_safetensors({k: v for k, v in tensors.items() if ".pooler." not in k}, str(hf / "model.safetensors"))
    convert_checkpoint(ConvertOptions("huggingface", "google", str(hf), str(tmp_path / "google")))
    fresh = create_task(task_name, config, 16, **kwargs).build_model()
    report = initialize_from_checkpoint(fresh, str(tmp_path / "google" / "bert_model.ckpt"))
    assert report.initialized == []  # the pooler is not counted: nothing these heads use is missing
    rng = np.random.default_rng(0)
    inputs = {
        "input_ids": rng.integers(0, 99, (2, 16)).astype(np.int32),
        "input_mask": np.ones((2, 16), np.int32),
        "segment_ids": np.zeros((2, 16), np.int32),
    }
    for name, value in model(inputs).items():
        if name != "encoder_outputs":
            np.testing.assert_array_equal(np.asarray(fresh(inputs)[name]), np.asarray(value), err_msg=name)
    classifier = create_task("classifier", config, 16, label_names=["a", "b"]).build_model()
    with pytest.raises(CheckpointMismatchError, match="missing bert/pooler/dense/kernel"):
        initialize_from_checkpoint(classifier, str(tmp_path / "google" / "bert_model.ckpt"))
