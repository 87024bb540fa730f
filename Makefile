# Everything starts from nothing: `make demo` and `make test` create .venv and install into it.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv demo test test-all test-cuda13.0 docs lint bench fuzz clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,cuda,docs,dask]'
	touch $(STAMP)

# The seed example (the spec's main cell; on the GPU when one is usable) and the performance
# card (every device present; --quick: N = 100,000 on the CPU).
demo: venv
	$(PY) examples/seed.py
	$(PY) -m eagle bench --quick

# The fast tier, to run before every commit: every module's core behaviour, in at most three
# minutes on a 2-core machine once .venv and the tests' compile cache (.eagle-test-cache) exist.
test: venv
	$(PY) -m ruff check src tests benchmarks examples docs
	$(PY) -m pytest -q -m "not slow"

# Everything (what CI runs, via .ci/run): the fast tier and the slow one (fresh venvs and
# processes with cold caches, long fuzzing and stress runs, cluster processes, gpu-check's
# own runs).
test-all: venv
	$(PY) -m ruff check src tests benchmarks examples docs
	$(PY) -m pytest -q
	$(MAKE) test-cuda13.0

# The GPU path's plumbing, defect and emulated-GPU tests once more, and the NVRTC compiles of
# the wide-vector, matrix, table, derivative and ODE-method kernels, with the GPU machine's CUDA
# 13.0 toolchain (NVRTC and nvJitLink 13.0.88) and the oldest cuda-bindings the [cuda] extra
# allows (13.0.3): what the newer wheels .venv resolves would hide (that machine's image has
# cuda-bindings 13.3.1, between the two).
CUDA13_0 := .venv-cuda13.0
CUDA13_0_PINS := cuda-bindings==13.0.3 nvidia-cuda-nvrtc==13.0.88 nvidia-nvjitlink==13.0.88

$(CUDA13_0)/.installed: pyproject.toml
	$(PYTHON) -m venv $(CUDA13_0)
	$(CUDA13_0)/bin/python -m pip install --quiet --upgrade pip
	$(CUDA13_0)/bin/python -m pip install --quiet -e '.[test]' $(CUDA13_0_PINS)
	touch $@

test-cuda13.0: $(CUDA13_0)/.installed
	$(CUDA13_0)/bin/python -m eagle.cuda.probe --versions
	$(CUDA13_0)/bin/python -m pytest -q -p no:cacheprovider tests/test_gpu_plumbing.py \
		tests/test_gpu_defects.py tests/test_gpu_emulated.py
	$(CUDA13_0)/bin/python -m pytest -q -p no:cacheprovider -k "nvrtc or cubin" \
		tests/test_wide_vectors.py tests/test_matrices.py tests/test_tables.py \
		tests/test_derivatives.py tests/test_stiff.py tests/test_tsit5.py tests/test_rodas.py tests/test_verner.py

# The documentation site (every notebook executed; any warning is an error; no Markdown table
# left as raw text).
docs: venv
	$(PY) -m sphinx -b html -W --keep-going -q docs docs/_build/html
	$(PY) scripts/check_docs_html.py docs/_build/html
	@echo "docs: open docs/_build/html/index.html"

# The full card, then eagle against the fastest hand-written Numba kernels (benchmarks/cpu_loop.py).
bench: venv
	$(PY) -m eagle bench
	$(PY) benchmarks/cpu_loop.py

# A long differential-fuzzing run: fresh random kernels against the reference executor.
fuzz: venv
	EAGLE_FUZZ_EXAMPLES=$${EAGLE_FUZZ_EXAMPLES:-300} $(PY) -m pytest -q tests/test_random_kernels.py

clean:
	rm -rf $(VENV) $(CUDA13_0) build *.egg-info .pytest_cache .ruff_cache .hypothesis docs/_build .eagle-test-cache
