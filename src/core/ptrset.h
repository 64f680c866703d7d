/* SPDX-License-Identifier: BSD-3-Clause */
/* A set of non-NULL pointers, compared by address only (a member is never dereferenced): open
 * addressing with linear probing, at most half full, so adding, removing and asking cost the
 * same at any size -- what the registry of live communicators needs when a program keeps
 * thousands of them (MPICH's too_many_comms duplicates MPI_COMM_WORLD until MPI refuses). Not
 * thread-safe: its owner locks. */
#ifndef GMPI_CORE_PTRSET_H
#define GMPI_CORE_PTRSET_H

#include <stddef.h>

typedef struct {
  const void **slots; /* cap entries, NULL where empty; NULL slots while nothing was added */
  size_t cap, len;    /* cap: 0 or a power of two */
} gmpi_ptrset_t;

/* Add p: 1 (also when p is a member already), or 0 for NULL or without memory to grow (the set
 * is unchanged). */
int gmpi_ptrset_add(gmpi_ptrset_t *s, const void *p);
/* Remove p; 0 when it was not a member. */
int gmpi_ptrset_remove(gmpi_ptrset_t *s, const void *p);
/* 1 when p is a member (never for NULL). */
int gmpi_ptrset_has(const gmpi_ptrset_t *s, const void *p);
/* Release the slots; the set is empty and usable again. */
void gmpi_ptrset_clear(gmpi_ptrset_t *s);

#endif
