/* Plans (issue 4): placeholder until the recorder lands. */
#include "plan.h"

#include "comm.h"
#include "error.h"

gmpi_status_t gmpi_plan_record_coll(gmpi_comm_t comm, const gmpi_coll_args_t *a) {
  (void)comm;
  (void)a;
  return gmpi_error(GMPI_ERR_UNSUPPORTED, "plans are not implemented yet");
}
gmpi_status_t gmpi_plan_record_p2p(gmpi_comm_t comm, gmpi_request_t req) {
  (void)comm;
  (void)req;
  return gmpi_error(GMPI_ERR_UNSUPPORTED, "plans are not implemented yet");
}
int gmpi_plan_request_is_recorded(gmpi_request_t req) {
  (void)req;
  return 0;
}
gmpi_status_t gmpi_plan_record_wait(gmpi_request_t req) {
  (void)req;
  return GMPI_ERR_UNSUPPORTED;
}
void gmpi_plan_drop_request(gmpi_request_t req) { (void)req; }
void gmpi_plan_orphan_all(gmpi_comm_t comm) { (void)comm; }
void gmpi_plan_abort_recording(gmpi_comm_t comm) { (void)comm; }
gmpi_status_t gmpi_plan_begin(gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  return gmpi_error(GMPI_ERR_UNSUPPORTED, "plans are not implemented yet");
}
gmpi_status_t gmpi_plan_end(gmpi_comm_t comm, gmpi_plan_t *plan) {
  (void)plan;
  GMPI_API_ENTER(comm);
  return gmpi_error(GMPI_ERR_UNSUPPORTED, "plans are not implemented yet");
}
gmpi_status_t gmpi_plan_run(gmpi_plan_t plan) {
  (void)plan;
  return GMPI_ERR_UNSUPPORTED;
}
gmpi_status_t gmpi_plan_dump(gmpi_plan_t plan, FILE *out) {
  (void)plan;
  (void)out;
  return GMPI_ERR_UNSUPPORTED;
}
gmpi_status_t gmpi_plan_free(gmpi_plan_t *plan) {
  (void)plan;
  return GMPI_SUCCESS;
}
gmpi_status_t gmpi_cpu_plan_compile(struct gmpi_plan *plan) {
  (void)plan;
  return GMPI_ERR_UNSUPPORTED;
}
gmpi_status_t gmpi_cpu_plan_run(struct gmpi_plan *plan) {
  (void)plan;
  return GMPI_ERR_UNSUPPORTED;
}
void gmpi_cpu_plan_release(struct gmpi_plan *plan) { (void)plan; }
