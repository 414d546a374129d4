"""`LoopProgress`: what the Trainer's progress lines (examples/s, ETA) are computed from."""

import time


class LoopProgress:
    """Rate and ETA from the steps since the current loop started (the first loop's tracing and
    compilation do not drag down later lines), and when the next line is due."""

    def __init__(self, num_train_steps, start_step, global_batch_size, interval):
        self.num_train_steps = num_train_steps
        self.loop_start_step = start_step
        self.global_batch_size = global_batch_size
        self.interval = interval
        self._loop_start = self._last = time.monotonic()

    def start_loop(self, step):
        self.loop_start_step = step
        self._loop_start = time.monotonic()

    def due(self):
        return time.monotonic() - self._last >= self.interval

    def seconds_since_line(self):
        return time.monotonic() - self._last

    def logged(self):
        self._last = time.monotonic()

    def _steps_per_second(self, step):
        elapsed = time.monotonic() - self._loop_start
        return (step - self.loop_start_step) / elapsed if elapsed > 0 else 0.0

    def examples_per_second(self, step):
        return self._steps_per_second(step) * self.global_batch_size

    def eta(self, step):
        rate = self._steps_per_second(step)
        return (self.num_train_steps - step) / rate if rate > 0 else None
