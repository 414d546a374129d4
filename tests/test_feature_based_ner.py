"""Feature-based NER (run_ner --feature_based): the layer choices, ELMo's scalar mix, the cache of
frozen layers (equal to the encoder's, reused, keyed), training, resume and export."""

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_impl.models.bert_config import BertConfig
from tests.finetuning_fixtures import _conll, _options, model_dir  # noqa: F401 -- model_dir: a fixture


def test_feature_layers_are_the_papers_rows():
    from keras_bert_impl.tasks.feature_tagging import FEATURE_LAYERS

    # BERT-base: 0 is the embedding output, 1..12 the transformer layers.
    expected = {
        "embeddings": ([0], "single"),
        "second_to_last": ([11], "single"),
        "last": ([12], "single"),
        "sum_last_four": ([9, 10, 11, 12], "scalar_mix"),
        "concat_last_four": ([9, 10, 11, 12], "concat"),
        "weighted_sum_all": (list(range(1, 13)), "scalar_mix"),
    }
    assert {name: (select(12), mode) for name, (select, mode) in FEATURE_LAYERS.items()} == expected


def test_layer_mix_against_numpy():
    from keras_bert_impl.layers.layer_mix import LayerMix

    layers = np.random.default_rng(0).normal(size=(3, 7, 4, 5)).astype(np.float32)  # [B, T, K, H]
    mix = LayerMix("scalar_mix", 4)
    mix.build(layers.shape)
    weights, gamma = np.array([0.3, -1.0, 2.0, 0.1], np.float32), 1.7
    mix.layer_weights.assign(weights)
    mix.gamma.assign(gamma)
    softmax = np.exp(weights) / np.exp(weights).sum()
    expected = gamma * sum(softmax[k] * layers[:, :, k] for k in range(4))
    np.testing.assert_allclose(mix(layers).numpy(), expected, rtol=1e-5, atol=1e-6)
    concat = LayerMix("concat", 4)(layers).numpy()
    np.testing.assert_array_equal(concat, np.concatenate([layers[:, :, k] for k in range(4)], axis=-1))
    np.testing.assert_array_equal(LayerMix("single", 1)(layers[:, :, :1]).numpy(), layers[:, :, 0])
    assert LayerMix.from_config(mix.get_config()).get_config() == mix.get_config()


def _records(model_dir, tmp_path):
    """The tiny CoNLL data as tagging records (run_ner's conversion), and the tokenizer's config."""
    from tfrecord_tools.finetuning_data import write_conll_data
    from tfrecord_tools.tokenization import FullTokenizer

    tokenizer = FullTokenizer(str(model_dir / "vocab.txt"), do_lower_case=True)
    out = tmp_path / "records"
    write_conll_data(str(_conll(tmp_path)), ["train", "dev"], tokenizer, 16, str(out))
    from tfrecord_tools.finetuning_data import FineTuningData

    return FineTuningData.open(str(out))


def test_cached_layers_equal_the_encoders_and_are_keyed(model_dir, tmp_path):
    from keras_bert_impl.checkpoints.init_checkpoint import initialize_from_checkpoint
    from keras_bert_impl.models.bert_encoder import BertEncoder
    from keras_bert_impl.runners.layer_features import LayerFeatures, cached_layer_features
    from tfrecord_tools.feature_specs import tagging_spec
    from tfrecord_tools.tfrecord_files import read_tfrecord

    data = _records(model_dir, tmp_path)
    config = BertConfig.from_json_file(str(model_dir / "bert_config.json"))
    encoder = BertEncoder.from_bert_config(config)
    initialize_from_checkpoint(encoder, str(model_dir / "bert_model.ckpt"))
    cache, logged = tmp_path / "cache", []
    path = cached_layer_features(encoder, [0, 2], data.path("dev"), str(cache), 16, 5, logged.append)
    features = LayerFeatures(path, 16, 2, config.hidden_size)

    # Independently: the encoder on the padded records, every position, all layers at once.
    tagging = read_tfrecord(data.path("dev"), tagging_spec(16))
    inputs = {name: tagging[name].astype(np.int32) for name in ("input_ids", "input_mask", "segment_ids")}
    outputs = encoder(inputs, training=False)
    for index in range(len(features)):
        length = int(tagging["input_mask"][index].sum())
        start, end = features.offsets[index], features.offsets[index + 1]
        assert end - start == length
        for k, layer in enumerate([outputs["embedding_output"], outputs["encoder_outputs"][1]]):
            # float16 storage: 3 significant digits.
            expected = layer.numpy()[index, :length]
            np.testing.assert_allclose(features.values[start:end, k], expected, rtol=2e-3, atol=2e-3)
    np.testing.assert_array_equal(features.label_ids, tagging["label_ids"])

    # The same key reuses the file; other layers or other weights get their own.
    mtime = os.path.getmtime(path)
    assert cached_layer_features(encoder, [0, 2], data.path("dev"), str(cache), 16, 5, logged.append) == path
    assert os.path.getmtime(path) == mtime and "reusing" in logged[-1]
    other_layers = cached_layer_features(encoder, [2], data.path("dev"), str(cache), 16, 5, logged.append)
    encoder.weights[0].assign(encoder.weights[0] + 0.01)
    other_weights = cached_layer_features(encoder, [0, 2], data.path("dev"), str(cache), 16, 5, logged.append)
    assert len({path, other_layers, other_weights}) == 3


def test_training_batches_resume_from_the_iterators_checkpoint(model_dir, tmp_path):
    from keras_bert_impl.checkpoints.init_checkpoint import initialize_from_checkpoint
    from keras_bert_impl.models.bert_encoder import BertEncoder
    from keras_bert_impl.runners.layer_features import LayerFeatures, cached_layer_features

    data = _records(model_dir, tmp_path)
    config = BertConfig.from_json_file(str(model_dir / "bert_config.json"))
    encoder = BertEncoder.from_bert_config(config)
    initialize_from_checkpoint(encoder, str(model_dir / "bert_model.ckpt"))
    path = cached_layer_features(encoder, [2], data.path("train"), str(tmp_path / "c"), 16, 5, lambda _: None)
    features = LayerFeatures(path, 16, 1, config.hidden_size)
    dataset = features.training_dataset(batch_size=5, seed=7)  # 12 examples: batches cross epochs

    iterator = iter(dataset)
    first = [next(iterator) for _ in range(3)]
    saved = tf.train.Checkpoint(iterator=iterator).save(str(tmp_path / "it" / "ckpt"))
    straight = [next(iterator) for _ in range(3)]
    resumed_iterator = iter(dataset)
    tf.train.Checkpoint(iterator=resumed_iterator).restore(saved)
    resumed = [next(resumed_iterator) for _ in range(3)]
    for a, b in zip(straight, resumed):
        for name in a:
            np.testing.assert_array_equal(a[name].numpy(), b[name].numpy())
    # Epoch 0 (steps 0-1 and 2 of step 2's 5) holds each example once.
    seen = np.concatenate([batch["label_ids"].numpy()[:, :2] for batch in first])[:12]
    assert sorted(map(tuple, seen)) == sorted(map(tuple, features.label_ids[:, :2]))


def _ner_options(model_dir, out, conll, **overrides):
    from keras_bert_impl.runners.run_ner import NerOptions

    values = dict(
        data_dir=str(conll),
        feature_based="concat_last_four",
        lstm_size=16,
        do_train=True,
        do_eval=True,
        learning_rate=3e-2,
        num_train_epochs=30.0,
        train_batch_size=3,
        save_checkpoints_steps=20,
        iterations_per_loop=20,
    )
    values.update(overrides)
    return _options(model_dir, out, NerOptions, **values)


def test_feature_based_ner_trains_frozen_evaluates_and_exports(model_dir, tmp_path):
    from keras_bert_impl.checkpoints.google_checkpoint import read_google_checkpoint
    from keras_bert_impl.runners.run_ner import run_ner

    conll, out = _conll(tmp_path), tmp_path / "ner"
    options = _ner_options(model_dir, out, conll, export_dir=str(tmp_path / "export"))
    result = run_ner(options)
    assert result.eval["eval_f1"] > 0.9  # the tiny data memorised through a BiLSTM alone
    assert os.listdir(out / "layer_features")  # computed once, kept

    # Frozen: the checkpoint's encoder equals the one it started from.
    from keras_bert_impl.models.bert_config import BertConfig
    from keras_bert_impl.runners.run_ner import FeatureTaggingTask

    config = BertConfig.from_json_file(str(model_dir / "bert_config.json"))
    from tfrecord_tools.finetuning_data import FineTuningData

    labels = FineTuningData.open(str(out)).labels
    model = FeatureTaggingTask(config, 16, labels, "concat_last_four", 16).build_model()
    tf.train.Checkpoint(model=model).restore(tf.train.latest_checkpoint(str(out))).expect_partial()
    initial = read_google_checkpoint(str(model_dir / "bert_model.ckpt"))
    table = {"bert/embeddings/word_embeddings": model.encoder.embeddings.embedding_table}
    for name, variable in table.items():
        np.testing.assert_array_equal(variable.numpy(), initial[name])

    # The SavedModel tags raw text as the run did: the dev predictions' tags, from text alone.
    served = tf.saved_model.load(str(tmp_path / "export"))
    blocks = [block.split("\n") for block in (out / "dev_predictions.txt").read_text().strip().split("\n\n")]
    texts = [" ".join(line.split()[0] for line in block) for block in blocks]
    outputs = served.signatures["serving_default"](text_a=tf.constant(texts))
    for row, block in enumerate(blocks):
        tags = [t.decode() for t in outputs["tags"][row].numpy()]
        # Pieces: [CLS] word ... (one piece per word in this vocabulary) [SEP].
        assert tags[1 : 1 + len(block)] == [line.split()[2] for line in block]

    # Evaluation alone (no training) restores the run and reuses the cache.
    logged = []
    again = run_ner(_ner_options(model_dir, out, out, do_train=False, export_dir=None), log=logged.append)
    assert again.eval["eval_f1"] == pytest.approx(result.eval["eval_f1"])
    assert any("reusing the cached encoder layers" in line for line in logged)


def test_feature_based_ner_resumes_exactly(model_dir, tmp_path):
    """Resumed from a mid-run checkpoint, the run ends with the weights of the uninterrupted run."""
    from keras_bert_impl.runners.run_ner import run_ner

    conll, straight = _conll(tmp_path), tmp_path / "straight"
    settings = dict(num_train_epochs=3.0, save_checkpoints_steps=4, iterations_per_loop=4, do_eval=False)
    run_ner(_ner_options(model_dir, straight, conll, feature_based="weighted_sum_all", **settings))
    final = tf.train.latest_checkpoint(str(straight))
    assert final.endswith("ckpt-12")

    resumed = tmp_path / "resumed"
    shutil.copytree(straight, resumed)
    for name in os.listdir(resumed):
        if name.startswith(("ckpt-8", "ckpt-12")):
            os.remove(resumed / name)
    (resumed / "checkpoint").write_text('model_checkpoint_path: "ckpt-4"\nall_model_checkpoint_paths: "ckpt-4"\n')
    logged = []
    run_ner(_ner_options(model_dir, resumed, conll, feature_based="weighted_sum_all", **settings), log=logged.append)
    assert any("resumed from" in line and "step 4" in line for line in logged)
    reader_a = tf.train.load_checkpoint(final)
    reader_b = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(resumed)))
    reader_mid = tf.train.load_checkpoint(str(straight / "ckpt-4"))
    names = [name for name in reader_a.get_variable_to_shape_map() if name.endswith("/.ATTRIBUTES/VARIABLE_VALUE")]
    assert set(names) <= set(reader_b.get_variable_to_shape_map())
    # Steps 5-12 changed weights (so equal final weights are not the mid-run ones kept) ...
    assert sum(not np.array_equal(reader_a.get_tensor(n), reader_mid.get_tensor(n)) for n in names) > 10
    # ... and the resumed run made the same changes.
    for name in names:
        np.testing.assert_allclose(reader_a.get_tensor(name), reader_b.get_tensor(name), rtol=1e-6, atol=1e-7)

    # Another layer choice cannot resume these checkpoints: one line naming the flag.
    from keras_bert_impl.errors import CheckpointMismatchError

    with pytest.raises(CheckpointMismatchError, match="--feature_based"):
        run_ner(_ner_options(model_dir, resumed, conll, feature_based="last", **settings))
    # Nor can fine-tuning (the flag left out): the line names it, not tf.data's iterator internals.
    with pytest.raises(CheckpointMismatchError, match=r"--feature_based=weighted_sum_all, --lstm_size=\d+, not unset"):
        run_ner(_ner_options(model_dir, resumed, conll, feature_based=None, **settings))
