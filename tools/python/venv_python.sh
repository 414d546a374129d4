#!/bin/sh
# The interpreter of the project's .venv, passed in by `make bazel-test` (see .bazelrc).
if [ -z "$KERAS_BERT_IMPL_PYTHON" ]; then
    echo "KERAS_BERT_IMPL_PYTHON is not set; run Bazel through 'make bazel-test'" >&2
    exit 2
fi
exec "$KERAS_BERT_IMPL_PYTHON" "$@"
