"""`run(main, name)`: how every command-line tool starts, logs, stops and fails.

- Quiet by default: TensorFlow's C++ chatter (CUDA probes, the oneDNN banner, rendezvous
  notices) and its Python INFO/WARNING noise are hidden unless `--verbosity=1` (or higher) or
  `TF_CPP_MIN_LOG_LEVEL` asks for them; our own lines are INFO, real problems WARNING.
- Bad input: the expected errors (a missing or unreadable file, bad JSON/TSV/config, a mismatch
  between vocab, config, checkpoint and data, a full disk) print one line,
  `TOOL: error: FILE: what is wrong; the fix`, and exit 1: no traceback.
- Ctrl-C and SIGTERM (what `kill` and batch schedulers send) raise `Interrupted` in the main
  thread, at once in our own code and at the next safe point when TensorFlow or Keras is running
  (`keras_bert_common.stop`), so every `finally` removes its temporary files and no output is
  completed after the signal; the tool prints one line (training says at which step it stopped
  and how to resume) and exits 130 (SIGINT) or 143 (SIGTERM). A second signal stops at once.
- Keras imports without scikit-learn, pandas and matplotlib (1.1-1.3 s of a 4 s start-up when
  they are installed; no tool uses what Keras loads them for), except in an interactive session.
- The exit skips the interpreter's teardown of TensorFlow and Keras (0.6-1.1 s a run); threads are
  joined and atexit handlers run first, as in Python's own exit.
"""

import atexit
import builtins
import errno
import logging as std_logging
import os
import re
import signal
import sys
import threading

from absl import app, flags, logging

from keras_bert_common import stop
from keras_bert_common.errors import Interrupted, UsageError
from keras_bert_common.files import final_name
from keras_bert_common.lean_import import keras_without_extras

FLAGS = flags.FLAGS
EXIT_CODES = {"SIGINT": 130, "SIGTERM": 143}

# Errors that mean "the input, the flags or the environment is wrong", never "the program is wrong".
EXPECTED_ERRORS = (UsageError, OSError, UnicodeDecodeError)


# What TensorFlow's C++ side prints that no user needs: XLA's and absl's INFO/WARNING lines (which
# TF_CPP_MIN_LOG_LEVEL does not reach), CPU feature and CUDA probes; and what Apache Beam's SDK
# worker processes log before and beside their work (Python's default format: optional cloud
# clients missing, their own harness set-up), which a failing pipeline reports in the tool anyway.
NATIVE_NOISE = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog"
    r"|(INFO|WARNING):(root|__main__|apache_beam[\w.]*):"
    r"|Failed to import GCSFileSystem"
    r"|[IW]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ \S+:\d+\] "
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IW] "
    r"|To enable the following instructions"
    r"|.*(cuInit|cuda_platform|cuda_dnn|cuda_blas|cuda_fft|CUDA error))"
)


_STOP_LINE = b"\0end of the stderr filter\n"


def filter_native_stderr():
    """File descriptor 2 (TensorFlow's C++ logs, and worker processes') goes through a thread that
    drops NATIVE_NOISE; Python's own stderr writes to the terminal directly."""
    original = os.dup(2)
    sys.stderr.flush()
    read, write = os.pipe()
    os.dup2(write, 2)
    # Kept to end the pump: multiprocessing's resource tracker inherits fd 2 and outlives us, so
    # the pipe would reach its end only when it exits.
    stop_writer = write
    sys.stderr = open(original, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    logging.get_absl_handler().python_handler.stream = sys.stderr  # absl keeps the stream it started with

    def pump():
        with os.fdopen(read, "rb") as pipe:
            for line in pipe:
                if line == _STOP_LINE:
                    return
                if not NATIVE_NOISE.match(line.decode("utf-8", "replace")):
                    os.write(original, line)

    thread = threading.Thread(target=pump, name="stderr-filter", daemon=True)
    thread.start()

    def restore():
        sys.stderr.flush()
        os.dup2(original, 2)
        os.write(stop_writer, _STOP_LINE)  # after everything written before it (workers have exited)
        os.close(stop_writer)
        thread.join(timeout=2)

    atexit.register(restore)


def quiet_tensorflow():
    """Before TensorFlow is imported: its C++ log level, unless the user set one or asked for
    more, and its Python logger at ERROR."""
    verbose = FLAGS.is_parsed() and FLAGS.verbosity >= 1
    if verbose:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
        return
    if "TF_CPP_MIN_LOG_LEVEL" not in os.environ:
        filter_native_stderr()
    # 3 also hides the "failed call to cuInit" ERROR line every CPU-only machine prints; real
    # failures surface as Python exceptions.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    std_logging.getLogger("tensorflow").setLevel(std_logging.ERROR)
    std_logging.getLogger("apache_beam").setLevel(std_logging.WARNING)
    import warnings

    for category in (DeprecationWarning, FutureWarning, UserWarning):
        warnings.filterwarnings("ignore", category=category)


class _LibraryNoiseFilter(std_logging.Filter):
    """Drops INFO lines that TensorFlow and Keras log through absl (e.g. checkpoint sharding), and
    Apache Beam's WARNINGs too (optional cloud clients missing, its workers' relayed set-up
    notices); a real failure of a pipeline surfaces as an exception, reported as one line."""

    _NOISY = (
        f"{os.sep}tensorflow{os.sep}",
        f"{os.sep}keras{os.sep}",
        f"{os.sep}tf_keras{os.sep}",
        f"{os.sep}official{os.sep}",
        f"{os.sep}tensorflow_text{os.sep}",
    )

    def filter(self, record):
        if f"{os.sep}apache_beam{os.sep}" in record.pathname:
            return record.levelno >= std_logging.ERROR
        return record.levelno >= std_logging.WARNING or not any(part in record.pathname for part in self._NOISY)


class _Formatter(std_logging.Formatter):
    """`09:01:02 message` for INFO, `09:01:02 WARNING: message` above: for people, not parsers."""

    def format(self, record):
        prefix = "" if record.levelno <= std_logging.INFO else f"{record.levelname}: "
        return f"{self.formatTime(record, '%H:%M:%S')} {prefix}{record.getMessage()}"


class Log:
    """The `log` callable handed to the library: INFO lines, with `.warning` for WARNING ones."""

    def __call__(self, message):
        if message.startswith("warning: "):
            logging.warning(message[len("warning: ") :])
        else:
            logging.info(message)

    @staticmethod
    def warning(message):
        logging.warning(message)


def _listen_for_stops():
    """The signal wake-up pipe: written by the C-level handler the moment a signal arrives, even
    while the main thread is deep inside TensorFlow; the Trainer checks it between steps."""
    read, write = os.pipe()
    os.set_blocking(read, False)
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write, warn_on_full_buffer=False)

    def requested():
        try:
            numbers = os.read(read, 64)
        except BlockingIOError:
            return None
        names = [signal.Signals(n).name for n in numbers if n in (signal.SIGINT, signal.SIGTERM)]
        return names[0] if names else None

    stop.add_check(requested)


# Raising inside these is unsafe (see `keras_bert_common.stop`): the stop waits for a safe point.
_DEFER_INSIDE = frozenset({"tensorflow", "tensorflow_text", "keras", "tf_keras", "official", "tensorboard"})
# Pure Python inside them, safe to stop at once: tensorflow-text's vocabulary learner (minutes long).
_INTERRUPTIBLE = ("tensorflow_text.tools.",)


def _inside_library(frame):
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.partition(".")[0] in _DEFER_INSIDE and not name.startswith(_INTERRUPTIBLE):
            return True
        frame = frame.f_back
    return False


def _on_signal(number, frame):
    name = signal.Signals(number).name
    # A second signal stops at once.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    stop.request(name)
    if not _inside_library(frame):
        stop.raise_if_requested()


def _exit_interrupted(name, interrupt):
    print(f"{name}: {interrupt.message}", file=sys.stderr)
    sys.exit(EXIT_CODES.get(interrupt.signal_name, 130))


def _readable(text):
    """TensorFlow's messages without their graph internals, on their most telling line."""
    text = re.sub(r"\{\{[^}]*\}\}\s*", "", text)  # {{function_node __wrapped__...}}
    text = re.sub(r"\s*\[\[[^\]]*\]\]", "", text)  # [[{{node ...}}]]
    skip = (
        "Graph execution error",
        "Detected at node",
        "File ",
        "Stack trace",
        "Traceback",
        "in user code",
        "Op:",
        "<stack traces unavailable>",
    )
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(skip)]
    return (useful or lines or [""])[0]


def one_line(error):
    """The message of an expected error, on one line."""
    text = str(error)
    if (isinstance(error, OSError) and error.errno == errno.ENOSPC) or "no space left on device" in text.lower():
        where = getattr(error, "filename", None)
        if not where:
            found = re.search(r"(/[^\s;:'\"]+)", re.sub(r"\{\{[^}]*\}\}", "", text))
            where = found.group(1) if found else None
        prefix = f"{final_name(where)}: " if where else ""
        return f"{prefix}no space left on device; free some space or choose another output location"
    if isinstance(error, OSError) and error.filename and not text.startswith(str(error.filename)):
        return f"{error.filename}: {error.strerror or error}"
    return _readable(text) or type(error).__name__


def _is_expected(error):
    if isinstance(error, EXPECTED_ERRORS):
        return True
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(error, tf.errors.OpError)


def _show_tool_flags_in_help(tool_module):
    """--helpshort / --help list the key flags of the main module, which absl takes to be
    sys.argv[0] (a starter script or console script): make the tool's own flags and the shared
    ones that."""
    for module in (tool_module, "keras_bert_cli.flags"):
        for flag in FLAGS.get_flags_for_module(module):
            FLAGS.register_key_flag_for_module(sys.argv[0], flag)
    # The usage text absl prints is __main__'s docstring: the tool's, with its example command.
    main = sys.modules.get("__main__")
    if main is not None and tool_module in sys.modules and sys.modules[tool_module] is not main:
        main.__doc__ = sys.modules[tool_module].__doc__


# absl's help flags print and exit 1; here they exit 0, as help does.
_HELP_FLAGS = {"--help": True, "-help": True, "-h": True, "-?": True, "--helpshort": True, "--helpfull": False}


def _flags_parser(name):
    """absl's flag parsing with help that exits 0 (and survives `| head`) and flag errors as the
    tools' own one line, `TOOL: error: ...`, exit 1, instead of "FATAL Flags parsing error"."""

    def parse(argv):
        for arg in argv[1:]:
            if arg == "--":
                break
            flag, _, value = arg.partition("=")
            if flag in _HELP_FLAGS and value.lower() not in ("false", "0"):
                try:
                    app.usage(shorthelp=_HELP_FLAGS[flag], writeto_stdout=True)
                    sys.stdout.flush()
                except BrokenPipeError:  # the reader (`head`) left: nothing more to say
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                sys.exit(0)
        try:
            return FLAGS(argv)
        except flags.Error as error:
            message = "; ".join(line.strip().rstrip(".") for line in str(error).splitlines() if line.strip())
            print(f"{name}: error: {message}; --helpshort lists the flags", file=sys.stderr)
            sys.exit(1)

    return parse


def run(main, name):
    """absl's `app.run(main)` inside the behaviour described in the module docstring."""
    _show_tool_flags_in_help(main.__module__)

    def wrapped(argv):
        if not _interactive():
            keras_without_extras()
        quiet_tensorflow()
        handler = logging.get_absl_handler()
        handler.setFormatter(_Formatter())
        if FLAGS.verbosity < 1:
            handler.addFilter(_LibraryNoiseFilter())
        signal.signal(signal.SIGTERM, _on_signal)
        signal.signal(signal.SIGINT, _on_signal)
        _listen_for_stops()
        try:
            return main(argv)
        except Interrupted as interrupt:
            _exit_interrupted(name, interrupt)
        except KeyboardInterrupt:
            print(f"{name}: stopped by SIGINT", file=sys.stderr)
            sys.exit(130)
        except Exception as error:  # noqa: BLE001 -- expected ones become one line, the rest are bugs
            interrupt = stop.interruption()
            if interrupt is not None:  # the signal's exception, re-wrapped by a library on its way up
                _exit_interrupted(name, interrupt)
            if _is_expected(error):
                print(f"{name}: error: {one_line(getattr(error, 'message', None) or error)}", file=sys.stderr)
                sys.exit(1)
            if FLAGS.verbosity >= 1:
                raise
            print(
                f"{name}: internal error: {type(error).__name__}: {one_line(error)} (a bug, not your input: "
                "please report it with the command; --verbosity=1 shows where)",
                file=sys.stderr,
            )
            sys.exit(2)

    try:
        try:
            app.run(wrapped, flags_parser=_flags_parser(name))
        except KeyboardInterrupt:  # a signal while absl was still starting or ending
            print(f"{name}: stopped", file=sys.stderr)
            sys.exit(130)
    except SystemExit as exit_request:
        _exit_without_teardown(exit_request)


def _interactive():
    """A session the user goes on working in after the tool (python -i, a REPL, IPython/Jupyter's
    %run): it keeps Python's own exit and Keras's own import."""
    return hasattr(sys, "ps1") or sys.flags.interactive or getattr(builtins, "__IPYTHON__", False)


def _exit_without_teardown(exit_request):
    """Ends the process as Python's exit would, without the interpreter's teardown: non-daemon
    threads are joined and atexit handlers run (logging flushes, multiprocessing reaps its
    workers, the stderr filter ends), then `os._exit`. Freeing TensorFlow's and Keras' modules
    object by object took 0.6 s (TensorFlow alone) to 1.1 s (with Keras) at the end of every run.
    Every output is closed and renamed by then. In an interactive session the exit is Python's own."""
    if _interactive():
        raise exit_request
    code = exit_request.code
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be written to it
            pass
    os._exit(code or 0)
