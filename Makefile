# SPDX-License-Identifier: BSD-3-Clause
# The two commands of the README:
#   make demo   -- build, then run gmpi-bench under mpiexec on the backend found
#   make check  -- build, then run the whole test suite (ctest: each MPI test at 2 and 4 ranks)
# Both install what they need first (OpenMPI from the distribution's packages when missing).
BUILD ?= build
CMAKE_FLAGS ?= -DGMPI_WERROR=ON
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps build demo check format clean

all: build

deps:
	@scripts/install-deps

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	scripts/demo

check: build
	cd $(BUILD) && ctest --output-on-failure -j 1

format:
	find src include tests tools scripts -name '*.[ch]' -o -name '*.cu' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
