"""The Task contract: a task defined here, in the test file alone, trains and evaluates through the
Trainer and a runner-style call with no library change; and the runners read the data directories
create_finetuning_data writes, with no TSV present."""

import dataclasses
import importlib.util
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from keras_bert_impl.models.bert_classifier import BertClassifier
from keras_bert_impl.runners.finetuning import FineTuningOptions, FineTuningRun, run_finetuning
from keras_bert_impl.tasks.base import Task
from tests.conftest import REPO_ROOT
from tests.finetuning_fixtures import _mrpc, _options, model_dir  # noqa: F401 -- model_dir: a fixture
from tfrecord_tools import feature_specs, tfrecord_files
from tfrecord_tools.classification_data import ClassificationProcessor
from tfrecord_tools.finetuning_data import FineTuningData, write_classification_data


class PairScoreTask(Task):
    """A sentence-pair regression scored by absolute error (not the library's squared error), with
    its own metrics: mean absolute error and the share of predictions within 0.25."""

    name = "pair_score"
    loss_terms = {"absolute_error": "examples"}
    metric_terms = {"within_quarter": "examples"}

    def feature_spec(self, is_training=True):
        return feature_specs.classification_spec(self.max_seq_length, is_regression=True)

    def build_model(self, encoder=None):
        return BertClassifier(self.new_encoder(encoder), num_classes=1)

    def numerators(self, model, features, training):
        predicted = ops.reshape(
            ops.cast(model(self.model_inputs(features), training=training)["logits"], "float32"), (-1,)
        )
        error = ops.abs(predicted - ops.reshape(features["label_ids"], (-1,)))
        return {"absolute_error": ops.sum(error), "within_quarter": ops.sum(ops.cast(error <= 0.25, "float32"))}

    def evaluate(self, outputs, features):
        error = np.abs(outputs["logits"][:, 0] - features["label_ids"][:, 0])
        return {"eval_mae": float(error.mean()), "eval_within_quarter": float(np.mean(error <= 0.25))}


def _pair_tsv(tmp_path):
    """Score = how many of the two texts say "good" (0, 0.5 or 1): learnable from the words."""
    rng = np.random.default_rng(1)
    rows = []
    for _ in range(48):
        a, b = rng.choice(["good", "bad"]), rng.choice(["good", "bad"])
        rows.append(f"the movie was {a}\tthe film is {b}\t{((a == 'good') + (b == 'good')) / 2}")
    data = tmp_path / "pairs"
    data.mkdir()
    (data / "train.tsv").write_text("a\tb\tscore\n" + "\n".join(rows) + "\n")
    (data / "dev.tsv").write_text("a\tb\tscore\n" + "\n".join(rows[:12]) + "\n")
    return data


def test_a_task_defined_here_trains_and_evaluates_with_no_library_change(model_dir, tmp_path):
    out = tmp_path / "out"
    options = _options(
        model_dir,
        out,
        do_train=True,
        do_eval=True,
        num_train_epochs=20.0,
        learning_rate=5e-3,
        train_batch_size=8,
        iterations_per_loop=20,
        eval_every_n_steps=40,
    )
    run = FineTuningRun(options, log=lambda message: None)
    processor = ClassificationProcessor.generic(str(_pair_tsv(tmp_path)), 0, 1, 2, is_regression=True)
    write_classification_data(processor, "pair-score", ["train", "dev"], run.tokenizer, 16, str(tmp_path / "data"))
    data = FineTuningData.open(str(tmp_path / "data"))
    task = PairScoreTask(run.config, 16)

    result = run_finetuning(run, task, data)

    history = result.train.history
    assert result.train.final_step == 120 and [loop["step"] for loop in history] == [20, 40, 60, 80, 100, 120]
    assert history[-1]["absolute_error"] < 0.5 * history[0]["absolute_error"]  # the task's own loss fell
    assert [evaluation["step"] for evaluation in result.train.evaluations] == [40, 80, 120]
    assert os.listdir(out / "eval")  # evaluation during training went to TensorBoard
    lines = dict(line.split(" = ") for line in (out / "eval_results.txt").read_text().splitlines())
    assert sorted(lines) == ["eval_mae", "eval_within_quarter", "global_step"]

    # Independently: the trained weights from the checkpoint, predictions in numpy.
    model = task.build_model()
    tf.train.Checkpoint(model=model).restore(tf.train.latest_checkpoint(str(out))).expect_partial()
    features = tfrecord_files.read_tfrecord(data.path("dev"), task.feature_spec())
    inputs = {name: features[name] for name in ("input_ids", "input_mask", "segment_ids")}
    error = np.abs(np.asarray(model(inputs, training=False)["logits"])[:, 0] - features["label_ids"][:, 0])
    assert float(lines["eval_mae"]) == pytest.approx(error.mean(), abs=1e-5)
    assert float(lines["eval_within_quarter"]) == pytest.approx(np.mean(error <= 0.25))
    # The Trainer's own evaluation of the loss term (tf.data, summed over replicas) agrees.
    dataset = tf.data.TFRecordDataset(data.path("dev")).batch(3).map(feature_specs.parse_fn(task.feature_spec()))
    assert run.trainer.evaluate(dataset)["absolute_error"] == pytest.approx(error.mean(), abs=1e-5)


def test_run_classifier_reads_create_finetuning_data_output_without_tsv(model_dir, tmp_path):
    from keras_bert_impl.runners.run_classifier import run_classifier

    raw = _mrpc(tmp_path)
    made = tmp_path / "mrpc_records"
    tool = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO_ROOT, "tfrecord_tools", "create_finetuning_data.py"),
            "--task_name=MRPC",
            f"--data_dir={raw}",
            f"--vocab_file={model_dir}/vocab.txt",
            "--max_seq_length=16",
            f"--output_dir={made}",
            "--splits=train,dev,test",
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
        timeout=300,
    )
    assert tool.returncode == 0, tool.stderr[-2000:]
    assert sorted(os.listdir(made)) == ["dev.tfrecord", "meta.json", "test.tfrecord", "train.tfrecord"]

    flags = dict(do_train=True, do_eval=True, do_predict=True, num_train_epochs=3.0, learning_rate=1e-2)
    from_tsv = run_classifier(
        _options(model_dir, tmp_path / "from_tsv", **flags),
        "MRPC",
        str(raw),
        ClassificationProcessor.for_task("MRPC", str(raw)),
    )
    shutil.rmtree(raw)  # no TSV from here on
    from_records = run_classifier(_options(model_dir, tmp_path / "from_records", **flags), "MRPC", str(made))
    # The same features, seed and steps: the same training and the same results.
    assert from_records.eval == from_tsv.eval
    assert (tmp_path / "from_records" / "test_results.tsv").read_text() == (
        tmp_path / "from_tsv" / "test_results.tsv"
    ).read_text()
    # Data made for another length is refused before training, naming the fix.
    with pytest.raises(
        ValueError, match="features are 16 tokens long but --max_seq_length=24; pass --max_seq_length=16"
    ):
        run_classifier(_options(model_dir, tmp_path / "wrong", max_seq_length=24, **flags), "MRPC", str(made))


def test_options_are_one_base_shared_by_pretraining_and_fine_tuning():
    from keras_bert_impl.runners.run_pretraining import PretrainingOptions
    from keras_bert_impl.training.run_setup import RunOptions

    def names(options_class):
        return {field.name for field in dataclasses.fields(options_class)}

    shared = names(RunOptions)
    assert issubclass(PretrainingOptions, RunOptions) and issubclass(FineTuningOptions, RunOptions)
    own = (names(PretrainingOptions) - shared) & (names(FineTuningOptions) - shared)
    assert not own  # nothing both declare twice


def test_a_misspelled_task_option_is_an_error():
    from keras_bert_impl.tasks.registry import create_task
    from tests.conftest import tiny_bert_config

    config = tiny_bert_config(99)
    assert create_task("classifier", config, 7, label_names=["a", "b"], num_choices=3).label_names == ["a", "b"]
    with pytest.raises(TypeError, match="no task takes label_name; the options are"):
        create_task("classifier", config, 7, label_name=["a", "b"])


def test_a_task_declared_here_exports_and_converts(tmp_path, monkeypatch):
    """A new kind, declared and registered in this file alone: export_saved_model serves it and
    convert_checkpoint writes it for transformers and keras-hub, with no other change."""
    import json

    from keras_bert_impl.checkpoints.google_checkpoint import save_google_checkpoint
    from keras_bert_impl.runners.convert_checkpoint import ConvertOptions, convert_checkpoint
    from keras_bert_impl.serving.export import ExportOptions, build_and_export
    from keras_bert_impl.tasks import registry
    from keras_bert_impl.tasks.classification import ClassificationTask
    from tests.conftest import tiny_bert_config
    from tests.finetuning_fixtures import VOCAB

    class StanceTask(ClassificationTask):
        """Agree / disagree / unrelated, as its own --model_type."""

        name = "stance"

    monkeypatch.setitem(registry.TASKS, StanceTask.name, StanceTask)
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    config = tiny_bert_config(len(VOCAB))
    config.to_json_file(str(tmp_path / "bert_config.json"))
    labels = ["agree", "disagree", "unrelated"]
    model = registry.create_task("stance", config, 16, label_names=labels).build_model()
    (tmp_path / "google").mkdir()
    save_google_checkpoint(model, str(tmp_path / "google" / "bert_model.ckpt"))
    shutil.copy(tmp_path / "bert_config.json", tmp_path / "google")
    shutil.copy(tmp_path / "vocab.txt", tmp_path / "google")
    options = ExportOptions(
        bert_config_file=str(tmp_path / "bert_config.json"),
        vocab_file=str(tmp_path / "vocab.txt"),
        init_checkpoint=str(tmp_path / "google" / "bert_model.ckpt"),
        model_type="stance",
        export_dir=str(tmp_path / "saved"),
        label_names=labels,
        max_seq_length=16,
    )
    build_and_export(options, log=lambda _: None)
    served = tf.saved_model.load(str(tmp_path / "saved")).signatures["serving_default"]
    outputs = served(text_a=tf.constant(["the movie"]), text_b=tf.constant(["the film"]))
    assert outputs["logits"].shape == (1, 3) and outputs["labels"].numpy()[0].decode() in labels
    written = convert_checkpoint(
        ConvertOptions("google", "huggingface", str(tmp_path / "google"), str(tmp_path / "hf"), model_type="stance"),
        log=lambda _: None,
    )
    hf_config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert written == "stance" and hf_config["architectures"] == ["BertForSequenceClassification"]
    assert hf_config["id2label"] == {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}
    if importlib.util.find_spec("keras_hub") is None:
        return
    import keras_hub

    convert_checkpoint(
        ConvertOptions("google", "keras_hub", str(tmp_path / "google"), str(tmp_path / "hub"), model_type="stance"),
        log=lambda _: None,
    )
    hub = keras_hub.models.BertTextClassifier.from_preset(str(tmp_path / "hub"), preprocessor=None)
    ids = np.array([[2, 7, 9, 3]], np.int32)
    ones, zeros = np.ones_like(ids), np.zeros_like(ids)
    ours = model({"input_ids": ids, "input_mask": ones, "segment_ids": zeros})["logits"]
    theirs = hub({"token_ids": ids, "padding_mask": ones, "segment_ids": zeros})
    np.testing.assert_allclose(np.asarray(theirs), np.asarray(ours), atol=1e-5)
