"""The one map from task names (`--model_type`, meta.json's `model_type`) to `Task` classes.

`create_task` passes each class the options its `__init__` takes, so callers hand over what they
know (labels, choices, query length) without knowing which task needs what; an option no task
takes (a misspelling) is an error, not silently dropped.
"""

import inspect
import os

from keras_bert_common.errors import UsageError
from keras_bert_impl.tasks.classification import ClassificationTask, RegressionTask
from keras_bert_impl.tasks.encoder import EncoderTask
from keras_bert_impl.tasks.multiple_choice import MultipleChoiceTask
from keras_bert_impl.tasks.pretraining import MaskedLMTask, PretrainingTask
from keras_bert_impl.tasks.sentence_embedding import SentenceEmbeddingTask
from keras_bert_impl.tasks.span import SpanTask
from keras_bert_impl.tasks.tagging import TaggingTask

TASKS = {
    cls.name: cls
    for cls in (
        EncoderTask,
        PretrainingTask,
        MaskedLMTask,
        ClassificationTask,
        RegressionTask,
        SpanTask,
        TaggingTask,
        MultipleChoiceTask,
        SentenceEmbeddingTask,
    )
}


def task_class(name, flag="--model_type"):
    """The registered `Task` class called `name`, or one line naming the known ones."""
    if name not in TASKS:
        raise UsageError(f"{flag}={name}: no such task; use one of {', '.join(TASKS)}")
    return TASKS[name]


def task_of_weights(names):
    """The task whose head Google-named weights `names` hold (the first registered whose head
    prefixes are all there: a pretrainer before a masked LM), else the encoder."""
    for cls in TASKS.values():
        if cls.google_head_prefixes and all(
            any(name.startswith(prefix) for name in names) for prefix in cls.google_head_prefixes
        ):
            return cls
    return TASKS["encoder"]


def create_task(name, bert_config, max_seq_length, **options):
    """The task `name`, given whichever of `options` its constructor takes (None values skipped)."""
    cls = task_class(name)
    known = set().union(*(inspect.signature(task.__init__).parameters for task in TASKS.values()))
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"create_task: no task takes {', '.join(unknown)}; the options are {', '.join(sorted(known))}")
    accepted = inspect.signature(cls.__init__).parameters
    return cls(
        bert_config,
        max_seq_length,
        **{key: value for key, value in options.items() if key in accepted and value is not None},
    )


def task_parameters(name):
    """The options task `name`'s constructor takes."""
    return _options_of_class(task_class(name))


def _options_of_class(cls):
    return set(inspect.signature(cls.__init__).parameters) - {"self", "bert_config", "max_seq_length"}


def check_options_apply(name, flags):
    """Refuses, in one line, a flag given (not None) for task `name` whose constructor does not take
    it (e.g. --pooling with --model_type=classifier). `flags`: {option name: value}."""
    accepted = task_parameters(name)
    for option, value in flags.items():
        if value is not None and option not in accepted:
            takers = [task for task, other in TASKS.items() if option in inspect.signature(other.__init__).parameters]
            raise UsageError(
                f"--{option}: --model_type={name} has no such option; it is for --model_type={' or '.join(takers)}"
            )


# Beside a fine-tuning run's checkpoints: what its model is, so an export or conversion of the run
# needs no flags repeated (a run fed by a create_finetuning_data directory has no meta.json).
TASK_RECORD = "task.json"


def write_task_record(directory, task, **settings):
    """OUTPUT_DIR/task.json: the task's name, its constructor's options (labels, choices, query
    length) and `settings` (the tokenizer's casing, the sequence length)."""
    import json

    from keras_bert_common.files import atomic_output

    # The class's own constructor: a task defined outside the registry (a user's) is recorded too.
    options = {name: getattr(task, name) for name in sorted(_options_of_class(type(task))) if hasattr(task, name)}
    with atomic_output(os.path.join(directory, TASK_RECORD)) as writer:
        json.dump({"model_type": task.name, **options, **settings}, writer, indent=1, default=str)


def read_task_record(checkpoint, tool=None):
    """What the fine-tuning run holding `checkpoint` (its output_dir, a ckpt-N prefix in it or in
    its best/) trained: its task.json, else the meta.json of data it converted itself; only a
    registered task. None for anything else (a released model, a pretraining run). With `tool` (the
    command asking), a task outside the registry (a feature-based tagger) is refused instead,
    naming the runner's own export and the encoder-only way out."""
    import json

    import tensorflow as tf

    from keras_bert_common.files import exists, read_bytes

    if not checkpoint:
        return None
    directory = str(checkpoint).rstrip("/")
    if not tf.io.gfile.isdir(directory):
        directory = os.path.dirname(directory)
    if os.path.basename(directory) == "best":
        directory = os.path.dirname(directory)
    for name in (TASK_RECORD, "meta.json"):
        path = os.path.join(directory, name)
        if not exists(path):
            continue
        try:
            record = json.loads(read_bytes(path))
        except ValueError:
            return None
        if not isinstance(record, dict):
            return None
        if record.get("model_type") not in TASKS:
            if tool and name == TASK_RECORD and record.get("model_type"):
                raise UsageError(
                    f"{path}: the run trained {record['model_type']}, which {tool} cannot build; export it with "
                    f"the runner that trained it (its --export_dir), or pass --model_type=encoder for the encoder alone"
                )
            return None
        if name == "meta.json":  # the data's record: its own names for the labels
            record = {"model_type": record["model_type"], "label_names": record.get("labels"), **record}
        record["source"] = path
        return record
    return None
