"""`initialize_from_checkpoint`: a model's starting weights from Google's TF1 checkpoint, ours,
or a Hugging Face directory (config.json + model.safetensors, converted on the fly by Google's names).

Ours (object-based, written by `Trainer`) are read into a throwaway pretrainer of the same config
and handed over by Google's names, so the one name table decides what goes where for every task
model: the encoder always, heads where both models have them.
"""

import os
import re

import numpy as np
import tensorflow as tf

from keras_bert_impl.checkpoints.google_checkpoint import (
    LoadReport,
    assign_google_weights,
    google_weights,
    load_google_checkpoint,
    resolve_checkpoint_prefix,
)
from keras_bert_impl.checkpoints.name_table import implied_config
from keras_bert_impl.errors import CheckpointMismatchError
from keras_bert_impl.models.bert_encoder import BertEncoder
from keras_bert_impl.models.bert_pretrainer import BertPretrainer


def named_shapes(reader):
    """{name: (checkpoint key, shape)} of a checkpoint's variables. Google's checkpoints name
    them; ours (object based) are walked from their `model` to give each variable its model
    path, as a Trainer's checkpoint stores the weights under the optimizer's lists."""
    shapes = reader.get_variable_to_shape_map()
    if "_CHECKPOINTABLE_OBJECT_GRAPH" not in shapes:
        return {name: (name, shape) for name, shape in shapes.items()}
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    named = {}
    stack = [(child.node_id, child.local_name, 0) for child in graph.nodes[0].children if child.local_name == "model"]
    while stack:
        node_id, path, depth = stack.pop()
        node = graph.nodes[node_id]
        for attribute in node.attributes:
            if attribute.name == "VARIABLE_VALUE" and attribute.checkpoint_key in shapes:
                named.setdefault(path, (attribute.checkpoint_key, shapes[attribute.checkpoint_key]))
        if depth < 8:
            stack.extend((child.node_id, f"{path}/{child.local_name}", depth + 1) for child in node.children)
    return named


def is_hf_directory(path):
    """A Hugging Face BERT directory (config.json and model.safetensors), not a TF checkpoint's."""
    return (
        os.path.isdir(path)
        and os.path.isfile(os.path.join(path, "config.json"))
        and os.path.isfile(os.path.join(path, "model.safetensors"))
    )


def _hf_weights(path):
    from keras_bert_impl.checkpoints.hf_weights import load_hf_directory

    return load_hf_directory(path)[1]


def check_model_files(bert_config_file, max_seq_length, init_checkpoint=None, warn=None):
    """The model preflight every tool runs before heavy work: the config reads, `max_seq_length`
    fits its positions, and `init_checkpoint` (if any) fits it. Returns the BertConfig."""
    from keras_bert_impl.models.bert_config import BertConfig

    config = BertConfig.from_json_file(bert_config_file, **({"warn": warn} if warn else {}))
    config.check_max_seq_length(max_seq_length, bert_config_file)
    if init_checkpoint:
        check_init_checkpoint(init_checkpoint, config, bert_config_file)
    return config


def check_init_checkpoint(path, config, config_file="bert_config.json"):
    """Before any heavy work: `path` holds a checkpoint, and its shapes fit `config`. Raises
    FileNotFoundError or CheckpointMismatchError with one line: what differs, and the fix."""
    if is_hf_directory(path):
        prefix = path
        shapes = {name: (name, np.shape(value)) for name, value in _hf_weights(path).items()}
    else:
        prefix = resolve_checkpoint_prefix(path)
        try:
            shapes = named_shapes(tf.train.load_checkpoint(prefix))
        except (tf.errors.OpError, ValueError) as error:
            message = getattr(error, "message", str(error)).strip().splitlines()[0]
            raise CheckpointMismatchError(
                f"{prefix}: not a readable checkpoint ({message}); check --init_checkpoint"
            ) from None
    implied = implied_config(shapes)
    if "vocab_size" not in implied:
        raise CheckpointMismatchError(
            f"{prefix}: holds no BERT embeddings ({len(shapes)} other variables); "
            "pass a BERT checkpoint as --init_checkpoint"
        )
    differ = {key: value for key, value in implied.items() if getattr(config, key) != value}
    if set(differ) == {"vocab_size"} and differ["vocab_size"] < config.vocab_size:
        raise CheckpointMismatchError(
            f"{prefix}: has {differ['vocab_size']} word embeddings but {config_file} says vocab_size="
            f"{config.vocab_size}; to add words to a released model's vocabulary, extend it with "
            "build_vocab.py --base_vocab=... --init_checkpoint=... (docs/continue-pretraining.md) and "
            "pass the bert_config.json and checkpoint it writes"
        )
    if differ:
        ours = ", ".join(f"{key}={getattr(config, key)}" for key in differ)
        theirs = ", ".join(f"{key}={value}" for key, value in differ.items())
        raise CheckpointMismatchError(
            f"{prefix}: does not fit {config_file} (the checkpoint has {theirs}; the config "
            f"says {ours}); use the bert_config.json the checkpoint was trained with"
        )


def restore_optimizer(optimizer, path):
    """Phase 2 that continues phase 1's optimizer: its moments and step count from our checkpoint
    (Google's `--init_checkpoint` restarts it: weights only). Returns the restored step."""
    prefix = resolve_checkpoint_prefix(path)
    if not is_object_based(prefix):
        raise CheckpointMismatchError(
            f"{prefix}: a Google-format checkpoint holds weights only, no optimizer state "
            "to continue; drop --continue_optimizer or pass a run's --output_dir"
        )
    tf.train.Checkpoint(optimizer=optimizer).restore(prefix).expect_partial()
    return int(optimizer.iterations.numpy())


def is_object_based(prefix):
    return "_CHECKPOINTABLE_OBJECT_GRAPH" in tf.train.load_checkpoint(prefix).get_variable_to_shape_map()


def _head_mismatch(prefix, error):
    """The encoder was checked against the config before: a shape that differs now is a head's."""
    match = re.search(
        r"shape (\([^)]*\)) when attempting to restore variable with shape (\([^)]*\)) and name "
        r"([\w/]+)",
        str(error),
    )
    if not match:
        return CheckpointMismatchError(f"{prefix}: does not fit the model ({str(error).splitlines()[0]})")
    theirs, ours, name = match.groups()
    return CheckpointMismatchError(
        f"{prefix}: its {name} has shape {theirs}, this model's {ours}: a head of another task or label set; "
        "use the task and labels it was trained with (export: --model_type, --label_names), or start from the "
        "checkpoint it was fine-tuned from"
    )


def initialize_from_checkpoint(model, path):
    """Loads `path` (prefix or directory, or a Hugging Face directory) into `model`; returns the
    `LoadReport` (heads the checkpoint lacks, e.g. a released encoder's MLM head, are initialised)."""
    if is_hf_directory(path):
        return assign_google_weights(model, _hf_weights(path), source=path)
    prefix = resolve_checkpoint_prefix(path)
    if not is_object_based(prefix):
        return load_google_checkpoint(model, prefix)
    # A checkpoint of this very kind of model (a fine-tuned classifier for its export): all of it.
    try:
        status = tf.train.Checkpoint(model=model).restore(prefix)
    except ValueError as error:
        raise _head_mismatch(prefix, error) from None
    try:
        status.expect_partial().assert_existing_objects_matched()
        return LoadReport(loaded=[v.path for v in model.weights], initialized=[], unused=[])
    except (AssertionError, ValueError):
        pass
    encoder = getattr(model, "encoder", model)
    source = BertPretrainer(BertEncoder.from_bert_config(encoder.bert_config))
    status = tf.train.Checkpoint(model=tf.train.Checkpoint(encoder=source.encoder)).restore(prefix)
    try:
        status.expect_partial().assert_existing_objects_matched()
    except AssertionError as error:
        raise CheckpointMismatchError(
            f"{prefix}: does not hold this BERT model's weights ({str(error).splitlines()[0]}); "
            "use the bert_config.json it was trained with"
        ) from None
    except ValueError as error:
        raise CheckpointMismatchError(f"{prefix}: {error}; use the bert_config.json it was trained with") from None
    # Heads of the source (MLM/NSP) come too where the checkpoint has them; a head it lacks (the
    # NSP head of a masked-LM-only run) is not handed over, so it is neither loaded nor reported.
    missing = []
    for attribute, google_prefix in _SOURCE_HEADS:
        status = tf.train.Checkpoint(model=tf.train.Checkpoint(**{attribute: getattr(source, attribute)})).restore(
            prefix
        )
        try:
            status.expect_partial().assert_existing_objects_matched()
        except AssertionError:
            missing.append(google_prefix)
    weights = {name: value for name, value in google_weights(source).items() if not name.startswith(tuple(missing))}
    report = assign_google_weights(model, weights, source=prefix)
    # What else the checkpoint's model holds (a fine-tuned task head) is unused here: say so.
    handed = ["model/encoder"] + [f"model/{a}" for a, google in _SOURCE_HEADS if google not in missing]
    used = set().union(*(_variables_under(prefix, path) for path in handed))
    report.unused = sorted(path for node, path in _variables_under(prefix, "model").items() if node not in used) + list(
        report.unused
    )
    return report


def task_head_variables(path):
    """Paths of the variables a checkpoint of ours holds beyond the encoder and the pretraining
    heads: a fine-tuned task's head. [] for Google's and Hugging Face's checkpoints."""
    if is_hf_directory(path):
        return []
    prefix = resolve_checkpoint_prefix(path)
    if not is_object_based(prefix):
        return []
    shared = set().union(*(_variables_under(prefix, f"model/{name}") for name in ("encoder", *dict(_SOURCE_HEADS))))
    return sorted(where for node, where in _variables_under(prefix, "model").items() if node not in shared)


def _variables_under(prefix, path):
    """{node id: a path to it} of every variable an object-based checkpoint holds below `path`
    (e.g. "model/encoder"), read from its object graph: variables are stored once, under whichever
    object saved them first (often the optimizer), so their storage names do not tell."""
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(tf.train.load_checkpoint(prefix).get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    node = 0
    for name in path.split("/"):
        children = {child.local_name: child.node_id for child in graph.nodes[node].children}
        if name not in children:
            return {}
        node = children[name]
    found, seen, queue = {}, set(), [(node, path)]
    for node, where in queue:  # breadth first: the shortest path names a variable
        if node in seen:
            continue
        seen.add(node)
        if any(attribute.name == "VARIABLE_VALUE" for attribute in graph.nodes[node].attributes):
            found[node] = where
        queue.extend((child.node_id, f"{where}/{child.local_name}") for child in graph.nodes[node].children)
    return found


# The pretrainer's heads, as attributes of our models and prefixes of Google's names.
_SOURCE_HEADS = (("masked_lm", "cls/predictions/"), ("next_sentence", "cls/seq_relationship/"))


def checkpoint_weights(path, config):
    """{Google name: array} of what `path` holds: Google's checkpoint, ours (a run's directory or
    prefix; read into a pretrainer of `config`), or a Hugging Face directory. Heads it lacks are
    not made up."""
    from keras_bert_impl.checkpoints.google_checkpoint import read_google_checkpoint, weight_table

    if is_hf_directory(path):
        return _hf_weights(path)
    prefix = resolve_checkpoint_prefix(path)
    if not is_object_based(prefix):
        return read_google_checkpoint(prefix)
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    initialized = set(initialize_from_checkpoint(model, prefix).initialized)
    weights = google_weights(model)
    return {
        row.google_name: weights[row.google_name] for row in weight_table(model) if row.variable.path not in initialized
    }
