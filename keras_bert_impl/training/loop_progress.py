"""`LoopProgress`: what the Trainer's progress lines (examples/s, ETA) are computed from."""

import time


class LoopProgress:
    """Rate and ETA from the steps since the current loop started, or since the run's first step
    ended where that is later: neither the first step's tracing and compilation nor the pauses
    between loops (checkpoints, evaluations) drag the rate down; and when the next line is due."""

    def __init__(self, num_train_steps, start_step, global_batch_size, interval, clock=time.monotonic):
        self.num_train_steps = num_train_steps
        self.loop_start_step = start_step
        self.global_batch_size = global_batch_size
        self.interval = interval
        self._clock = clock
        self._loop_start = self._last = clock()
        self._first_step = None  # (step, time) when the run's first step ended

    def start_loop(self, step):
        self.loop_start_step = step
        self._loop_start = self._clock()

    def step_done(self, step):
        """After a step: the first one of the run marks where rates are measured from."""
        if self._first_step is None:
            self._first_step = (step, self._clock())

    def due(self):
        return self._clock() - self._last >= self.interval

    def seconds_since_line(self):
        return self._clock() - self._last

    def logged(self):
        self._last = self._clock()

    def _steps_per_second(self, step):
        origin = self.loop_start_step, self._loop_start
        if self._first_step is not None and self._first_step[1] >= self._loop_start and step > self._first_step[0]:
            origin = self._first_step
        elapsed = self._clock() - origin[1]
        return (step - origin[0]) / elapsed if elapsed > 0 else 0.0

    def examples_per_second(self, step):
        return self._steps_per_second(step) * self.global_batch_size

    def eta(self, step):
        rate = self._steps_per_second(step)
        return (self.num_train_steps - step) / rate if rate > 0 else None
