"""`extract_features`: the paper's feature-based approach, Google's extract_features.py output.

Each input line is one example, `text_a ||| text_b` for a pair; the output is one JSON object
per line: `linex_index`, then for each token its `layers` (`index`, `values` rounded to 6
decimals) from the requested encoder layers (-1 is the last)."""

import collections
import dataclasses
import re

import numpy as np
import tensorflow as tf

from keras_bert_common.errors import UsageError
from keras_bert_impl.training.bucketing import prediction_batches
from tfrecord_tools.classification_data import pack_pairs

_PAIR = re.compile(r"^(.*) \|\|\| (.*)$")
# Examples bucketed together (in batches); their JSON lines still leave in input order.
CHUNK_BATCHES = 32


def read_lines(path):
    """Google's reader: (text_a, text_b or None) per line, blank lines included as empty text."""
    examples = []
    with open(path, encoding="utf-8", errors="replace") as reader:
        for line in reader:
            line = line.strip()
            match = _PAIR.match(line)
            examples.append((match.group(1), match.group(2)) if match else (line, None))
    return examples


def _packed(tokenizer, examples, max_seq_length):
    ids_a = tokenizer.tokenize_to_ids([a for a, _ in examples])
    ids_b = tokenizer.tokenize_to_ids([b or "" for _, b in examples])
    ids_b = [ids if b is not None else None for ids, (_, b) in zip(ids_b, examples)]
    return pack_pairs(ids_a, ids_b, max_seq_length, tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"])


def outputs_in_order(compute, features, batch_size=32, max_seq_length=128, pad_to_max_seq_length=False):
    """Yields (example index, `compute`'s numpy outputs for its batch, its row there) in input
    order. Examples go in chunks of `CHUNK_BATCHES` batches, length-bucketed within a chunk
    (`training.bucketing`) unless `pad_to_max_seq_length`; `compute` maps model inputs to a list
    of [B, ...] tensors and is traced once per bucket length."""
    runs = {}
    lengths = features["input_mask"].sum(axis=1)
    chunk = CHUNK_BATCHES * batch_size
    for chunk_start in range(0, len(lengths), chunk):
        chunk_lengths = lengths[chunk_start : chunk_start + chunk]
        rows_of = {}  # example index -> (the outputs of its batch, its row there)
        for indices, length in prediction_batches(chunk_lengths, batch_size, max_seq_length, not pad_to_max_seq_length):
            indices = indices + chunk_start
            batch = {name: value[indices, :length].astype(np.int32) for name, value in features.items()}
            if batch["input_ids"].shape not in runs:
                runs[batch["input_ids"].shape] = tf.function(compute)
            outputs = [output.numpy() for output in runs[batch["input_ids"].shape](batch)]
            rows_of.update((int(index), (outputs, row)) for row, index in enumerate(indices))
        for index in range(chunk_start, chunk_start + len(chunk_lengths)):
            outputs, row = rows_of.pop(index)
            yield index, outputs, row


def extract_features(
    encoder, tokenizer, examples, layer_indexes, max_seq_length=128, batch_size=32, pad_to_max_seq_length=False
):
    """Yields Google's JSON objects (as OrderedDicts), one per example, in order."""
    num_layers = encoder.bert_config.num_hidden_layers
    for index in layer_indexes:
        if not -num_layers <= index < num_layers:
            raise UsageError(f"--layers: {index} is outside the model's {num_layers} layers")
    features = _packed(tokenizer, examples, max_seq_length)
    lengths = features["input_mask"].sum(axis=1)

    def compute(inputs):
        return [encoder(inputs, training=False)["encoder_outputs"][i] for i in layer_indexes]

    for index, layers, row in outputs_in_order(compute, features, batch_size, max_seq_length, pad_to_max_seq_length):
        length = int(lengths[index])
        tokens = tokenizer.convert_ids_to_tokens(features["input_ids"][index][:length].tolist())
        yield collections.OrderedDict(
            linex_index=index,
            features=[
                collections.OrderedDict(
                    token=token,
                    layers=[
                        collections.OrderedDict(
                            index=layer_index, values=[round(float(x), 6) for x in layer[row, position]]
                        )
                        for layer_index, layer in zip(layer_indexes, layers)
                    ],
                )
                for position, token in enumerate(tokens)
            ],
        )


def embed_sentences(model, tokenizer, examples, max_seq_length=128, batch_size=32, pad_to_max_seq_length=False):
    """Yields {"linex_index", "embedding"} per example, in order: `model` is a sentence encoder
    (`SentenceEmbeddingTask`'s); the floats are the float32 values, unrounded."""
    features = _packed(tokenizer, examples, max_seq_length)

    def compute(inputs):
        return [model(inputs, training=False)["embedding"]]

    for index, (embeddings,), row in outputs_in_order(
        compute, features, batch_size, max_seq_length, pad_to_max_seq_length
    ):
        yield collections.OrderedDict(linex_index=index, embedding=[float(x) for x in embeddings[row]])


@dataclasses.dataclass
class ExtractOptions:
    """What extract_features.py extracts (Google's flag names)."""

    input_file: str
    output_file: str
    bert_config_file: str
    vocab_file: str
    init_checkpoint: str = None
    layers: str = "-1,-2,-3,-4"
    max_seq_length: int = 128
    do_lower_case: bool = True
    batch_size: int = 32
    allow_random_weights: bool = False
    pad_to_max_seq_length: bool = False
    # Set: one sentence embedding per line instead of token features (SentenceEmbeddingTask's pooling
    # of the last layer); normalize_embeddings None takes the sentence-transformers files' setting.
    pooling: str = None
    normalize_embeddings: bool = None


def run_extract_features(options, log=print):
    """extract_features.py: every check first, then one JSON line per input line, written atomically."""
    import json

    from keras_bert_common.files import (
        atomic_output,
        check_outputs_distinct,
        check_readable_file,
        check_text_files,
        check_writable,
    )
    from keras_bert_impl.checkpoints.init_checkpoint import check_model_files, initialize_from_checkpoint
    from keras_bert_impl.models.bert_encoder import BertEncoder
    from tfrecord_tools.tokenization import FullTokenizer, validate_case_matches_checkpoint

    try:
        layer_indexes = [int(x) for x in options.layers.split(",")]
    except ValueError:
        raise UsageError(f"--layers={options.layers}: expected a comma list of integers such as -1,-2,-3,-4") from None
    if options.normalize_embeddings is not None and options.pooling is None:
        raise UsageError("--normalize_embeddings: applies to sentence embeddings; pass --pooling=mean|cls|max too")
    check_readable_file(options.input_file, "--input_file", "text file")
    check_readable_file(options.vocab_file, "--vocab_file", "vocab.txt")
    check_writable(options.output_file, "--output_file")
    check_outputs_distinct([options.output_file], [options.input_file, options.vocab_file])
    check_text_files([options.input_file], "--input_file")
    validate_case_matches_checkpoint(options.do_lower_case, options.init_checkpoint)
    config = check_model_files(options.bert_config_file, options.max_seq_length, options.init_checkpoint)
    if not (options.init_checkpoint or options.allow_random_weights):
        raise UsageError(
            "no --init_checkpoint: the features would come from random weights; pass --init_checkpoint "
            "(or --allow_random_weights)"
        )
    tokenizer = FullTokenizer(options.vocab_file, do_lower_case=options.do_lower_case)
    config.check_vocab_size(len(tokenizer.inv_vocab), options.vocab_file, options.bert_config_file)
    examples = read_lines(options.input_file)
    if not examples:
        raise UsageError(
            f"{options.input_file}: is empty; --input_file holds one text (or 'text_a ||| text_b') per line"
        )
    encoder = BertEncoder.from_bert_config(config)
    for index in [] if options.pooling else layer_indexes:  # before the work; pooling reads the last layer
        if not -config.num_hidden_layers <= index < config.num_hidden_layers:
            raise UsageError(f"--layers: {index} is outside the model's {config.num_hidden_layers} layers")
    if options.init_checkpoint:
        report = initialize_from_checkpoint(encoder, options.init_checkpoint)
        log(f"init_checkpoint {options.init_checkpoint}: {report.summary()}")
    from keras_bert_common import stop
    from keras_bert_common.progress import Progress

    progress = Progress(len(examples), "examples", log)
    batching = (options.max_seq_length, options.batch_size, options.pad_to_max_seq_length)
    if options.pooling:
        from keras_bert_impl.checkpoints.sentence_transformers import resolve_pooling
        from keras_bert_impl.tasks.sentence_embedding import SentenceEmbeddingTask

        settings = resolve_pooling(options.pooling, options.normalize_embeddings, options.init_checkpoint, log)
        model = SentenceEmbeddingTask(config, options.max_seq_length, **settings).build_model(encoder)
        records = embed_sentences(model, tokenizer, examples, *batching)
    else:
        records = extract_features(encoder, tokenizer, examples, layer_indexes, *batching)
    with atomic_output(options.output_file) as writer:
        for done, record in enumerate(records, start=1):
            writer.write(json.dumps(record) + "\n")
            progress.update(done)
            stop.raise_if_requested()
    log(f"wrote {options.output_file}: {len(examples)} examples")
    return len(examples)
