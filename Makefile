# The two commands of the README: `make lab` and `make test`.
# Each creates .venv and installs gpulab (with its lab and test extras) the first time.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.gpulab-installed

.PHONY: lab test

# Reinstalled when the package metadata or the extension's sources change (the install builds the extension).
$(STAMP): pyproject.toml extension/package.json $(wildcard extension/src/*.ts extension/style/*.css)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Jupyter refuses to run as root unless told (containers and CI machines run as root).
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

# LAB_ARGS go to Jupyter (e.g. LAB_ARGS="--port 8890 --no-browser"), as PYTEST_ARGS go to pytest.
lab: $(STAMP)
	$(BIN)/jupyter lab $(ROOT_FLAG) $(LAB_ARGS) notebooks/

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)
