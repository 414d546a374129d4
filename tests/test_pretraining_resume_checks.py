"""What a pretraining run refuses before it trains, naming the flag or file: a resume that changes
what its checkpointed data position or weights mean (the next-sentence task, the model's head
count), an --output_dir holding a model no run there trained, input files of two kinds; and ids
past an embedding table, found mid-training, reported with the files and the fix."""

import dataclasses
import os
import shutil

import pytest

from keras_bert_common.errors import UsageError
from keras_bert_impl.runners.run_pretraining import PretrainingOptions, run_pretraining
from tests.pretraining_fixtures import add_records, make_pretraining_setup, pretraining_flags


def _quiet(message):
    pass


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Records with and without next-sentence labels, and a finished 5-step run on the first."""
    paths = make_pretraining_setup(str(tmp_path_factory.mktemp("resume_checks")))
    add_records(paths, "mlm.tfrecord", dupe_factor=2, next_sentence_prediction=False)
    add_records(paths, "dynamic.tfrecord", dupe_factor=1, dynamic_masking=True)
    out = str(tmp_path_factory.mktemp("resume_checks_run") / "out")
    run_pretraining(PretrainingOptions(**pretraining_flags(paths, out, num_train_steps=5)), log=_quiet)
    return paths, out


def _copy(out, tmp_path):
    copy = str(tmp_path / "copy")
    shutil.copytree(out, copy)
    return copy


def test_resuming_without_the_next_sentence_task_names_the_flag(trained, tmp_path):
    paths, out = trained
    copy = _copy(out, tmp_path)
    flags = pretraining_flags(paths, copy, num_train_steps=10, next_sentence_prediction=False)
    with pytest.raises(UsageError, match=r"written reading --next_sentence_prediction=True, not False; resume with"):
        run_pretraining(PretrainingOptions(**flags), log=_quiet)
    assert sorted(os.listdir(copy)) == sorted(os.listdir(out))  # nothing trained or written


def test_a_run_already_past_its_steps_says_there_is_nothing_to_train(trained, tmp_path):
    paths, out = trained
    copy = _copy(out, tmp_path)
    logs = []
    result = run_pretraining(PretrainingOptions(**pretraining_flags(paths, copy, num_train_steps=3)), log=logs.append)
    assert f"resumed from {copy}/ckpt-5 at step 5" in logs
    assert "already past --num_train_steps=3: nothing to train" in logs and result.train.final_step == 5


def test_a_record_from_an_older_version_gains_the_flags_it_lacked(trained, tmp_path):
    """An input_flags.json without --pad_to_max_seq_length (as older versions wrote it): that
    resume is not checked on it and says so; the record gains it with the resume's first checkpoint
    (a resume that fails adds nothing), and the next resume with another value is refused."""
    import json

    paths, out = trained
    copy = _copy(out, tmp_path)
    record = os.path.join(copy, "input_flags.json")
    saved = json.loads(open(record).read())
    padded = saved.pop("--pad_to_max_seq_length")
    with open(record, "w") as writer:
        json.dump(saved, writer)
    # A resume that fails (here on the iterator's state, which other padding does not fit) records nothing.
    wrong = pretraining_flags(paths, copy, num_train_steps=6, pad_to_max_seq_length=not padded)
    with pytest.raises(UsageError):
        run_pretraining(PretrainingOptions(**wrong), log=_quiet)
    assert json.loads(open(record).read()) == saved
    logs = []
    run_pretraining(PretrainingOptions(**pretraining_flags(paths, copy, num_train_steps=6)), log=logs.append)
    assert any(
        "input_flags.json does not record --pad_to_max_seq_length (written by an older version, or by a run "
        "started without it): not checked on this resume" in line
        for line in logs
    ), logs
    assert json.loads(open(record).read()) == {**saved, "--pad_to_max_seq_length": padded}
    flags = pretraining_flags(paths, copy, num_train_steps=7, pad_to_max_seq_length=not padded)
    with pytest.raises(UsageError, match=rf"written reading --pad_to_max_seq_length={padded}, not {not padded}; "):
        run_pretraining(PretrainingOptions(**flags), log=_quiet)


def test_a_killed_run_is_checked_against_the_config_it_started_with(trained, tmp_path):
    """bert_config.json is written when training starts, not only with the final export."""
    from keras_bert_impl.models.bert_config import BertConfig

    paths, _ = trained
    out = str(tmp_path / "run")
    flags = pretraining_flags(paths, out, num_train_steps=3, export_google_checkpoint=False)
    run_pretraining(PretrainingOptions(**flags), log=_quiet)  # as a run killed before its export
    assert not any(name.startswith("bert_model.ckpt") for name in os.listdir(out))
    config = BertConfig.from_json_file(paths["bert_config.json"])
    other = str(tmp_path / "two_heads.json")
    dataclasses.replace(config, num_attention_heads=2).to_json_file(other)
    with pytest.raises(UsageError, match="num_attention_heads=4, not 2"):
        run_pretraining(PretrainingOptions(**{**flags, "bert_config_file": other, "num_train_steps": 5}), log=_quiet)


def test_resuming_with_another_head_count_names_the_config_key(trained, tmp_path):
    """4 heads or 2 over hidden 32: every weight keeps its shape, so only the config can tell."""
    from keras_bert_impl.models.bert_config import BertConfig

    paths, out = trained
    copy = _copy(out, tmp_path)
    config = BertConfig.from_json_file(paths["bert_config.json"])
    assert config.num_attention_heads == 4
    other = str(tmp_path / "two_heads.json")
    dataclasses.replace(config, num_attention_heads=2).to_json_file(other)
    flags = pretraining_flags(paths, copy, num_train_steps=10, bert_config_file=other)
    with pytest.raises(UsageError) as error:
        run_pretraining(PretrainingOptions(**flags), log=_quiet)
    message = str(error.value)
    assert message.startswith(f"{copy}/bert_config.json: the checkpoints in {copy} were trained with")
    assert "num_attention_heads=4, not 2" in message and f"--bert_config_file={copy}/bert_config.json" in message
    assert BertConfig.from_json_file(os.path.join(copy, "bert_config.json")).num_attention_heads == 4
    # A new dropout is no change of model: the resume goes on.
    dropout = str(tmp_path / "dropout.json")
    dataclasses.replace(config, hidden_dropout_prob=0.0).to_json_file(dropout)
    logs = []
    run_pretraining(PretrainingOptions(**{**flags, "bert_config_file": dropout}), log=logs.append)
    assert any(line.startswith(f"resumed from {copy}/ckpt-5 at step 5") for line in logs)


def test_a_model_put_into_output_dir_is_not_overwritten(trained, tmp_path):
    """A released model copied into --output_dir (bert_model.ckpt without ckpt-N) is refused as
    the place to train, with or without --init_checkpoint pointing at it."""
    paths, out = trained
    released = tmp_path / "released"
    released.mkdir()
    for name in os.listdir(out):
        if name.startswith(("bert_model.ckpt", "bert_config.json")):
            shutil.copy(os.path.join(out, name), released / name)
    before = {name: (released / name).read_bytes() for name in os.listdir(released)}
    for extra in ({}, {"init_checkpoint": str(released)}):
        flags = pretraining_flags(paths, str(released), num_train_steps=2, **extra)
        with pytest.raises(UsageError, match="holds a bert_model.ckpt that no run there trained"):
            run_pretraining(PretrainingOptions(**flags), log=_quiet)
        assert {name: (released / name).read_bytes() for name in os.listdir(released)} == before
    # Continuing it into another directory is the way.
    flags = pretraining_flags(paths, str(tmp_path / "continued"), num_train_steps=2, init_checkpoint=str(released))
    run_pretraining(PretrainingOptions(**flags), log=_quiet)
    assert (tmp_path / "continued" / "bert_model.ckpt.index").exists()


def test_input_files_of_two_kinds_are_refused_naming_the_odd_one(trained, tmp_path):
    paths, _ = trained
    nsp, mlm, dynamic = paths["train.tfrecord"], paths["mlm.tfrecord"], paths["dynamic.tfrecord"]
    # Masked records after unmasked ones: dynamic masking would mask them a second time.
    flags = pretraining_flags(paths, str(tmp_path / "a"), input_file=f"{dynamic},{nsp}", num_train_steps=2)
    with pytest.raises(UsageError, match=rf"^{nsp}: pretraining records lack feature\(s\) mlm_candidates"):
        run_pretraining(PretrainingOptions(**flags), log=_quiet)
    # Next-sentence records where the first file's task needs none are only read without labels: no
    # refusal; the reverse lacks the labels the task trains on.
    flags = pretraining_flags(paths, str(tmp_path / "b"), input_file=f"{nsp},{mlm}", num_train_steps=2)
    with pytest.raises(UsageError, match=rf"^{mlm}: pretraining records lack feature\(s\) next_sentence_labels"):
        run_pretraining(PretrainingOptions(**flags), log=_quiet)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_an_id_past_the_embedding_table_mid_training_names_the_files():
    """TensorFlow's own message for a lookup past the table, from a Keras embedding in a
    tf.function as the train step runs it, becomes one line with the files and the fix; a gather
    past a table of another size (the masked positions' flat gather) is passed on."""
    import keras
    import tensorflow as tf

    from keras_bert_impl.models.bert_config import BertConfig
    from keras_bert_impl.training.input_pipeline import embedding_tables, reading

    tables = embedding_tables(BertConfig(vocab_size=7, hidden_size=8, num_attention_heads=2, type_vocab_size=2))
    table = keras.layers.Embedding(7, 3)
    table.build((None,))
    lookup = tf.function(lambda ids: table(ids))
    with pytest.raises(UsageError) as error:
        with reading(["a.tfrecord", "b.tfrecord"], tables):
            lookup(tf.constant([[1, 9, 2]]))
    assert str(error.value) == (
        "a.tfrecord, b.tfrecord: a record holds id 9, outside an embedding table of 7 rows (token ids from a "
        "larger vocab.txt than bert_config.json's vocab_size); recreate the records with the model's vocab.txt, "
        "or pass the bert_config.json of their vocabulary"
    )
    flat_gather = tf.function(lambda positions: tf.gather(tf.zeros([16, 3]), positions))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"= 17 is not in \[0, 16\)"):
        with reading(["a.tfrecord"], tables):
            flat_gather(tf.constant([17]))
    with pytest.raises(tf.errors.InvalidArgumentError):  # any other error passes through
        with reading(["a.tfrecord"], tables):
            tf.debugging.assert_equal(1, 2)
