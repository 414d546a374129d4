"""atomic_output: the file appears whole or not at all."""

import os

import pytest

from keras_bert_common.files import atomic_output


def test_the_file_appears_only_when_the_block_succeeds(tmp_path):
    path = str(tmp_path / "out.txt")
    with atomic_output(path) as writer:
        writer.write("first\n")
        assert not os.path.exists(path)  # readers never see it half written
    assert open(path).read() == "first\n"
    with pytest.raises(RuntimeError):
        with atomic_output(path) as writer:
            writer.write("second, cut short\n")
            raise RuntimeError("bad input")
    assert open(path).read() == "first\n" and os.listdir(tmp_path) == ["out.txt"]


def test_a_tfrecord_file_cut_short_is_found_before_reading(tmp_path):
    """check_complete walks the record headers: a whole file passes; one cut anywhere in its last
    record, or bytes that are no TFRecord, fail naming the file and the record."""
    import tensorflow as tf

    from keras_bert_common.errors import UsageError
    from tfrecord_tools.tfrecord_files import check_complete

    path = tmp_path / "train.tfrecord"
    payloads = [b"x" * size for size in (5, 0, 300, 17)]
    with tf.io.TFRecordWriter(str(path)) as writer:
        for payload in payloads:
            writer.write(payload)
    whole = path.read_bytes()
    assert len(whole) == sum(16 + len(p) for p in payloads)  # the framing the walk assumes
    check_complete(str(path))
    # Cut in the last record's header, its data and its final checksum.
    for cut in (len(whole) - 16 - 17 + 3, len(whole) - 9, len(whole) - 1):
        path.write_bytes(whole[:cut])
        with pytest.raises(UsageError, match=r"train\.tfrecord: truncated or corrupt: record 4 runs to byte"):
            check_complete(str(path))
        if cut == len(whole) - 16 - 17 + 3:
            # TensorFlow's reader ends quietly at a partial header: the record is silently lost.
            assert len(list(tf.data.TFRecordDataset(str(path)))) == 3
        else:  # elsewhere it fails, when the reader gets there
            with pytest.raises(tf.errors.DataLossError):
                list(tf.data.TFRecordDataset(str(path)))
    path.write_bytes(b"this is not a TFRecord file at all")
    with pytest.raises(UsageError, match="record 1 runs to byte"):
        check_complete(str(path))
