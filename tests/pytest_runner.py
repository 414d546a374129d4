"""Bazel's py_test entry point: runs pytest on the test modules given as arguments."""

import os
import sys

import pytest

if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]]))
