"""--keep_best_checkpoint and --early_stopping_patience: the best evaluation's weights are kept and
used, the patience counts across a resume, and a run stops when it runs out."""

import json

import keras
import numpy as np
import pytest

from keras_bert_common.errors import UsageError
from keras_bert_impl.training.best_checkpoint import BestCheckpoint
from tests.finetuning_fixtures import _mrpc, _options, model_dir  # noqa: F401 -- model_dir: a fixture


def _model(value):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="dense")])
    model.set_weights([np.full((2, 1), value, np.float32), np.zeros(1, np.float32)])
    return model


def test_best_is_kept_counted_across_a_resume_and_stops(tmp_path):
    best = BestCheckpoint(str(tmp_path), "eval_accuracy", patience=2)
    assert best.update(_model(1.0), {"eval_accuracy": 0.5}, 2)
    assert best.update(_model(2.0), {"eval_accuracy": 0.6}, 4)
    assert not best.update(_model(3.0), {"eval_accuracy": 0.6}, 6)  # equal is no improvement
    assert (best.best_step, best.best_value, best.should_stop) == (4, 0.6, False)
    # A run killed after step 6 resumes from an earlier checkpoint and repeats the evaluation of step 6.
    resumed = BestCheckpoint(str(tmp_path), "eval_accuracy", patience=2)
    assert not resumed.update(_model(3.0), {"eval_accuracy": 0.6}, 6)
    assert not resumed.should_stop  # step 6 counted once
    assert not resumed.update(_model(4.0), {"eval_accuracy": 0.1}, 8)
    assert resumed.should_stop
    restored = _model(0.0)
    assert resumed.restore(restored).endswith("ckpt-4")
    np.testing.assert_array_equal(restored.get_weights()[0], np.full((2, 1), 2.0))
    state = json.loads((tmp_path / "best" / "best.json").read_text())
    assert state["best_step"] == 4 and state["since_best"] == 2
    # A loss: lower wins.
    loss = BestCheckpoint(str(tmp_path / "loss"), "eval_loss")
    loss.update(_model(1.0), {"eval_loss": 0.7}, 1)
    assert loss.update(_model(1.0), {"eval_loss": 0.6}, 2) and not loss.update(_model(1.0), {"eval_loss": 0.65}, 3)
    with pytest.raises(UsageError, match="eval_f1: the evaluation has no such metric; use one of eval_accuracy"):
        BestCheckpoint(str(tmp_path / "x"), "eval_f1").update(_model(1.0), {"eval_accuracy": 0.5, "step": 1}, 1)


def _weights_of(checkpoint, model_dir):
    """The classifier weights `checkpoint` restores (by object graph: the Trainer's checkpoints
    reach the weights through the optimizer first, so names differ from a model-only one)."""
    import tensorflow as tf

    from keras_bert_impl.models.bert_config import BertConfig
    from keras_bert_impl.tasks.classification import ClassificationTask

    config = BertConfig.from_json_file(str(model_dir / "bert_config.json"))
    model = ClassificationTask(config, 16, label_names=["0", "1"]).build_model()
    tf.train.Checkpoint(model=model).restore(checkpoint).expect_partial()
    return [weight.numpy() for weight in model.weights]


def test_classifier_keeps_the_best_checkpoint_and_predicts_with_it(model_dir, tmp_path):  # noqa: F811
    from keras_bert_impl.runners.run_classifier import run_classifier
    from tfrecord_tools.classification_data import ClassificationProcessor

    data = _mrpc(tmp_path)
    out = tmp_path / "out"
    logs = []
    options = _options(
        model_dir, out, do_train=True, do_eval=True, do_predict=True, num_train_epochs=3.0, learning_rate=5e-3,
        eval_every_n_steps=4, save_checkpoints_steps=4, iterations_per_loop=4, keep_best_checkpoint="eval_loss",
    )  # fmt: skip
    processor = ClassificationProcessor.for_task("MRPC", str(data))
    result = run_classifier(options, "MRPC", str(data), processor, logs.append)
    evaluations = result.train.evaluations
    assert [e["step"] for e in evaluations] == [4, 8, 12, 16, 18]  # all five checkpoints kept
    losses = [e["eval_loss"] for e in evaluations]
    best_step = evaluations[int(np.argmin(losses))]["step"]
    state = json.loads((out / "best" / "best.json").read_text())
    assert state["best_step"] == best_step and state["best_value"] == pytest.approx(min(losses))
    # The kept weights are those of that step's regular checkpoint.
    kept = _weights_of(str(out / "best" / f"ckpt-{best_step}"), model_dir)
    regular = _weights_of(str(out / f"ckpt-{best_step}"), model_dir)
    last = _weights_of(str(out / "ckpt-18"), model_dir)
    assert best_step == 18 or not all(np.array_equal(a, b) for a, b in zip(kept, last))
    for a, b in zip(kept, regular):
        np.testing.assert_array_equal(a, b)
    # The final evaluation is the best model's, and says its step, as Google's global_step does.
    assert result.eval["eval_loss"] == pytest.approx(min(losses), abs=1e-6)
    assert f"global_step = {best_step}\n" in (out / "eval_results.txt").read_text()
    # TensorBoard too: the best model's final evaluation is drawn at its step, and step 18 holds
    # only step 18's own evaluation.
    import os

    import tensorflow as tf

    points = [
        (event.step, float(tf.make_ndarray(value.tensor)))
        for name in sorted(os.listdir(out / "eval"))
        for event in tf.compat.v1.train.summary_iterator(str(out / "eval" / name))
        for value in event.summary.value
        if value.tag == "eval_loss"
    ]
    assert [value for step, value in points if step == 18] == pytest.approx([losses[-1]], abs=1e-6)
    assert points[-1] == (best_step, pytest.approx(min(losses), abs=1e-6))
    predicted = (out / "test_results.tsv").read_text()
    # Without --do_train, the runner restores the best checkpoint, not the newest.
    again = _options(model_dir, out, do_eval=True, do_predict=True, keep_best_checkpoint="eval_loss")
    rerun = run_classifier(again, "MRPC", str(out), log=logs.append)
    assert rerun.eval["eval_loss"] == pytest.approx(min(losses), abs=1e-6)
    assert (out / "test_results.tsv").read_text() == predicted
    assert any("restored the best checkpoint" in line for line in logs)
    assert rerun.eval["global_step"] == best_step


def test_early_stopping_ends_training_after_the_patience(model_dir, tmp_path):  # noqa: F811
    """With a zero learning rate the dev loss never improves on the first evaluation: patience 2
    stops the run at the third evaluation, long before the 24 steps."""
    from keras_bert_impl.runners.run_classifier import run_classifier
    from tfrecord_tools.classification_data import ClassificationProcessor

    data = _mrpc(tmp_path)
    out = tmp_path / "out"
    logs = []
    options = _options(
        model_dir, out, do_train=True, do_eval=True, num_train_epochs=4.0, learning_rate=0.0,
        eval_every_n_steps=2, iterations_per_loop=2, keep_best_checkpoint="eval_loss", early_stopping_patience=2,
    )  # fmt: skip
    processor = ClassificationProcessor.for_task("MRPC", str(data))
    result = run_classifier(options, "MRPC", str(data), processor, logs.append)
    assert result.train.stopped_early and result.train.final_step == 6
    assert [e["step"] for e in result.train.evaluations] == [2, 4, 6]
    assert any(line.startswith("early stopping at step 6: eval_loss has not improved for 2") for line in logs)


def test_best_checkpoint_flags_are_checked_first(model_dir, tmp_path):  # noqa: F811
    from keras_bert_impl.runners.finetuning import FineTuningRun

    for overrides, message in (
        ({"early_stopping_patience": 2}, "--early_stopping_patience needs --keep_best_checkpoint=METRIC"),
        ({"keep_best_checkpoint": "eval_accuracy"}, "needs --eval_every_n_steps"),
        ({"keep_best_checkpoint": "eval_accuracy", "early_stopping_patience": 0}, "must be at least 1"),
    ):
        with pytest.raises(UsageError, match=message):
            FineTuningRun(_options(model_dir, tmp_path / "out", do_train=True, do_eval=True, **overrides))
    assert not (tmp_path / "out").exists()


def test_squad_evaluates_during_training_and_keeps_the_best_f1(model_dir, tmp_path):  # noqa: F811
    from keras_bert_impl.runners.run_squad import SquadOptions, run_squad, squad_metric_names
    from tests.finetuning_fixtures import _squad_file

    path = _squad_file(tmp_path)
    out = tmp_path / "squad"
    options = _options(
        model_dir, out, max_seq_length=24, do_train=True, do_predict=True, num_train_epochs=8.0, train_batch_size=3,
        learning_rate=3e-3, eval_every_n_steps=2, iterations_per_loop=2, keep_best_checkpoint="f1",
        options_class=SquadOptions, train_file=str(path), predict_file=str(path), version_2_with_negative=True,
        doc_stride=8, max_query_length=8, n_best_size=5, max_answer_length=6,
    )  # fmt: skip
    result = run_squad(options)
    evaluations = result.train.evaluations
    assert [e["step"] for e in evaluations] == [2, 4, 6, 8]
    f1s = [e["f1"] for e in evaluations]
    assert set(evaluations[0]) - {"step"} <= set(squad_metric_names(True))  # what the flag was checked against
    state = json.loads((out / "best" / "best.json").read_text())
    assert state["best_value"] == pytest.approx(max(f1s))
    assert state["best_step"] == evaluations[f1s.index(max(f1s))]["step"]
    # predictions.json and eval_results.json come from the best model.
    assert result.eval["f1"] == pytest.approx(max(f1s))
    assert json.loads((out / "eval_results.json").read_text())["f1"] == pytest.approx(max(f1s))


def _task_cases():
    from keras_bert_impl.tasks.classification import ClassificationTask, RegressionTask
    from keras_bert_impl.tasks.multiple_choice import MultipleChoiceTask
    from keras_bert_impl.tasks.tagging import TaggingTask
    from tests.conftest import tiny_bert_config

    config, rng, n = tiny_bert_config(99), np.random.default_rng(0), 11
    for name in ("CoLA", "MRPC", "QQP", "SST-2", "MNLI", "XNLI", "my_task"):
        task = ClassificationTask(config, 7, label_names=["a", "b", "c"], task_name=name)
        yield name, task, {"logits": rng.normal(size=(n, 3))}, {"label_ids": rng.integers(0, 3, (n, 1))}
    yield (
        "STS-B",
        RegressionTask(config, 7),
        {"logits": rng.normal(size=(n, 1))},
        {"label_ids": rng.normal(size=(n, 1))},
    )
    yield (
        "SWAG",
        MultipleChoiceTask(config, 7, num_choices=4),
        {"logits": rng.normal(size=(n, 4))},
        {"label_ids": rng.integers(0, 4, (n, 1))},
    )
    features = {"label_ids": rng.integers(0, 3, (n, 7)), "label_weights": rng.integers(0, 2, (n, 7)).astype(float)}
    yield "NER", TaggingTask(config, 7, label_names=["O", "B", "I"]), {"logits": rng.normal(size=(n, 7, 3))}, features


def test_each_task_declares_the_metric_names_it_evaluates():
    """`eval_metric_names()` (what --keep_best_checkpoint is checked against before training) is
    exactly the keys of `evaluate` on random outputs, for every task kind and GLUE task."""
    for name, task, outputs, features in _task_cases():
        assert set(task.eval_metric_names()) == set(task.evaluate(outputs, features)), name


def test_squad_declares_its_metric_names():
    from keras_bert_impl.evaluation.squad_eval import evaluate_v1, evaluate_v2
    from keras_bert_impl.runners.run_squad import squad_metric_names

    qas = [
        {"id": "q1", "question": "where ?", "answers": [{"text": "mat", "answer_start": 19}]},
        {"id": "q2", "question": "who ?", "answers": []},
    ]
    dataset = [{"paragraphs": [{"context": "the cat sat on the mat", "qas": qas}]}]
    predictions, odds = {"q1": "the mat", "q2": ""}, {"q1": -1.0, "q2": 2.0}
    v1_dataset = [{"paragraphs": [{"context": "the cat sat on the mat", "qas": qas[:1]}]}]
    assert set(evaluate_v1(v1_dataset, {"q1": "mat"})) == set(squad_metric_names(False))
    v2 = evaluate_v2(dataset, predictions, odds)
    assert set(v2) <= set(squad_metric_names(True)) and "f1" in v2 and "NoAns_f1" in v2 and "best_f1" in v2


def test_a_metric_the_evaluation_never_reports_is_refused_before_training(model_dir, tmp_path):  # noqa: F811
    """--keep_best_checkpoint=eval_acc (a typo) fails before any record is written or any step runs."""
    from keras_bert_impl.runners.run_classifier import run_classifier
    from tfrecord_tools.classification_data import ClassificationProcessor

    data = _mrpc(tmp_path)
    out = tmp_path / "out"
    options = _options(
        model_dir, out, do_train=True, do_eval=True, eval_every_n_steps=2, keep_best_checkpoint="eval_acc"
    )
    processor = ClassificationProcessor.for_task("MRPC", str(data))
    with pytest.raises(
        UsageError,
        match="eval_acc: the evaluation has no such metric; use one of eval_loss, loss, eval_accuracy, eval_f1",
    ):
        run_classifier(options, "MRPC", str(data), processor)
    assert not list(out.rglob("*.tfrecord")) and not list(out.rglob("ckpt-*"))
