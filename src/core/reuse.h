/* SPDX-License-Identifier: BSD-3-Clause */
/* Freed objects kept for reuse on hot paths (the envelope engine's sends, receives, messages and
 * envelopes; the host engine's request parts; the MPI channel's handles): glibc's calloc never
 * takes its per-thread cache, and its malloc and free came to a fifth of a small message's
 * instructions. Not under AddressSanitizer, which must see every use after free. */
#ifndef GMPI_CORE_REUSE_H
#define GMPI_CORE_REUSE_H

#if defined(__SANITIZE_ADDRESS__)
#define GMPI_KEEP_SPARES 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GMPI_KEEP_SPARES 0
#endif
#endif
#ifndef GMPI_KEEP_SPARES
#define GMPI_KEEP_SPARES 1
#endif

#include <stdlib.h>
#include <string.h>

/* A list of freed objects of one size (each at least a pointer: the link overlays its start),
 * under its owner's lock. */
typedef struct gmpi_spare {
  struct gmpi_spare *next;
} gmpi_spare_t;
typedef struct {
  gmpi_spare_t *head;
  int n;
  int kept;    /* at most this many (0 under AddressSanitizer) */
  size_t size; /* of each object */
} gmpi_spares_t;

static inline void gmpi_spares_init(gmpi_spares_t *s, size_t size, int kept) {
  *s = (gmpi_spares_t){.size = size, .kept = GMPI_KEEP_SPARES ? kept : 0};
}

/* A zeroed object of s's size, NULL when out of memory. */
static inline void *gmpi_spare_take(gmpi_spares_t *s) {
  gmpi_spare_t *o = s->head;
  if (!o) return calloc(1, s->size);
  s->head = o->next;
  s->n--;
  memset(o, 0, s->size);
  return o;
}

static inline void gmpi_spare_give(gmpi_spares_t *s, void *obj) {
  if (!obj) return;
  if (s->n >= s->kept) {
    free(obj);
    return;
  }
  gmpi_spare_t *o = obj;
  o->next = s->head;
  s->head = o;
  s->n++;
}

static inline void gmpi_spares_drop(gmpi_spares_t *s) {
  while (s->head) {
    gmpi_spare_t *next = s->head->next;
    free(s->head);
    s->head = next;
  }
  s->n = 0;
}

#endif
