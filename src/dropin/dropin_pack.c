/* SPDX-License-Identifier: BSD-3-Clause */
/* Data-moving collectives on any datatype. Each side of a call (what this rank sends, what it
 * receives) becomes gmpi's bytes: a contiguous type is its own bytes, any other type is packed
 * into host memory (MPI_Pack) before the call and unpacked (MPI_Unpack) after it. So every rank
 * takes gmpi whatever type it passed: MPI asks only that the type signatures match, and a vector
 * at the root with contiguous doubles elsewhere must move in one collective (when each rank
 * chose its engine from its own type, such ranks took different engines and waited forever:
 * MPICH's gather, scatter2, scatter3). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "dropin.h"

int dropin_side_contiguous(MPI_Datatype type) {
  size_t size = 0;
  MPI_Count bytes = 0;
  if (dropin_contiguous(type, &size)) return 1;
  /* a type of no bytes moves nothing: any layout is its (empty) bytes */
  return PMPI_Type_size_x(type, &bytes) == MPI_SUCCESS && bytes == 0;
}

void dropin_side_clear(dropin_side_t *s) {
  memset(s, 0, sizeof(*s));
  s->type = MPI_DATATYPE_NULL;
}

int dropin_side_init(dropin_side_t *s, void *buf, MPI_Datatype type, int n, const int *counts,
                     const int *displs, int count) {
  dropin_side_clear(s);
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
  return MPI_SUCCESS;
}

void dropin_side_free(dropin_side_t *s) {
  if (s->type != MPI_DATATYPE_NULL) PMPI_Type_free(&s->type);
  free(s->packed);
  free(s->alloc);
  dropin_side_clear(s);
}

static char *block_at(const dropin_side_t *s, int i) {
  return (char *)s->user + (MPI_Aint)s->displs[i] * s->extent;
}

int dropin_side_pack(dropin_side_t *s, int i) {
  if (!s->packed || !s->bcounts[i]) return MPI_SUCCESS;
  int pos = (int)s->bdispls[i];
  int rc = PMPI_Pack(block_at(s, i), s->counts[i], s->type, s->packed, (int)s->total, &pos,
                     MPI_COMM_SELF);
  if (rc == MPI_SUCCESS && (size_t)pos != s->bdispls[i] + s->bcounts[i]) rc = MPI_ERR_INTERN;
  return rc;
}

int dropin_side_pack_all(dropin_side_t *s) {
  int rc = MPI_SUCCESS;
  for (int i = 0; rc == MPI_SUCCESS && s->packed && i < s->n; i++)
    rc = dropin_side_pack(s, i);
  return rc;
}

int dropin_side_unpack_all(dropin_side_t *s) {
  int rc = MPI_SUCCESS;
  for (int i = 0; rc == MPI_SUCCESS && s->packed && i < s->n; i++) {
    if (!s->bcounts[i]) continue;
    int pos = (int)s->bdispls[i];
    rc = PMPI_Unpack(s->packed, (int)s->total, &pos, block_at(s, i), s->counts[i], s->type,
                     MPI_COMM_SELF);
  }
  return rc;
}
