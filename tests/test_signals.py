"""Ctrl-C and SIGTERM in data creation, pretraining, fine-tuning and export: one line, a non-zero
exit, no temporary files; training says where it stopped, and the same command resumes. A kill -9
in the middle of writing a checkpoint leaves the previous one usable, and the next run resumes."""

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import REPO_ROOT, subprocess_env
from tests.finetuning_fixtures import _mrpc, classifier_command, model_dir  # noqa: F401 -- model_dir: a fixture
from tests.pretraining_fixtures import as_argv, make_pretraining_setup, pretraining_flags

PRETRAINING = os.path.join(REPO_ROOT, "run_pretraining.py")


def _start(args):
    """A tool in its own session (so a Ctrl-C can go to its whole process group, as a terminal's does)."""
    return subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(),
        start_new_session=True,
    )


def _wait_for(condition, timeout=240):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def _stop(process, signal_number, whole_group):
    if whole_group:
        os.killpg(process.pid, signal_number)
    else:
        process.send_signal(signal_number)
    _, stderr = process.communicate(timeout=120)
    return process.returncode, stderr


def _temporaries(directory):
    return [
        os.path.join(folder, name)
        for folder, dirs, files in os.walk(directory)
        for name in dirs + files
        if ".tmp-" in name
    ]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return make_pretraining_setup(str(tmp_path_factory.mktemp("signals")))


@pytest.mark.parametrize("signal_number,whole_group", [(signal.SIGINT, True), (signal.SIGTERM, False)])
def test_data_creation_with_workers_stops_cleanly(setup, tmp_path, signal_number, whole_group):
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(60)]
    corpus = tmp_path / "corpus.txt"
    with open(corpus, "w") as writer:
        for _ in range(3000):
            for _ in range(8):
                writer.write(" ".join(rng.choice(words, 12)) + "\n")
            writer.write("\n")
    out = tmp_path / "out"
    out.mkdir()
    process = _start(
        [
            os.path.join(REPO_ROOT, "tfrecord_tools", "create_pretraining_data.py"),
            f"--input_file={corpus}",
            f"--output_file={out}/a.tfrecord,{out}/b.tfrecord",
            f"--vocab_file={setup['vocab.txt']}",
            "--max_seq_length=32",
            "--dupe_factor=30",
            "--num_workers=2",
            "--unit_bytes=20000",
        ]
    )
    assert _wait_for(lambda: any(".unit" in name for name in os.listdir(out)) or process.poll() is not None)
    assert process.poll() is None, "finished before it could be stopped"
    code, stderr = _stop(process, signal_number, whole_group)
    name = signal.Signals(signal_number).name
    assert code == {"SIGINT": 130, "SIGTERM": 143}[name], stderr[-2000:]
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-3000:]
    assert (
        stderr.strip().splitlines()[-1] == f"create_pretraining_data: stopped by {name}; nothing half-written was kept"
    )
    assert os.listdir(out) == []  # no output, no temporary, no part file


def test_pretraining_sigterm_says_where_it_stopped_and_resumes(setup, tmp_path):
    # One tf.function call would run all 800 steps (Google's default loop is 1000): the stop must
    # come from inside it, not when it ends. Progress lines come from inside it too.
    flags = pretraining_flags(
        setup,
        str(tmp_path / "run"),
        num_train_steps=800,
        iterations_per_loop=800,
        save_checkpoints_steps=800,
        log_every_seconds=0.5,
    )
    process = _start([PRETRAINING, *as_argv(flags)])
    lines = []

    def trained_some():
        line = process.stderr.readline()
        lines.append(line)
        match = re.search(r" step (\d+)/800 ", line)
        return (match and int(match.group(1)) >= 10) or process.poll() is not None

    assert _wait_for(trained_some)
    signalled = time.time()
    code, stderr = _stop(process, signal.SIGTERM, False)
    assert time.time() - signalled < 20  # seconds, not the rest of the loop
    stderr = "".join(lines) + stderr
    assert code == 143 and "Traceback" not in stderr, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    step = int(last.split("stopped at step ")[1].split()[0])
    assert 10 <= step < 800
    assert last == (
        f"run_pretraining: stopped at step {step} (checkpoint of step {step} in {tmp_path / 'run'}); "
        "run the same command to resume"
    )
    assert tf.train.latest_checkpoint(str(tmp_path / "run")).endswith(f"ckpt-{step}")
    assert not _temporaries(tmp_path / "run")
    resumed = subprocess.run(
        [sys.executable, PRETRAINING, *as_argv(flags)],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"at step {step}" in resumed.stderr and " step 800/800 " in resumed.stderr


def test_fine_tuning_ctrl_c_stops_with_one_line(model_dir, tmp_path):  # noqa: F811
    data = _mrpc(tmp_path)
    process = _start(
        [
            *classifier_command(model_dir, data),
            f"--init_checkpoint={model_dir}/bert_model.ckpt",
            f"--output_dir={tmp_path}/out",
            "--do_train",
            "--max_seq_length=16",
            "--train_batch_size=4",
            "--num_train_epochs=400",
            "--iterations_per_loop=5",
        ]
    )
    assert _wait_for(lambda: " step " in process.stderr.readline() or process.poll() is not None)
    code, stderr = _stop(process, signal.SIGINT, True)
    assert code == 130 and "Traceback" not in stderr, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("run_classifier: stopped at step ") and last.endswith("run the same command to resume")
    assert not _temporaries(tmp_path / "out")


def test_export_sigterm_leaves_nothing(model_dir, tmp_path):  # noqa: F811
    export_dir = tmp_path / "exported"
    process = _start(
        [
            os.path.join(REPO_ROOT, "export_saved_model.py"),
            f"--vocab_file={model_dir}/vocab.txt",
            f"--bert_config_file={model_dir}/bert_config.json",
            f"--init_checkpoint={model_dir}/bert_model.ckpt",
            "--model_type=classifier",
            "--label_names=a,b",
            "--max_seq_length=16",
            f"--export_dir={export_dir}",
            "--allow_random_weights",  # an encoder checkpoint: the classifier head is new
        ]
    )
    assert _wait_for(lambda: any(".tmp-" in name for name in os.listdir(tmp_path)) or process.poll() is not None)
    code, stderr = _stop(process, signal.SIGTERM, False)
    assert code == 143 and "Traceback" not in stderr, stderr[-3000:]
    assert stderr.strip().splitlines()[-1] == "export_saved_model: stopped by SIGTERM; nothing half-written was kept"
    assert os.listdir(tmp_path) == []


def test_kill_9_while_writing_a_checkpoint_keeps_the_previous_one(setup, tmp_path):
    flags = pretraining_flags(setup, "", num_train_steps=30, save_checkpoints_steps=10, iterations_per_loop=5)
    straight = subprocess.run(
        [sys.executable, PRETRAINING, *as_argv({**flags, "output_dir": tmp_path / "straight"})],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=300,
    )
    assert straight.returncode == 0, straight.stderr[-3000:]
    run = tmp_path / "killed"
    killed = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.interrupted_saving",
            *as_argv({**flags, "output_dir": run}),
        ],
        capture_output=True,
        text=True,
        env={**subprocess_env(), "KILL_AT_SAVE": "2"},
        timeout=300,
    )
    assert killed.returncode == -signal.SIGKILL
    assert os.path.exists(run / "ckpt-20.index")  # the half-written bundle is there ...
    assert tf.train.latest_checkpoint(str(run)).endswith("ckpt-10")  # ... but the state names the previous one
    resumed = subprocess.run(
        [sys.executable, PRETRAINING, *as_argv({**flags, "output_dir": run})],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "at step 10" in resumed.stderr
    # Resumed from step 10 with its data position and RNG state: the same final weights.
    want = tf.train.load_checkpoint(str(tmp_path / "straight" / "bert_model.ckpt"))
    got = tf.train.load_checkpoint(str(run / "bert_model.ckpt"))
    for name in want.get_variable_to_shape_map():
        assert np.array_equal(want.get_tensor(name), got.get_tensor(name)), name


@pytest.fixture
def handler(monkeypatch):
    """`keras_bert_cli.app`'s signal handler on a clean stop state; the process's own handlers come back after."""
    from keras_bert_cli import app
    from keras_bert_common import stop

    monkeypatch.setattr(stop, "_REQUESTED", [])
    monkeypatch.setattr(stop, "_CHECKS", [])
    kept = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    yield app._on_signal
    for number, previous in kept.items():
        signal.signal(number, previous)


def _frame_of_module(module_name):
    """A frame that looks like one of `module_name`'s (where the main thread was when the signal came)."""
    namespace = {"__name__": module_name, "sys": sys}
    exec("def here():\n    return sys._getframe()\n", namespace)
    return namespace["here"]()


def test_a_signal_inside_tensorflow_waits_for_the_next_safe_point(handler, tmp_path):
    from keras_bert_common.errors import Interrupted
    from keras_bert_common.files import atomic_output

    handler(signal.SIGTERM, _frame_of_module("tensorflow.python.eager.polymorphic_function"))  # no raise
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # a second signal would stop at once
    output = tmp_path / "out.txt"
    with pytest.raises(Interrupted) as stopped:
        with atomic_output(output) as writer:  # a block that runs to its end ...
            writer.write("complete")
    assert stopped.value.signal_name == "SIGTERM"
    assert os.listdir(tmp_path) == []  # ... but is not renamed, and its temporary is gone


def test_a_signal_in_our_own_code_raises_at_once(handler):
    from keras_bert_common.errors import Interrupted

    with pytest.raises(Interrupted) as stopped:
        handler(signal.SIGINT, _frame_of_module("tfrecord_tools.pretraining_data"))
    assert stopped.value.signal_name == "SIGINT"


def test_a_signal_in_tensorflow_texts_vocabulary_learner_raises_at_once(handler):
    """The learner is pure Python (minutes on a large corpus): Ctrl-C stops it at once, where a
    signal inside tensorflow-text's ops waits."""
    from keras_bert_common.errors import Interrupted

    with pytest.raises(Interrupted):
        handler(
            signal.SIGINT, _frame_of_module("tensorflow_text.tools.wordpiece_vocab.wordpiece_tokenizer_learner_lib")
        )
    signal.signal(signal.SIGINT, handler)
    handler(signal.SIGINT, _frame_of_module("tensorflow_text.python.ops.fast_wordpiece_tokenizer"))  # no raise


def test_heartbeat_says_how_long_a_silent_call_has_run_and_stops_with_it():
    from keras_bert_common.progress import heartbeat

    lines, clock = [], iter(range(0, 1000, 40))
    with heartbeat(lines.append, "learning the vocabulary", interval=0.05, clock=lambda: next(clock)):
        time.sleep(0.3)
    count = len(lines)
    time.sleep(0.2)
    assert len(lines) == count >= 2  # beat while the block ran, and not after
    assert lines[0] == "learning the vocabulary: 0:00:40 so far"
