# Two commands on a fresh machine: `make demo` (the main job) and `make test`.
# Both create .venv, install what they need and fetch the model assets, idempotently:
# a second run installs and downloads nothing.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q
OUT    ?= demo-out

.PHONY: demo test test-fast test-full test-repeat test-ray test-image test-release image bench-ray fuzz lint typecheck assets bench gpu-pack clean
FAST   := not model and not asr and not llm and not browser and not slow and not full

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.runtime: pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[llm]'
	@touch $@

$(VENV)/.dev: pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[dev]'
	@touch $@ $(VENV)/.runtime

# Prometheus's promtool, for the alerting rules' checks (deploy/prometheus).
$(BIN)/promtool: | $(BIN)/python
	sh deploy/prometheus/get-promtool.sh $@

assets: $(VENV)/.runtime
	$(BIN)/speakstream assets fetch

demo: $(VENV)/.runtime
	$(BIN)/speakstream assets fetch
	$(BIN)/speakstream agent demo --wav $(OUT)/bidi-reply.wav

lint: $(VENV)/.dev
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts

typecheck: $(VENV)/.dev
	$(BIN)/mypy

test: $(VENV)/.dev $(BIN)/promtool
	$(BIN)/speakstream assets fetch
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/pytest

# The inner loop: no model, no ASR, no LLM, no browser (about a minute).
test-fast: $(VENV)/.dev $(BIN)/promtool
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/pytest -q -m "$(FAST)"

# The tests that start servers or use time, RUNS times in a row beside LOAD busy processes.
RUNS ?= 20
LOAD ?= 2
test-repeat: $(VENV)/.dev
	$(BIN)/speakstream assets fetch
	$(BIN)/python scripts/repeat_tests.py --runs $(RUNS) --load $(LOAD) tests/server tests/agent tests/loadtest tests/cli

# The property tests with fresh random examples, RUNS times (`make test` replays fixed ones).
fuzz: $(VENV)/.dev
	for run in $$(seq $(RUNS)); do HYPOTHESIS_PROFILE=fuzz $(BIN)/pytest -q -x -m "$(FAST)" \
		tests/text tests/test_protocol.py tests/engine/test_decoding.py tests/engine/test_linear_time.py \
		tests/server/dialects/test_fuzz.py tests/server/dialects/test_alignment.py || exit 1; done

test-full: $(VENV)/.dev $(BIN)/promtool
	$(BIN)/speakstream assets fetch
	$(BIN)/pytest -m "not ray and not image and not release"

# Scale-out on a local Ray cluster (Ray Serve): routes through Serve's proxy, drains, a killed replica.
# The release as a user meets it: wheel and sdist built and checked (twine), the wheel installed in a
# clean virtual environment that fetches the assets into an empty cache, serves and speaks (minutes).
test-release: $(VENV)/.dev
	$(BIN)/pytest -s -m release tests/release

test-ray: $(VENV)/.dev
	$(BIN)/pytest -m ray tests/server/test_ray_serve.py

# 1 vs 2 replicas under the same `speakstream loadtest load --url`, and a replica killed mid-reply.
bench-ray: $(VENV)/.dev
	$(BIN)/speakstream assets fetch
	$(BIN)/python scripts/ray_scaleout.py --out docs/bench/scaleout --readme docs/reliability.md

# The container image (IMAGE, BASE, EXTRA_BUILD_ARGS: see deploy/container/build.sh).
IMAGE ?= speakstream:latest
image:
	IMAGE=$(IMAGE) sh deploy/container/build.sh

test-image: image $(VENV)/.dev
	$(BIN)/speakstream assets fetch
	SPEAKSTREAM_IMAGE=$(IMAGE) $(BIN)/pytest -s -m image tests/container

bench: $(VENV)/.dev
	$(BIN)/speakstream assets fetch
	$(BIN)/speakstream bench --out bench-out

# The GPU check (issue 64) in parts a GPU host takes one command at a time; prints the commands.
gpu-pack: $(VENV)/.dev
	$(BIN)/speakstream assets fetch
	$(BIN)/python scripts/gpu_pack.py --out gpu-pack

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
