"""Stop requests (Ctrl-C, SIGTERM) and the safe points that honour them.

An exception raised by a signal handler lands wherever the main thread happens to be. Inside
TensorFlow or Keras that is unsafe: it can surface from a C extension as a SystemError, come back
re-wrapped by Keras as a TypeError, or be swallowed by a library's own `except` (and the output
then written anyway). So `keras_bert_cli.app` raises `Interrupted` at once only when no such
library is on the stack, and otherwise records the request here; long jobs ask at safe points:
the Trainer between steps, the data tools' loops, and `files.atomic_outputs` just before it
renames a finished output, so nothing is completed once a stop was asked for.

A training loop can run for minutes inside one tf.function call, where no Python signal handler
runs at all; `add_check` registers the signal wake-up pipe that the Trainer reads from inside the
loop. Imports nothing of the project but `errors`.
"""

from keras_bert_common.errors import Interrupted

_CHECKS = []
_REQUESTED = []


def add_check(check):
    """`check()` returns the name of the signal once a stop was requested ("SIGTERM"), else None."""
    _CHECKS.append(check)


def request(signal_name):
    """Records a stop asked for by `signal_name` (a signal handler that could not raise)."""
    if not _REQUESTED:
        _REQUESTED.append(signal_name)


def requested():
    """The name of the signal that asked to stop, or None."""
    if not _REQUESTED:
        for check in _CHECKS:
            name = check()
            if name:
                request(name)
                break
    return _REQUESTED[0] if _REQUESTED else None


def interruption():
    """The `Interrupted` of a stop the signal handler recorded, or None. Only the recorded ones:
    in the main thread the handler has always run before the next line of ours, so no check (no
    system call) is needed, and this can sit in per-record loops."""
    if not _REQUESTED:
        return None
    return Interrupted(_REQUESTED[0], f"stopped by {_REQUESTED[0]}; nothing half-written was kept")


def raise_if_requested():
    """A safe point of the main thread: raises `Interrupted` if a stop was requested."""
    interrupt = interruption()
    if interrupt is not None:
        raise interrupt
