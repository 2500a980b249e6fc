# The two quick-start commands. Each does its own set-up in .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Stamp: the test and lint tools are installed too (`make run` needs none of them).
TOOLS := $(VENV)/.tools

.PHONY: run test lint

# What running needs, and nothing else.
$(BIN)/cronwright: pyproject.toml
	@echo "Installing cronwright and what it needs to run into $(VENV)/ ..."
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[postgres]'
	touch $@
	@echo "Installed: $(BIN)/cronwright (add $(abspath $(BIN)) to PATH to type just 'cronwright')."

# What the tests and the gates need besides.
$(TOOLS): pyproject.toml $(BIN)/cronwright
	@echo "Installing the test and lint tools into $(VENV)/ ..."
	$(BIN)/pip install -q -e '.[test,postgres]'
	touch $@

# Install, write a starter config if there is none, and run the node on SQLite under ./.cronwright/.
run: $(BIN)/cronwright
	test -f cronwright.toml || $(BIN)/cronwright init
	$(BIN)/cronwright serve

# Install the test dependencies and run the whole suite with warnings as errors.
test: $(TOOLS)
	$(BIN)/pytest -W error

lint: $(TOOLS)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy --strict src tests
	$(BIN)/lint-imports
