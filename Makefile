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

test-python: install chromium
	$(PY) -m pytest

test: lint test-js test-python bench-smoke

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

clean:
	rm -rf $(STAMPS) src/shardviz/static js/fixtures .pytest_cache
