/* SPDX-License-Identifier: BSD-3-Clause */
/* The layer's life cycle and its routing decision: MPI_Init makes the twin of MPI_COMM_WORLD,
 * communicator constructors make twins by splitting the parent's (one ncclCommSplit, not a new
 * NCCL initialisation), MPI_Comm_free and MPI_Finalize tear them down first. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropin.h"

dropin_t dropin = {.keyval = MPI_KEYVAL_INVALID,
                   .self_comm = MPI_COMM_NULL,
                   .last_comm = MPI_COMM_NULL,
                   .last_wire = MPI_COMM_NULL};

/* Twins, newest first: MPI_Finalize frees them in that order (every rank made its comms in
 * the same collective order, so the collective frees line up). A comm's attribute
 * (dropin.keyval) is its node, so freeing one in any order costs the same at any count
 * (MPICH's too_many_comms frees thousands, oldest first). MPI_COMM_WORLD's and MPI_COMM_SELF's
 * nodes are never in the list. */
typedef struct twin {
  MPI_Comm comm; /* MPI_COMM_NULL once retired */
  gmpi_comm_t g;
  struct twin *prev, *next;
} twin_t;
static twin_t *twins, world_twin, self_twin;

/* ---- configuration --------------------------------------------------------------------- */

static int read_mode(dropin_mode_t *mode) {
  const char *v = getenv("GMPI_INTERPOSE");
  if (!v || !*v || !strcmp(v, "device"))
    *mode = INTERPOSE_DEVICE;
  else if (!strcmp(v, "all"))
    *mode = INTERPOSE_ALL;
  else if (!strcmp(v, "off"))
    *mode = INTERPOSE_OFF;
  else {
    fprintf(stderr, "[gmpi_mpi] GMPI_INTERPOSE='%s' is not one of device, all, off\n", v);
    return 0;
  }
  return 1;
}

/* GMPI_INTERPOSE_MATCHING: across (default; one matching engine per comm) or per-kind (host
 * messages on MPI at its speed, device messages on gmpi; a receive then matches sends of its own
 * memory kind only -- for programs that never send host memory to device memory). */
static int read_matching(int *per_kind) {
  const char *v = getenv("GMPI_INTERPOSE_MATCHING");
  *per_kind = v && !strcmp(v, "per-kind");
  if (!v || !*v || *per_kind || !strcmp(v, "across")) return 1;
  fprintf(stderr, "[gmpi_mpi] GMPI_INTERPOSE_MATCHING='%s' is not one of across, per-kind\n", v);
  return 0;
}

/* GMPI_INTERPOSE_KINDS: uniform (default; every rank of a collective passes one memory kind, as
 * NCCL asks) or mixed (the ranks agree on each collective's route first: one small allreduce;
 * docs/dropin.md). */
static int read_kinds(int *mixed) {
  const char *v = getenv("GMPI_INTERPOSE_KINDS");
  *mixed = v && !strcmp(v, "mixed");
  if (!v || !*v || *mixed || !strcmp(v, "uniform")) return 1;
  fprintf(stderr, "[gmpi_mpi] GMPI_INTERPOSE_KINDS='%s' is not one of uniform, mixed\n", v);
  return 0;
}

static double read_timeout(void) {
  const char *v = getenv("GMPI_TIMEOUT");
  char *end = NULL;
  double t = v ? strtod(v, &end) : 300.0;
  return v && (end == v || t < 0) ? 300.0 : t; /* gmpi_init refuses a bad value itself */
}

/* ---- twins ------------------------------------------------------------------------------ */

void dropin_forget_last_twin(void) {
  dropin.last_comm = MPI_COMM_NULL;
  dropin.last_twin = NULL;
  dropin.last_wire = MPI_COMM_NULL;
}

/* comm's node, from its attribute; NULL when it has none. */
static twin_t *twin_node(MPI_Comm comm) {
  void *val = NULL;
  int flag = 0;
  if (comm == MPI_COMM_NULL || dropin.keyval == MPI_KEYVAL_INVALID) return NULL;
  if (PMPI_Comm_get_attr(comm, dropin.keyval, &val, &flag) != MPI_SUCCESS || !flag) return NULL;
  return val;
}

gmpi_comm_t dropin_twin(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL || dropin.keyval == MPI_KEYVAL_INVALID) return NULL;
  if (comm == dropin.last_comm) return dropin.last_twin;
  twin_t *t = twin_node(comm);
  if (!t) {
    if (comm == MPI_COMM_SELF && dropin.active && !dropin.self) {
      /* MPI_COMM_SELF's twin: one rank, so made locally whenever it is first needed. */
      gmpi_status_t st = gmpi_init(MPI_COMM_SELF, &dropin.self);
      if (st == GMPI_SUCCESS && !dropin.per_kind)
        st = gmpi_comm_set_matching(dropin.self, GMPI_MATCH_ACROSS_KINDS);
      if (st == GMPI_SUCCESS) st = gmpi_comm_set_tags(dropin.self, GMPI_TAGS_FULL);
      if (st == GMPI_SUCCESS) st = gmpi_comm_set_sends(dropin.self, GMPI_SENDS_AS_MPI);
      if (st != GMPI_SUCCESS) {
        dropin_fail(MPI_COMM_SELF, "MPI_COMM_SELF's gmpi communicator", st);
        return NULL;
      }
      self_twin = (twin_t){.comm = MPI_COMM_SELF, .g = dropin.self};
      PMPI_Comm_set_attr(MPI_COMM_SELF, dropin.keyval, &self_twin);
      return dropin.self;
    }
    return NULL;
  }
  dropin.last_comm = comm;
  dropin.last_twin = t->g;
  PMPI_Comm_rank(comm, &dropin.last_rank);
  PMPI_Comm_size(comm, &dropin.last_size);
  if (gmpi_comm_host_wire(t->g, &dropin.last_wire) != GMPI_SUCCESS)
    dropin.last_wire = MPI_COMM_NULL; /* a failed twin: its calls report why */
  return t->g;
}

/* t, filled, goes first in the list and becomes comm's attribute. */
static void twin_remember(twin_t *t, MPI_Comm comm, gmpi_comm_t g) {
  *t = (twin_t){.comm = comm, .g = g, .next = twins};
  if (twins) twins->prev = t;
  twins = t;
  PMPI_Comm_set_attr(comm, dropin.keyval, t);
}

static void twin_forget(twin_t *t) {
  if (t->prev)
    t->prev->next = t->next;
  else
    twins = t->next;
  if (t->next) t->next->prev = t->prev;
  free(t);
}

/* The twin of newcomm, made from parent's by gmpi_comm_split (collective over parent, as every
 * constructor below is). Color: the lowest parent rank in newcomm; key: the rank in newcomm. */
static int twin_make(MPI_Comm parent, MPI_Comm newcomm, int is_dup, const char *func) {
  gmpi_comm_t pg = dropin_twin(parent), g = NULL;
  if (!pg || !dropin.active) return MPI_SUCCESS;
  twin_t *t = NULL;
  int prank = 0, color = GMPI_UNDEFINED, key = 0;
  PMPI_Comm_rank(parent, &prank);
  if (newcomm != MPI_COMM_NULL) {
    int inter = 0;
    PMPI_Comm_test_inter(newcomm, &inter);
    if (inter) return MPI_SUCCESS; /* no twin: device buffers on it are staged */
    /* The members agree on the color and on each having memory for the twin's node: where one
     * has none, no member makes the twin (every rank still calls gmpi, collectively). */
    t = calloc(1, sizeof(*t));
    int mine[2] = {prank, t != NULL}, all[2] = {0, 0};
    PMPI_Allreduce(mine, all, 2, MPI_INT, MPI_MIN, newcomm);
    if (all[1])
      color = all[0];
    else
      fprintf(stderr,
              "[gmpi_mpi] %s: a rank had no memory for gmpi's communicator: this one "
              "runs on MPI alone (device buffers through host copies)\n",
              func);
    PMPI_Comm_rank(newcomm, &key);
  }
  gmpi_status_t st = is_dup && color != GMPI_UNDEFINED ? gmpi_comm_dup(pg, &g)
                                                       : gmpi_comm_split(pg, color, key, &g);
  if (st != GMPI_SUCCESS || !g) free(t);
  if (st != GMPI_SUCCESS) return dropin_fail(parent, func, st);
  if (!g) return MPI_SUCCESS;
  dropin_forget_last_twin();
  twin_remember(t, newcomm, g);
  return MPI_SUCCESS;
}

/* MPI's comm free does not wait for the comm's pending operations: they complete later (a send
 * nobody receives may never). A twin whose comm has live requests on any rank is therefore kept,
 * retired (no MPI comm names it), and freed at MPI_Finalize with the others; every rank decides
 * alike (one allreduce), because freeing a twin is collective. Until 2026-12 the free waited for
 * them, up to GMPI_TIMEOUT, and then failed the comm (mpi4py's suite: a send MPI_Cancel did not
 * take back). */
static int twin_free(MPI_Comm comm, const char *func) {
  twin_t *t = twin_node(comm);
  dropin_forget_last_twin(); /* MPI frees comm next, and may hand its handle out again */
  if (!t || t == &world_twin || t == &self_twin) return MPI_SUCCESS;
  gmpi_comm_t g = t->g;
  /* MPI's nonblocking allreduce, polled with gmpi's live requests driven: a peer may still wait
   * for a send of this rank's that only gmpi's progress moves -- a buffered or freed send on
   * this comm (dropin_more's bsend_then_free, 4 ranks: a blocking allreduce here drove MPI only
   * and the peer's receive timed out). Every rank makes the same MPI call whatever its twin's
   * state (a gmpi barrier would skip a rank whose twin failed). */
  int live = dropin_req_live_on(comm) > 0, any = 0;
  MPI_Request q = MPI_REQUEST_NULL;
  int rc = dropin_polled(PMPI_Iallreduce(&live, &any, 1, MPI_INT, MPI_MAX, comm, &q), &q);
  if (rc != MPI_SUCCESS) return rc;
  PMPI_Comm_delete_attr(comm, dropin.keyval);
  if (any) { /* the twin stays listed, freed at MPI_Finalize, without its MPI comm */
    dropin_req_rehome(comm);
    t->comm = MPI_COMM_NULL;
    return MPI_SUCCESS;
  }
  twin_forget(t);
  gmpi_status_t st = gmpi_comm_free(&g);
  return st == GMPI_SUCCESS ? MPI_SUCCESS : dropin_fail(comm, func, st);
}

/* ---- routing ---------------------------------------------------------------------------- */

/* A pointer gmpi cannot classify (another GPU's memory, or any pointer once the world twin has
 * failed) counts as device memory: gmpi then refuses the call with its reason, where MPI would
 * have read device memory and crashed. */
/* The cpu backend has no device memory (it classifies nothing, even on a failed comm): no call
 * into gmpi per buffer under GMPI_INTERPOSE=all there (dropin_is_device). */
int dropin_is_device_asked(const void *ptr) {
  int dev = 0;
  gmpi_status_t st = gmpi_mem_is_device(dropin.world, ptr, &dev);
  return st != GMPI_SUCCESS || dev;
}

gmpi_comm_t dropin_copier(MPI_Comm comm) {
  gmpi_comm_t g = dropin.active ? dropin_twin(comm) : NULL;
  return g ? g : dropin.world;
}

gmpi_comm_t dropin_take_p2p_lookup(MPI_Comm comm, const void *buf) {
  if (!dropin.active) return NULL;
  /* one matching engine per comm: the kind of buf does not choose it, unless per-kind */
  if (dropin_per_kind() && !dropin_is_device(buf)) return NULL;
  return dropin_twin(comm);
}

gmpi_comm_t dropin_take_probe(MPI_Comm comm, int *either) {
  *either = 0;
  if (!dropin.active) return NULL;
  *either = dropin_per_kind();
  return dropin_twin(comm);
}

/* ---- errors and notes ------------------------------------------------------------------- */

/* MPI's class for a wrong argument, from the argument gmpi_last_error() names ("argument
 * 'dest' = ..."): what Open MPI returns for the same mistake (MPI_ERR_RANK, not MPI_ERR_ARG). */
static int invalid_arg_code(void) {
  static const struct {
    const char *name;
    int code;
  } by_name[] = {
      {"dest", MPI_ERR_RANK},   {"source", MPI_ERR_RANK},     {"root", MPI_ERR_ROOT},
      {"tag", MPI_ERR_TAG},     {"sendtag", MPI_ERR_TAG},     {"recvtag", MPI_ERR_TAG},
      {"buf", MPI_ERR_BUFFER},  {"sendbuf", MPI_ERR_BUFFER},  {"recvbuf", MPI_ERR_BUFFER},
      {"count", MPI_ERR_COUNT}, {"sendcount", MPI_ERR_COUNT}, {"recvcount", MPI_ERR_COUNT},
      {"dtype", MPI_ERR_TYPE},  {"sendtype", MPI_ERR_TYPE},   {"recvtype", MPI_ERR_TYPE},
      {"op", MPI_ERR_OP}};
  const char *arg = strstr(gmpi_last_error(), "argument '");
  if (!arg) return MPI_ERR_ARG;
  arg += strlen("argument '");
  size_t len = strcspn(arg, "'[");
  for (size_t i = 0; i < sizeof(by_name) / sizeof(by_name[0]); i++)
    if (strlen(by_name[i].name) == len && !strncmp(arg, by_name[i].name, len))
      return by_name[i].code;
  return MPI_ERR_ARG;
}

int dropin_error_code(gmpi_status_t st) {
  if (st == GMPI_ERR_INVALID_ARG) return invalid_arg_code();
  static const int code[] = {
      [GMPI_SUCCESS] = MPI_SUCCESS,           [GMPI_ERR_INVALID_ARG] = MPI_ERR_ARG,
      [GMPI_ERR_UNSUPPORTED] = MPI_ERR_OTHER, [GMPI_ERR_NO_DEVICE] = MPI_ERR_OTHER,
      [GMPI_ERR_NO_MEMORY] = MPI_ERR_NO_MEM,  [GMPI_ERR_TRUNCATE] = MPI_ERR_TRUNCATE,
      [GMPI_ERR_MISMATCH] = MPI_ERR_OTHER,    [GMPI_ERR_TIMEOUT] = MPI_ERR_OTHER,
      [GMPI_ERR_STATE] = MPI_ERR_OTHER,       [GMPI_ERR_MPI] = MPI_ERR_INTERN,
      [GMPI_ERR_BACKEND] = MPI_ERR_OTHER,     [GMPI_ERR_INTERNAL] = MPI_ERR_INTERN,
  };
  return (unsigned)st < sizeof(code) / sizeof(code[0]) ? code[st] : MPI_ERR_OTHER;
}

int dropin_raised(MPI_Comm comm, int rc) {
  if (rc != MPI_SUCCESS) PMPI_Comm_call_errhandler(comm, rc);
  return rc;
}

int dropin_fail(MPI_Comm comm, const char *func, gmpi_status_t st) {
  int code = dropin_error_code(st);
  dropin_forget_last_twin();   /* the twin may have failed: its wire is asked again */
  if (st != GMPI_ERR_TRUNCATE) /* MPI reports truncation itself; the rest needs gmpi's detail */
    fprintf(stderr, "[gmpi_mpi] %s: %s\n", func, gmpi_last_error());
  PMPI_Comm_call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, code);
  return code;
}

void dropin_note_staged(const char *func, const char *why) {
  enum { KEPT = 64, SHOWN = 3 }; /* each (call, reason) logged its first few times */
  static struct {
    const char *func, *why;
    int seen;
  } notes[KEPT];
  for (int i = 0; i < KEPT; i++) {
    if (!notes[i].func) notes[i].func = func, notes[i].why = why;
    if (notes[i].func != func || notes[i].why != why) continue;
    if (++notes[i].seen <= SHOWN)
      gmpi_log_info("drop-in: %s staged through host memory: %s%s", func, why,
                    notes[i].seen == SHOWN ? " (not logged again)" : "");
    return;
  }
}

/* ---- MPI_Init, MPI_Finalize -------------------------------------------------------------- */

static int noop_delete(MPI_Comm comm, int keyval, void *val, void *extra) {
  (void)comm, (void)keyval, (void)val, (void)extra;
  return MPI_SUCCESS; /* twins are freed by MPI_Comm_free / MPI_Finalize, in order */
}

/* GMPI_NCCL_MEM=window makes gmpi_mem_alloc collective, and the drop-in allocates device
 * temporaries call by call on one rank (MPI_Sendrecv_replace): they would wait for peers that
 * never come. The other modes allocate locally. */
static int collective_alloc(void) {
  const char *v = getenv("GMPI_NCCL_MEM");
  if (!v || strcmp(v, "window")) return 0;
  fprintf(stderr, "[gmpi_mpi] MPI_Init: gmpi not started: GMPI_NCCL_MEM=window makes "
                  "gmpi_mem_alloc collective, which the drop-in layer cannot keep (it allocates "
                  "per call); use alloc or register\n");
  return 1;
}

/* The settings that choose routes must be alike on every rank (an MPMD launch may give ranks
 * different environments): a rank that routed a collective differently, or agreed on its route
 * alone (GMPI_INTERPOSE_KINDS, GMPI_CHECK), would leave the others waiting. One allreduce of
 * each setting and its negation: max and min at once. */
static int settings_alike(void) {
  int v[8] = {(int)dropin.mode, dropin.per_kind, dropin.kinds_mixed, dropin.check};
  for (int i = 0; i < 4; i++)
    v[4 + i] = -v[i];
  int m[8];
  if (PMPI_Allreduce(v, m, 8, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS) return 0;
  for (int i = 0; i < 4; i++)
    if (m[i] != -m[4 + i]) return 0;
  return 1;
}

static const char *env_or_unset(const char *name) {
  const char *v = getenv(name);
  return v ? v : "(unset)";
}

static void start(void) {
  if (!read_mode(&dropin.mode) || !read_matching(&dropin.per_kind) ||
      !read_kinds(&dropin.kinds_mixed))
    PMPI_Abort(MPI_COMM_WORLD, 2);
  const char *check = getenv("GMPI_CHECK");
  dropin.check = check && !strcmp(check, "1");
  if (!settings_alike()) {
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr,
            "[gmpi_mpi] MPI_Init (rank %d): GMPI_INTERPOSE, GMPI_INTERPOSE_MATCHING, "
            "GMPI_INTERPOSE_KINDS and GMPI_CHECK must be set alike on every rank; here "
            "GMPI_INTERPOSE='%s' GMPI_INTERPOSE_MATCHING='%s' GMPI_INTERPOSE_KINDS='%s' "
            "GMPI_CHECK='%s'\n",
            rank, env_or_unset("GMPI_INTERPOSE"), env_or_unset("GMPI_INTERPOSE_MATCHING"),
            env_or_unset("GMPI_INTERPOSE_KINDS"), env_or_unset("GMPI_CHECK"));
    PMPI_Abort(MPI_COMM_WORLD, 2);
  }
  dropin.timeout_s = read_timeout();
  if (dropin.mode == INTERPOSE_OFF) return;
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, noop_delete, &dropin.keyval, NULL);
  PMPI_Comm_dup(MPI_COMM_SELF, &dropin.self_comm);
  if (collective_alloc()) {
    if (dropin.mode == INTERPOSE_ALL) PMPI_Abort(MPI_COMM_WORLD, 2);
    return; /* device mode: the program runs on MPI alone */
  }
  /* The layer grants at most MPI_THREAD_SERIALIZED (MPI_Init_thread below), so its comms may
   * share NCCL resources whatever MPI itself granted -- but not under GMPI_CHECK, where a failed
   * comm's abort would take its parent with it (docs/design.md); a user's own setting stands. */
  if (!dropin.check) setenv("GMPI_NCCL_SPLIT_SHARE", "1", 0);
  gmpi_status_t st = gmpi_init(MPI_COMM_WORLD, &dropin.world);
  gmpi_backend_t backend = GMPI_BACKEND_CPU;
  if (st == GMPI_SUCCESS)
    st = gmpi_comm_set_matching(dropin.world,
                                dropin.per_kind ? GMPI_MATCH_PER_KIND : GMPI_MATCH_ACROSS_KINDS);
  /* every tag MPI_TAG_UB promises the program: messages move as bytes, no sizes in tags */
  if (st == GMPI_SUCCESS) st = gmpi_comm_set_tags(dropin.world, GMPI_TAGS_FULL);
  /* MPI programs rely on MPI's eager size only: host sends need no copy (split, dup inherit) */
  if (st == GMPI_SUCCESS) st = gmpi_comm_set_sends(dropin.world, GMPI_SENDS_AS_MPI);
  if (st == GMPI_SUCCESS) st = gmpi_comm_backend(dropin.world, &backend);
  if (st != GMPI_SUCCESS) {
    fprintf(stderr, "[gmpi_mpi] MPI_Init: gmpi could not start: %s\n", gmpi_last_error());
    if (dropin.mode == INTERPOSE_ALL) PMPI_Abort(MPI_COMM_WORLD, 2);
    dropin.world = NULL;
    return; /* device mode: the program runs on MPI alone */
  }
  dropin.cpu = backend == GMPI_BACKEND_CPU;
  if (dropin.cpu && dropin.mode == INTERPOSE_DEVICE) { /* no device memory here: MPI alone */
    gmpi_finalize(&dropin.world);
    return;
  }
  dropin_types_start();
  world_twin = (twin_t){.comm = MPI_COMM_WORLD, .g = dropin.world};
  PMPI_Comm_set_attr(MPI_COMM_WORLD, dropin.keyval, &world_twin);
  dropin.active = 1;
  dropin.coll_fast = dropin.mode == INTERPOSE_ALL && !dropin.kinds_mixed && !dropin.check;
  gmpi_log_info("drop-in: GMPI_INTERPOSE=%s on the %s backend",
                dropin.mode == INTERPOSE_ALL ? "all" : "device", gmpi_backend_name(backend));
}

int MPI_Init(int *argc, char ***argv) {
  int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) start();
  return rc;
}

/* The layer's tables are not locked: it grants at most MPI_THREAD_SERIALIZED while active. */
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) start();
  if (rc == MPI_SUCCESS && dropin.active && *provided > MPI_THREAD_SERIALIZED)
    *provided = MPI_THREAD_SERIALIZED;
  return rc;
}

int MPI_Finalize(void) {
  dropin_forget_last_twin();
  if (dropin.active) {
    dropin_req_finalize();
    while (twins) {
      twin_t *t = twins;
      twins = t->next;
      if (t->comm != MPI_COMM_NULL) PMPI_Comm_delete_attr(t->comm, dropin.keyval);
      gmpi_comm_free(&t->g);
      free(t);
    }
    if (dropin.self) gmpi_finalize(&dropin.self);
    gmpi_finalize(&dropin.world);
    dropin.active = dropin.coll_fast = 0;
  }
  if (dropin.keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&dropin.keyval);
  if (dropin.self_comm != MPI_COMM_NULL) PMPI_Comm_free(&dropin.self_comm);
  return PMPI_Finalize();
}

/* ---- communicators ---------------------------------------------------------------------- */

/* Before a blocking MPI call that every rank of comm makes (dropin.h): every rank arrives in gmpi
 * first (gmpi_barrier drives gmpi's engines while it waits), so no rank sits in MPI while a peer's
 * receive waits on one of its sends -- MPI's progress rule, which a blocking PMPI call cannot
 * keep for gmpi (found on the H200: MPI_Comm_dup after a 4 MiB buffered send, 4 shared ranks). */
int dropin_arrive(MPI_Comm comm, const char *func, int *arrived) {
  int size = 0;
  if (arrived) *arrived = 0;
  if (!dropin.active || PMPI_Comm_size(comm, &size) != MPI_SUCCESS || size < 2)
    return MPI_SUCCESS; /* alone, nobody waits on this rank (and no twin is made for it) */
  gmpi_comm_t g = dropin_twin(comm);
  if (!g) return MPI_SUCCESS;
  gmpi_status_t st = gmpi_barrier(g);
  if (arrived) *arrived = 1;
  return st == GMPI_SUCCESS ? MPI_SUCCESS : dropin_fail(comm, func, st);
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
  int rc = dropin_arrive(comm, "MPI_Comm_dup", NULL);
  if (rc == MPI_SUCCESS) rc = PMPI_Comm_dup(comm, newcomm);
  return rc != MPI_SUCCESS ? rc : twin_make(comm, *newcomm, 1, "MPI_Comm_dup");
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
  int rc = dropin_arrive(comm, "MPI_Comm_split", NULL);
  if (rc == MPI_SUCCESS) rc = PMPI_Comm_split(comm, color, key, newcomm);
  return rc != MPI_SUCCESS ? rc : twin_make(comm, *newcomm, 0, "MPI_Comm_split");
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm) {
  int rc = dropin_arrive(comm, "MPI_Comm_split_type", NULL);
  if (rc == MPI_SUCCESS) rc = PMPI_Comm_split_type(comm, split_type, key, info, newcomm);
  return rc != MPI_SUCCESS ? rc : twin_make(comm, *newcomm, 0, "MPI_Comm_split_type");
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm) {
  int rc = dropin_arrive(comm, "MPI_Comm_create", NULL);
  if (rc == MPI_SUCCESS) rc = PMPI_Comm_create(comm, group, newcomm);
  return rc != MPI_SUCCESS ? rc : twin_make(comm, *newcomm, 0, "MPI_Comm_create");
}

int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                    MPI_Comm *newcomm) {
  int rc = dropin_arrive(comm, "MPI_Cart_create", NULL);
  if (rc == MPI_SUCCESS) rc = PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm);
  return rc != MPI_SUCCESS ? rc : twin_make(comm, *newcomm, 0, "MPI_Cart_create");
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm) {
  int rc = dropin_arrive(comm, "MPI_Comm_dup_with_info", NULL);
  if (rc == MPI_SUCCESS) rc = PMPI_Comm_dup_with_info(comm, info, newcomm);
  return rc != MPI_SUCCESS ? rc : twin_make(comm, *newcomm, 1, "MPI_Comm_dup_with_info");
}

int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm) {
  int rc = dropin_arrive(comm, "MPI_Cart_sub", NULL);
  if (rc == MPI_SUCCESS) rc = PMPI_Cart_sub(comm, remain_dims, newcomm);
  return rc != MPI_SUCCESS ? rc : twin_make(comm, *newcomm, 0, "MPI_Cart_sub");
}

int MPI_Comm_disconnect(MPI_Comm *comm) {
  if (comm && dropin.active) {
    int rc = twin_free(*comm, "MPI_Comm_disconnect");
    if (rc != MPI_SUCCESS) return rc;
  }
  return PMPI_Comm_disconnect(comm);
}

int MPI_Comm_free(MPI_Comm *comm) {
  if (comm && dropin.active) {
    int rc = twin_free(*comm, "MPI_Comm_free");
    if (rc != MPI_SUCCESS) return rc;
  }
  return PMPI_Comm_free(comm);
}
