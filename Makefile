# Thin wrapper over CMake: `make demo` builds the command-line tool alone
# (the library and spforge, not the tests, tools or benchmark) and runs the
# main job on the embedded default input; `make test` builds everything and
# runs every test.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
# On a machine without a GPU (nvidia-smi lists none) the demo builds the
# CPU library, in $(BUILD)-cpu: there the GPU kernels would take minutes of
# nvcc and never run. `make build` and `make test` build them, in $(BUILD).
HAVE_GPU := $(shell nvidia-smi -L 2>/dev/null | grep -q '^GPU' && echo 1)
DEMO_BUILD := $(if $(HAVE_GPU),$(BUILD),$(BUILD)-cpu)

.PHONY: all build demo test data clean nvptxcompiler

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DSPF_WERROR=ON $(CMAKE_FLAGS)

$(BUILD)-cpu/CMakeCache.txt:
	cmake -S . -B $(BUILD)-cpu -DCMAKE_BUILD_TYPE=Release -DSPF_WERROR=ON -DSPF_WITH_CUDA=OFF \
	  $(CMAKE_FLAGS)

build: nvptxcompiler $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The in-process PTX compiler where the CUDA toolkit lacks it (best effort:
# without it the JIT runs ptxas). Before the first configure, which finds it.
nvptxcompiler:
	@bash scripts/fetch-nvptxcompiler.sh

demo: $(if $(HAVE_GPU),nvptxcompiler) $(DEMO_BUILD)/CMakeCache.txt
	@$(if $(HAVE_GPU),true,echo "demo: no GPU here (nvidia-smi lists none): the CPU library, in" \
	  "$(DEMO_BUILD); make build compiles the GPU kernels too, in $(BUILD)")
	cmake --build $(DEMO_BUILD) -j $(JOBS) --target spforge_cli
	$(DEMO_BUILD)/spforge info
	$(DEMO_BUILD)/spforge run --n 512

data:
	bash scripts/extract-data.sh

test: build data
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD) $(BUILD)-cpu
