/* The cpu backend's ops: host memory, everything through MPI. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/comm.h"
#include "../../core/error.h"
#include "../../core/request.h"
#include "../../mpi/mpi_check.h"
#include "../../mpi/oob.h"
#include "../../mpi/types.h"
#include "../../p2p/envelope.h"
#include "cpu.h"

static gmpi_status_t cpu_probe(gmpi_comm_t comm, char *why, size_t why_len) {
  (void)comm;
  (void)why;
  (void)why_len;
  return GMPI_SUCCESS; /* MPI is all it needs */
}

gmpi_status_t gmpi_cpu_open(gmpi_comm_t comm, gmpi_cpu_t *cpu) {
  memset(cpu, 0, sizeof(*cpu));
  cpu->plans = MPI_COMM_NULL;
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_CHECK(gmpi_mpi_ops_acquire());
  GMPI_MPI_CHECK_GOTO(MPI_Comm_dup(gmpi_oob_mpi_comm(comm), &cpu->data), st, release_ops);
  GMPI_MPI_CHECK_GOTO(MPI_Comm_set_errhandler(cpu->data, MPI_ERRORS_RETURN), st, free_data);
  int envelope =
      comm->cfg.p2p == GMPI_P2P_ENVELOPE || (comm->cfg.p2p == GMPI_P2P_AUTO && comm->cfg.check);
  if (envelope) GMPI_CHECK_GOTO(gmpi_env_create_model(comm, cpu->data, &cpu->env), st, free_data);
  return GMPI_SUCCESS;
free_data:
  MPI_Comm_free(&cpu->data);
release_ops:
  gmpi_mpi_ops_release();
  return st;
}

void gmpi_cpu_close(gmpi_comm_t comm, gmpi_cpu_t *cpu) {
  if (cpu->env) gmpi_env_destroy(cpu->env);
  if (comm->failure == GMPI_SUCCESS) {
    MPI_Comm_free(&cpu->data);
    if (cpu->plans != MPI_COMM_NULL) MPI_Comm_free(&cpu->plans);
  }
  gmpi_mpi_ops_release();
}

static gmpi_status_t cpu_comm_init(gmpi_comm_t comm, gmpi_comm_t parent, int color, int key) {
  (void)parent;
  (void)color;
  (void)key;
  if (!comm) return GMPI_SUCCESS; /* this rank joins no child of the split */
  gmpi_cpu_t *cpu = calloc(1, sizeof(*cpu));
  if (!cpu) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the cpu backend state");
  gmpi_status_t st = gmpi_cpu_open(comm, cpu);
  if (st != GMPI_SUCCESS) {
    free(cpu);
    return st;
  }
  comm->be = cpu;
  return GMPI_SUCCESS;
}

static void cpu_comm_fini(gmpi_comm_t comm) {
  gmpi_cpu_close(comm, comm->be);
  free(comm->be);
  comm->be = NULL;
}

/* Host blocks handed out by gmpi_mem_alloc, process-wide (any cpu comm may free them): a
 * pointer that is not one of them is refused, not passed to free(). Frees are rare; a linear
 * search is enough. */
typedef struct {
  void *ptr;
  size_t bytes;
} host_block_t;

static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static host_block_t *blocks;
static size_t n_blocks, cap_blocks;

static gmpi_status_t cpu_mem_alloc(gmpi_comm_t comm, size_t bytes, void **ptr) {
  gmpi_cpu_t *cpu = comm->be;
  size_t rounded = (bytes + 63) / 64 * 64;
  void *p = rounded >= bytes ? aligned_alloc(64, rounded ? rounded : 64) : NULL;
  if (!p) return gmpi_error(GMPI_ERR_NO_MEMORY, "host allocation of %zu bytes failed", bytes);
  pthread_mutex_lock(&blocks_lock);
  if (n_blocks == cap_blocks) {
    size_t cap = cap_blocks ? 2 * cap_blocks : 64;
    host_block_t *grown = realloc(blocks, cap * sizeof(*grown));
    if (!grown) {
      pthread_mutex_unlock(&blocks_lock);
      free(p);
      return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the allocation table");
    }
    blocks = grown;
    cap_blocks = cap;
  }
  blocks[n_blocks++] = (host_block_t){p, bytes};
  pthread_mutex_unlock(&blocks_lock);
  cpu->user_bytes += bytes;
  *ptr = p;
  return GMPI_SUCCESS;
}

static gmpi_status_t cpu_mem_free(gmpi_comm_t comm, void *ptr) {
  gmpi_cpu_t *cpu = comm->be;
  if (!ptr) return GMPI_SUCCESS;
  size_t bytes = 0;
  int found = 0;
  pthread_mutex_lock(&blocks_lock);
  for (size_t i = 0; i < n_blocks && !found; i++) {
    if (blocks[i].ptr != ptr) continue;
    bytes = blocks[i].bytes;
    blocks[i] = blocks[--n_blocks];
    found = 1;
  }
  pthread_mutex_unlock(&blocks_lock);
  if (!found)
    return gmpi_error(GMPI_ERR_INVALID_ARG,
                      "argument 'ptr' = %p was not returned by gmpi_mem_alloc (or was freed)", ptr);
  cpu->user_bytes -= bytes < cpu->user_bytes ? bytes : cpu->user_bytes;
  free(ptr);
  return GMPI_SUCCESS;
}

static gmpi_status_t cpu_mem_copy(gmpi_comm_t comm, void *dst, const void *src, size_t bytes) {
  (void)comm;
  if (bytes) memmove(dst, src, bytes);
  return GMPI_SUCCESS;
}

static gmpi_status_t cpu_coll(gmpi_comm_t comm, const gmpi_coll_args_t *a) {
  return gmpi_cpu_coll(comm, comm->be, a);
}
static gmpi_status_t cpu_p2p_post(gmpi_request_t req) {
  return gmpi_cpu_p2p_post(req->comm->be, req);
}
static gmpi_status_t cpu_p2p_test(gmpi_request_t req, int *done) {
  return gmpi_cpu_p2p_test(req->comm->be, req, done);
}
static void cpu_p2p_abandon(gmpi_request_t req) { gmpi_cpu_p2p_abandon(req->comm->be, req); }

static gmpi_status_t cpu_query(gmpi_comm_t comm, gmpi_query_t what, void **out) {
  (void)comm;
  (void)out;
  return gmpi_error(GMPI_ERR_UNSUPPORTED, "the cpu backend has no %s",
                    what == GMPI_QUERY_NCCL_COMM ? "NCCL communicator"
                    : what == GMPI_QUERY_STREAM  ? "CUDA stream"
                                                 : "device");
}

static void cpu_mem_usage(gmpi_comm_t comm, size_t *library, size_t *user) {
  *library = 0;
  *user = ((gmpi_cpu_t *)comm->be)->user_bytes;
}

gmpi_status_t gmpi_cpu_plan_compile(struct gmpi_plan *plan);
gmpi_status_t gmpi_cpu_plan_run(struct gmpi_plan *plan);
void gmpi_cpu_plan_release(struct gmpi_plan *plan);

const gmpi_backend_ops_t gmpi_backend_cpu = {
    .name = "cpu",
    .kind = GMPI_BACKEND_CPU,
    .probe = cpu_probe,
    .comm_init = cpu_comm_init,
    .comm_fini = cpu_comm_fini,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .mem_copy = cpu_mem_copy,
    .coll = cpu_coll,
    .p2p_post = cpu_p2p_post,
    .p2p_test = cpu_p2p_test,
    .p2p_abandon = cpu_p2p_abandon,
    .query = cpu_query,
    .set_stream = NULL,
    .mem_usage = cpu_mem_usage,
    .plan_compile = gmpi_cpu_plan_compile,
    .plan_run = gmpi_cpu_plan_run,
    .plan_release = gmpi_cpu_plan_release,
};
