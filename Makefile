# shardviz: `make lab` to explore, `make test` to check everything.
# Both set up what they need first (a .venv at the repository root, npm
# packages, the front-end bundle); `make install` does only that.

VENV    := .venv
PY      := $(VENV)/bin/python
STAMPS  := .stamps
DEVICES ?= 8
PORT    ?= 8888
# JupyterLab refuses to run as root unless told; containers often are root.
ROOT_OK := $(if $(filter 0,$(shell id -u)),--allow-root)
JS_SRC  := $(shell find js -name "*.ts" -o -name "*.css") package.json esbuild.mjs tsconfig.json

.PHONY: install chromium lab test test-python test-js js-fixtures lint bench bench-smoke course mutate mutate-js clean
.PHONY: dist test-jax-oldest docs

install: $(STAMPS)/python

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMPS)/npm: package.json package-lock.json
	@mkdir -p $(STAMPS)
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(STAMPS)/js-build: $(STAMPS)/npm $(JS_SRC)
	npm run build
	@touch $@

# The bundle is built above; the package's own npm build hook (which wheels
# and sdists use) would only redo it and touch package-lock.json.
$(STAMPS)/python: pyproject.toml $(STAMPS)/js-build | $(PY)
	SKIP_JUPYTER_BUILDER=1 $(PY) -m pip install -q -e ".[test,docs,bench]"
	@touch $@

# Debian's Chromium for the browser tests and benchmarks: installed with apt
# when missing and we may (root or passwordless sudo), else one line on what to run.
chromium:
	@.ci/ensure-chromium

lab: install
	XLA_FLAGS=--xla_force_host_platform_device_count=$(DEVICES) \
	  $(VENV)/bin/jupyter lab --notebook-dir=notebooks --port=$(PORT) $(ROOT_OK)

lint: install
	$(VENV)/bin/ruff check src tests benchmarks notebooks/pod_step.py
	$(VENV)/bin/ruff format --check src tests benchmarks notebooks/pod_step.py
	$(VENV)/bin/mypy
	npm run lint
	npm run typecheck

js-fixtures: install
	XLA_FLAGS=--xla_force_host_platform_device_count=12 $(PY) tests/make_js_fixtures.py js/fixtures
	XLA_FLAGS=--xla_force_host_platform_device_count=12 $(PY) tests/make_engine_parity_fixtures.py js/fixtures/parity

test-js: js-fixtures
	npm test

# The wheel tests (tests/test_wheel_install.py, tests/browser/test_wheel_lab.py) install dist's wheel.
test-python: install chromium dist
	SHARDVIZ_WHEEL="$(wildcard $(CURDIR)/dist/shardviz-*.whl)" $(PY) -m pytest

test: lint test-js test-python test-jax-oldest bench-smoke

bench: install chromium
	$(PY) benchmarks/run.py $(if $(QUICK),--smoke)

# Every part of the bench once, with small sizes (as `make bench QUICK=1`): a part that no
# longer runs fails `make test`. It checks no time; its tables go to .stamps/bench-smoke.
bench-smoke: install chromium
	$(PY) benchmarks/run.py --smoke --out $(STAMPS)/bench-smoke

# Mutation testing, never part of `make test` (docs/mutation.md). Python with
# mutmut, one part at a time: `make mutate PART=testing` (`make mutate` lists
# the parts; MUTATE_ARGS=--again reruns the survivors). The TypeScript engine
# and hosts with Stryker: `make mutate-js`.
PART ?=
MUTATE_ARGS ?=
mutate: $(STAMPS)/mutate
	$(PY) tools/mutate.py $(PART) $(MUTATE_ARGS)

$(STAMPS)/mutate: $(STAMPS)/python
	SKIP_JUPYTER_BUILDER=1 $(PY) -m pip install -q -e ".[mutate]"
	@touch $@

JS ?=
mutate-js: js-fixtures
	npx stryker run $(if $(JS),--mutate "$(JS)")

# The tour as HTML pages that show their pictures with no network at all.
course: install
	$(PY) -m shardviz.export.course notebooks _site

# The release: sdist and wheel, the front end built afresh by the package's npm hook (never a stale bundle).
dist: $(STAMPS)/npm | $(STAMPS)/python
	rm -rf dist
	$(PY) -m build --sdist --wheel --outdir dist .

# The oldest JAX that pyproject.toml declares (jax>=JAX_OLDEST; a test keeps the two equal), running the
# core of the suite (engines, trees, programs, compare, testing, estimates) in a venv of its own.
JAX_OLDEST := 0.10.0
OLDEST_VENV := .venv-jax-oldest
CORE_TESTS := tests/test_engine_core.py tests/test_engine_errors.py tests/test_tree_engine.py \
  tests/test_tree_rules.py tests/test_program_trace.py tests/test_compare.py tests/test_testing_collectives.py \
  tests/test_plan_estimate.py tests/test_program_errors.py
# XLA before 0.10.2 refuses to jit an identity with pinned_host outputs (a RET_CHECK in its partitioner):
# the test calls jax.jit itself; shardviz's part of it passes (docs/reliability.md).
OLDEST_XLA_BUG := tests/test_tree_rules.py::test_copy_code_gives_the_pytree_of_shardings
$(STAMPS)/jax-oldest: pyproject.toml Makefile
	@mkdir -p $(STAMPS)
	python3 -m venv $(OLDEST_VENV)
	$(OLDEST_VENV)/bin/pip install -q "jax==$(JAX_OLDEST)" "jaxlib==$(JAX_OLDEST)" "numpy>=1.26" "anywidget>=0.9.18" \
	  "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100" "absl-py>=2"
	SKIP_JUPYTER_BUILDER=1 $(OLDEST_VENV)/bin/pip install -q --no-deps -e .
	@touch $@

test-jax-oldest: $(STAMPS)/jax-oldest $(STAMPS)/js-build
	$(OLDEST_VENV)/bin/python -c "import jax; assert jax.__version__ == '$(JAX_OLDEST)', jax.__version__"
	$(OLDEST_VENV)/bin/python -m pytest -p no:cacheprovider $(CORE_TESTS) --deselect $(OLDEST_XLA_BUG)

# The docs site: the guides, the API reference and the course pages, in _site/docs (tools/docs_site.py).
docs: install
	$(PY) -m shardviz.export.course notebooks _site/course-pages
	$(PY) tools/docs_site.py build _site/docs --course _site/course-pages

clean:
	rm -rf $(STAMPS) src/shardviz/static js/fixtures .pytest_cache dist _site $(OLDEST_VENV)
