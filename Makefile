# Every target creates the virtual environment it needs, so a fresh clone works.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make run HOST=… PORT=…` passes flags; otherwise `serve` reads NUMASCOPE_HOST/NUMASCOPE_PORT
# (defaults 127.0.0.1:8000), so the environment is honoured.
HOST ?=
PORT ?=
SHARED ?= ../shared

.PHONY: venv run test test-fast lint format bench conformance proto browser-deps clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: venv
	$(BIN)/numascope serve $(if $(HOST),--host $(HOST)) $(if $(PORT),--port $(PORT))

browser-deps:
	@sh scripts/ensure-chromium.sh
	@sh scripts/ensure-axe.sh

lint: venv
	$(BIN)/ruff check app tests bench migrations
	$(BIN)/ruff format --check app tests bench migrations
	$(BIN)/mypy

format: venv
	$(BIN)/ruff format app tests bench migrations
	$(BIN)/ruff check --fix app tests bench migrations

# A throwaway PostgreSQL (scripts/pg-test-server.sh) runs the database tests on PostgreSQL too.
test: venv browser-deps lint
	@url=$$(sh scripts/pg-test-server.sh start); \
	NUMASCOPE_TEST_POSTGRES_URL="$$url" $(BIN)/python -m pytest -n 2 -p no:cacheprovider; \
	status=$$?; sh scripts/pg-test-server.sh stop; exit $$status

test-fast: venv
	$(BIN)/python -m pytest -n 2 -m "not browser"

# The in-repo corpus (tests/conformance) always; the team's shared one too when it is there.
conformance: venv
	$(BIN)/python -m app.conformance tests/conformance/*.json
	@if ls $(SHARED)/conformance/*.json >/dev/null 2>&1; then \
		echo "extra corpus: $(SHARED)/conformance"; \
		$(BIN)/python -m app.conformance $(SHARED)/conformance/*.json; \
	else echo "no extra corpus under $(SHARED)/conformance"; fi

proto: venv
	sh scripts/gen_proto.sh

bench: venv
	@for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .benchmarks
