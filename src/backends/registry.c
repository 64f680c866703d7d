/* SPDX-License-Identifier: BSD-3-Clause */
#include "registry.h"

extern const gmpi_backend_ops_t gmpi_backend_cpu;
#ifdef GMPI_HAVE_CUDA
extern const gmpi_backend_ops_t gmpi_backend_cuda;
#endif

static const gmpi_backend_ops_t *const built[] = {
#ifdef GMPI_HAVE_CUDA
    &gmpi_backend_cuda,
#endif
    &gmpi_backend_cpu,
};
const gmpi_backend_list_t gmpi_backends_built = {built, (int)(sizeof(built) / sizeof(built[0]))};
