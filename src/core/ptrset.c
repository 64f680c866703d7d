/* SPDX-License-Identifier: BSD-3-Clause */
#include "ptrset.h"

#include <stdint.h>
#include <stdlib.h>

/* Where p's probe starts: its address mixed (allocations share their low bits). */
static size_t home(const gmpi_ptrset_t *s, const void *p) {
  uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 32) & (s->cap - 1);
}

/* The slot holding p, or the empty slot where its probe ends. */
static size_t find(const gmpi_ptrset_t *s, const void *p) {
  size_t i = home(s, p);
  while (s->slots[i] && s->slots[i] != p)
    i = (i + 1) & (s->cap - 1);
  return i;
}

static int grow(gmpi_ptrset_t *s) {
  size_t cap = s->cap ? 2 * s->cap : 16;
  const void **slots = calloc(cap, sizeof(*slots));
  if (!slots) return 0;
  gmpi_ptrset_t bigger = {slots, cap, 0};
  for (size_t i = 0; i < s->cap; i++)
    if (s->slots[i]) {
      bigger.slots[find(&bigger, s->slots[i])] = s->slots[i];
      bigger.len++;
    }
  free(s->slots);
  *s = bigger;
  return 1;
}

int gmpi_ptrset_add(gmpi_ptrset_t *s, const void *p) {
  if (!p) return 0; /* NULL marks an empty slot: never a member */
  if (2 * (s->len + 1) > s->cap && !grow(s)) return 0;
  size_t i = find(s, p);
  if (!s->slots[i]) {
    s->slots[i] = p;
    s->len++;
  }
  return 1;
}

/* Removal shifts back the entries after the hole whose probe passed it, so that every member
 * stays reachable from its home slot without tombstones. */
int gmpi_ptrset_remove(gmpi_ptrset_t *s, const void *p) {
  if (!s->len) return 0;
  size_t hole = find(s, p), mask = s->cap - 1;
  if (!s->slots[hole]) return 0;
  s->slots[hole] = NULL;
  s->len--;
  for (size_t i = (hole + 1) & mask; s->slots[i]; i = (i + 1) & mask) {
    size_t h = home(s, s->slots[i]);
    /* the entry at i may move to the hole when its home is not in (hole, i], cyclically */
    int stays = hole < i ? (h > hole && h <= i) : (h > hole || h <= i);
    if (stays) continue;
    s->slots[hole] = s->slots[i];
    s->slots[i] = NULL;
    hole = i;
  }
  return 1;
}

int gmpi_ptrset_has(const gmpi_ptrset_t *s, const void *p) {
  return p && s->len && s->slots[find(s, p)] == p;
}

void gmpi_ptrset_clear(gmpi_ptrset_t *s) {
  free(s->slots);
  *s = (gmpi_ptrset_t){NULL, 0, 0};
}
