"""Masked-LM-only pretraining (RoBERTa's objective, the paper's "No NSP"): records without
next-sentence labels train `MaskedLMTask`, which resumes exactly, evaluates during training,
continues from its own and others' checkpoints, converts to transformers' BertForMaskedLM and
keras-hub's BertMaskedLM, and serves."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_common.errors import UsageError
from keras_bert_impl.checkpoints.init_checkpoint import initialize_from_checkpoint
from keras_bert_impl.models.bert_classifier import BertClassifier
from keras_bert_impl.models.bert_config import BertConfig
from keras_bert_impl.models.bert_encoder import BertEncoder
from keras_bert_impl.models.bert_masked_lm import BertMaskedLM
from keras_bert_impl.models.bert_pretrainer import BertPretrainer
from keras_bert_impl.runners.convert_checkpoint import ConvertOptions, convert_checkpoint, model_type_of
from keras_bert_impl.runners.run_pretraining import PretrainingOptions, run_pretraining
from tests.conftest import REPO_ROOT, subprocess_env
from tests.pretraining_fixtures import (
    MAX_PRED,
    MAX_SEQ,
    add_records,
    assert_same_checkpoints,
    kill_9_and_resume,
    make_pretraining_setup,
    pretraining_flags,
    run_straight,
)
from tfrecord_tools import feature_specs, tfrecord_files

RUNNER = os.path.join(REPO_ROOT, "run_pretraining.py")
MLM_KEYS = ["global_step", "loss", "masked_lm_accuracy", "masked_lm_loss"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    paths = make_pretraining_setup(str(tmp_path_factory.mktemp("mlm_only")))
    for name, dynamic in (("mlm.tfrecord", False), ("mlm_dynamic.tfrecord", True)):
        add_records(
            paths, name, dupe_factor=1 if dynamic else 10, next_sentence_prediction=False, dynamic_masking=dynamic
        )
    return paths


@pytest.fixture(scope="module")
def trained(setup, tmp_path_factory):
    """A masked-LM-only run with evaluation during training; (output_dir, logs, result)."""
    out = tmp_path_factory.mktemp("mlm_run") / "out"
    logs = []
    flags = pretraining_flags(
        setup,
        str(out),
        input_file=setup["mlm.tfrecord"],
        num_train_steps=120,
        iterations_per_loop=40,
        eval_every_n_steps=40,
        save_checkpoints_steps=40,
        learning_rate=1e-2,
        num_warmup_steps=10,
        train_batch_size=16,
        do_eval=True,
        max_eval_steps=4,
    )
    result = run_pretraining(PretrainingOptions(**flags), log=logs.append)
    return out, logs, result


def test_masked_lm_only_records_train_the_masked_lm_alone(trained):
    out, logs, result = trained
    assert any(
        "masked LM only, no next-sentence head (the records have no next-sentence labels)" in line for line in logs
    )
    losses = [loop["loss"] for loop in result.train.history]
    assert losses[-1] < losses[0] - 0.5  # from ln(65) = 4.2, the uniform guess
    # Evaluated at 40, 80 and 120 steps, MLM keys only; the loss is the MLM loss alone.
    assert [evaluation["step"] for evaluation in result.train.evaluations] == [40, 80, 120]
    keys = [line.split(" = ")[0] for line in (out / "eval_results.txt").read_text().splitlines()]
    assert keys == MLM_KEYS
    assert result.eval["loss"] == pytest.approx(result.eval["masked_lm_loss"], abs=1e-6)
    assert result.eval["masked_lm_accuracy"] > 0.1  # 1/65 by chance
    # The Google-named export: the MLM head, no NSP head.
    names = tf.train.load_checkpoint(str(out / "bert_model.ckpt")).get_variable_to_shape_map()
    assert "cls/predictions/output_bias" in names
    assert not [name for name in names if name.startswith("cls/seq_relationship")]


def test_the_masked_lm_loss_is_the_mean_cross_entropy_over_real_masks(setup, trained):
    """The evaluation's masked_lm_loss and accuracy against numpy, from the trained weights."""
    out, _, _ = trained
    config = BertConfig.from_json_file(setup["bert_config.json"])
    model = BertMaskedLM(BertEncoder.from_bert_config(config))
    initialize_from_checkpoint(model, str(out / "bert_model.ckpt"))
    rows = tfrecord_files.read_tfrecord(setup["mlm.tfrecord"], feature_specs.pretraining_spec(MAX_SEQ, MAX_PRED, False))
    rows = {name: value[:64] for name, value in rows.items()}
    inputs = {
        name: rows[name].astype(np.int32) for name in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")
    }
    logits = np.asarray(model(inputs, training=False)["masked_lm_logits"], np.float64)
    logits -= logits.max(-1, keepdims=True)
    log_probabilities = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    labels, weights = rows["masked_lm_ids"], rows["masked_lm_weights"]
    nll = -np.take_along_axis(log_probabilities, labels[..., None], -1)[..., 0]
    evaluation = run_pretraining(
        PretrainingOptions(
            **pretraining_flags(
                setup,
                str(out),
                input_file=setup["mlm.tfrecord"],
                do_train=False,
                do_eval=True,
                eval_batch_size=16,
                max_eval_steps=4,
            )
        ),
        log=lambda message: None,
    ).eval
    assert evaluation["masked_lm_loss"] == pytest.approx((nll * weights).sum() / weights.sum(), abs=1e-4)
    correct = (log_probabilities.argmax(-1) == labels) * weights
    assert evaluation["masked_lm_accuracy"] == pytest.approx(correct.sum() / weights.sum(), abs=1e-6)


def test_google_records_train_without_nsp_on_request_and_labelless_records_refuse_nsp(setup, tmp_path):
    logs = []
    flags = pretraining_flags(setup, str(tmp_path / "pairs"), next_sentence_prediction=False, do_eval=True)
    result = run_pretraining(PretrainingOptions(**flags), log=logs.append)
    assert any("as --nonext_sentence_prediction says" in line for line in logs)
    assert sorted(result.eval) == MLM_KEYS
    out = tmp_path / "refused"
    flags = pretraining_flags(setup, str(out), input_file=setup["mlm.tfrecord"], next_sentence_prediction=True)
    with pytest.raises(UsageError, match=r"mlm.tfrecord: masked-LM-only records \(no next_sentence_labels\) cannot"):
        run_pretraining(PretrainingOptions(**flags), log=lambda message: None)
    assert not out.exists()


def test_kill_9_then_resume_ends_where_an_uninterrupted_run_ends(setup, tmp_path):
    """Dynamic masking on masked-LM-only records, through the command line."""
    flags = pretraining_flags(
        setup,
        "",
        input_file=setup["mlm_dynamic.tfrecord"],
        num_train_steps=40,
        save_checkpoints_steps=5,
        iterations_per_loop=1,
    )
    env = subprocess_env(TF_CPP_MIN_LOG_LEVEL="2")
    straight = tmp_path / "straight"
    run = run_straight(RUNNER, flags, straight, env)
    assert "masking in tf.data (dynamic masking)" in run.stderr and "masked LM only" in run.stderr
    last, resume = kill_9_and_resume(RUNNER, flags, tmp_path / "killed", env)
    assert last is not None and not last.endswith("ckpt-40")
    assert resume.returncode == 0, resume.stderr[-3000:]
    assert f"at step {int(last.rsplit('-', 1)[1])}" in resume.stderr
    assert_same_checkpoints(straight / "bert_model.ckpt", tmp_path / "killed" / "bert_model.ckpt")


def test_loading_a_masked_lm_checkpoint_reports_what_it_holds(setup, trained, tmp_path):
    """A masked-LM-only checkpoint into each model: the MLM head comes along, an NSP head is
    initialised and said to be, and nothing the checkpoint lacks is called unused."""
    out, _, _ = trained
    config = BertConfig.from_json_file(setup["bert_config.json"])
    reference = tf.train.load_checkpoint(str(out / "bert_model.ckpt"))
    for checkpoint in (str(out), str(out / "bert_model.ckpt")):  # ours (object based) and Google's names
        pretrainer = BertPretrainer(BertEncoder.from_bert_config(config))
        report = initialize_from_checkpoint(pretrainer, checkpoint)
        assert report.initialized == ["next_sentence/kernel", "next_sentence/bias"]
        assert not [name for name in report.unused if "seq_relationship" in name]
        assert np.array_equal(
            pretrainer.masked_lm.output_bias.numpy(), reference.get_tensor("cls/predictions/output_bias")
        )
        classifier = BertClassifier(BertEncoder.from_bert_config(config), num_classes=2)
        report = initialize_from_checkpoint(classifier, checkpoint)
        assert report.initialized == ["classifier/kernel", "classifier/bias"]
        assert not [name for name in report.unused if not name.startswith("cls/predictions/")]
    # Continuing a masked-LM-only run (phase 2 style): every weight loaded, nothing initialised.
    logs = []
    flags = pretraining_flags(
        setup, str(tmp_path / "phase2"), input_file=setup["mlm.tfrecord"], init_checkpoint=str(out), num_train_steps=5
    )
    run_pretraining(PretrainingOptions(**flags), log=logs.append)
    (line,) = [line for line in logs if line.startswith("init_checkpoint")]
    assert "not in the checkpoint" not in line


def test_converts_to_transformers_and_keras_hub_masked_lm(setup, trained, tmp_path):
    out, _, _ = trained
    names = tf.train.load_checkpoint(str(out / "bert_model.ckpt")).get_variable_to_shape_map()
    assert model_type_of(names) == "masked_lm"
    hf = tmp_path / "hf"
    written = convert_checkpoint(
        ConvertOptions("google", "huggingface", str(out), str(hf), vocab_file=setup["vocab.txt"])
    )
    assert written == "masked_lm"
    assert json.loads((hf / "config.json").read_text())["architectures"] == ["BertForMaskedLM"]
    from keras_bert_impl.checkpoints.hf_weights import read_safetensors

    tensors = read_safetensors(str(hf / "model.safetensors"))
    assert "cls.predictions.bias" in tensors and not [name for name in tensors if "seq_relationship" in name]
    back = tmp_path / "back"
    assert convert_checkpoint(ConvertOptions("huggingface", "google", str(hf), str(back))) == "masked_lm"
    reference = tf.train.load_checkpoint(str(out / "bert_model.ckpt"))
    read = tf.train.load_checkpoint(str(back / "bert_model.ckpt"))
    for name in names:
        assert np.array_equal(read.get_tensor(name), reference.get_tensor(name)), name
    pytest.importorskip("keras_hub")
    preset = tmp_path / "preset"
    convert_checkpoint(ConvertOptions("google", "keras_hub", str(out), str(preset), vocab_file=setup["vocab.txt"]))
    assert json.loads((preset / "task.json").read_text())["class_name"] == "BertMaskedLM"
    assert (
        convert_checkpoint(ConvertOptions("keras_hub", "google", str(preset), str(tmp_path / "hub_back")))
        == "masked_lm"
    )


def test_doc_sentences_without_dropping_nsp_is_refused_in_one_line(setup, tmp_path):
    out = tmp_path / "x.tfrecord"
    run = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO_ROOT, "tfrecord_tools", "create_pretraining_data.py"),
            f"--input_file={setup['corpus.txt']}",
            f"--output_file={out}",
            f"--vocab_file={setup['vocab.txt']}",
            "--doc_sentences",
        ],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=120,
    )
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert (
        "--doc_sentences is an input format for masked-LM-only records; add --nonext_sentence_prediction" in run.stderr
    )
    assert not out.exists()
