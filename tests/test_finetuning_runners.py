"""The fine-tuning runners end to end on tiny data written here: files, keys and formats."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from keras_bert_impl.models.bert_encoder import BertEncoder
from tests.conftest import REPO_ROOT
from tests.finetuning_fixtures import (  # noqa: F401 -- model_dir: a fixture
    VOCAB,
    _conll,
    _mrpc,
    _options,
    _squad_file,
    _swag,
    classifier_command,
    model_dir,
)


def test_run_classifier_files_and_keys(model_dir, tmp_path):
    from keras_bert_impl.runners.run_classifier import run_classifier
    from tfrecord_tools.classification_data import ClassificationProcessor

    data = _mrpc(tmp_path)
    out = tmp_path / "out"
    logs = []
    run = run_classifier(
        _options(
            model_dir, out, do_train=True, do_eval=True, do_predict=True, num_train_epochs=30.0, learning_rate=1e-3
        ),
        "MRPC",
        str(data),
        ClassificationProcessor.for_task("MRPC", str(data)),
        log=logs.append,
    )
    results = run.eval
    # 30 epochs at lr 1e-3: learnt from every random start tried (10 at lr 1e-2: from 3 of 8).
    assert run.train.final_step == 180 and len(run.train.history) == 18  # iterations_per_loop 10
    keys = [line.split(" = ")[0] for line in (out / "eval_results.txt").read_text().splitlines()]
    assert keys == ["eval_accuracy", "eval_f1", "eval_loss", "global_step", "loss"]
    assert results["global_step"] == 180 and results["eval_accuracy"] >= 0.8  # an easy, learnable task
    rows = [[float(x) for x in line.split("\t")] for line in (out / "test_results.tsv").read_text().splitlines()]
    assert len(rows) == 4 and all(len(row) == 2 and abs(sum(row) - 1) < 1e-5 for row in rows)
    assert any("loaded 39 weights" in line and "classifier/kernel" in line for line in logs)
    assert os.listdir(out / "train")  # TensorBoard summaries
    # The eval results go to TensorBoard too, at the step they were computed at.
    import tensorflow as tf

    events = [os.path.join(out / "eval", name) for name in os.listdir(out / "eval")]
    scalars = {
        (value.tag, event.step): float(tf.make_ndarray(value.tensor))
        for path in events
        for event in tf.compat.v1.train.summary_iterator(path)
        for value in event.summary.value
    }
    assert scalars[("eval_accuracy", 180)] == pytest.approx(results["eval_accuracy"])
    assert scalars[("eval_f1", 180)] == pytest.approx(results["eval_f1"])


def test_runner_checks_vocab_size_and_casing(model_dir, tmp_path):
    from keras_bert_impl.runners.run_classifier import run_classifier
    from tfrecord_tools.classification_data import ClassificationProcessor

    (tmp_path / "short_vocab.txt").write_text("\n".join(VOCAB[:-1]) + "\n")
    processor = ClassificationProcessor.for_task("MRPC", str(_mrpc(tmp_path)))
    with pytest.raises(ValueError, match="short_vocab.txt: has 33 tokens but .* says vocab_size=34"):
        run_classifier(
            _options(model_dir, tmp_path / "o", vocab_file=str(tmp_path / "short_vocab.txt"), do_train=True),
            "MRPC",
            processor.data_dir,
            processor,
        )
    with pytest.raises(ValueError, match="pass --do_lower_case=True"):
        run_classifier(
            _options(
                model_dir,
                tmp_path / "o",
                do_lower_case=False,
                do_train=True,
                init_checkpoint="/m/uncased_L-12_H-768_A-12/bert_model.ckpt",
            ),
            "MRPC",
            processor.data_dir,
            processor,
        )


def test_run_classifier_command_line(model_dir, tmp_path):
    data = _mrpc(tmp_path)
    args = [
        sys.executable,
        *classifier_command(model_dir, data),
        f"--output_dir={tmp_path}/cli",
        "--do_eval",
        "--max_seq_length=16",
        "--eval_batch_size=5",
        f"--init_checkpoint={model_dir}/bert_model.ckpt",
        "--allow_random_weights",  # the checkpoint holds no classifier head
    ]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    run = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / "cli" / "eval_results.txt").exists()
    bad = subprocess.run(
        args[:4] + [f"--vocab_file={tmp_path}/missing.txt"] + args[5:],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert bad.returncode != 0 and "missing.txt: no such file" in bad.stderr.splitlines()[-1]


def test_run_squad_v2_outputs_and_evaluation(model_dir, tmp_path):
    from keras_bert_impl.runners.run_squad import SquadOptions, run_squad

    path = _squad_file(tmp_path)
    out = tmp_path / "squad_out"
    options = _options(
        model_dir,
        out,
        max_seq_length=24,
        do_train=True,
        do_predict=True,
        num_train_epochs=30.0,
        train_batch_size=3,
        learning_rate=3e-3,
        options_class=SquadOptions,
        train_file=str(path),
        predict_file=str(path),
        version_2_with_negative=True,
        doc_stride=8,
        max_query_length=8,
        n_best_size=5,
        max_answer_length=6,
    )
    evaluation = run_squad(options).eval
    predictions = json.loads((out / "predictions.json").read_text())
    nbest = json.loads((out / "nbest_predictions.json").read_text())
    null_odds = json.loads((out / "null_odds.json").read_text())
    assert set(predictions) == set(nbest) == set(null_odds) == {"q1", "q2", "q3"}
    assert all(set(entry) == {"text", "probability", "start_logit", "end_logit"} for entry in nbest["q1"])
    assert abs(sum(entry["probability"] for entry in nbest["q1"]) - 1) < 1e-6
    assert list(evaluation)[:3] == ["exact", "f1", "total"] and "best_f1_thresh" in evaluation
    assert json.loads((out / "eval_results.json").read_text()) == pytest.approx(evaluation)
    assert evaluation["f1"] > 50  # three memorised questions
    # The threshold sweep over every question's best non-null answer, by Model Garden's copy of
    # the official script.
    from official.nlp.tools import squad_evaluate_v2_0 as official

    answers = {qid: next((e["text"] for e in entries if e["text"]), "") for qid, entries in nbest.items()}
    want = official.evaluate(json.loads(path.read_text())["data"], answers, null_odds)
    assert evaluation["any_threshold_best_f1"] == pytest.approx(want["final_f1"])
    assert evaluation["any_threshold_best_f1_thresh"] == pytest.approx(want["final_f1_thresh"])
    spans = official.evaluate(json.loads(path.read_text())["data"], answers)
    assert evaluation["best_non_null_HasAns_f1"] == pytest.approx(spans["HasAns_f1"])


def test_postprocessing_matches_model_garden_and_survives_all_null(tmp_path):
    from official.nlp.data import squad_lib
    from official.nlp.tools import tokenization as google

    from keras_bert_impl.evaluation.squad_postprocess import NO_CANDIDATE_NULL_ODDS, compute_predictions
    from tfrecord_tools.squad_data import convert_examples_to_features, read_squad_examples
    from tfrecord_tools.tokenization import FullTokenizer

    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    path = _squad_file(tmp_path)
    tokenizer = FullTokenizer(str(tmp_path / "vocab.txt"))
    examples, _ = read_squad_examples(str(path), False, True)
    features = convert_examples_to_features(examples, tokenizer, 24, 8, 8, False)
    rng = np.random.default_rng(3)
    logits = {f.unique_id: (rng.normal(size=24).tolist(), rng.normal(size=24).tolist()) for f in features}

    def split(texts):
        return [
            tokenizer.text_tokenizer.split_words(np.array([t.encode() for t in [text]])).to_list()[0] for text in texts
        ]

    words = lambda texts: [[w.decode() for w in row] for row in (split(texts))]  # noqa: E731
    predictions, nbest, odds = compute_predictions(examples, features, logits, words, 5, 6, True, 0.0)

    google_examples = squad_lib.read_squad_examples(str(path), is_training=False, version_2_with_negative=True)
    google_tokenizer = google.FullTokenizer(str(tmp_path / "vocab.txt"))
    google_features = []
    squad_lib.convert_examples_to_features(
        google_examples,
        google_tokenizer,
        24,
        8,
        8,
        False,
        lambda f, is_padding=False: google_features.append(f),
        batch_size=1,
    )
    import collections

    RawResult = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])
    results = [RawResult(unique_id=u, start_logits=s, end_logits=e) for u, (s, e) in logits.items()]
    want_predictions, want_nbest, want_odds = squad_lib.postprocess_output(
        google_examples, google_features, results, 5, 6, True, version_2_with_negative=True
    )
    assert predictions == want_predictions
    assert odds == pytest.approx(dict(want_odds))
    assert [e["text"] for e in nbest["q1"]] == [e["text"] for e in want_nbest["q1"]]

    # Every window's best span is the null one and no other span is allowed: no crash, null answer.
    only_null = {u: ([10.0] + [-10.0] * 23, [10.0] + [-10.0] * 23) for u in logits}
    predictions, nbest, odds = compute_predictions(examples, features, only_null, words, 5, 0, True, 0.0)
    assert predictions == {"q1": "", "q2": "", "q3": ""} and set(odds.values()) == {NO_CANDIDATE_NULL_ODDS}


def test_run_ner_writes_conlleval_scores(model_dir, tmp_path):
    from keras_bert_impl.runners.run_ner import NerOptions, run_ner

    out = tmp_path / "ner"
    options = _options(
        model_dir, out, NerOptions, data_dir=str(_conll(tmp_path)), do_train=True, do_eval=True, num_train_epochs=40.0
    )
    results = run_ner(options).eval
    keys = [line.split(" = ")[0] for line in (out / "eval_results.txt").read_text().splitlines()]
    assert keys == ["eval_f1", "eval_precision", "eval_recall", "global_step"]
    assert results["eval_f1"] > 0.9  # memorised
    lines = (out / "dev_predictions.txt").read_text().split("\n")
    assert lines[0].split() == ["eu", "I-ORG", lines[0].split()[2]]


def test_run_swag_accuracy(model_dir, tmp_path):
    from keras_bert_impl.runners.run_swag import run_swag

    data = _swag(tmp_path)
    out = tmp_path / "swag_out"
    results = run_swag(
        _options(
            model_dir, out, do_train=True, do_eval=True, num_train_epochs=30.0, max_seq_length=12, learning_rate=1e-2
        ),
        str(data),
    ).eval
    assert (out / "eval_results.txt").read_text().startswith("eval_accuracy = ")
    assert results["eval_accuracy"] == 1.0


def test_extract_features_google_format(model_dir, tmp_path):
    (tmp_path / "input.txt").write_text("the cat sat ||| on the mat\nthe dog\n")
    out = tmp_path / "features.jsonl"
    run = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO_ROOT, "extract_features.py"),
            f"--input_file={tmp_path}/input.txt",
            f"--output_file={out}",
            f"--vocab_file={model_dir}/vocab.txt",
            f"--bert_config_file={model_dir}/bert_config.json",
            f"--init_checkpoint={model_dir}/bert_model.ckpt",
            "--layers=-1,-2",
            "--max_seq_length=16",
            "--batch_size=1",
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["linex_index"] for r in records] == [0, 1]
    assert [f["token"] for f in records[0]["features"]] == [
        "[CLS]",
        "the",
        "cat",
        "sat",
        "[SEP]",
        "on",
        "the",
        "mat",
        "[SEP]",
    ]
    first = records[1]["features"][1]
    assert list(first) == ["token", "layers"] and [layer["index"] for layer in first["layers"]] == [-1, -2]
    assert len(first["layers"][0]["values"]) == 32
    assert all(v == round(v, 6) for v in first["layers"][0]["values"])
    # The values are the encoder's: recompute layer -1 of "the dog" in-process.
    from keras_bert_impl.checkpoints.google_checkpoint import load_google_checkpoint

    encoder = BertEncoder.from_bert_config(str(model_dir / "bert_config.json"))
    load_google_checkpoint(encoder, str(model_dir / "bert_model.ckpt"))
    ids = np.array([[2, VOCAB.index("the"), VOCAB.index("dog"), 3]], np.int32)
    outputs = encoder({"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)})
    assert (
        np.abs(np.asarray(outputs["encoder_outputs"][-1])[0, 1] - np.array(first["layers"][0]["values"])).max() < 1e-5
    )


def test_run_classifier_rerun_after_export(model_dir, tmp_path):
    """The same command run again after an export (finished, or Ctrl-C in the final evaluation,
    which leaves the export and no eval_results.txt) finds its own export and goes on; another
    run's export dir is still refused with one line."""
    from keras_bert_impl.runners.run_classifier import run_classifier
    from tfrecord_tools.classification_data import ClassificationProcessor

    data = _mrpc(tmp_path)
    out, export = tmp_path / "out", tmp_path / "export"
    options = dict(do_train=True, do_eval=True, num_train_epochs=1.0, export_dir=str(export))
    processor = ClassificationProcessor.for_task("MRPC", str(data))
    run_classifier(_options(model_dir, out, **options), "MRPC", str(data), processor, log=lambda _: None)
    (out / "eval_results.txt").unlink()  # as Ctrl-C during the final evaluation leaves it
    written = (export / "saved_model.pb").stat().st_mtime_ns
    args = [
        sys.executable,
        *classifier_command(model_dir, data),
        f"--init_checkpoint={model_dir}/bert_model.ckpt",
        "--do_train",
        "--do_eval",
        "--max_seq_length=16",
        "--train_batch_size=4",
        "--eval_batch_size=3",
        "--num_train_epochs=1",
        "--iterations_per_loop=10",
        f"--export_dir={export}",
    ]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    again = subprocess.run(args + [f"--output_dir={out}"], capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "already holds this model" in again.stderr and (out / "eval_results.txt").exists()
    assert (export / "saved_model.pb").stat().st_mtime_ns == written  # kept, not rewritten
    other = subprocess.run(
        args + [f"--output_dir={tmp_path}/other"], capture_output=True, text=True, env=env, timeout=300
    )
    assert other.returncode != 0 and "Traceback" not in other.stderr
    assert (
        f"{export}: already exists and was not exported from {tmp_path}/other; pass --force"
        in (other.stderr.splitlines()[-1])
    )
    assert not (tmp_path / "other").exists()  # refused before any work


def test_export_saved_model_rerun_keeps_its_own_export(model_dir, tmp_path):
    """export_saved_model.py's same command run again keeps its export (same checkpoint, same
    fingerprint); an export dir it did not write still needs --force."""
    from keras_bert_impl.serving.export import ExportOptions, build_and_export

    flags = dict(
        bert_config_file=str(model_dir / "bert_config.json"),
        vocab_file=str(model_dir / "vocab.txt"),
        do_lower_case=True,
        init_checkpoint=str(model_dir / "bert_model.ckpt"),
        model_type="encoder",
        export_dir=str(tmp_path / "e"),
        max_seq_length=16,
    )
    logs = []
    build_and_export(ExportOptions(**flags), log=logs.append)
    written = (tmp_path / "e" / "saved_model.pb").stat().st_mtime_ns
    build_and_export(ExportOptions(**flags), log=logs.append)
    assert any("already holds this model" in line for line in logs)
    assert (tmp_path / "e" / "saved_model.pb").stat().st_mtime_ns == written
    (tmp_path / "foreign").mkdir()
    with pytest.raises(FileExistsError, match="foreign: already exists and was not exported from .*; pass --force"):
        build_and_export(ExportOptions(**{**flags, "export_dir": str(tmp_path / "foreign")}), log=logs.append)


def test_periodic_evaluations_reuse_their_traces(model_dir, tmp_path):
    """predict() keeps one tf.function per bucket length across calls: an evaluation every N
    steps traces once, not once per evaluation."""
    from keras_bert_impl.runners.finetuning import FineTuningRun
    from keras_bert_impl.tasks.registry import create_task

    run = FineTuningRun(_options(model_dir, tmp_path / "out", do_eval=True), log=lambda _: None)
    run.build_for(create_task("classifier", run.config, 16, label_names=["a", "b"]))
    rng = np.random.default_rng(0)
    mask = (np.arange(16)[None, :] < rng.integers(3, 16, size=(7, 1))).astype(np.int64)
    features = {
        "input_ids": rng.integers(5, len(VOCAB), size=(7, 16)) * mask,
        "input_mask": mask,
        "segment_ids": np.zeros((7, 16), np.int64),
    }
    first = run.predict(features, 3)["logits"]
    steps = dict(run._predict_steps)
    second = run.predict(features, 3)["logits"]
    assert np.array_equal(first, second) and run._predict_steps == steps
    assert all(step.experimental_get_tracing_count() == 1 for step in steps.values())


def test_export_command_serves_the_head_a_run_trained_by_default(model_dir, tmp_path):
    """export_saved_model.py without --model_type, from a fine-tuning run's directory, exports the
    classifier with its labels (meta.json), not the encoder under it; --model_type=regression needs
    no labels."""
    import tensorflow as tf

    from keras_bert_impl.runners.run_classifier import run_classifier
    from tfrecord_tools.classification_data import ClassificationProcessor

    data = _mrpc(tmp_path)
    out = tmp_path / "out"
    options = _options(model_dir, out, do_train=True, num_train_epochs=0.5)
    run_classifier(options, "MRPC", str(data), ClassificationProcessor.for_task("MRPC", str(data)), log=lambda _: None)
    common = [
        sys.executable,
        os.path.join(REPO_ROOT, "export_saved_model.py"),
        f"--bert_config_file={model_dir}/bert_config.json",
        f"--vocab_file={model_dir}/vocab.txt",
        "--max_seq_length=16",
    ]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    prefix = tf.train.latest_checkpoint(str(out))  # a ckpt-N prefix of the run finds its record too
    (out / "meta.json").unlink()  # as a run fed by a create_finetuning_data directory has none
    run = subprocess.run(
        common[:-1] + [f"--init_checkpoint={prefix}", f"--export_dir={tmp_path}/saved"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    shown = "--model_type=classifier, --label_names=['0', '1'], --do_lower_case=True, --max_seq_length=16"
    assert f"{shown} (from {out}/task.json)" in run.stderr
    import tensorflow_text  # noqa: F401 -- its ops are in the graph

    outputs = tf.saved_model.load(f"{tmp_path}/saved").signatures["serving_default"](
        text_a=tf.constant(["the movie was good"]), text_b=tf.constant(["the film is great"])
    )
    assert outputs["probabilities"].shape == (1, 2) and outputs["labels"].numpy()[0] in (b"0", b"1")
    # A run that left no record (an older version's): its head is refused, not dropped for the encoder.
    (out / "task.json").unlink()
    unstated = subprocess.run(
        common + [f"--init_checkpoint={prefix}", f"--export_dir={tmp_path}/unstated"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert unstated.returncode == 1 and "Traceback" not in unstated.stderr
    last = unstated.stderr.strip().splitlines()[-1]
    assert last.endswith(
        f"{prefix}: holds a fine-tuned task head (2 variables beside the encoder) and no task.json says which "
        "task; pass the --model_type it was trained as (with its --label_names), or --model_type=encoder to "
        "export the encoder alone"
    ), last
    assert not (tmp_path / "unstated").exists()
    regression = subprocess.run(
        common + ["--model_type=regression", "--allow_random_weights", f"--export_dir={tmp_path}/score"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert regression.returncode == 0, regression.stderr[-2000:]
