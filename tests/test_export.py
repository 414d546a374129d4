"""SavedModel export: loaded by a fresh process with only tensorflow + tensorflow_text, every
signature gives the Keras model's outputs; raw-text ids equal FullTokenizer's."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_impl.serving.export import export_saved_model
from keras_bert_impl.serving.packer import Packer
from keras_bert_impl.tasks.registry import create_task
from tests.conftest import REPO_ROOT, randomize_weights, tiny_bert_config
from tfrecord_tools.classification_data import pack_pairs, truncate_pair_from_end
from tfrecord_tools.tokenization import FullTokenizer

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    "where",
    "?",
    ".",
    ",",
    "!",
    "h",
    "##e",
    "##l",
    "##o",
    "w",
    "##r",
    "##d",
    "中",
    "文",
    "un",
    "##aff",
    "##able",
    "a",
    "dog",
]
LENGTH = 12
TEXT_A = ["the cat sat on the mat .", "", "Héllo, wörld! 中文 " * 30, "where ? unaffable"]
TEXT_B = ["where ?", "the dog", "", "Héllo wörld"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    config = tiny_bert_config(len(VOCAB), max_position_embeddings=32)
    models = {}
    for model_type, labels in (
        ("encoder", None),
        ("pretrainer", None),
        ("masked_lm", None),
        ("classifier", ["no", "yes", "maybe"]),
        ("squad", None),
        ("ner", ["O", "B-X", "I-X"]),
        ("multiple_choice", None),
    ):
        task = create_task(model_type, config, LENGTH, label_names=labels, num_choices=2, max_query_length=4)
        model = randomize_weights(task.build_model(), seed=len(models), scale=0.2)
        export_saved_model(model, task, str(root / "vocab.txt"), True, str(root / model_type))
        models[model_type] = (model, labels, task)
    return root, models


def _inputs(tokenizer, model_type):
    pair = model_type in ("pretrainer", "classifier", "squad")
    ids_a = tokenizer.tokenize_to_ids(TEXT_A)
    if model_type == "squad":  # the question keeps at most max_query_length (4) tokens
        ids_a = [ids[:4] for ids in ids_a]
    packed = pack_pairs(ids_a, tokenizer.tokenize_to_ids(TEXT_B) if pair else None, LENGTH, 2, 3)
    return {name: value.astype(np.int32) for name, value in packed.items()}


def _keras_outputs(model, model_type, inputs):
    if model_type in ("pretrainer", "masked_lm"):
        positions = np.tile(np.arange(LENGTH, dtype=np.int32), (len(inputs["input_ids"]), 1))
        outputs = model({**inputs, "masked_lm_positions": positions})
        expected = {"masked_lm_predictions": np.asarray(outputs["masked_lm_logits"]).argmax(-1)}
        if model_type == "pretrainer":
            logits = np.asarray(outputs["next_sentence_logits"], np.float64)
            expected["next_sentence_probabilities"] = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
        return expected
    return {name: np.asarray(value) for name, value in model(inputs).items() if name != "encoder_outputs"}


def test_every_signature_in_a_fresh_process(exported):
    root, models = exported
    tokenizer = FullTokenizer(str(root / "vocab.txt"))
    request, expected = {}, {}
    for model_type, (model, _, _) in models.items():
        calls = {}
        if model_type == "multiple_choice":
            contexts, endings = TEXT_A[:2], [TEXT_B[:2], TEXT_B[2:]]
            ids = pack_pairs(
                [i for i in tokenizer.tokenize_to_ids(contexts) for _ in range(2)],
                tokenizer.tokenize_to_ids([e for row in endings for e in row]),
                LENGTH,
                2,
                3,
            )
            inputs = {name: value.reshape(2, 2, LENGTH).astype(np.int32) for name, value in ids.items()}
            calls["serving_default"] = {"text_a": contexts, "text_b": endings}
        else:
            inputs = _inputs(tokenizer, model_type)
            calls["serving_default"] = {
                "text_a": TEXT_A,
                **({"text_b": TEXT_B} if model_type in ("pretrainer", "classifier", "squad") else {}),
            }
        calls["serve_ids"] = {name: value.tolist() for name, value in inputs.items()}
        spec = {
            name: tf.train.Feature(int64_list=tf.train.Int64List(value=value.reshape(len(value), -1)[0].tolist()))
            for name, value in inputs.items()
        }
        calls["serve_examples"] = {
            "examples": [tf.train.Example(features=tf.train.Features(feature=spec)).SerializeToString().hex()]
        }
        request[model_type] = {"dir": str(root / model_type), "calls": calls}
        expected[model_type] = (inputs, _keras_outputs(model, model_type, inputs))
    # A copy outside the repository, run from elsewhere: nothing of ours is importable.
    script = root / "loader.py"
    script.write_text(open(os.path.join(REPO_ROOT, "tests", "export_loader.py")).read())
    run = subprocess.run(
        [sys.executable, str(script), json.dumps(request), str(root / "outputs.npz")],
        capture_output=True,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=""),
        cwd=str(root),
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "modules: []" in run.stdout  # none of our code was imported
    results = np.load(root / "outputs.npz", allow_pickle=True)  # string outputs are object arrays
    for model_type, (inputs, want) in expected.items():
        text = f"{model_type}/serving_default"
        if model_type != "multiple_choice":
            # Raw text is tokenized and packed exactly as tfrecord_tools does it.
            for name in ("input_ids", "input_mask", "segment_ids"):
                assert np.array_equal(results[f"{text}/{name}"], inputs[name]), (model_type, name)
        for signature in ("serving_default", "serve_ids", "serve_examples"):
            for name, value in want.items():
                got = results[f"{model_type}/{signature}/{name}"]
                rows = slice(0, 1) if signature == "serve_examples" else slice(None)
                assert np.abs(got.astype(np.float64) - np.asarray(value)[rows]).max() < 1e-5, (
                    model_type,
                    signature,
                    name,
                )
    labels = results["classifier/serving_default/labels"]
    assert set(labels.tolist()) <= {b"no", b"yes", b"maybe"} and len(labels) == 4
    tags = results["ner/serving_default/tags"]
    assert tags.shape == (4, LENGTH)
    # Offsets cut each context token's word out of the original bytes.
    tokens = results["squad/serving_default/tokens"][3]
    starts, ends = (
        results["squad/serving_default/token_start_offsets"][3],
        results["squad/serving_default/token_end_offsets"][3],
    )
    segment = results["squad/serving_default/segment_ids"][3]
    context = TEXT_B[3].encode()
    pieces = [(tokens[i], context[starts[i] : ends[i]]) for i in range(LENGTH) if segment[i] == 1 and starts[i] >= 0]
    assert pieces and pieces[0] == (b"h", "Héllo".encode())
    assert starts[0] == -1 and tokens[0] == b"[CLS]"


def test_saved_model_cli_lists_the_signatures(exported):
    root, _ = exported
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    run = subprocess.run(
        [cli, "show", "--dir", str(root / "classifier"), "--all"],
        capture_output=True,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    for expected in (
        "signature_def['serving_default']",
        "signature_def['serve_ids']",
        "signature_def['serve_examples']",
        "inputs['text_a'] tensor_info",
        "dtype: DT_STRING",
        "outputs['probabilities'] tensor_info",
        "shape: (-1, 3)",
    ):
        assert expected in run.stdout, expected


def test_saved_models_hold_no_xla_compiled_function(exported):
    """The fused kernels are traced as plain ops at export: no function or call in any exported
    graph asks for XLA (a serving runtime without XLA's JIT runs it), yet the GELU is there."""
    from tensorflow.core.protobuf import saved_model_pb2

    root, models = exported
    for model_type in models:
        saved = saved_model_pb2.SavedModel()
        saved.ParseFromString((root / model_type / "saved_model.pb").read_bytes())
        graph = saved.meta_graphs[0].graph_def
        nodes = [*graph.node, *(node for function in graph.library.function for node in function.node_def)]
        attributes = [*(node.attr for node in nodes), *(function.attr for function in graph.library.function)]
        assert not any(attr["_XlaMustCompile"].b for attr in attributes if "_XlaMustCompile" in attr), model_type
        assert any(node.op == "Tanh" for node in nodes), model_type  # the plain GELU's


def test_refuses_to_overwrite_without_force(exported):
    root, models = exported
    model, _, task = models["encoder"]
    with pytest.raises(FileExistsError, match="already exists; pass --force"):
        export_saved_model(model, task, str(root / "vocab.txt"), True, str(root / "encoder"))
    assert not [name for name in os.listdir(root) if ".tmp-" in name]


def test_graph_truncation_equals_google_truncation():
    packer = Packer(None, 2, 3, max_seq_length=10, variable_seq_length=False)
    for length_a in range(0, 12):
        for length_b in range(0, 12):
            a, b = list(range(length_a)), list(range(length_b))
            truncate_pair_from_end(a, b, 7)
            keep_a, keep_b = packer.budgets(tf.constant([length_a]), tf.constant([length_b]))
            assert (int(keep_a[0]), int(keep_b[0])) == (len(a), len(b)), (length_a, length_b)


def test_variable_seq_length_pads_to_the_longest_row():
    from tfrecord_tools.bert_text_tokenizer import BertTextTokenizer

    tokenizer = BertTextTokenizer(VOCAB)
    texts_a, texts_b = tf.constant(["the cat", "the cat sat on the mat ."]), tf.constant(["dog", ""])
    fixed = Packer(tokenizer, 2, 3, LENGTH, variable_seq_length=False).pack(texts_a, texts_b)
    variable = Packer(tokenizer, 2, 3, LENGTH, variable_seq_length=True).pack(texts_a, texts_b)
    # Row 2: [CLS] the cat sat on the mat . [SEP] (B is empty: a single sequence) = 9 tokens.
    assert variable["input_ids"].shape == (2, 9)
    for name in ("input_ids", "input_mask", "segment_ids", "token_start_offsets"):
        assert np.array_equal(variable[name].numpy(), fixed[name].numpy()[:, :9]), name
    assert not fixed["input_mask"].numpy()[:, 9:].any()
    assert fixed["input_ids"].numpy()[0, :5].tolist() == [2, 5, 6, 3, 28] and fixed["segment_ids"].numpy()[
        0, :6
    ].tolist() == [0, 0, 0, 0, 1, 1]


def test_mismatched_batches_are_refused_and_empty_batches_served(exported):
    """serving_default pairs text_b[i] with text_a[i]: lists of other lengths are an error naming
    them (not "gamma" broadcast over both rows, nor a node called Minimum_2), and an empty batch
    returns empty outputs from every signature that takes text."""
    root, _ = exported
    loaded = {name: tf.saved_model.load(str(root / name)) for name in ("classifier", "multiple_choice", "encoder")}
    pair = loaded["classifier"].signatures["serving_default"]
    for rows_a, rows_b in ((["alpha", "beta"], ["gamma"]), (["a", "b", "c"], ["d", "e"])):
        with pytest.raises(tf.errors.InvalidArgumentError, match="text_a and text_b must have the same number of rows"):
            pair(text_a=tf.constant(rows_a), text_b=tf.constant(rows_b))
    choice = loaded["multiple_choice"].signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="text_a and text_b must have the same number of rows"):
        choice(text_a=tf.constant(["alpha", "beta"]), text_b=tf.constant([["gamma", "delta"]]))
    empty = tf.constant([], tf.string)
    outputs = pair(text_a=empty, text_b=empty)
    assert outputs["logits"].shape == (0, 3) and outputs["labels"].shape == (0,)
    assert outputs["input_ids"].shape[0] == 0
    outputs = choice(text_a=empty, text_b=tf.zeros([0, 2], tf.string))
    assert outputs["logits"].shape == (0, 2)
    outputs = loaded["encoder"].signatures["serving_default"](text_a=empty)
    assert all(value.shape[0] == 0 for value in outputs.values())
    # A full batch still pairs row by row.
    both = pair(text_a=tf.constant(["the cat", "the dog"]), text_b=tf.constant(["sat", "on the mat"]))
    assert both["segment_ids"].numpy().sum(axis=1).tolist() == [2, 4]


def test_masked_lm_serving_keeps_mask_whole_and_predicts_there(exported):
    """Fill-mask from raw text: `[MASK]` in a masked LM's text is the [MASK] id (Google's
    tokenizer, which other exports keep, would split it into `[`, `mask`, `]`), next to words and
    inside one, and the prediction at it is the Keras model's argmax over the vocabulary."""
    root, models = exported
    model, _, _ = models["masked_lm"]
    texts = ["the [MASK] sat on the mat .", "un[MASK] [MASK][MASK]", "the [mask] cat"]
    outputs = tf.saved_model.load(str(root / "masked_lm")).signatures["serving_default"](text_a=tf.constant(texts))
    ids = outputs["input_ids"].numpy()
    index = {token: i for i, token in enumerate(VOCAB)}
    mask, unk = index["[MASK]"], index["[UNK]"]
    want = [
        [2, index["the"], mask, index["sat"], index["on"], index["the"], index["mat"], index["."], 3],
        [2, index["un"], mask, mask, mask, 3],
        [2, index["the"], unk, unk, unk, index["cat"], 3],  # lower case is no special token: [ mask ] -> 3 x [UNK]
    ]
    for row, expected in zip(ids, want):
        assert row[: len(expected)].tolist() == expected and not row[len(expected) :].any()
    positions = np.tile(np.arange(ids.shape[1], dtype=np.int32), (len(ids), 1))
    logits = model(
        {
            "input_ids": ids,
            "input_mask": outputs["input_mask"].numpy(),
            "segment_ids": outputs["segment_ids"].numpy(),
            "masked_lm_positions": positions,
        }
    )["masked_lm_logits"]
    predictions = outputs["masked_lm_predictions"].numpy()
    assert np.array_equal(predictions[ids == mask], np.asarray(logits).argmax(-1)[ids == mask])
    # Other tasks serve Google's tokens: "[MASK]" in a classifier's text is no mask.
    classified = tf.saved_model.load(str(root / "classifier")).signatures["serving_default"](
        text_a=tf.constant(texts[:1]), text_b=tf.constant([""])
    )
    assert mask not in classified["input_ids"].numpy()
