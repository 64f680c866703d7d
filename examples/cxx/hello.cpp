/* SPDX-License-Identifier: BSD-3-Clause */
// A C++ program using an installed gmpi: gmpi.h from C++ (no MPI C++ bindings pulled in),
// an allreduce checked on every rank.
//   cmake -S examples/cxx -B build-cxx -DCMAKE_PREFIX_PATH=<gmpi prefix>; mpiexec -n 2 build-cxx/hello
#include <gmpi.h>

#include <cstdio>
#include <vector>

int main() {
  gmpi_comm_t comm = nullptr;
  if (gmpi_init_world(&comm) != GMPI_SUCCESS) {
    std::fprintf(stderr, "gmpi_init_world: %s\n", gmpi_last_error());
    return 1;
  }
  int rank = 0, size = 0;
  gmpi_comm_rank(comm, &rank);
  gmpi_comm_size(comm, &size);
  std::vector<double> x(16, rank + 1.0);
  gmpi_status_t st = gmpi_allreduce(x.data(), x.data(), x.size(), GMPI_FLOAT64, GMPI_SUM, comm);
  const double want = size * (size + 1) / 2.0;
  bool ok = st == GMPI_SUCCESS;
  for (double v : x) ok = ok && v == want;
  std::printf("hello.cpp rank %d of %d (gmpi %s): %s\n", rank, size, GMPI_VERSION_STRING,
              ok ? "ok" : gmpi_last_error());
  gmpi_finalize(&comm);
  return ok ? 0 : 1;
}
