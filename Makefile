# Everything starts from nothing: `make demo` and `make test` create .venv and install into it.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv demo test test-all test-cuda13.0 docs lint bench fuzz clean native native-example native-device-bundle

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
# own runs, the GPU suites through both doors: tests/native_door.py).
test-all: venv
	$(PY) -m ruff check src tests benchmarks examples docs
	$(PY) -m pytest -q
	$(MAKE) test-cuda13.0
	$(MAKE) native-example

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

# The native layer (native/: libeagle_cuda, the stand-in libcuda, the self-test), built from
# nothing with CMake against cuda.h/cudaTypedefs.h fetched from the nvidia-cuda-runtime wheel
# (no CUDA toolkit, no driver), self-tested under ctest against the stand-in, installed to
# build/native/install, and the examples (examples/native/) built against that installed copy
# with find_package(eagle_cuda), as a native consumer would.
NATIVE := build/native
NATIVE_HEADERS := $(NATIVE)/cuda-headers
# cmake, ctest and ninja: the machine's, else the venv's (the test extra installs them from PyPI).
NATIVE_PATH = PATH="$(abspath $(VENV)/bin):$$PATH"
NATIVE_GENERATOR = $(shell $(NATIVE_PATH) command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
NATIVE_ENV = EAGLE_LIBCUDA=$(abspath $(NATIVE)/install/lib/libfakecuda.so) \
	FAKECUDA_HOST_MODULES=$(abspath $(NATIVE)/artifacts)

# (pip download with the venv's Python where there is one)
$(NATIVE_HEADERS)/cudaTypedefs.h: scripts/native_headers.py
	$(if $(wildcard $(PY)),$(PY),$(PYTHON)) scripts/native_headers.py $(NATIVE_HEADERS)

native: $(NATIVE_HEADERS)/cudaTypedefs.h
	$(NATIVE_PATH) cmake -S native -B $(NATIVE)/lib $(NATIVE_GENERATOR) -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_INSTALL_LIBDIR=lib -DEAGLE_CUDA_INCLUDE_DIR=$(abspath $(NATIVE_HEADERS)) > /dev/null
	$(NATIVE_PATH) cmake --build $(NATIVE)/lib -j2
	$(NATIVE_PATH) ctest --test-dir $(NATIVE)/lib --output-on-failure
	$(NATIVE_PATH) cmake --install $(NATIVE)/lib --prefix $(abspath $(NATIVE)/install) > /dev/null
	$(NATIVE_PATH) cmake -S examples/native -B $(NATIVE)/examples $(NATIVE_GENERATOR) \
		-DCMAKE_PREFIX_PATH=$(abspath $(NATIVE)/install) > /dev/null
	$(NATIVE_PATH) cmake --build $(NATIVE)/examples -j2

# Both native examples against the stand-in libcuda: the spec's low-level cell in C++ (gravity
# captured once, replayed 5 times) and eagle-run-artifact running the seed oscillator to done
# in one WHILE graph; their kernels run from host builds of the generated CUDA.
native-example: venv native
	mkdir -p $(NATIVE)/artifacts
	$(PY) -m eagle compile docs/guide/_fixtures/gravity.py:gravity --target ptx --arch sm_80 \
		--host-build -o $(NATIVE)/artifacts/gravity.ptx
	$(PY) -m eagle compile examples/native/oscillator.py:oscillator --target ptx --host-build \
		-o $(NATIVE)/artifacts/oscillator.ptx
	$(NATIVE_ENV) $(NATIVE)/examples/gravity-replay $(NATIVE)/artifacts/gravity.ptx
	$(PY) examples/native/oscillator_data.py $(NATIVE)/oscillator-data 10000
	$(NATIVE_ENV) $(NATIVE)/examples/eagle-run-artifact $(NATIVE)/artifacts/oscillator.ptx \
		--data $(NATIVE)/oscillator-data --max-steps 10000 --steps-per-launch 16

# Everything scripts/native-device-check needs on a GPU machine, prepared here (no GPU):
# build/native (carry it) and .devrun/native (PTX, data, the CPU backend's results).
native-device-bundle: venv native
	$(PY) scripts/native_device_bundle.py .devrun/native 100000

clean:
	rm -rf $(VENV) $(CUDA13_0) build *.egg-info .pytest_cache .ruff_cache .hypothesis docs/_build .eagle-test-cache \
		.devrun native/build native-device-out
