/* SPDX-License-Identifier: BSD-3-Clause */
#include "select.h"

#include <stdio.h>
#include <string.h>

#include "comm.h"
#include "error.h"
#include "log.h"

const gmpi_backend_ops_t *gmpi_backend_by_kind(const gmpi_backend_list_t *built,
                                               gmpi_backend_t kind) {
  for (int i = 0; i < built->count; i++)
    if (built->backends[i]->kind == kind) return built->backends[i];
  return NULL;
}

static gmpi_status_t select_gpu(gmpi_comm_t comm, const gmpi_backend_list_t *built,
                                const gmpi_backend_ops_t **ops) {
  const gmpi_config_t *cfg = &comm->cfg;
  const gmpi_backend_ops_t *cuda = gmpi_backend_by_kind(built, GMPI_BACKEND_CUDA);
  const char *asked = gmpi_backend_want_name(cfg->backend);
  if (!cuda)
    return gmpi_error(GMPI_ERR_NO_DEVICE,
                      "GMPI_BACKEND=%s, but this gmpi was built without CUDA and NCCL "
                      "(rebuild with -DGMPI_WITH_CUDA=ON where they are installed)",
                      asked);
  char why[256] = "";
  if (cuda->probe(comm, why, sizeof(why)) != GMPI_SUCCESS)
    return gmpi_error(GMPI_ERR_NO_DEVICE, "GMPI_BACKEND=%s, but no GPU is usable: %s", asked, why);
  *ops = cuda;
  snprintf(comm->backend_why, sizeof(comm->backend_why), "GMPI_BACKEND=%s", asked);
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_backend_select(gmpi_comm_t comm, const gmpi_backend_list_t *built,
                                  const gmpi_backend_ops_t **ops) {
  switch (comm->cfg.backend) {
  case GMPI_WANT_CPU:
    *ops = gmpi_backend_by_kind(built, GMPI_BACKEND_CPU);
    snprintf(comm->backend_why, sizeof(comm->backend_why), "GMPI_BACKEND=cpu");
    return GMPI_SUCCESS;
  case GMPI_WANT_CUDA:
  case GMPI_WANT_GPU: return select_gpu(comm, built, ops);
  case GMPI_WANT_ROCM:
    return gmpi_error(
        GMPI_ERR_NO_DEVICE,
        "GMPI_BACKEND=rocm: not built: gmpi has no ROCm backend yet (cpu and cuda only)");
  case GMPI_WANT_AUTO: break;
  }
  /* auto: the first usable backend; the reasons of those passed over are kept for gmpi-info. */
  size_t at = (size_t)snprintf(comm->backend_why, sizeof(comm->backend_why), "GMPI_BACKEND=auto");
  for (int i = 0; i < built->count; i++) {
    const gmpi_backend_ops_t *b = built->backends[i];
    char why[256] = "";
    if (b->probe(comm, why, sizeof(why)) == GMPI_SUCCESS) {
      *ops = b;
      return GMPI_SUCCESS;
    }
    gmpi_log(GMPI_LOG_INFO, "GMPI_BACKEND=auto: %s is not usable (%s); trying the next", b->name,
             why);
    if (at < sizeof(comm->backend_why))
      at += (size_t)snprintf(comm->backend_why + at, sizeof(comm->backend_why) - at,
                             "; %s not usable: %s", b->name, why);
  }
  return gmpi_error(GMPI_ERR_INTERNAL, "no backend usable, not even cpu");
}
