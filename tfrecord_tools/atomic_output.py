"""`atomic_output`: write a file under a temporary name and rename it when done, so a crash or
bad input never leaves half a file under the real name."""

import contextlib
import os


@contextlib.contextmanager
def atomic_output(path, mode="w"):
    """`with atomic_output(path) as writer:` -> `path` appears, whole, only if the block succeeds."""
    temporary = f"{path}.tmp-{os.getpid()}"
    try:
        with open(temporary, mode, encoding=None if "b" in mode else "utf-8") as writer:
            yield writer
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
