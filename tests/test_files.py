"""atomic_output: the file appears whole or not at all."""

import os

import pytest

from tfrecord_tools.files import atomic_output


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
