/* Plans on cuda (issue 4): placeholder until the recorder lands. */
#include "../../core/plan.h"

gmpi_status_t gmpi_cuda_plan_compile(struct gmpi_plan *plan) {
  (void)plan;
  return GMPI_ERR_UNSUPPORTED;
}
gmpi_status_t gmpi_cuda_plan_run(struct gmpi_plan *plan) {
  (void)plan;
  return GMPI_ERR_UNSUPPORTED;
}
void gmpi_cuda_plan_release(struct gmpi_plan *plan) { (void)plan; }
