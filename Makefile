# The two quick-start commands. Each does its own set-up in .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint

$(BIN)/cronwright: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[test,postgres]'
	touch $@

# Install, write a starter config if there is none, and run the node on SQLite under ./.cronwright/.
run: $(BIN)/cronwright
	test -f cronwright.toml || $(BIN)/cronwright init
	$(BIN)/cronwright serve

# Install the test dependencies and run the whole suite with warnings as errors.
test: $(BIN)/cronwright
	$(BIN)/pytest -W error

lint: $(BIN)/cronwright
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy --strict src tests
	$(BIN)/lint-imports
