#!/bin/sh
# The interpreter of the project's .venv, passed in by `make bazel-test` (see .bazelrc).
if [ -z "$KERAS_BERT_IMPL_PYTHON" ]; then
    echo "KERAS_BERT_IMPL_PYTHON is not set; run Bazel through 'make bazel-test'" >&2
    exit 2
fi
# Hermetic: a target must find our packages only in its runfiles, never installed in the venv
# (the checkout .pth that `make venv` writes stands down when this is set).
export KERAS_BERT_IMPL_HERMETIC=1
if "$KERAS_BERT_IMPL_PYTHON" -I -c "import importlib.util as u, sys; sys.exit(any(u.find_spec(p) for p in ('keras_bert_impl', 'tfrecord_tools', 'keras_bert_cli')))"; then :; else
    echo "keras_bert_impl is installed in the .venv's site-packages, so Bazel targets would not need their deps;" \
         "uninstall it (.venv/bin/pip uninstall keras-bert-impl) and install the wheel elsewhere" >&2
    exit 2
fi
exec "$KERAS_BERT_IMPL_PYTHON" "$@"
