# The two commands of the README: `make lab` and `make test`.
# Each creates .venv the first time and installs gpulab with its extra of the same name:
# `lab` what a learner needs, `test` the test tools (with the lab, which the browser tests drive).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: lab test wheel binder

# $(VENV)/.gpulab-EXTRA: gpulab installed with EXTRA; again when the package metadata or the extension's
# sources change (the install builds the extension).
$(VENV)/.gpulab-%: pyproject.toml extension/package.json $(wildcard extension/src/*.ts extension/style/*.css)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[$*]'
	touch $@

# Jupyter refuses to run as root unless told (containers and CI machines run as root).
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

# LAB_ARGS go to Jupyter (e.g. LAB_ARGS="--port 8890 --no-browser"), as PYTEST_ARGS go to pytest.
lab: $(VENV)/.gpulab-lab
	$(BIN)/jupyter lab $(ROOT_FLAG) $(LAB_ARGS) notebooks/

# One pytest-xdist worker per core, each taking whole test files (--dist loadfile; the notebooks' tests one by
# one: conftest.py's SPREAD): a page's examples run in
# order in one shell, a module's fixtures are made once, the browser and Ctrl-C tests of a file run one at a
# time. (--dist loadgroup groups nothing with pytest 9.2: pytest-xdist issue 1386.) PYTEST_ARGS="-n 0": one process.
test: $(VENV)/.gpulab-test
	$(BIN)/python -m pytest -n auto --dist loadfile $(PYTEST_ARGS)

# The wheel Binder installs (gpulab with its JupyterLab extension built in, so Binder needs no Node.js),
# into dist/ (ignored: never committed); a maintainer attaches it to the GitHub release v$(VERSION)
# (docs/classroom.md, "Binder"), which is where binder/requirements.txt takes it from.
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
WHEEL := dist/gpulab-$(VERSION)-py3-none-any.whl
RELEASE_URL := https://github.com/gpulab/gpulab/releases/download/v$(VERSION)/gpulab-$(VERSION)-py3-none-any.whl

wheel: $(VENV)/.gpulab-lab
	rm -f $(WHEEL)
	$(BIN)/python -m pip wheel --no-deps --quiet -w dist .
	@echo "$(WHEEL): attach it to the release v$(VERSION) (gh release upload v$(VERSION) $(WHEEL))"

# binder/requirements.txt: gpulab from the release's wheel, and every other package pinned
# (a fresh install of that wheel with JupyterLab, frozen).
binder: wheel
	rm -rf .binder-venv && $(PYTHON) -m venv .binder-venv
	.binder-venv/bin/python -m pip install --quiet $(WHEEL) 'jupyterlab>=4.2,<5' 'ipykernel>=6.29'
	{ sed -n '/^#/p' binder/requirements.txt; echo "gpulab @ $(RELEASE_URL)"; \
	  .binder-venv/bin/python -m pip freeze --exclude gpulab; } > binder/requirements.new
	mv binder/requirements.new binder/requirements.txt
	rm -rf .binder-venv
