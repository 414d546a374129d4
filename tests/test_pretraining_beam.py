"""The Apache Beam pipeline of create_pretraining_data: the same set of serialized examples as the
local tool for the same flags (over several input files, which units span), in
OUTPUT-0000i-of-0000N shards, nothing left behind."""

import collections
import glob
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from keras_bert_common.errors import UsageError
from tests.conftest import REPO_ROOT, subprocess_env
from tests.pretraining_fixtures import make_pretraining_setup
from tfrecord_tools.pretraining_units import plan_units

pytest.importorskip("apache_beam")

TOOL = os.path.join(REPO_ROOT, "tfrecord_tools", "create_pretraining_data.py")


def _run(*args, tmpdir=None):
    env = subprocess_env(**({"TMPDIR": str(tmpdir)} if tmpdir is not None else {}))
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True, env=env, timeout=600)


def _records(pattern):
    return collections.Counter(record.numpy() for record in tf.data.TFRecordDataset(sorted(glob.glob(pattern))))


# The Beam run with dynamic masking is in the slow suite (40 s); dynamic records, their schema and
# masking are tested fast through the local tool in tests/test_dynamic_masking.py.
@pytest.mark.parametrize("dynamic", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_beam_direct_runner_writes_what_the_local_tool_writes(tmp_path, dynamic):
    setup = make_pretraining_setup(str(tmp_path / "data"))
    # The corpus in three files of unequal size: units of 500 bytes span files, by either engine.
    documents = open(setup["corpus.txt"]).read().strip().split("\n\n")
    parts = tmp_path / "parts"
    parts.mkdir()
    for index, chunk in enumerate((documents[:1], documents[1:4], documents[4:])):
        (parts / f"part{index}.txt").write_text("\n\n".join(chunk) + "\n")
    units = plan_units(sorted(glob.glob(f"{parts}/part*.txt")), 500)
    assert len(documents) > 5 and any(len(unit.spans) > 1 for unit in units)
    flags = [
        f"--input_file={parts}/part*.txt",
        f"--vocab_file={setup['vocab.txt']}",
        "--max_seq_length=24",
        "--max_predictions_per_seq=4",
        "--unit_bytes=500",
        "--random_seed=3",
        "--do_whole_word_mask",
    ]
    if dynamic:
        flags.append("--dynamic_masking")
    out = tmp_path / "out"
    out.mkdir()
    local = _run(*flags, f"--output_file={out}/local", "--num_output_shards=2", "--num_workers=2")
    assert local.returncode == 0, local.stderr[-3000:]
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    beam = _run(
        *flags,
        f"--output_file={out}/beam",
        "--num_output_shards=3",
        "--beam_pipeline_options=runner=DirectRunner,direct_num_workers=2,direct_running_mode=multi_processing",
        tmpdir=scratch,
    )
    assert beam.returncode == 0, beam.stderr[-3000:]
    assert sorted(os.listdir(out)) == [
        "beam-00000-of-00003",
        "beam-00001-of-00003",
        "beam-00002-of-00003",
        "local-00000-of-00002",
        "local-00001-of-00002",
    ]
    want = _records(f"{out}/local-*")
    assert sum(want.values()) > 30 and _records(f"{out}/beam-*") == want  # the same set, any order
    # The summary comes from Beam's counters and says what the local tool says.
    summary = [
        line.split(" ", 1)[1] for line in beam.stderr.splitlines() if "instances: " in line or "tokens: " in line
    ]
    assert summary == [
        line.split(" ", 1)[1] for line in local.stderr.splitlines() if "instances: " in line or "tokens: " in line
    ]
    # Only the tool's own lines: no Beam chatter from the parent or its SDK workers (cloud clients
    # missing, harness set-up), and none of the empty directories Beam's runners leave in TMPDIR.
    assert [line for line in beam.stderr.splitlines() if not line[:9].replace(":", "").strip().isdigit()] == []
    assert "WARNING" not in beam.stderr
    assert os.listdir(scratch) == []


def test_beam_run_refused_before_it_starts_leaves_nothing(tmp_path):
    setup = make_pretraining_setup(str(tmp_path / "data"))
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nw1\n")
    out = tmp_path / "out"
    out.mkdir()
    run = _run(
        f"--input_file={setup['corpus.txt']}",
        f"--vocab_file={tmp_path}/vocab.txt",
        f"--output_file={out}/beam",
        "--beam_pipeline_options=runner=DirectRunner",
    )
    assert run.returncode == 1 and run.stderr.strip().splitlines()[-1].endswith(
        "has no [MASK] token; BERT pretraining needs it"
    )
    assert os.listdir(out) == []


def test_paths_beam_cannot_reach_are_refused_before_any_work(tmp_path, monkeypatch):
    """A file system Beam does not have (a scheme with no file system, or gs:// without
    apache-beam[gcp]) and one it has but cannot use are one line each, before the pipeline."""
    from tfrecord_tools.pretraining_beam import check_file_system

    setup = make_pretraining_setup(str(tmp_path / "data"))
    out = tmp_path / "out"
    out.mkdir()
    common = [f"--vocab_file={setup['vocab.txt']}", "--beam_pipeline_options=runner=DirectRunner"]
    run = _run("--input_file=nosuchfs://bucket/corpus.txt", f"--output_file={out}/beam", *common)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines()[-1] == (
        "create_pretraining_data: error: nosuchfs://bucket/corpus.txt: Apache Beam has no file system for "
        "nosuchfs paths here; install its extra (pip install apache-beam[gcp] for gs://, [aws] for s3://) "
        "or check --input_file"
    )
    assert os.listdir(out) == []

    class Unreachable:
        def __init__(self, *_):
            pass

        def exists(self, path):
            raise ValueError("no credentials")

    from apache_beam.io.filesystems import FileSystems

    monkeypatch.setattr(FileSystems, "get_filesystem", staticmethod(lambda path: Unreachable()))
    with pytest.raises(UsageError, match=r"^mem://x: Apache Beam cannot reach it \(no credentials\); .*--output_file$"):
        check_file_system("mem://x", "--output_file")
