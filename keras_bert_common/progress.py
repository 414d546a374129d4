"""Progress lines for long jobs: rate and ETA, at most every `interval` seconds (and at the end).

Shared by the data tools and the Trainer so every long job reports the same way; `heartbeat` for a
library call that reports nothing. Imports nothing of the project.
"""

import contextlib
import threading
import time

# How often a long job says how far it is, at the least (the brief: every half minute).
DEFAULT_INTERVAL_SECONDS = 30.0


def format_seconds(seconds):
    """H:MM:SS for progress lines ('?' when unknown)."""
    if seconds is None or seconds != seconds or seconds in (float("inf"), float("-inf")):
        return "?"
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Progress:
    """`update(done)` logs `done/total unit (rate/s) ETA` when `interval` seconds have passed
    since the last line; `rate_of(done)` and `eta_of(done)` for callers that build their own line."""

    def __init__(self, total, unit, log, interval=DEFAULT_INTERVAL_SECONDS, start_done=0, clock=time.monotonic):
        self.total = total
        self.unit = unit
        self.log = log
        self.interval = interval
        self._clock = clock
        self._start = self._last = clock()
        self._start_done = start_done

    def rate_of(self, done):
        elapsed = self._clock() - self._start
        return (done - self._start_done) / elapsed if elapsed > 0 else 0.0

    def eta_of(self, done):
        rate = self.rate_of(done)
        if not self.total or rate <= 0:
            return None
        return max(self.total - done, 0) / rate

    def due(self):
        return self._clock() - self._last >= self.interval

    def update(self, done, extra="", force=False):
        """Logs a line if one is due (or `force`); returns whether it did."""
        if not (force or self.due()):
            return False
        self._last = self._clock()
        total = f"/{self.total}" if self.total else ""
        line = f"{self.unit} {done}{total} ({self.rate_of(done):.1f}/s)"
        if extra:
            line += f", {extra}"
        self.log(f"{line}, ETA {format_seconds(self.eta_of(done))}")
        return True


@contextlib.contextmanager
def heartbeat(log, what, interval=DEFAULT_INTERVAL_SECONDS, clock=time.monotonic):
    """Logs `what` and the time spent every `interval` seconds while the block runs: for a library
    call that reports nothing of its own (tensorflow-text's vocabulary learner)."""
    done = threading.Event()
    start = clock()

    def beat():
        while not done.wait(interval):
            log(f"{what}: {format_seconds(clock() - start)} so far")

    thread = threading.Thread(target=beat, name="heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


class LimitedWarnings:
    """Names bad lines one by one, up to `limit` per file, then only counts them: a file with a
    thousand bad rows gives six lines, not a thousand. Call it per line, `finish(path)` per file."""

    def __init__(self, warn, limit=5):
        self.warn = warn
        self.limit = limit
        self.count = 0

    def __call__(self, message):
        self.count += 1
        if self.count <= self.limit:
            self.warn(message)

    def finish(self, path, what="rows"):
        if self.count > self.limit:
            self.warn(f"{path}: {self.count} {what} skipped in all (the first {self.limit} shown)")
        self.count = 0
