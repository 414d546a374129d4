"""run_pretraining.py that SIGKILLs itself in the middle of writing its Nth checkpoint (env
KILL_AT_SAVE=N): the bundle's files are on disk, half of its data cut away, and the state file
does not name it yet. What a preemption at the worst moment leaves."""

import os
import signal

from tensorflow.python.checkpoint import checkpoint_management  # noqa: E402

KILL_AT = int(os.environ["KILL_AT_SAVE"])
_saves = [0]
_save, _record_state = (
    checkpoint_management.CheckpointManager.save,
    checkpoint_management.CheckpointManager._record_state,
)


def save(self, *args, **kwargs):
    _saves[0] += 1
    return _save(self, *args, **kwargs)


def record_state(self):
    if _saves[0] == KILL_AT:
        data = self._latest_checkpoint + ".data-00000-of-00001"
        with open(data, "r+b") as writer:
            writer.truncate(os.path.getsize(data) // 2)
        os.kill(os.getpid(), signal.SIGKILL)
    return _record_state(self)


checkpoint_management.CheckpointManager.save = save
checkpoint_management.CheckpointManager._record_state = record_state

from keras_bert_cli.run_pretraining import console_main  # noqa: E402

if __name__ == "__main__":
    console_main()
