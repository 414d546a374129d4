"""`run(main, name)`: how every command-line tool starts, logs, stops and fails.

- Quiet by default: TensorFlow's C++ chatter (CUDA probes, the oneDNN banner, rendezvous
  notices) and its Python INFO/WARNING noise are hidden unless `--verbosity=1` (or higher) or
  `TF_CPP_MIN_LOG_LEVEL` asks for them; our own lines are INFO, real problems WARNING.
- Bad input: the expected errors (a missing or unreadable file, bad JSON/TSV/config, a mismatch
  between vocab, config, checkpoint and data, a full disk) print one line,
  `TOOL: error: FILE: what is wrong; the fix`, and exit 1: no traceback.
- Ctrl-C and SIGTERM (what `kill` and batch schedulers send) raise `Interrupted` in the main
  thread, so every `finally` removes its temporary files; the tool prints one line (training says
  at which step it stopped and how to resume) and exits 130 (SIGINT) or 143 (SIGTERM). A second
  signal stops at once.
"""

import errno
import logging as std_logging
import os
import re
import signal
import sys

from absl import app, flags, logging

from keras_bert_impl.errors import Interrupted

FLAGS = flags.FLAGS
EXIT_CODES = {"SIGINT": 130, "SIGTERM": 143}

# Errors that mean "the input or the environment is wrong", never "the program is wrong".
EXPECTED_ERRORS = (
    FileNotFoundError,
    FileExistsError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
    ValueError,
    RuntimeError,
    UnicodeDecodeError,
)


def quiet_tensorflow():
    """Before TensorFlow is imported: its C++ log level, unless the user set one or asked for
    more, and its Python logger at ERROR."""
    verbose = FLAGS.is_parsed() and FLAGS.verbosity >= 1
    if verbose:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
        return
    # 3 also hides the "failed call to cuInit" ERROR line every CPU-only machine prints; real
    # failures surface as Python exceptions.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    std_logging.getLogger("tensorflow").setLevel(std_logging.ERROR)
    import warnings  # noqa: PLC0415

    for category in (DeprecationWarning, FutureWarning, UserWarning):
        warnings.filterwarnings("ignore", category=category)


class _LibraryNoiseFilter(std_logging.Filter):
    """Drops INFO lines that TensorFlow and Keras log through absl (e.g. checkpoint sharding)."""

    _NOISY = (
        f"{os.sep}tensorflow{os.sep}",
        f"{os.sep}keras{os.sep}",
        f"{os.sep}tf_keras{os.sep}",
        f"{os.sep}official{os.sep}",
        f"{os.sep}tensorflow_text{os.sep}",
    )

    def filter(self, record):
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


def _on_signal(number, _frame):
    name = signal.Signals(number).name
    # A second signal stops at once.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise Interrupted(name, f"stopped by {name}; nothing half-written was kept")


def _final_name(path):
    """The output a temporary name stands for (`out.tfrecord.tmp-123.unit0.part1` -> `out.tfrecord`)."""
    return re.sub(r"\.tmp-\d+.*$", "", str(path))


def one_line(error):
    """The message of an expected error, on one line."""
    text = str(error)
    if (isinstance(error, OSError) and error.errno == errno.ENOSPC) or "no space left on device" in text.lower():
        where = getattr(error, "filename", None) or (text.split(";")[0].strip() if ";" in text else None)
        prefix = f"{_final_name(where)}: " if where else ""
        return f"{prefix}no space left on device; free some space or choose another output location"
    if isinstance(error, OSError) and error.filename and not str(error).startswith(str(error.filename)):
        return f"{error.filename}: {error.strerror or error}"
    text = str(error).strip() or type(error).__name__
    lines = text.splitlines()
    return lines[0] if len(lines) == 1 else f"{lines[0]} (...)"


def _is_expected(error):
    if isinstance(error, EXPECTED_ERRORS + (OSError,)):
        return True
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(error, tf.errors.OpError)


def run(main, name):
    """absl's `app.run(main)` inside the behaviour described in the module docstring."""

    def wrapped(argv):
        quiet_tensorflow()
        handler = logging.get_absl_handler()
        handler.setFormatter(_Formatter())
        if FLAGS.verbosity < 1:
            handler.addFilter(_LibraryNoiseFilter())
        signal.signal(signal.SIGTERM, _on_signal)
        signal.signal(signal.SIGINT, _on_signal)
        try:
            return main(argv)
        except Interrupted as interrupt:
            print(f"{name}: {interrupt.message}", file=sys.stderr)
            sys.exit(EXIT_CODES.get(interrupt.signal_name, 130))
        except KeyboardInterrupt:
            print(f"{name}: stopped by SIGINT", file=sys.stderr)
            sys.exit(130)
        except Exception as error:  # noqa: BLE001 -- expected ones become one line, the rest are bugs
            if not _is_expected(error):
                raise
            print(f"{name}: error: {one_line(getattr(error, 'message', None) or error)}", file=sys.stderr)
            sys.exit(1)

    try:
        app.run(wrapped)
    except KeyboardInterrupt:  # a signal while absl was still starting or ending
        print(f"{name}: stopped", file=sys.stderr)
        sys.exit(130)
