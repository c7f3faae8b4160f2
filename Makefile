# Thin wrapper over CMake: `make demo` builds the command-line tool alone
# (the library and spforge, not the tests, tools or benchmark) and runs the
# main job on the embedded default input; `make test` builds everything and
# runs every test.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all build demo test data clean nvptxcompiler

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DSPF_WERROR=ON $(CMAKE_FLAGS)

build: nvptxcompiler $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The in-process PTX compiler where the CUDA toolkit lacks it (best effort:
# without it the JIT runs ptxas). Before the first configure, which finds it.
nvptxcompiler:
	@bash scripts/fetch-nvptxcompiler.sh

demo: nvptxcompiler $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target spforge_cli
	$(BUILD)/spforge info
	$(BUILD)/spforge run --n 512

data:
	bash scripts/extract-data.sh

test: build data
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD)
