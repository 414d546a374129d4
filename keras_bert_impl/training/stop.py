"""Stop requests that reach a training loop while it runs inside one long tf.function call.

A Python signal handler runs only when the main thread returns from TensorFlow, which a loop of
--iterations_per_loop steps may not do for hours. The command-line tools register a check here
(`keras_bert_cli.app` reads the signal wake-up pipe, written the moment Ctrl-C or SIGTERM
arrives); the Trainer asks between steps and ends the loop early, so the signal's handler runs,
and the Trainer saves where it stopped.
"""

_CHECKS = []


def add_check(check):
    """`check()` returns True once a stop was requested."""
    _CHECKS.append(check)


def requested():
    return any(check() for check in _CHECKS)
