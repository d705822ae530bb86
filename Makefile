# hermes_nb — two commands do all set-up on a fresh machine:
#   make smoke   run the main job against the embedded emulator
#   make test    run the whole suite
# Both bootstrap .venv from requirements.lock through `make install`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HVENV  := .venv-hermes
STAMP  := $(VENV)/.installed
HSTAMP := $(HVENV)/.installed
PYTEST_ARGS ?=
# extra flags for `make smoke`, e.g. SMOKE_ARGS="--out receipts --junit-xml junit.xml" (docs/ci/)
SMOKE_ARGS ?=

.PHONY: install rig-venv test smoke notebooks schema lock lock-hermes bench clean

install: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	@# byte-compile the editable package once: kernels and CLI runs then skip compiling it (PYTHONDONTWRITEBYTECODE may be set)
	$(BIN)/python -m compileall -q hermes_nb
	@touch $@

# The real proxy lives in its own venv: hermes-agent pins its own pydantic, httpx and openai.
rig-venv: $(HSTAMP)

$(HSTAMP): requirements-hermes.lock
	@test -x $(HVENV)/bin/python || $(PYTHON) -m venv $(HVENV)
	$(HVENV)/bin/python -m pip install -q --disable-pip-version-check -r requirements-hermes.lock
	@touch $@

test: install rig-venv
	$(BIN)/python -m pytest -q tests notebooks --nbval --nbval-current-env \
		--nbval-sanitize-with notebooks/nbval-sanitize.cfg $(PYTEST_ARGS)

smoke: install
	$(BIN)/hermes-nb smoke $(SMOKE_ARGS)

# refresh the committed notebooks, then ship the same bytes in the package (a test keeps them identical)
notebooks: install
	$(BIN)/hermes-nb notebooks refresh --dir notebooks
	cp notebooks/*.ipynb hermes_nb/data/notebooks/
	cp notebooks/nbval-sanitize.cfg hermes_nb/data/nbval-sanitize.cfg

schema: install
	$(BIN)/hermes-nb schema --write docs/schema

bench: install
	$(BIN)/python benchmarks/sse_decode.py
	$(BIN)/python benchmarks/emulator_load.py

lock:
	rm -rf /tmp/hermes-nb-lock && $(PYTHON) -m venv /tmp/hermes-nb-lock
	/tmp/hermes-nb-lock/bin/pip install -q -e '.[dev]'
	{ echo "# Exact pins for .venv (runtime + dev). Regenerate: make lock"; /tmp/hermes-nb-lock/bin/pip freeze --all --exclude-editable | grep -v "^pip=="; } > requirements.lock

lock-hermes:
	rm -rf /tmp/hermes-nb-hlock && $(PYTHON) -m venv /tmp/hermes-nb-hlock
	/tmp/hermes-nb-hlock/bin/pip install -q hermes-agent==0.19.0 aiohttp
	{ echo "# Exact pins for .venv-hermes (the real proxy's own venv; never the project's). Regenerate: make lock-hermes"; /tmp/hermes-nb-hlock/bin/pip freeze; } > requirements-hermes.lock
	cp requirements-hermes.lock hermes_nb/data/pins/hermes-agent-0.19.0.txt  # shipped: hermes-nb matrix installs 0.19.0 from it

clean:
	rm -rf $(VENV) $(HVENV) .pytest_cache .hypothesis
