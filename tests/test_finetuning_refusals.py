"""What fine-tuning and export refuse before they work, with one line: replacing a directory the
command reads (--force), predicting with a head no checkpoint holds, a test row that would shift
every later prediction line, a sequence too short for [CLS] and [SEP]."""

import os

import pytest

from keras_bert_common.errors import UsageError
from tests.finetuning_fixtures import _mrpc, _options, model_dir  # noqa: F401 -- model_dir: a fixture


def _contents(directory):
    return sorted(
        os.path.relpath(os.path.join(root, name), directory) for root, _, names in os.walk(directory) for name in names
    )


def test_force_never_replaces_the_directory_an_export_reads(model_dir, tmp_path):  # noqa: F811
    from keras_bert_impl.runners.run_classifier import run_classifier
    from keras_bert_impl.serving.export import ExportOptions, build_and_export
    from tfrecord_tools.classification_data import ClassificationProcessor

    data = _mrpc(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("a run's file")
    processor = ClassificationProcessor.for_task("MRPC", str(data))
    for export_dir in (out, tmp_path):  # the run's own output_dir, and a directory holding it
        options = _options(model_dir, out, do_train=True, export_dir=str(export_dir), force=True)
        with pytest.raises(UsageError) as error:
            run_classifier(options, "MRPC", str(data), processor, log=lambda _: None)
        assert str(error.value).startswith(f"--export_dir={export_dir} is, or holds, --output_dir={out}; replacing")
    assert _contents(out) == ["keep.txt"]
    before = _contents(model_dir)
    flags = dict(
        bert_config_file=str(model_dir / "bert_config.json"),
        vocab_file=str(model_dir / "vocab.txt"),
        init_checkpoint=str(model_dir / "bert_model.ckpt"),
        model_type="encoder",
        export_dir=str(model_dir),
        max_seq_length=16,
        force=True,
    )
    with pytest.raises(UsageError, match=rf"^--export_dir={model_dir} is, or holds, --init_checkpoint="):
        build_and_export(ExportOptions(**flags), log=lambda _: None)
    assert _contents(model_dir) == before


def test_predicting_with_a_head_no_checkpoint_holds_is_refused(model_dir, tmp_path):  # noqa: F811
    """A pretrained checkpoint has no classifier: without training, its predictions are noise."""
    from keras_bert_impl.runners.run_classifier import run_classifier
    from tfrecord_tools.classification_data import ClassificationProcessor

    data = _mrpc(tmp_path)
    processor = ClassificationProcessor.for_task("MRPC", str(data))
    out = tmp_path / "out"
    with pytest.raises(UsageError) as error:
        run_classifier(_options(model_dir, out, do_predict=True), "MRPC", str(data), processor, log=lambda _: None)
    message = str(error.value)
    assert message.startswith(f"{model_dir}/bert_model.ckpt: has no weights for classifier/")
    assert "would use a random classifier head; train first (--do_train)" in message
    assert not (out / "test_results.tsv").exists()
    options = _options(model_dir, out, do_predict=True, allow_random_weights=True)
    run_classifier(options, "MRPC", str(data), processor, log=lambda _: None)
    assert len((out / "test_results.tsv").read_text().splitlines()) == 4


def test_a_test_row_that_cannot_be_read_stops_instead_of_shifting_the_predictions(tmp_path):
    from tfrecord_tools.classification_data import ClassificationProcessor

    data = _mrpc(tmp_path)
    with open(data / "test.tsv", "a") as writer:
        writer.write("4\t1\t2\tonly one sentence\n")  # line 6: no second sentence
    with open(data / "dev.tsv", "a") as writer:
        writer.write("1\t1\t2\tonly one sentence\n")
    processor = ClassificationProcessor.for_task("MRPC", str(data))
    assert len(processor.get_examples("dev")) == 9 and processor.skipped == 1  # dev: skipped, counted
    with pytest.raises(UsageError, match=rf"^{data}/test.tsv:6: 4 columns, expected at least 5; every test row"):
        processor.get_examples("test")


def test_a_sequence_must_hold_cls_a_token_and_sep(model_dir):  # noqa: F811
    from keras_bert_impl.models.bert_config import BertConfig

    config = BertConfig.from_json_file(str(model_dir / "bert_config.json"))
    config.check_max_seq_length(3)
    for length in (2, 0, -5):
        with pytest.raises(UsageError, match=rf"^--max_seq_length={length}: must be at least 3"):
            config.check_max_seq_length(length)


def test_export_saved_model_may_replace_a_runs_own_export_of_the_same_directory(model_dir, tmp_path):  # noqa: F811
    """run_classifier --export_dir, then export_saved_model.py from that run's directory into the
    same --export_dir: the same source (recorded as the run's output_dir), so no --force needed;
    another run's directory still needs it."""
    from keras_bert_impl.runners.run_classifier import run_classifier
    from keras_bert_impl.serving.export import ExportOptions, build_and_export
    from tfrecord_tools.classification_data import ClassificationProcessor

    data = _mrpc(tmp_path)
    out, export = tmp_path / "out", tmp_path / "export"
    processor = ClassificationProcessor.for_task("MRPC", str(data))
    options = _options(model_dir, out, do_train=True, num_train_epochs=0.5, export_dir=str(export))
    run_classifier(options, "MRPC", str(data), processor, log=lambda _: None)
    flags = dict(
        bert_config_file=str(model_dir / "bert_config.json"),
        vocab_file=str(model_dir / "vocab.txt"),
        init_checkpoint=str(out),
        model_type="classifier",
        label_names=["0", "1"],
        export_dir=str(export),
        max_seq_length=16,
    )
    logs = []
    build_and_export(ExportOptions(**flags), log=logs.append)
    assert any(f"{export}: replacing the earlier export from {out}" in line for line in logs)
    # The same run's encoder is another model: replacing its classifier export needs --force.
    with pytest.raises(FileExistsError, match=f"{export}: holds the classifier export of {out}, not its encoder"):
        build_and_export(ExportOptions(**{**flags, "model_type": "encoder", "label_names": None}), log=logs.append)
    with pytest.raises(FileExistsError, match="already exists and was not exported from"):
        build_and_export(ExportOptions(**{**flags, "init_checkpoint": str(model_dir)}), log=logs.append)


def test_resuming_fine_tuning_at_another_sequence_length_is_refused(model_dir, tmp_path):  # noqa: F811
    """The records are remade at the new length, so the checkpointed data position would be one
    of another file: refused, naming the flag, as a changed batch size is."""
    from keras_bert_impl.runners.run_classifier import run_classifier
    from tfrecord_tools.classification_data import ClassificationProcessor

    data = _mrpc(tmp_path)
    out = tmp_path / "out"
    processor = ClassificationProcessor.for_task("MRPC", str(data))
    logs = []
    run_classifier(
        _options(model_dir, out, do_train=True, num_train_epochs=0.5), "MRPC", str(data), processor, logs.append
    )
    assert "training 3 steps of 4 examples" in logs
    longer = _options(model_dir, out, do_train=True, num_train_epochs=1.0, max_seq_length=12)
    with pytest.raises(UsageError, match=r"written reading --max_seq_length=16, not 12; resume with the same"):
        run_classifier(longer, "MRPC", str(data), processor, log=lambda _: None)


def test_a_file_where_most_rows_do_not_fit_the_task_is_refused(model_dir, tmp_path):  # noqa: F811
    """STS-B's scores under --task_name=MRPC: only the rows scored 0 or 1 would be kept."""
    from keras_bert_impl.runners.run_classifier import run_classifier
    from tfrecord_tools.classification_data import ClassificationProcessor

    data = _mrpc(tmp_path)
    rows = (data / "train.tsv").read_text().splitlines()
    scored = [f"{score}\t1\t2\tthe cat\tthe dog" for score in ("3.2", "4.0", "2.5", "0.8")]
    (data / "train.tsv").write_text("\n".join(rows[:4] + scored) + "\n")
    processor = ClassificationProcessor.for_task("MRPC", str(data))
    with pytest.raises(UsageError, match=r"train.tsv: 4 rows skipped \(see the warnings\), only 3 usable: is this"):
        run_classifier(_options(model_dir, tmp_path / "out", do_train=True), "MRPC", str(data), processor, log=print)


def test_export_checks_the_casing_of_a_google_model(model_dir, tmp_path):  # noqa: F811
    from keras_bert_impl.serving.export import ExportOptions, build_and_export

    flags = dict(
        bert_config_file=str(model_dir / "bert_config.json"),
        vocab_file=str(model_dir / "vocab.txt"),
        init_checkpoint=str(tmp_path / "uncased_L-12_H-768_A-12"),
        export_dir=str(tmp_path / "saved"),
        max_seq_length=16,
        do_lower_case=False,
    )
    with pytest.raises(UsageError, match="is a lower-cased model but --do_lower_case=False; pass --do_lower_case=True"):
        build_and_export(ExportOptions(**flags), log=lambda _: None)
    assert not (tmp_path / "saved").exists()


def test_a_run_of_a_task_outside_the_registry_is_named_not_taken_for_an_encoder(tmp_path):
    """A feature-based tagger's run (task.json names a task the registry cannot build): export and
    convert without --model_type say so and point to the runner's own export, instead of exporting
    the encoder or claiming there is no task.json; with --model_type the record is not needed."""
    import json

    from keras_bert_impl.tasks.feature_tagging import FeatureTaggingTask
    from keras_bert_impl.tasks.registry import TASK_RECORD, TASKS, read_task_record

    assert FeatureTaggingTask.name not in TASKS
    (tmp_path / TASK_RECORD).write_text(json.dumps({"model_type": FeatureTaggingTask.name, "lstm_size": 8}))
    prefix = str(tmp_path / "ckpt-3")
    with pytest.raises(UsageError) as refused:
        read_task_record(prefix, tool="export_saved_model")
    assert str(refused.value) == (
        f"{tmp_path}/{TASK_RECORD}: the run trained ner_feature_based, which export_saved_model cannot build; "
        "export it with the runner that trained it (its --export_dir), or pass --model_type=encoder for the "
        "encoder alone"
    )
    assert read_task_record(prefix) is None
