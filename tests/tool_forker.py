"""Runs many command-line tool invocations as forks of one process that has already imported
TensorFlow and the library, so each costs its own work, not a 5-second import.

Reads a JSON list of cases on stdin, `{"id", "argv", "cwd", "env"}` (argv[0] a script path or
`-m module`), runs up to `--jobs` at once, and prints `{id: {"returncode", "stdout", "stderr"}}`.
Each child starts as the interpreter would (sys.argv, `__main__`, exit code, an uncaught
exception's traceback on stderr); the tools' absl flags are defined only in the child.
"""

import json
import os
import runpy
import shutil
import sys
import tempfile
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # the parent's imports stay quiet

from keras_bert_common.lean_import import keras_without_extras  # noqa: E402

keras_without_extras()  # as a tool's own process imports Keras (keras_bert_cli.app)

import keras  # noqa: E402,F401
import tensorflow  # noqa: E402,F401
import tensorflow_text  # noqa: E402,F401

import keras_bert_impl.runners.finetuning  # noqa: E402,F401
import keras_bert_impl.runners.run_pretraining  # noqa: E402,F401
import keras_bert_impl.serving.export  # noqa: E402,F401


def _child(case, out_path, err_path):
    """In the forked child: become the tool's process and never return."""
    code = 1
    try:
        os.chdir(case["cwd"])
        os.environ.clear()
        os.environ.update(case["env"])
        for fd, path in ((1, out_path), (2, err_path)):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        argv = case["argv"]
        try:
            if argv[0] == "-m":
                sys.argv = [argv[1], *argv[2:]]
                runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
            else:
                sys.argv = list(argv)
                sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
                runpy.run_path(argv[0], run_name="__main__")
            code = 0
        except SystemExit as exit_:
            if exit_.code is None or isinstance(exit_.code, int):
                code = exit_.code or 0
            else:
                print(exit_.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
        import atexit

        atexit._run_exitfuncs()  # what the interpreter runs at exit (app's stderr filter drains here)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def main():
    jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else 3
    cases = json.load(sys.stdin)
    scratch = tempfile.mkdtemp(prefix="tool_forker_")
    try:
        _run_all(cases, jobs, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # the parent's: a forked child never returns here


def _run_all(cases, jobs, scratch):
    running, results, pending = {}, {}, list(cases)
    while pending or running:
        while pending and len(running) < jobs:
            case = pending.pop(0)
            paths = [os.path.join(scratch, f"{len(results) + len(running)}_{len(pending)}.{kind}") for kind in "oe"]
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(case, *paths)
            running[pid] = (case, paths)
        pid, status = os.wait()
        case, (out_path, err_path) = running.pop(pid)
        with (
            open(out_path, encoding="utf-8", errors="replace") as out,
            open(err_path, encoding="utf-8", errors="replace") as err,
        ):
            results[case["id"]] = {
                "returncode": os.waitstatus_to_exitcode(status),
                "stdout": out.read(),
                "stderr": err.read(),
            }
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
