"""Safe to interrupt and to run again (issue 32): what a killed writer leaves is cleaned up by the
next run and never read; resuming over other data says so; help exits 0, even into `head`;
skipped rows are counted in their own split; the load report of a fine-tuned checkpoint names
the head it leaves out."""

import os
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO_ROOT
from tests.finetuning_fixtures import VOCAB, _mrpc, _options, model_dir  # noqa: F401 -- model_dir: a fixture
from tests.pretraining_fixtures import as_argv, make_pretraining_setup, pretraining_flags


def _run(script, *args):
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # the tools' default
    return subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, script), *args], capture_output=True, text=True, env=env, timeout=300
    )


def _leave_behind(path, pid=99999999, size=1000):
    """A temporary as `kill -9` of writer `pid` leaves it (a minute old)."""
    leftover = f"{path}.tmp-{pid}"
    with open(leftover, "wb") as writer:
        writer.write(b"\0" * size)
    old = time.time() - 120
    os.utime(leftover, (old, old))
    return leftover


def test_rerun_removes_what_a_killed_writer_left_and_readers_skip_it(tmp_path):
    paths = make_pretraining_setup(str(tmp_path / "data"))
    out = tmp_path / "records" / "train"
    out.parent.mkdir()
    leftovers = [_leave_behind(f"{out}-0000{i}-of-00002") for i in range(2)]
    live = _leave_behind(f"{out}-00000-of-00002", pid=os.getpid())  # a writer still running: kept
    run = _run(
        "tfrecord_tools/create_pretraining_data.py",
        f"--input_file={paths['corpus.txt']}",
        f"--output_file={out}",
        f"--vocab_file={paths['vocab.txt']}",
        "--num_output_shards=2",
        "--max_seq_length=24",
        "--max_predictions_per_seq=4",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert not any(os.path.exists(path) for path in leftovers) and os.path.exists(live)
    assert "WARNING: removed a file left unfinished by an interrupted earlier run" in run.stderr
    assert os.path.basename(leftovers[0]) in run.stderr
    # Readers: the glob takes the finished shards only, names what it skipped, and logs what it reads.
    flags = pretraining_flags(paths, str(tmp_path / "run"), input_file=f"{tmp_path}/records/train*", num_train_steps=1)
    run = _run("run_pretraining.py", *as_argv(flags))
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"training reads 2 files: {out}-00000-of-00002, {out}-00001-of-00002" in run.stderr
    assert "WARNING: --input_file: skipped 1 unfinished file(s)" in run.stderr and os.path.basename(live) in run.stderr


def test_resume_with_other_input_files_names_the_data_not_the_model(tmp_path):
    paths = make_pretraining_setup(str(tmp_path / "data"))
    other = tmp_path / "data" / "more.tfrecord"
    other.write_bytes(open(paths["train.tfrecord"], "rb").read())
    flags = pretraining_flags(paths, str(tmp_path / "run"), num_train_steps=5)
    first = _run("run_pretraining.py", *as_argv(flags))
    assert first.returncode == 0, first.stderr[-2000:]
    both = f"{paths['train.tfrecord']},{other}"
    again = _run("run_pretraining.py", *as_argv({**flags, "input_file": both, "num_train_steps": 10}))
    last = again.stderr.strip().splitlines()[-1]
    assert again.returncode == 1 and "Traceback" not in again.stderr
    assert "another model" not in last
    assert f"its checkpoints were written reading --input_file={paths['train.tfrecord']}, not " in last
    assert "resume with the same --input_file, or pass a new --output_dir" in last
    batch = _run("run_pretraining.py", *as_argv({**flags, "train_batch_size": 4, "num_train_steps": 10}))
    assert "reading --train_batch_size=8, not 4" in batch.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "script",
    [
        "run_classifier.py",
        "run_pretraining.py",
        "export_saved_model.py",
        "tfrecord_tools/build_vocab.py",
        "tfrecord_tools/create_pretraining_data.py",
    ],
)
def test_help_exits_0_and_survives_head(script):
    for flag in ("--help", "--helpshort", "--helpfull"):
        run = _run(script, flag)
        assert run.returncode == 0 and "--" in run.stdout, (flag, run.returncode, run.stderr[-500:])
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    piped = subprocess.run(
        f"{sys.executable} {os.path.join(REPO_ROOT, script)} --helpfull | head -1",
        shell=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert piped.stdout.strip() and "Traceback" not in piped.stderr and "BrokenPipe" not in piped.stderr


def test_skipped_dev_rows_are_not_counted_as_training_rows(model_dir, tmp_path):  # noqa: F811
    from keras_bert_impl.runners.run_classifier import run_classifier
    from tfrecord_tools.classification_data import ClassificationProcessor

    data = _mrpc(tmp_path)
    for split in ("train", "dev"):  # one bad row (a label outside 0/1) in each
        with open(data / f"{split}.tsv", "a") as writer:
            writer.write("7\t99\t99\tthe movie\tthe film\n")
    logs = []
    options = _options(model_dir, tmp_path / "out", do_train=True, do_eval=True, num_train_epochs=0.2)
    run_classifier(options, "MRPC", str(data), ClassificationProcessor.for_task("MRPC", str(data)), log=logs.append)
    assert "24 training examples (1 train rows skipped)" in logs


def test_load_report_of_a_fine_tuned_checkpoint_names_its_head(model_dir, tmp_path):  # noqa: F811
    """A classifier checkpoint loaded as an encoder: its head is reported unused, and no
    pretraining head it never held is reported at all."""
    import tensorflow as tf

    from keras_bert_impl.checkpoints.init_checkpoint import initialize_from_checkpoint
    from keras_bert_impl.models.bert_config import BertConfig
    from keras_bert_impl.tasks.registry import create_task

    config = BertConfig.from_json_file(str(model_dir / "bert_config.json"))
    classifier = create_task("classifier", config, 16, label_names=["a", "b"]).build_model()
    import keras

    optimizer = keras.optimizers.Adam()
    optimizer.build(classifier.trainable_variables)  # as the Trainer's: the weights are saved under it
    saved = tf.train.Checkpoint(model=classifier, optimizer=optimizer).save(str(tmp_path / "run" / "ckpt"))
    encoder = create_task("encoder", config, 16).build_model()
    report = initialize_from_checkpoint(encoder, saved)
    assert len(report.loaded) == len(encoder.weights) and not report.initialized
    head = len(classifier.weights) - len(encoder.weights)  # the classifier's kernel and bias
    assert len(report.unused) == head == 2, report.unused
    assert not [name for name in report.unused if name.startswith("cls/")]


def test_word_counting_reports_progress(monkeypatch):
    """build_vocab's long silent phase: a progress line (KB read of the total, rate, ETA)."""
    from keras_bert_common import progress
    from tfrecord_tools import vocab_builder

    monkeypatch.setattr(vocab_builder, "Progress", lambda *args, **kwargs: progress.Progress(*args, interval=0))
    lines = ["the cat sat on the mat\n"] * 9000
    logs = []
    total = sum(len(line) for line in lines)
    counts = vocab_builder.count_words(lines, log=logs.append, total_bytes=total)
    assert counts["cat"] == 9000
    assert logs and all(line.startswith("KB of text read ") and f"/{total // 1024} " in line for line in logs), logs
    assert "ETA" in logs[0]
