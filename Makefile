# SPDX-License-Identifier: BSD-3-Clause
# The two commands of the README:
#   make demo   -- build, then run gmpi-bench under mpiexec on the backend found
#   make check  -- build, then run the whole test suite (ctest: each MPI test at 2 and 4 ranks)
# Both install what they need first (OpenMPI from the distribution's packages when missing).
# Warnings are errors only when asked: GMPI_WERROR=ON make ... (CI and developers do; a user's
# compiler may warn where ours does not, and that must not stop the build). CC picks the
# compiler at the first configure: CC=clang make build.
BUILD ?= build
GMPI_WERROR ?= OFF
CMAKE_FLAGS ?= -DGMPI_WERROR=$(GMPI_WERROR)
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps build demo check test install format clean

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

test: check

# make install [PREFIX=/usr/local] (DESTDIR is honoured, as cmake --install does)
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

format:
	find src include tests tools scripts -name '*.[ch]' -o -name '*.cu' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
