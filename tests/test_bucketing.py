"""Length-bucketed batches: every example once, cut to its bucket; the runners' outputs equal the
padded mode's on the same weights; a bucketed run resumes exactly."""

import json

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_impl.training.bucketing import bucket_by_length, bucket_lengths, prediction_batches
from tests.finetuning_fixtures import _options, model_dir  # noqa: F401 -- model_dir: a fixture

SEQ = 32  # buckets 8, 16, 32


def test_bucket_lengths_and_prediction_batches():
    assert bucket_lengths(128) == (8, 16, 32, 48, 64, 96, 128)
    assert bucket_lengths(7) == (7,)
    assert bucket_lengths(100) == (8, 16, 32, 48, 64, 96, 100)
    lengths = np.random.default_rng(0).integers(1, SEQ + 1, 50)
    batches = prediction_batches(lengths, 3, SEQ)
    covered = np.concatenate([indices for indices, _ in batches])
    assert sorted(covered.tolist()) == list(range(50))
    for indices, length in batches:
        assert length in (8, 16, 32) and lengths[indices].max() <= length
        assert length == min(b for b in (8, 16, 32) if b >= lengths[indices].max())
    padded = prediction_batches(lengths, 3, SEQ, bucketed=False)
    assert [length for _, length in padded] == [SEQ] * 17
    assert np.concatenate([indices for indices, _ in padded]).tolist() == list(range(50))


def _classification_task(seq=SEQ):
    from keras_bert_impl.tasks.classification import ClassificationTask
    from tests.conftest import tiny_bert_config

    return ClassificationTask(tiny_bert_config(99), seq, label_names=["0", "1"])


def _examples(count, seq=SEQ, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, seq + 1, count)
    ids = np.zeros((count, seq), np.int32)
    for row, length in enumerate(lengths):
        ids[row, :length] = rng.integers(5, 90, length)
        ids[row, 0] = row + 100  # which example this is
    return {
        "input_ids": ids,
        "input_mask": (ids != 0).astype(np.int32),
        "segment_ids": np.zeros_like(ids),
        "label_ids": (np.arange(count) % 2)[:, None].astype(np.int32),
    }, lengths


def test_training_batches_hold_one_bucket_cut_to_it_and_every_example_once():
    task = _classification_task()
    examples, lengths = _examples(41)
    dataset = tf.data.Dataset.from_tensor_slices(examples).shuffle(41, seed=1)
    seen = []
    for batch in bucket_by_length(dataset, task, 4, SEQ, drop_remainder=False):
        ids = batch["input_ids"].numpy()
        rows = ids[:, 0] - 100
        batch_lengths = lengths[rows]
        bucket = ids.shape[1]
        assert bucket == min(b for b in (8, 16, 32) if b >= batch_lengths.max())
        # One bucket per batch: every example's own bucket is this one.
        assert all(min(b for b in (8, 16, 32) if b >= n) == bucket for n in batch_lengths)
        for row, example in zip(ids, rows):  # cut, not changed
            np.testing.assert_array_equal(row, examples["input_ids"][example, :bucket])
        assert set(batch) == set(examples) and batch["label_ids"].shape == (len(rows), 1)
        seen.extend(rows.tolist())
    assert sorted(seen) == list(range(41))


def test_multiple_choice_cuts_every_choice_to_the_longest():
    from keras_bert_impl.tasks.multiple_choice import MultipleChoiceTask
    from tests.conftest import tiny_bert_config

    task = MultipleChoiceTask(tiny_bert_config(99), 20, num_choices=3)
    mask = np.zeros((2, 3, 20), np.int32)
    mask[0, 0, :5], mask[0, 1, :11], mask[0, 2, :3] = 1, 1, 1
    mask[1, :, :4] = 1
    ids = mask * (np.arange(60).reshape(3, 20) + 1)
    features = {"input_ids": ids.reshape(2, 60), "input_mask": mask.reshape(2, 60), "label_ids": np.zeros((2, 1))}
    np.testing.assert_array_equal(task.sequence_lengths(features).numpy(), [11, 4])
    cut = task.cut_to_length(features, 16)
    assert cut["input_ids"].shape == (2, 48)
    np.testing.assert_array_equal(cut["input_ids"].numpy().reshape(2, 3, 16), ids[:, :, :16])
    np.testing.assert_array_equal(cut["label_ids"], features["label_ids"])


def _varied_mrpc(tmp_path):
    """MRPC-format pairs from 2 to 14 words a side: lengths across the 8, 16 and 32 buckets."""
    rng = np.random.default_rng(0)
    filler = ["the", "movie", "was", "a", "film", "is", "plot"]
    rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
    for i in range(30):
        label = i % 2
        words = ["good", "great", "fine"] if label else ["bad", "awful", "poor"]
        a = " ".join(rng.choice(filler, rng.integers(1, 14))) + " " + rng.choice(words)
        b = " ".join(rng.choice(filler, rng.integers(0, 13))) + " " + rng.choice(words)
        rows.append(f"{label}\t{i}\t{i}\t{a}\t{b}")
    data = tmp_path / "mrpc"
    data.mkdir()
    (data / "train.tsv").write_text("\n".join(rows) + "\n")
    (data / "dev.tsv").write_text("\n".join(rows[:17]) + "\n")
    test_rows = ["index\t#1 ID\t#2 ID\t#1 String\t#2 String"] + [
        f"{i}\t1\t2\t{row.split(chr(9))[3]}\t{row.split(chr(9))[4]}" for i, row in enumerate(rows[1:12])
    ]
    (data / "test.tsv").write_text("\n".join(test_rows) + "\n")
    return data


def _tsv(path):
    return np.array([[float(x) for x in line.split("\t")] for line in path.read_text().splitlines()])


def _bucketed_and_padded(run):
    """run(padded) for length-bucketed batches, then for batches padded to max_seq_length."""
    return run(False), run(True)


def test_classifier_outputs_equal_the_padded_mode(model_dir, tmp_path):  # noqa: F811
    from keras_bert_impl.runners.run_classifier import run_classifier
    from tfrecord_tools.classification_data import ClassificationProcessor

    data = _varied_mrpc(tmp_path)
    out = tmp_path / "out"
    processor = ClassificationProcessor.for_task("MRPC", str(data))
    logs = []
    run_classifier(
        # Every split, so that the runs below find the data written here.
        _options(
            model_dir, out, max_seq_length=SEQ, do_train=True, do_eval=True, do_predict=True, num_train_epochs=2.0
        ),
        "MRPC",
        str(data),
        processor,
        log=logs.append,
    )

    def classifier_run(padded):
        options = _options(
            model_dir, out, max_seq_length=SEQ, do_eval=True, do_predict=True, pad_to_max_seq_length=padded
        )
        return run_classifier(options, "MRPC", str(out), log=logs.append).eval, _tsv(out / "test_results.tsv")

    (bucketed, bucketed_tsv), (padded, padded_tsv) = _bucketed_and_padded(classifier_run)
    assert bucketed.keys() == padded.keys()
    for key in bucketed:
        assert bucketed[key] == pytest.approx(padded[key], abs=1e-5), key
    assert bucketed_tsv.shape == (11, 2)
    np.testing.assert_allclose(bucketed_tsv, padded_tsv, atol=1e-5)


def test_bucketed_training_resumes_exactly(model_dir, tmp_path):  # noqa: F811
    """Stopped at step 8 and resumed from its checkpoint, a bucketed run ends with the weights of
    the run that never stopped: the bucketing state is in the data iterator's checkpoint."""
    from keras_bert_impl.runners.finetuning import FineTuningRun
    from keras_bert_impl.runners.run_classifier import classification_data
    from keras_bert_impl.tasks.registry import create_task
    from tfrecord_tools.classification_data import ClassificationProcessor

    data_dir = _varied_mrpc(tmp_path)
    processor = ClassificationProcessor.for_task("MRPC", str(data_dir))

    def train(out, stop_at):
        options = _options(
            model_dir, out, max_seq_length=SEQ, do_train=True, train_batch_size=3, num_train_epochs=1.2,
            save_checkpoints_steps=4, iterations_per_loop=4,
        )  # fmt: skip
        run = FineTuningRun(options, log=lambda message: None)
        data = classification_data(run, str(data_dir), "MRPC", processor)
        task = create_task(data.model_type, run.config, SEQ, label_names=data.labels, task_name="MRPC")
        steps = run.build_for(task, data.count("train"))
        assert steps == 12
        result = run.train(data.path("train"), stop_at)
        return result, [v.numpy() for v in run.model.weights]

    _, straight = train(tmp_path / "straight", 12)
    train(tmp_path / "stopped", 8)
    resumed_result, resumed = train(tmp_path / "stopped", 12)
    assert resumed_result.start_step == 8
    for a, b in zip(straight, resumed):
        np.testing.assert_array_equal(a, b)


def test_squad_ner_swag_and_features_equal_the_padded_mode(model_dir, tmp_path):  # noqa: F811
    from keras_bert_impl.runners.extract_features import ExtractOptions, run_extract_features
    from keras_bert_impl.runners.run_ner import NerOptions, run_ner
    from keras_bert_impl.runners.run_squad import SquadOptions, run_squad
    from tests.finetuning_fixtures import _conll, _squad_file, _swag

    # SQuAD: a context shorter than max_seq_length, so its windows are cut too.
    squad = _squad_file(tmp_path)
    squad_out = tmp_path / "squad"
    squad_args = dict(
        options_class=SquadOptions, version_2_with_negative=True, doc_stride=8, max_query_length=8, n_best_size=5
    )
    run_squad(_options(model_dir, squad_out, max_seq_length=40, do_train=True, train_file=str(squad), **squad_args))

    def squad_run(padded):
        options = _options(
            model_dir, squad_out, max_seq_length=40, do_predict=True, pad_to_max_seq_length=padded,
            predict_file=str(squad), **squad_args,
        )  # fmt: skip
        evaluation = run_squad(options).eval
        return evaluation, json.loads((squad_out / "nbest_predictions.json").read_text())

    (eval_b, nbest_b), (eval_p, nbest_p) = _bucketed_and_padded(squad_run)
    assert eval_b == pytest.approx(eval_p)
    assert nbest_b.keys() == nbest_p.keys()
    for qid in nbest_b:
        assert [e["text"] for e in nbest_b[qid]] == [e["text"] for e in nbest_p[qid]]
        for key in ("probability", "start_logit", "end_logit"):
            np.testing.assert_allclose([e[key] for e in nbest_b[qid]], [e[key] for e in nbest_p[qid]], atol=1e-4)

    # NER: token logits back at their positions.
    conll = _conll(tmp_path)
    ner_out = tmp_path / "ner"
    ner = dict(options_class=NerOptions, max_seq_length=SEQ)
    run_ner(_options(model_dir, ner_out, data_dir=str(conll), do_train=True, do_eval=True, num_train_epochs=2.0, **ner))

    def ner_run(padded):
        options = _options(model_dir, ner_out, data_dir=str(ner_out), do_eval=True, pad_to_max_seq_length=padded, **ner)
        results = run_ner(options).eval
        return results, (ner_out / "dev_predictions.txt").read_text()

    (ner_b, lines_b), (ner_p, lines_p) = _bucketed_and_padded(ner_run)
    assert ner_b == pytest.approx(ner_p) and lines_b == lines_p

    # SWAG: every choice cut to the longest of its example's.
    from keras_bert_impl.runners.run_swag import run_swag

    swag = _swag(
        tmp_path,
        (
            "sat on the mat .,ran far away .,is a film the plot was .,was awful .",
            "sat .,ran far away .,is a film .,was awful and bad and poor .",
        ),
    )
    swag_out = tmp_path / "swag_out"
    run_swag(
        _options(model_dir, swag_out, max_seq_length=SEQ, do_train=True, do_eval=True, num_train_epochs=2.0), str(swag)
    )

    def swag_run(padded):
        options = _options(model_dir, swag_out, max_seq_length=SEQ, do_eval=True, pad_to_max_seq_length=padded)
        return run_swag(options, str(swag_out)).eval

    swag_b, swag_p = _bucketed_and_padded(swag_run)
    assert swag_b == pytest.approx(swag_p, abs=1e-5)

    # extract_features: the JSON values, in input order.
    lines = ["the cat sat ||| on the mat", "the dog", "the movie was a film is the plot the movie was good"] * 3
    (tmp_path / "input.txt").write_text("\n".join(lines) + "\n")

    def features_run(padded):
        path = tmp_path / f"features_{padded}.jsonl"
        options = ExtractOptions(
            input_file=str(tmp_path / "input.txt"),
            output_file=str(path),
            bert_config_file=str(model_dir / "bert_config.json"),
            vocab_file=str(model_dir / "vocab.txt"),
            init_checkpoint=str(model_dir / "bert_model.ckpt"),
            layers="-1",
            max_seq_length=SEQ,
            batch_size=2,
            pad_to_max_seq_length=padded,
        )
        run_extract_features(options, log=lambda message: None)
        return [json.loads(line) for line in path.read_text().splitlines()]

    records_b, records_p = _bucketed_and_padded(features_run)
    assert [r["linex_index"] for r in records_b] == list(range(9))
    for a, b in zip(records_b, records_p):
        assert [f["token"] for f in a["features"]] == [f["token"] for f in b["features"]]
        np.testing.assert_allclose(
            [f["layers"][0]["values"] for f in a["features"]],
            [f["layers"][0]["values"] for f in b["features"]],
            atol=2e-5,
        )


def test_bucketed_training_under_mirrored_matches_one_device(model_dir, tmp_path):  # noqa: F811
    import subprocess
    import sys

    from tests.conftest import subprocess_env

    data = _varied_mrpc(tmp_path)
    runs = {}
    for strategy in ("one_device", "mirrored"):
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.finetuning_worker",
                f"--model_dir={model_dir}",
                f"--data_dir={data}",
                f"--output_dir={tmp_path / strategy}",
                f"--strategy={strategy}",
            ],
            capture_output=True,
            text=True,
            env=subprocess_env(TF_CPP_MIN_LOG_LEVEL="2"),
            timeout=300,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        runs[strategy] = json.loads(run.stdout.strip().splitlines()[-1])
    one, two = runs["one_device"], runs["mirrored"]
    assert (one["replicas"], two["replicas"]) == (1, 2) and len(one["losses"]) == 15
    np.testing.assert_allclose(two["losses"], one["losses"], atol=1e-5)
    assert two["eval"]["eval_accuracy"] == one["eval"]["eval_accuracy"]
    assert two["eval"]["eval_loss"] == pytest.approx(one["eval"]["eval_loss"], abs=1e-5)


@pytest.mark.parametrize("dynamic", [False, True])
def test_pretraining_batches_are_bucketed_with_their_predictions_inside(tmp_path, dynamic):
    """Static and dynamic-masking records: each batch is cut to a bucket holding its longest
    instance, and every masked position stays inside the cut."""
    from keras_bert_impl.models.bert_config import BertConfig
    from keras_bert_impl.tasks.pretraining import PretrainingTask
    from keras_bert_impl.training.input_pipeline import make_tfrecord_dataset
    from tests.pretraining_fixtures import MAX_PRED, MAX_SEQ, make_pretraining_setup
    from tfrecord_tools import feature_specs

    paths = make_pretraining_setup(str(tmp_path / "data"))
    config = BertConfig.from_json_file(paths["bert_config.json"])
    task = PretrainingTask(config, MAX_SEQ, MAX_PRED)
    spec, example_fn, files = task.feature_spec(), None, [paths["train.tfrecord"]]
    if dynamic:
        from tfrecord_tools.dynamic_masking import masker
        from tfrecord_tools.pretraining_data import PretrainingDataOptions, create_pretraining_data

        files = [str(tmp_path / "dynamic.tfrecord")]
        options = PretrainingDataOptions(
            vocab_file=paths["vocab.txt"],
            max_seq_length=MAX_SEQ,
            max_predictions_per_seq=MAX_PRED,
            dupe_factor=1,
            short_seq_prob=0.5,
            dynamic_masking=True,
        )
        create_pretraining_data([paths["corpus.txt"]], files, options, log=lambda message: None)
        spec = feature_specs.dynamic_pretraining_spec(MAX_SEQ)
        example_fn = masker(config.vocab_size, MAX_PRED, 0.15, False, 0)

    def bucketing(dataset, batch_size, drop_remainder):
        return bucket_by_length(dataset, task, batch_size, MAX_SEQ, drop_remainder)

    dataset = make_tfrecord_dataset(files, spec, 3, True, seed=1, example_fn=example_fn, bucketing=bucketing)
    widths = set()
    for batch in dataset.take(40):
        width = batch["input_ids"].shape[1]
        longest = int(tf.reduce_max(tf.reduce_sum(batch["input_mask"], -1)))
        assert width == min(b for b in bucket_lengths(MAX_SEQ) if b >= longest)
        assert batch["input_mask"].shape == batch["segment_ids"].shape == (3, width)
        assert batch["masked_lm_positions"].shape == (3, MAX_PRED)
        assert int(tf.reduce_max(batch["masked_lm_positions"])) < width
        widths.add(width)
    assert len(widths) > 1  # short instances made shorter batches
