/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault suite: the last rank stops (SIGSTOP, as a debugger or an overloaded node would) at one
 * blocking point of gmpi, named by argv[1] (argv[2] = kill or exit: it dies there instead, by
 * SIGKILL or by exiting without finalize -- scripts/fault-matrix runs every combination):
 *   init, dup, split, plan -- inside the first MPI communicator constructor that gmpi_init,
 *                             gmpi_comm_dup, gmpi_comm_split or the first gmpi_plan_end calls,
 *                             i.e. after gmpi's polled arrival;
 *   finalize               -- before gmpi_finalize (gmpi started MPI, so it runs MPI_Finalize);
 *   replay                 -- inside the allreduce of a plan replay (after the replay's gate);
 *   allreduce              -- inside MPI's call of a gmpi_allreduce;
 *   barrier, recv          -- before gmpi_barrier, or instead of a send the others receive.
 * The other ranks must end within GMPI_TIMEOUT + 5 s naming the call: with a status (then they
 * print it and "ended within the bound") or by the watchdog ending the job. The job must end
 * non-zero (tests/expect_failure.sh), never hang.
 *
 * The stop is injected by interposing MPI's constructors and allreduce in this executable
 * (linked with exported symbols, so libgmpi's calls resolve here first): each wrapper may stop,
 * then calls MPI's PMPI_ entry. Both the MPI_ and the PMPI_ names are wrapped, whichever of
 * them the library calls. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gmpi.h>

static volatile int armed; /* the victim stops at the next wrapped call */
static const char *fault = "stop";

/* The fault itself, on the victim. */
static void strike(int rank, const char *where) {
  fprintf(stderr, "[rank %d] fault_stop: %s %s\n", rank,
          !strcmp(fault, "kill")   ? "killed (SIGKILL)"
          : !strcmp(fault, "exit") ? "exiting without finalize"
                                   : "stopping (SIGSTOP)",
          where);
  fflush(stderr);
  if (!strcmp(fault, "kill")) raise(SIGKILL);
  if (!strcmp(fault, "exit")) _exit(0);
  raise(SIGSTOP);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int world_rank(int *size) {
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, size);
  return rank;
}

static void maybe_stop(const char *call) {
  if (!armed) return;
  int size, rank = world_rank(&size);
  if (rank != size - 1) return;
  armed = 0;
  char where[64];
  snprintf(where, sizeof(where), "inside %s", call);
  strike(rank, where);
}

static void *real(const char *name) {
  void *f = dlsym(RTLD_NEXT, name);
  if (!f) {
    fprintf(stderr, "fault_stop: %s not found\n", name);
    abort();
  }
  return f;
}

/* MPI_<name> and PMPI_<name>: maybe stop, then MPI's own PMPI_<name>. */
#define WRAP(name, params, args)                                                                   \
  int MPI_##name params {                                                                          \
    maybe_stop("MPI_" #name);                                                                      \
    int(*f) params = real("PMPI_" #name);                                                          \
    return f args;                                                                                 \
  }                                                                                                \
  int PMPI_##name params {                                                                         \
    maybe_stop("MPI_" #name);                                                                      \
    int(*f) params = real("PMPI_" #name);                                                          \
    return f args;                                                                                 \
  }

WRAP(Comm_dup, (MPI_Comm c, MPI_Comm *n), (c, n))
WRAP(Comm_idup, (MPI_Comm c, MPI_Comm *n, MPI_Request *r), (c, n, r))
WRAP(Comm_split, (MPI_Comm c, int color, int key, MPI_Comm *n), (c, color, key, n))
WRAP(Comm_split_type, (MPI_Comm c, int type, int key, MPI_Info info, MPI_Comm *n),
     (c, type, key, info, n))
WRAP(Comm_create, (MPI_Comm c, MPI_Group g, MPI_Comm *n), (c, g, n))
WRAP(Allreduce, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c),
     (s, r, n, t, o, c))
WRAP(Iallreduce,
     (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c, MPI_Request *q),
     (s, r, n, t, o, c, q))

static const char *site;
static int rank = -1;
static double started;

/* A survivor's call returned: it must have failed, within the bound, naming the call. */
static void ended(gmpi_status_t st, const char *call, gmpi_comm_t *comm) {
  if (st == GMPI_SUCCESS) return;
  double took = now() - started, timeout = atof(getenv("GMPI_TIMEOUT"));
  fprintf(stderr, "[rank %d] %s (site %s) returned %s after %.1f s: %s\n", rank, call, site,
          gmpi_status_name(st), took, gmpi_last_error());
  if (took <= timeout + 5)
    fprintf(stderr, "[rank %d] ended within-the-bound (GMPI_TIMEOUT + 5 s)\n", rank);
  if (comm) gmpi_finalize(comm);
  exit(3);
}

static void arm(const char *at) {
  started = now();
  armed = strcmp(site, at) == 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || !getenv("GMPI_TIMEOUT")) {
    fprintf(stderr, "usage: GMPI_TIMEOUT=s fault_stop init|dup|split|plan|replay|allreduce|"
                    "barrier|recv|finalize [stop|kill|exit]\n");
    return 2;
  }
  site = argv[1];
  if (argc > 2) fault = argv[2];
  gmpi_comm_t comm = NULL, dup = NULL, half = NULL;
  arm("init");
  ended(gmpi_init_world(&comm), "gmpi_init", NULL);
  int size;
  gmpi_comm_rank(comm, &rank);
  gmpi_comm_size(comm, &size);
  arm("dup");
  ended(gmpi_comm_dup(comm, &dup), "gmpi_comm_dup", &comm);
  arm("split");
  ended(gmpi_comm_split(comm, rank % 2, rank, &half), "gmpi_comm_split", &comm);
  float x = 1, y = 0;
  gmpi_plan_t plan = NULL;
  ended(gmpi_plan_begin(comm), "gmpi_plan_begin", &comm);
  ended(gmpi_allreduce(&x, &y, 1, GMPI_FLOAT32, GMPI_SUM, comm), "gmpi_allreduce", &comm);
  arm("plan");
  ended(gmpi_plan_end(comm, &plan), "gmpi_plan_end", &comm);
  arm("replay");
  ended(gmpi_plan_run(plan), "gmpi_plan_run", &comm);
  armed = 0;
  arm("allreduce");
  ended(gmpi_allreduce(&x, &y, 1, GMPI_FLOAT32, GMPI_SUM, comm), "gmpi_allreduce", &comm);
  armed = 0;
  if (!strcmp(site, "barrier") && rank == size - 1) strike(rank, "before gmpi_barrier");
  started = now();
  ended(gmpi_barrier(comm), "gmpi_barrier", &comm);
  started = now();
  if (!strcmp(site, "recv")) {
    if (rank == size - 1) strike(rank, "instead of gmpi_send");
    ended(gmpi_recv(&y, 1, GMPI_FLOAT32, size - 1, 9, comm, NULL), "gmpi_recv", &comm);
  }
  gmpi_plan_free(&plan);
  gmpi_comm_free(&half);
  gmpi_comm_free(&dup);
  if (strcmp(site, "finalize") == 0 && rank == size - 1) strike(rank, "before gmpi_finalize");
  started = now();
  ended(gmpi_finalize(&comm), "gmpi_finalize", NULL);
  fprintf(stderr,
          "[rank %d] site %s: every call succeeded (the stopped rank was not waited for?)\n", rank,
          site);
  return 0;
}
