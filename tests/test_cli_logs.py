"""What the tools print by default: our lines only (no TensorFlow chatter), warnings at WARNING,
progress inside long loops, help without TensorFlow's flags; and what they write: a vocabulary of
at most --vocab_size tokens, a SavedModel holding each weight once."""

import dataclasses
import os
import re
import subprocess
import sys

import numpy as np

from keras_bert_impl.runners.run_pretraining import PretrainingOptions, run_pretraining
from tests.conftest import REPO_ROOT
from tests.finetuning_fixtures import model_dir  # noqa: F401 -- model_dir: a fixture
from tests.pretraining_fixtures import make_pretraining_setup, pretraining_flags

NOISE = (
    "cuInit",
    "cuda",
    "CUDA",
    "oneDNN",
    "cpu_feature_guard",
    "rendezvous",
    "Sharding callback",
    "absl::",
    "tensorflow/core",
    "local_xla",
    "WARNING:tensorflow",
    "Traceback",
)
OUR_LINE = re.compile(r"^\d\d:\d\d:\d\d (WARNING: )?\S")


def _run(script, *args):
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # the tools' default
    return subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, script), *args], capture_output=True, text=True, env=env, timeout=300
    )


def test_export_logs_only_our_lines_and_stores_each_weight_once(model_dir, tmp_path):  # noqa: F811
    run = _run(
        "export_saved_model.py",
        f"--vocab_file={model_dir}/vocab.txt",
        f"--bert_config_file={model_dir}/bert_config.json",
        f"--init_checkpoint={model_dir}/bert_model.ckpt",
        "--model_type=classifier",
        "--label_names=a,b",
        "--max_seq_length=16",
        f"--export_dir={tmp_path}/saved",
        "--allow_random_weights",  # an encoder checkpoint: the classifier head is new
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stderr.strip().splitlines()
    assert lines and all(OUR_LINE.match(line) for line in lines), lines
    assert not [line for line in lines if any(noise in line for noise in NOISE)], lines
    # The variables hold each weight once: about the float32 size of the weights (plus headers).
    import tensorflow as tf

    reader = tf.train.load_checkpoint(f"{model_dir}/bert_model.ckpt")
    weight_bytes = sum(4 * int(np.prod(shape)) for shape in reader.get_variable_to_shape_map().values())
    variables = tmp_path / "saved" / "variables"
    stored = sum(os.path.getsize(variables / name) for name in os.listdir(variables))
    assert weight_bytes < stored < 1.2 * weight_bytes + 50_000, (stored, weight_bytes)


def test_build_vocab_warns_at_warning_and_keeps_to_vocab_size(tmp_path):
    corpus = tmp_path / "corpus.txt"
    text = open(os.path.join(REPO_ROOT, "demo", "data", "corpus.txt"), "rb").read()
    corpus.write_bytes(text.replace(b"\n", b"\n\xff\xfe not utf-8\n", 1))
    run = _run(
        "tfrecord_tools/build_vocab.py",
        f"--input_file={corpus}",
        f"--output_file={tmp_path}/vocab.txt",
        "--vocab_size=200",
        "--min_count=1",
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stderr.strip().splitlines()
    assert any(
        re.match(rf"^\d\d:\d\d:\d\d WARNING: {re.escape(str(corpus))}:2: skipped, not UTF-8", line) for line in lines
    ), lines
    assert not [line for line in lines if any(noise in line for noise in NOISE)], lines
    # tensorflow-text's learner alone gives 304 tokens for a target of 200 on this corpus.
    vocab = (tmp_path / "vocab.txt").read_text().splitlines()
    assert 100 <= len(vocab) <= 200 and vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def test_data_tools_help_lists_no_tensorflow_flags():
    run = _run("tfrecord_tools/create_pretraining_data.py", "--helpfull")
    modules = re.findall(r"^(\S+):$", run.stdout + run.stderr, re.MULTILINE)  # the help's section per module
    assert "keras_bert_cli.create_pretraining_data" in modules, modules
    assert not [module for module in modules if "tensorflow" in module], modules


def test_progress_comes_from_inside_a_long_loop(tmp_path):
    setup = make_pretraining_setup(str(tmp_path / "data"))
    logs = []
    flags = pretraining_flags(
        setup,
        str(tmp_path / "out"),
        num_train_steps=80,
        iterations_per_loop=1000,
        save_checkpoints_steps=1000,
        log_every_seconds=0.05,
    )
    result = run_pretraining(PretrainingOptions(**flags), log=logs.append)
    assert [loop["step"] for loop in result.train.history] == [80]  # one tf.function call ran all 80 steps
    inside = [int(line.split()[1].split("/")[0]) for line in logs if line.startswith("step ")]
    assert len(inside) >= 3 and min(inside) < 80, logs  # progress lines while that call ran
    assert all("examples/s" in line and "ETA" in line for line in logs if line.startswith("step "))


def test_a_loop_that_cannot_report_its_steps_runs_the_first_step_alone(tmp_path, monkeypatch):
    """As on a TPU (no Python call inside the compiled loop): the first loop is the first step
    alone, which carries the tracing, and the other loops keep their length."""
    from keras_bert_impl.training import trainer

    original = trainer.Trainer.__init__

    def without_in_loop_progress(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self._progress_in_loop = False

    monkeypatch.setattr(trainer.Trainer, "__init__", without_in_loop_progress)
    setup = make_pretraining_setup(str(tmp_path / "data"))
    flags = pretraining_flags(
        setup, str(tmp_path / "out"), num_train_steps=9, iterations_per_loop=4, save_checkpoints_steps=1000
    )
    result = run_pretraining(PretrainingOptions(**flags), log=lambda message: None)
    assert [loop["step"] for loop in result.train.history] == [1, 5, 9]


def test_the_rate_and_eta_leave_out_the_first_steps_tracing():
    """100 steps of 0.2 s after a first step that took 10 s (tracing): the rate is 5 steps/s from
    the end of the first step, not 11 steps in 12 s; later loops count from their own start
    (a checkpoint or an evaluation between loops does not count)."""
    from keras_bert_impl.training.loop_progress import LoopProgress

    now = [100.0]
    progress = LoopProgress(101, 0, 3, 30, clock=lambda: now[0])
    progress.start_loop(0)
    now[0] += 10.0
    progress.step_done(1)
    assert abs(progress.examples_per_second(1) - 3 * 1 / 10.0) < 1e-9  # only the traced step so far
    now[0] += 2.0
    progress.step_done(11)
    assert abs(progress.examples_per_second(11) - 3 * 5.0) < 1e-9
    assert abs(progress.eta(11) - 90 / 5.0) < 1e-9
    now[0] += 60.0  # a checkpoint and an evaluation
    progress.start_loop(11)
    now[0] += 4.0
    assert abs(progress.eta(31) - 70 / 5.0) < 1e-9


def _app(body):
    """A tool whose main runs `body`, through keras_bert_cli.app like every tool."""
    code = (
        f"import numpy as np\nfrom keras_bert_cli import app\nfrom keras_bert_common.errors import UsageError\n\n"
        f"def main(_):\n    {body}\n\napp.run(main, 'demo_tool')\n"
    )
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_input_errors_are_one_line_and_bugs_say_so():
    usage = _app("raise UsageError('data.tsv: holds no rows; check --data_dir')")
    assert (
        usage.returncode == 1 and usage.stderr.strip() == "demo_tool: error: data.tsv: holds no rows; check --data_dir"
    )
    missing = _app("open('/nonexistent/file.txt')")
    assert missing.returncode == 1
    assert missing.stderr.strip() == "demo_tool: error: /nonexistent/file.txt: No such file or directory"
    bug = _app("np.zeros(3).reshape(2, 2)")  # a ValueError raised inside numpy: not the user's input
    assert bug.returncode == 2 and "Traceback" not in bug.stderr
    assert bug.stderr.strip().startswith("demo_tool: internal error: ValueError: cannot reshape array")
    assert "a bug, not your input" in bug.stderr


def test_the_exit_keeps_threads_atexit_output_and_code_but_skips_teardown(tmp_path):
    """A tool's exit joins its threads, runs the atexit handlers, flushes buffered output and keeps
    the exit code, as Python's own; the interpreter's teardown (which frees TensorFlow's and Keras'
    modules one object at a time) is skipped: a module-level object's `__del__` never runs."""
    marks = {name: str(tmp_path / name) for name in ("thread", "atexit", "teardown")}
    code = (
        "import atexit, sys, threading, time\n"
        "from keras_bert_cli import app\n\n"
        "class Finalized:\n"
        # `open` bound early: late in a teardown the builtins are gone.
        f"    def __del__(self, _open=open):\n        _open({marks['teardown']!r}, 'w').close()\n\n"
        "KEPT = Finalized()\n\n"
        f"def late():\n    time.sleep(0.3)\n    open({marks['thread']!r}, 'w').close()\n\n"
        "def main(_):\n"
        f"    atexit.register(lambda: open({marks['atexit']!r}, 'w').close())\n"
        "    threading.Thread(target=late).start()\n"
        "    sys.stdout.write('buffered, no newline')\n"
        "    sys.exit(3)\n\n"
        "app.run(main, 'demo_tool')\n"
    )
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "buffered, no newline"
    assert os.path.exists(marks["thread"]) and os.path.exists(marks["atexit"])
    assert not os.path.exists(marks["teardown"])


def test_mixed_bfloat16_on_a_cpu_without_bfloat16_instructions_warns(tmp_path, monkeypatch):
    import keras

    from keras_bert_common import cpu as cpu_info
    from keras_bert_impl.training import run_setup

    cpus = {
        "amd_epyc_zen3": "flags\t\t: fpu sse2 avx avx2 fma vaes\n",
        "xeon_sapphire_rapids": "flags\t\t: avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n",
        "arm_neoverse_v1": "Features\t: fp asimd sve bf16 i8mm\n",
    }
    for name, text in cpus.items():
        (tmp_path / name).write_text("processor\t: 0\n" + text)
    assert [cpu_info.cpu_has_bfloat16_instructions(str(tmp_path / name)) for name in cpus] == [False, True, True]
    assert cpu_info.cpu_has_bfloat16_instructions(str(tmp_path / "absent")) is None

    setup = make_pretraining_setup(str(tmp_path / "data"))
    warnings = []
    log = type("Log", (), {"__call__": lambda self, message: None, "warning": lambda self, m: warnings.append(m)})()
    try:
        for cpu, precision in (("amd_epyc_zen3", "float32"), ("xeon_sapphire_rapids", "mixed_bfloat16")):
            monkeypatch.setattr(cpu_info, "CPUINFO", str(tmp_path / cpu))
            options = run_setup.RunOptions(
                bert_config_file=setup["bert_config.json"],
                output_dir=str(tmp_path / "runs" / cpu),
                max_seq_length=16,
                mixed_precision=precision,
            )
            run_setup.RunSetup(dataclasses.replace(options, do_train=True), log=log)
        assert warnings == []
        monkeypatch.setattr(cpu_info, "CPUINFO", str(tmp_path / "amd_epyc_zen3"))
        options = dataclasses.replace(options, output_dir=str(tmp_path / "out"), do_train=True)
        run_setup.RunSetup(options, log=log)
        assert len(warnings) == 1 and "without bfloat16 instructions" in warnings[0]
        assert "--mixed_precision=float32" in warnings[0]
        # XLA on a CPU trains bfloat16 slower than without it: said once, with the fix.
        monkeypatch.setattr(cpu_info, "CPUINFO", str(tmp_path / "xeon_sapphire_rapids"))
        warnings.clear()
        run_setup.RunSetup(dataclasses.replace(options, output_dir=str(tmp_path / "xla"), jit_compile=True), log=log)
        assert len(warnings) == 1 and "--jit_compile with --mixed_precision=mixed_bfloat16" in warnings[0]
        assert "drop --jit_compile" in warnings[0]
        run_setup.RunSetup(
            dataclasses.replace(
                options, output_dir=str(tmp_path / "xla32"), jit_compile=True, mixed_precision="float32"
            ),
            log=log,
        )
        assert len(warnings) == 1  # float32 under XLA: no warning
    finally:
        keras.mixed_precision.set_global_policy("float32")
