"""run_pretraining: learning, exact multi-device equivalence, multi-worker, kill -9 resume, init."""

import collections
import dataclasses
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_common.errors import UsageError
from keras_bert_impl.checkpoints.google_checkpoint import write_google_checkpoint
from keras_bert_impl.checkpoints.init_checkpoint import check_init_checkpoint, initialize_from_checkpoint
from keras_bert_impl.errors import CheckpointMismatchError
from keras_bert_impl.models.bert_classifier import BertClassifier
from keras_bert_impl.models.bert_config import BertConfig
from keras_bert_impl.models.bert_encoder import BertEncoder
from keras_bert_impl.models.bert_pretrainer import BertPretrainer
from keras_bert_impl.runners.run_pretraining import PretrainingOptions, run_pretraining
from tests.conftest import REPO_ROOT, subprocess_env
from tests.google_weights_fixture import random_google_weights
from tests.pretraining_fixtures import (
    as_argv,
    assert_same_checkpoints,
    kill_9_and_resume,
    make_pretraining_setup,
    pretraining_flags,
)

RUNNER = os.path.join(REPO_ROOT, "run_pretraining.py")
HELPER = ["-m", "tests.pretraining_worker"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return make_pretraining_setup(str(tmp_path_factory.mktemp("pretraining")))


def _env(**extra):
    return subprocess_env(TF_CPP_MIN_LOG_LEVEL="2", **extra)


def test_loss_falls_and_eval_results_have_google_keys(setup, tmp_path):
    logs = []
    flags = pretraining_flags(
        setup,
        str(tmp_path / "out"),
        num_train_steps=300,
        iterations_per_loop=50,
        save_checkpoints_steps=150,
        num_warmup_steps=20,
        learning_rate=1e-2,
        train_batch_size=16,
        do_eval=True,
        max_eval_steps=10,
    )
    run = run_pretraining(PretrainingOptions(**flags), log=logs.append)
    results = run.eval
    losses = [loop["loss"] for loop in run.train.history]
    assert [loop["step"] for loop in run.train.history] == [50, 100, 150, 200, 250, 300]
    assert losses[-1] < losses[0] - 1.0 and run.train.final_step == 300
    text = (tmp_path / "out" / "eval_results.txt").read_text()
    keys = [line.split(" = ")[0] for line in text.splitlines()]
    assert keys == [
        "global_step",
        "loss",
        "masked_lm_accuracy",
        "masked_lm_loss",
        "next_sentence_accuracy",
        "next_sentence_loss",
    ]
    assert results["global_step"] == 300 and results["masked_lm_accuracy"] > 0.25
    assert any("examples/s" in line and "ETA" in line for line in logs)
    # TensorBoard summaries and the Google-named export.
    assert os.listdir(tmp_path / "out" / "train")
    reader = tf.train.load_checkpoint(str(tmp_path / "out" / "bert_model.ckpt"))
    assert "cls/predictions/output_bias" in reader.get_variable_to_shape_map()


def _run_helper(args, env, timeout=240):
    run = subprocess.run([sys.executable, *HELPER, *args], capture_output=True, text=True, env=env, timeout=timeout)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_mirrored_over_two_devices_matches_one_device(tmp_path):
    paths = make_pretraining_setup(str(tmp_path / "data"), dropout=0.0)
    common = ["--setup", json.dumps(paths), "--steps", "6"]
    one = _run_helper([*common, "--strategy", "one_device", "--output_dir", str(tmp_path / "one")], _env())
    two = _run_helper([*common, "--strategy", "mirrored", "--output_dir", str(tmp_path / "two")], _env())
    assert two["replicas"] == 2 and one["replicas"] == 1
    assert np.max(np.abs(np.array(one["losses"]) - np.array(two["losses"]))) < 1e-5
    assert np.max(np.abs(np.array(one["weights"]) - np.array(two["weights"]))) < 1e-5


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_multi_worker_mirrored_two_processes(setup, tmp_path):
    ports = _free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
    output = tmp_path / "mw"
    flags = pretraining_flags(setup, str(output), num_train_steps=10, distribution_strategy="multi_worker_mirrored")
    processes = []
    for index in range(2):
        tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
        processes.append(
            subprocess.Popen(
                [sys.executable, RUNNER, *as_argv(flags)],
                env=_env(TF_CONFIG=tf_config),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outputs = [process.communicate(timeout=300) for process in processes]
    for process, (_, stderr) in zip(processes, outputs):
        assert process.returncode == 0, stderr[-3000:]
    losses = [
        [line.split("loss=")[1].split()[0] for line in stderr.splitlines() if "step 10/10" in line]
        for _, stderr in outputs
    ]
    assert losses[0] and losses[0] == losses[1]  # both workers saw the same global loss
    assert "2 replica(s)" in outputs[0][1]
    # The model checkpoint is written once, by the chief; worker 1 keeps only its data position.
    chief = sorted(name for name in os.listdir(output) if name.startswith("ckpt-") and name.endswith(".index"))
    assert chief == ["ckpt-10.index", "ckpt-5.index"]
    worker = tf.train.list_variables(tf.train.latest_checkpoint(str(output / "worker-1")))
    assert not any("model" in name for name, _ in worker)


def test_kill_9_then_resume_ends_where_an_uninterrupted_run_ends(setup, tmp_path):
    flags = pretraining_flags(setup, "", num_train_steps=60, save_checkpoints_steps=5, iterations_per_loop=1)
    straight = tmp_path / "straight"
    run = subprocess.run(
        [sys.executable, RUNNER, *as_argv({**flags, "output_dir": straight})],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]

    killed = tmp_path / "killed"
    last, resume = kill_9_and_resume(RUNNER, flags, killed, _env())
    assert last is not None and not last.endswith("ckpt-60")
    resumed_from = int(last.rsplit("-", 1)[1])
    assert resume.returncode == 0, resume.stderr[-3000:]
    assert f"at step {resumed_from}" in resume.stderr
    steps = [
        int(line.split("step ")[1].split("/")[0])
        for line in resume.stderr.splitlines()
        if " step " in line and "/60 " in line
    ]
    assert steps[0] == resumed_from + 1 and steps[-1] == 60  # no step before the checkpoint trained twice
    # Same weights, optimizer state, data position and dropout randomness: identical final weights.
    assert_same_checkpoints(straight / "bert_model.ckpt", killed / "bert_model.ckpt")


def test_init_from_google_checkpoint_and_from_ours(setup, tmp_path):
    config = BertConfig.from_json_file(setup["bert_config.json"])
    weights = random_google_weights(config, heads=("pretraining",), seed=5)
    prefix = write_google_checkpoint(weights, str(tmp_path / "google" / "bert_model.ckpt"))
    logs = []
    flags = pretraining_flags(
        setup, str(tmp_path / "from_google"), init_checkpoint=prefix, do_train=False, do_eval=True, max_eval_steps=2
    )
    run_pretraining(PretrainingOptions(**flags), log=logs.append)
    assert any("loaded 46 weights" in line for line in logs)
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    initialize_from_checkpoint(model, prefix)
    assert np.array_equal(model.encoder.get_embedding_table().numpy(), weights["bert/embeddings/word_embeddings"])

    trained = tmp_path / "ours"
    run_pretraining(PretrainingOptions(**pretraining_flags(setup, str(trained), num_train_steps=5)), log=lambda m: None)
    classifier = BertClassifier(BertEncoder.from_bert_config(config), num_classes=2)
    report = initialize_from_checkpoint(classifier, str(trained))
    reference = tf.train.load_checkpoint(str(trained / "bert_model.ckpt"))
    assert "classifier/kernel" in report.initialized
    # The check before training reads the shapes of both formats, ours through the object graph.
    for checkpoint in (str(trained), str(trained / "bert_model.ckpt")):
        check_init_checkpoint(checkpoint, config)
        with pytest.raises(
            CheckpointMismatchError,
            match=r"the checkpoint has hidden_size=32, intermediate_size=37, "
            r"num_hidden_layers=2; the config says hidden_size=48, "
            r"intermediate_size=40, num_hidden_layers=3\); use the",
        ):
            check_init_checkpoint(
                checkpoint, dataclasses.replace(config, hidden_size=48, intermediate_size=40, num_hidden_layers=3)
            )
    assert np.array_equal(
        classifier.encoder.get_embedding_table().numpy(), reference.get_tensor("bert/embeddings/word_embeddings")
    )


def test_non_finite_loss_stops_naming_the_step(setup, tmp_path):
    bad = tmp_path / "bad.tfrecord"
    with tf.io.TFRecordWriter(str(bad)) as writer:
        for record in tf.data.TFRecordDataset(setup["train.tfrecord"]).take(64):
            example = tf.train.Example.FromString(record.numpy())
            weights = example.features.feature["masked_lm_weights"].float_list.value
            weights[0] = float("inf")
            writer.write(example.SerializeToString())
    flags = pretraining_flags(setup, str(tmp_path / "nan"), input_file=str(bad), iterations_per_loop=1)
    run = subprocess.run(
        [sys.executable, RUNNER, *as_argv(flags)], env=_env(), capture_output=True, text=True, timeout=300
    )
    assert run.returncode != 0 and "loss is nan at step 1" in run.stderr
    assert tf.train.latest_checkpoint(str(tmp_path / "nan")) is None


def test_a_shard_cut_short_is_refused_before_training(setup, tmp_path):
    """Of two input shards the second is cut in its last record: the run stops before it builds
    anything, naming that shard (TensorFlow would find it only on reaching the cut)."""
    whole = open(setup["train.tfrecord"], "rb").read()
    first, second = tmp_path / "shard-0.tfrecord", tmp_path / "shard-1.tfrecord"
    first.write_bytes(whole)
    second.write_bytes(whole[:-5])
    flags = pretraining_flags(setup, str(tmp_path / "out"), input_file=f"{first},{second}")
    with pytest.raises(UsageError, match=r"shard-1\.tfrecord: truncated or corrupt: record \d+ runs to byte"):
        run_pretraining(PretrainingOptions(**flags), log=lambda message: None)
    assert not (tmp_path / "out").exists()


def test_tpu_that_does_not_exist_is_a_clear_error(setup, tmp_path):
    flags = pretraining_flags(setup, str(tmp_path / "tpu"), tpu="no-such-tpu-here")
    run = subprocess.run(
        [sys.executable, RUNNER, *as_argv(flags)], env=_env(), capture_output=True, text=True, timeout=300
    )
    assert run.returncode != 0
    assert "--tpu=no-such-tpu-here: no TPU found" in run.stderr and "Traceback" not in run.stderr


def test_phase_2_starts_from_phase_1_weights_at_a_longer_length(setup, tmp_path):
    """Google's recipe: 90% of the steps at 128, then 10% at 512 from the first phase's output."""
    from tfrecord_tools.pretraining_data import PretrainingDataOptions, create_pretraining_data

    long_records = str(tmp_path / "long.tfrecord")  # the same corpus at the longer length (32 > 24)
    create_pretraining_data(
        [setup["corpus.txt"]],
        [long_records],
        PretrainingDataOptions(
            vocab_file=setup["vocab.txt"], max_seq_length=32, max_predictions_per_seq=6, dupe_factor=2
        ),
        log=lambda m: None,
    )
    phase1 = tmp_path / "phase1"
    run_pretraining(PretrainingOptions(**pretraining_flags(setup, str(phase1), num_train_steps=20)), log=lambda m: None)
    first = tf.train.load_checkpoint(str(phase1 / "bert_model.ckpt"))
    # Restart the optimizer (Google's --init_checkpoint), at 32 with 6 predictions; lr 0 keeps the weights.
    logs = []
    phase2 = tmp_path / "phase2"
    flags = pretraining_flags(
        setup,
        str(phase2),
        input_file=long_records,
        init_checkpoint=str(phase1),
        max_seq_length=32,
        max_predictions_per_seq=6,
        num_train_steps=3,
        learning_rate=0.0,
        do_eval=True,
        max_eval_steps=2,
    )
    result = run_pretraining(PretrainingOptions(**flags), log=logs.append)
    assert result.train.start_step == 0 and result.train.final_step == 3 and result.eval["global_step"] == 3
    second = tf.train.load_checkpoint(str(phase2 / "bert_model.ckpt"))
    positions = "bert/embeddings/position_embeddings"
    assert first.get_tensor(positions).shape == (32, 32)
    # Rows 24-31 were never trained at 24 tokens: phase 2 got them from phase 1, not a new initialisation.
    assert np.array_equal(second.get_tensor(positions), first.get_tensor(positions))
    assert all(np.array_equal(second.get_tensor(n), first.get_tensor(n)) for n in first.get_variable_to_shape_map())
    # Trained and evaluated at 32: records of 24 are refused now.
    with pytest.raises(ValueError, match="input_ids holds 24 values per record but the flags ask for 32"):
        run_pretraining(
            PretrainingOptions(
                **{**flags, "input_file": setup["train.tfrecord"], "output_dir": str(tmp_path / "wrong")}
            )
        )
    # Continue the optimizer instead: its step count and moments come along; --num_train_steps counts both phases.
    logs = []
    flags = {
        **flags,
        "output_dir": str(tmp_path / "phase2b"),
        "continue_optimizer": True,
        "num_train_steps": 25,
        "learning_rate": 1e-3,
    }
    result = run_pretraining(PretrainingOptions(**flags), log=logs.append)
    assert result.train.start_step == 20 and result.train.final_step == 25
    assert any(f"continuing the optimizer of {phase1} at step 20" in line for line in logs)


def test_evaluation_during_training_at_the_right_steps(setup, tmp_path):
    out = tmp_path / "out"
    flags = pretraining_flags(
        setup,
        str(out),
        num_train_steps=30,
        iterations_per_loop=4,
        save_checkpoints_steps=15,
        do_eval=True,
        eval_every_n_steps=10,
        max_eval_steps=3,
    )
    result = run_pretraining(PretrainingOptions(**flags), log=lambda m: None)
    assert [evaluation["step"] for evaluation in result.train.evaluations] == [10, 20, 30]
    # Loops end on evaluation and checkpoint boundaries, whatever --iterations_per_loop says.
    assert [loop["step"] for loop in result.train.history] == [4, 8, 10, 14, 15, 19, 20, 24, 28, 30]
    events = [os.path.join(out / "eval", name) for name in os.listdir(out / "eval")]
    steps = collections.defaultdict(list)
    for path in events:
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                steps[value.tag].append((event.step, float(tf.make_ndarray(value.tensor))))
    assert [step for step, _ in steps["masked_lm_accuracy"]] == [10, 20, 30]
    assert steps["masked_lm_accuracy"][-1][1] == pytest.approx(result.eval["masked_lm_accuracy"])
    assert result.eval["global_step"] == 30
    assert (out / "eval_results.txt").read_text().startswith("global_step = 30\n")
