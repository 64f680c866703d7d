/* SPDX-License-Identifier: BSD-3-Clause */
/* The backends built into this library, best first: auto takes the first that probes usable. */
#include "../core/backend.h"

extern const gmpi_backend_ops_t gmpi_backend_cpu;
#ifdef GMPI_HAVE_CUDA
extern const gmpi_backend_ops_t gmpi_backend_cuda;
#endif

const gmpi_backend_ops_t *const gmpi_backends[] = {
#ifdef GMPI_HAVE_CUDA
    &gmpi_backend_cuda,
#endif
    &gmpi_backend_cpu,
};
const int gmpi_backend_count = (int)(sizeof(gmpi_backends) / sizeof(gmpi_backends[0]));
