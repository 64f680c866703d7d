/* SPDX-License-Identifier: BSD-3-Clause */
/* Data-moving collectives on any datatype and memory. Each side of a call (what this rank sends,
 * what it receives) becomes gmpi's bytes: a contiguous type is its own bytes, any other type is
 * packed in host memory (MPI_Pack) before the call and unpacked (MPI_Unpack) after it. On device
 * memory the program's buffer is staged to the host around the packing (dropin_stage.c: the holes
 * keep what the device held) and the packed bytes move from and to a device block, so the side
 * is still the memory kind the program passed: gmpi chooses its engine by memory kind. So every
 * rank takes gmpi whatever type it passed: MPI asks only that the type signatures match, and a
 * vector at the root with contiguous doubles elsewhere must move in one collective (when each
 * rank chose its engine from its own type, such ranks took different engines and waited until
 * the watchdog: MPICH's gather, scatter2, scatter3 on host memory, dtpools' bcast on device). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "dropin.h"

/* Field by field: the inline arrays are left as they are (only init's pointers into them read
 * them), and a side is cleared up to six times a collective. */
void dropin_side_clear(dropin_side_t *s) {
  s->user = NULL;
  s->comm = MPI_COMM_NULL;
  s->type = MPI_DATATYPE_NULL;
  s->extent = 0;
  s->n = 0;
  s->counts = s->displs = NULL;
  s->bcounts = s->bdispls = NULL;
  s->packed = NULL;
  s->total = 0;
  s->dev = NULL;
  s->g = NULL;
  s->reported = 0;
  s->base = NULL;
  s->alloc = NULL;
}

/* A failure gmpi or the staging reported already: the caller must not report it again. */
static int side_failed(dropin_side_t *s, const char *what, gmpi_status_t st) {
  s->reported = 1;
  return dropin_fail(s->comm, what, st);
}

/* A packed side on device memory moves from device memory too: gmpi chooses its engine by the
 * memory kind of what it is handed, and every rank of the collective must choose alike. */
static int side_on_device(dropin_side_t *s) {
  s->g = dropin_copier(s->comm);
  gmpi_status_t st = gmpi_mem_alloc(s->g, s->total ? s->total : 1, &s->dev);
  if (st != GMPI_SUCCESS) {
    s->dev = NULL;
    return side_failed(s, "device memory for a derived type's packed bytes", st);
  }
  s->base = s->dev;
  return MPI_SUCCESS;
}

int dropin_side_init(dropin_side_t *s, MPI_Comm comm, void *buf, MPI_Datatype type, int n,
                     const int *counts, const int *displs, int count) {
  dropin_side_clear(s);
  s->comm = comm;
  if (type == MPI_DATATYPE_NULL || !dropin_type_committed(type)) return MPI_ERR_TYPE;
  size_t bytes = 0;
  MPI_Count size = 0;
  MPI_Aint lb = 0;
  /* a predefined type is a table lookup here: no MPI call on the common path */
  int packed = !dropin_contiguous(type, &bytes);
  if (!packed) {
    size = (MPI_Count)bytes;
    s->extent = (MPI_Aint)bytes;
  } else if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS ||
             PMPI_Type_get_extent(type, &lb, &s->extent) != MPI_SUCCESS) {
    return MPI_ERR_TYPE;
  } else {
    packed = size > 0; /* no bytes: nothing to pack */
  }
  size_t per = (size_t)(n > 0 ? n : 1);
  if (per <= sizeof(s->inline_ints) / sizeof(s->inline_ints[0]) / 2) {
    s->bcounts = s->inline_bytes;
    s->counts = s->inline_ints;
  } else { /* one allocation: the byte arrays, then the element arrays */
    if (!(s->alloc = malloc(per * (2 * sizeof(size_t) + 2 * sizeof(int))))) return MPI_ERR_NO_MEM;
    s->bcounts = s->alloc;
    s->counts = (int *)(void *)(s->bcounts + 2 * per);
  }
  s->bdispls = s->bcounts + per;
  s->displs = s->counts + per;
  s->user = buf;
  s->n = n;
  size_t total = 0;
  for (int i = 0; i < n; i++) {
    int c = counts ? counts[i] : count;
    if (c < 0) {
      dropin_side_free(s);
      return MPI_ERR_COUNT;
    }
    s->counts[i] = c;
    s->displs[i] = displs ? displs[i] : i * count;
    s->bcounts[i] = (size_t)c * (size_t)size;
    s->bdispls[i] = packed ? total : (size_t)s->displs[i] * (size_t)size;
    total += s->bcounts[i];
  }
  s->base = buf;
  if (!packed) return MPI_SUCCESS;
  if (total > INT_MAX) { /* MPI_Pack's positions are int */
    dropin_side_free(s);
    return MPI_ERR_COUNT;
  }
  if (!(s->packed = malloc(total ? total : 1)) ||
      PMPI_Type_dup(type, &s->type) != MPI_SUCCESS) { /* the program may free its type */
    dropin_side_free(s);
    return MPI_ERR_NO_MEM;
  }
  s->total = total;
  s->base = s->packed;
  return dropin_is_device(buf) ? side_on_device(s) : MPI_SUCCESS;
}

/* dropin_side_view past its inline memo (dropin.h): a type the memo lacks, or a bad count. */
int dropin_side_view_asked(dropin_side_t *s, void *buf, MPI_Datatype type, int count) {
  size_t size = 0;
  if (count < 0 || type == MPI_DATATYPE_NULL || !dropin_type_committed(type) ||
      !dropin_contiguous(type, &size))
    return 0;
  return dropin_side_view_at(s, buf, (size_t)count * size);
}

void dropin_side_free(dropin_side_t *s) {
  /* Freed through MPI_COMM_WORLD's twin, which lives until MPI_Finalize (a local call, allowed
   * on a failed comm; gmpi's blocks are the process's): a nonblocking call's block goes when the
   * program waits, which may be after it freed the call's comm and so the twin that allocated
   * it -- whose gmpi_mem_free would refuse, a leak per call. */
  if (s->dev) gmpi_mem_free(dropin.world, s->dev);
  if (s->type != MPI_DATATYPE_NULL) PMPI_Type_free(&s->type);
  if (s->packed) free(s->packed); /* most sides own nothing: a small collective's latency */
  if (s->alloc) free(s->alloc);
  dropin_side_clear(s);
}

/* Block i of the program's layout, which lies at user (the program's buffer or its host copy). */
static char *block_at(const dropin_side_t *s, char *user, int i) {
  return user + (MPI_Aint)s->displs[i] * s->extent;
}

/* The program's buffer in host memory (dropin_stage.c: the true-extent span over every block, so
 * the holes come back as the device held them); *user: where the buffer lies in the copy. */
static int side_stage(dropin_side_t *s, dropin_stage_t *st, char **user) {
  MPI_Aint first = 0, end = 0; /* in extents: from the buffer (or a block before it) on */
  for (int i = 0; i < s->n; i++) {
    if (!s->bcounts[i]) continue;
    if (s->displs[i] < first) first = s->displs[i];
    if ((MPI_Aint)s->displs[i] + s->counts[i] > end) end = (MPI_Aint)s->displs[i] + s->counts[i];
  }
  void *buf = (char *)s->user + first * s->extent;
  int rc = dropin_stage_device_in(st, s->comm, &buf, end - first, s->type);
  if (rc != MPI_SUCCESS) s->reported = 1;
  *user = (char *)buf - first * s->extent;
  return rc;
}

/* The packed bytes of blocks lo..hi-1 from the host to dev, or back. */
static int side_copy(dropin_side_t *s, int lo, int hi, int to_device) {
  size_t from = s->bdispls[lo], bytes = s->bdispls[hi - 1] + s->bcounts[hi - 1] - from;
  if (!bytes) return MPI_SUCCESS;
  char *dev = (char *)s->dev + from, *host = s->packed + from;
  gmpi_status_t st =
      to_device ? gmpi_mem_copy(s->g, dev, host, bytes) : gmpi_mem_copy(s->g, host, dev, bytes);
  return st == GMPI_SUCCESS ? MPI_SUCCESS
                            : side_failed(s,
                                          to_device ? "copying packed bytes to the device"
                                                    : "copying packed bytes from the device",
                                          st);
}

static int pack_block(dropin_side_t *s, char *user, int i) {
  if (!s->bcounts[i]) return MPI_SUCCESS;
  int pos = (int)s->bdispls[i];
  int rc = PMPI_Pack(block_at(s, user, i), s->counts[i], s->type, s->packed, (int)s->total, &pos,
                     MPI_COMM_SELF);
  if (rc == MPI_SUCCESS && (size_t)pos != s->bdispls[i] + s->bcounts[i]) rc = MPI_ERR_INTERN;
  return rc;
}

/* Pack blocks lo..hi-1; a device side's from a host copy, their bytes then copied to dev. */
static int pack_blocks(dropin_side_t *s, int lo, int hi) {
  if (!s->packed || lo >= hi) return MPI_SUCCESS;
  dropin_stage_t st = {0};
  char *user = s->user;
  int rc = s->dev ? side_stage(s, &st, &user) : MPI_SUCCESS;
  for (int i = lo; rc == MPI_SUCCESS && i < hi; i++)
    rc = pack_block(s, user, i);
  if (!s->dev) return rc;
  dropin_stage_out(&st, 0); /* read only: nothing goes back */
  return rc == MPI_SUCCESS ? side_copy(s, lo, hi, 1) : rc;
}

int dropin_side_pack(dropin_side_t *s, int i) { return pack_blocks(s, i, i + 1); }

int dropin_side_pack_all(dropin_side_t *s) { return pack_blocks(s, 0, s->n); }

static int unpack_blocks(dropin_side_t *s, char *user) {
  int rc = MPI_SUCCESS;
  for (int i = 0; rc == MPI_SUCCESS && i < s->n; i++) {
    if (!s->bcounts[i]) continue;
    int pos = (int)s->bdispls[i];
    rc = PMPI_Unpack(s->packed, (int)s->total, &pos, block_at(s, user, i), s->counts[i], s->type,
                     MPI_COMM_SELF);
  }
  return rc;
}

/* A device side: the packed bytes back from dev, unpacked into a host copy of the program's
 * buffer, which then goes back to the device whole (holes included, as staged). */
int dropin_side_unpack_all(dropin_side_t *s) {
  if (!s->packed || s->n < 1) return MPI_SUCCESS;
  if (!s->dev) return unpack_blocks(s, s->user);
  dropin_stage_t st = {0};
  char *user = s->user;
  int rc = side_copy(s, 0, s->n, 0);
  if (rc == MPI_SUCCESS) rc = side_stage(s, &st, &user);
  if (rc == MPI_SUCCESS) rc = unpack_blocks(s, user);
  int back = dropin_stage_out(&st, rc == MPI_SUCCESS); /* nothing staged: nothing to do */
  if (back != MPI_SUCCESS) s->reported = 1;
  return rc != MPI_SUCCESS ? rc : back;
}
