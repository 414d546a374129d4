"""The one home of file helpers: atomic outputs (files, multi-file bundles, directories), input
file patterns and the writability check every tool runs before its heavy work.

Every writer in the project goes through `atomic_outputs` (or its `atomic_output` and
`atomic_directory` forms): outputs are written under a temporary name next to their final one and
renamed into place only when the whole block succeeded, so a crash, bad input, Ctrl-C or SIGTERM
never leaves a half-written file under the real name, and the temporaries are removed. Paths with
a scheme (gs://, hdfs://) go through `tf.io.gfile`. What a killed writer left (`NAME.tmp-PID`) is removed
by the next writer of NAME and never read as input. Imports only `keras_bert_common.errors`.
"""

import contextlib
import glob
import logging
import os
import re
import shutil
import tempfile
import time

from keras_bert_common import stop
from keras_bert_common.errors import UsageError


def is_remote(path):
    """A path with a scheme (gs://, hdfs://): read and written through tf.io.gfile."""
    return "://" in str(path)


def location(path):
    """What two names of one file have in common: a remote path as given, a local one resolved
    (absolute, symlinks followed)."""
    return str(path) if is_remote(path) else os.path.realpath(path)


def _gfile():
    import tensorflow as tf  # only remote paths need TensorFlow here

    return tf.io.gfile


def temporary_name(path):
    """The name a writer uses for `path` until it is complete (this process's id in it)."""
    return f"{path}.tmp-{os.getpid()}"


_TEMPORARY = re.compile(r"\.tmp-(\d+)")


def final_name(path):
    """The output a temporary name stands for (`out.tfrecord.tmp-123.unit0.part1` -> `out.tfrecord`)."""
    return re.sub(_TEMPORARY.pattern + ".*$", "", str(path))


def is_temporary(path):
    """A writer's unfinished output (`temporary_name`, or a part of one): never an input."""
    return _TEMPORARY.search(os.path.basename(str(path))) is not None


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_stale_temporaries(path, min_age_seconds=60):
    """Removes what a killed writer of `path` left (`path.tmp-PID...` of a process that is gone,
    untouched for a minute, so a live writer on another machine sharing the disk keeps its file)
    and says so: a re-run cleans up after the run that `kill -9` stopped. Local paths only."""
    if is_remote(path):
        return []
    removed = []
    for leftover in sorted(glob.glob(glob.escape(str(path)) + ".tmp-*")):
        pid = int(_TEMPORARY.search(os.path.basename(leftover)).group(1))
        try:
            old = time.time() - os.path.getmtime(leftover) > min_age_seconds
        except OSError:
            continue
        if pid != os.getpid() and old and not _alive(pid):
            _remove(leftover)
            removed.append(leftover)
    if removed:
        logging.getLogger(__name__).warning(
            "removed %s left unfinished by an interrupted earlier run: %s",
            "a file" if len(removed) == 1 else f"{len(removed)} files",
            describe_files(removed),
        )
    return removed


def describe_files(paths, limit=3):
    """`a, b, c and 5 more`: the files a run reads or removes, for its log."""
    paths = [str(path) for path in paths]
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def _remove(path):
    if is_remote(path):
        gfile = _gfile()
        if gfile.isdir(path):
            gfile.rmtree(path)
        elif gfile.exists(path):
            gfile.remove(path)
    elif os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)


def _rename(source, target):
    if is_remote(target):
        _gfile().rename(source, target, overwrite=True)
    else:
        os.replace(source, target)


def _make_parent(path):
    parent = os.path.dirname(str(path))
    if not parent:
        return
    if is_remote(path):
        _gfile().makedirs(parent)
    else:
        os.makedirs(parent, exist_ok=True)


@contextlib.contextmanager
def atomic_outputs(paths, suffixes=("",)):
    """Yields one temporary path per path in `paths`; when the block succeeds each
    `temporary + suffix` is renamed to `path + suffix`, in order (so the last suffix can mark a
    complete bundle, as a checkpoint's `.index`). On any exception, KeyboardInterrupt or a
    signal turned into one, every temporary is removed and the exception goes on; after a stop
    request (`stop`) nothing is renamed, even when the block ran to its end."""
    paths = [str(path) for path in paths]
    temporaries = [temporary_name(path) for path in paths]
    for path in paths:
        _make_parent(path)
        remove_stale_temporaries(path)
    try:
        yield temporaries
        stop.raise_if_requested()  # a signal the block's library code could not be stopped by
        for path, temporary in zip(paths, temporaries):
            for suffix in suffixes:
                _rename(temporary + suffix, path + suffix)
    finally:
        for temporary in temporaries:
            for suffix in suffixes:
                _remove(temporary + suffix)


@contextlib.contextmanager
def atomic_output(path, mode="w"):
    """`with atomic_output(path) as writer:` -> `path` appears, whole, only if the block succeeds."""
    with atomic_outputs([path]) as (temporary,):
        if is_remote(path):
            with _gfile().GFile(temporary, mode) as writer:
                yield writer
        else:
            with open(temporary, mode, encoding=None if "b" in mode else "utf-8") as writer:
                yield writer


@contextlib.contextmanager
def atomic_directory(path, force=False):
    """Yields a temporary directory that becomes `path` when the block succeeds. An existing
    `path` is an error unless `force` (checked before the block runs, so no work is wasted)."""
    path = str(path).rstrip("/")
    if not force and exists(path):
        raise FileExistsError(f"{path}: already exists; pass --force to replace it (or choose another directory)")
    with atomic_outputs([path]) as (temporary,):
        _remove(temporary)
        if is_remote(temporary):
            _gfile().makedirs(temporary)
        else:
            os.makedirs(temporary)
        yield temporary
        # The old directory goes only once the new one is complete.
        _remove(path)


def open_binary(path):
    """A file opened for reading bytes, local or remote."""
    return _gfile().GFile(path, "rb") if is_remote(path) else open(path, "rb")


def read_bytes(path):
    """The whole file, local or remote."""
    with open_binary(path) as reader:
        return reader.read()


def exists(path):
    return _gfile().exists(path) if is_remote(path) else os.path.exists(path)


def check_writable(path, flag, kind="file"):
    """Before any heavy work: can `path` be written? `kind` is "file" (a file written whole),
    "directory" (a directory we write files into; it may exist) or "replaced" (a directory
    written whole beside its final name, as a SavedModel). Raises OSError naming the flag and
    the fix. Remote paths are not probed."""
    path = str(path)
    if is_remote(path):
        return
    path = os.path.abspath(path)
    if kind == "file" and os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a directory; {flag} names a file")
    if kind != "file" and os.path.exists(path) and not os.path.isdir(path):
        raise NotADirectoryError(f"{path}: is a file; {flag} names a directory")
    probe_from = path if kind == "directory" else os.path.dirname(path)
    while not os.path.exists(probe_from):  # the nearest existing ancestor must accept new entries
        probe_from = os.path.dirname(probe_from)
    if not os.path.isdir(probe_from):
        raise NotADirectoryError(f"{path}: {probe_from} is a file, not a directory; fix {flag}")
    try:
        with tempfile.NamedTemporaryFile(dir=probe_from, prefix=".write-check-"):
            pass
    except OSError as error:
        raise PermissionError(
            f"{path}: cannot write in {probe_from} ({error.strerror}); choose a writable {flag}"
        ) from None


def check_not_holding_inputs(directory, flag, inputs):
    """A directory replaced whole (--force) must not be, or hold, one of `inputs` ({flag: path or
    list of paths}): replacing it would delete what the command reads (an --export_dir naming the
    run's own --output_dir)."""
    if is_remote(directory):
        return
    replaced = os.path.realpath(directory)
    for input_flag, paths in inputs.items():
        for path in paths if isinstance(paths, (list, tuple)) else [paths]:
            if path and not is_remote(path) and os.path.commonpath([replaced, os.path.realpath(path)]) == replaced:
                raise UsageError(
                    f"{flag}={directory} is, or holds, {input_flag}={path}; replacing it would delete that: choose "
                    f"another {flag}"
                )


def check_outputs_distinct(outputs, inputs=(), flag="--output_file"):
    """Each output named once, and none of them an input (writing it would destroy the input)."""
    input_keys = {location(path) for path in inputs}
    seen = set()
    for path in outputs:
        where = location(path)
        if where in seen:
            raise UsageError(f"{path}: listed twice in {flag}; name each output once")
        if where in input_keys:
            raise UsageError(f"{path}: is also an input; writing it would destroy the input: choose another {flag}")
        seen.add(where)


def expand_file_patterns(file_patterns, flag="--input_file", example="*.txt", log=None):
    """A comma list of globs (local or gs://) -> sorted files, or an error naming the pattern that
    matched nothing (or a directory: `example` is the glob to suggest inside it). Unfinished
    temporary files (`NAME.tmp-PID`) are never inputs: skipped, and named through `log`."""
    files, skipped = [], []
    for pattern in filter(None, (part.strip() for part in (file_patterns or "").split(","))):
        if not is_remote(pattern) and os.path.isdir(pattern):
            raise UsageError(
                f"{pattern}: is a directory; pass a glob such as {os.path.join(pattern, example)} ({flag})"
            )
        matches = sorted(_gfile().glob(pattern)) if is_remote(pattern) else sorted(glob.glob(pattern))
        matches = [match for match in matches if is_remote(match) or os.path.isfile(match)]
        temporaries = [match for match in matches if is_temporary(match)]
        matches = [match for match in matches if not is_temporary(match)]
        if temporaries and not matches:
            raise FileNotFoundError(
                f"{pattern}: matches only unfinished files an interrupted writer left ({describe_files(temporaries)}); "
                f"delete them and write the data again ({flag})"
            )
        if not matches:
            raise FileNotFoundError(f"{pattern}: no file matches; check {flag}")
        files.extend(matches)
        skipped.extend(temporaries)
    if not files:
        raise FileNotFoundError(f"{flag} is empty; pass a comma list of files or globs")
    if skipped and log is not None:
        log(
            f"warning: {flag}: skipped {len(skipped)} unfinished file(s) an interrupted writer left "
            f"({describe_files(skipped)}); delete them"
        )
    return files


def check_text_files(paths, flag):
    """Before reading them as text: none of `paths` is binary (a NUL byte in its first 8 KB, as
    a TFRecord, a checkpoint or a safetensors file has)."""
    for path in paths:
        if is_remote(path):
            continue
        with open(path, "rb") as reader:
            if b"\x00" in reader.read(8192):
                raise UsageError(f"{path}: holds binary data, not text; {flag} takes text files")


def check_readable_file(path, flag, what="file"):
    """A missing or unreadable input, named with its flag, before any work starts."""
    if not path:
        raise FileNotFoundError(f"{flag} is not set; pass the {what}")
    if is_remote(path):
        if not _gfile().exists(path):
            raise FileNotFoundError(f"{path}: no such file; check {flag}")
        return
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file; check {flag}")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a directory; {flag} names a {what}")
    if not os.access(path, os.R_OK):
        raise PermissionError(f"{path}: not readable (permission denied); fix its permissions or {flag}")
