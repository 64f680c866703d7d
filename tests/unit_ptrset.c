/* SPDX-License-Identifier: BSD-3-Clause */
/* The pointer set (core/ptrset.h) against a plain array that holds the same members: every
 * add, remove and question agrees, through growth, removals in every order (the backward shift
 * that keeps probes unbroken) and emptying. The pointers are spaced as allocations are (a
 * common stride). Then a set that stays at 16 slots (at most 7 members) through 200,000
 * random adds and removes: its probe runs wrap past the table's end again and again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../src/core/ptrset.h"
#include "unit_util.h"

enum { N = 5000 };

static const void *ptr_of(size_t i) { return (const void *)(uintptr_t)(0x10000 + 64 * i); }

static int in_array(const char *member, size_t i) { return member[i]; }

/* Every candidate's membership as the array says, and the count. */
static void agree(const gmpi_ptrset_t *s, const char *member, size_t *checked) {
  size_t len = 0;
  for (size_t i = 0; i < 2 * N; i++) {
    CHECK_EQ(gmpi_ptrset_has(s, ptr_of(i)), in_array(member, i));
    len += member[i];
  }
  CHECK_EQ(s->len, len);
  CHECK_EQ(gmpi_ptrset_has(s, NULL), 0);
  (*checked)++;
}

int main(void) {
  gmpi_ptrset_t s = {0};
  char *member = calloc(2 * N, 1);
  size_t checked = 0;
  unsigned seed = 12345;
  CHECK_EQ(gmpi_ptrset_has(&s, ptr_of(1)), 0); /* empty, never grown */
  CHECK_EQ(gmpi_ptrset_remove(&s, ptr_of(1)), 0);
  for (size_t i = 0; i < N; i++) { /* grows from 16 slots */
    CHECK_EQ(gmpi_ptrset_add(&s, ptr_of(i)), 1);
    member[i] = 1;
  }
  CHECK_EQ(gmpi_ptrset_add(&s, ptr_of(7)), 1); /* a member again: no second entry */
  agree(&s, member, &checked);
  for (int round = 0; round < 40; round++) { /* removals and adds in random order */
    for (int k = 0; k < 400; k++) {
      seed = seed * 1103515245u + 12345u;
      size_t i = (seed >> 8) % (2 * N);
      if (member[i]) {
        CHECK_EQ(gmpi_ptrset_remove(&s, ptr_of(i)), 1);
        member[i] = 0;
      } else if (seed & 0x10000) {
        CHECK_EQ(gmpi_ptrset_add(&s, ptr_of(i)), 1);
        member[i] = 1;
      } else {
        CHECK_EQ(gmpi_ptrset_remove(&s, ptr_of(i)), 0); /* not a member */
      }
    }
    agree(&s, member, &checked);
  }
  for (size_t i = 0; i < 2 * N; i++) /* oldest first, as too_many_comms frees */
    if (member[i]) {
      CHECK_EQ(gmpi_ptrset_remove(&s, ptr_of(i)), 1);
      member[i] = 0;
    }
  agree(&s, member, &checked);
  gmpi_ptrset_clear(&s);
  CHECK_EQ(gmpi_ptrset_add(&s, NULL), 0); /* never a member */
  CHECK_EQ(s.len, 0);
  memset(member, 0, 2 * N);
  for (int k = 0; k < 200000; k++) { /* 16 slots: members among 64 candidates, at most 7 */
    seed = seed * 1103515245u + 12345u;
    size_t i = (seed >> 8) % 64;
    if (member[i]) {
      CHECK_EQ(gmpi_ptrset_remove(&s, ptr_of(i)), 1);
      member[i] = 0;
    } else if (s.len < 7) {
      CHECK_EQ(gmpi_ptrset_add(&s, ptr_of(i)), 1);
      member[i] = 1;
    }
    for (size_t j = 0; j < 64; j++)
      CHECK_EQ(gmpi_ptrset_has(&s, ptr_of(j)), member[j]);
  }
  CHECK_EQ(s.cap, 16);
  gmpi_ptrset_clear(&s);
  CHECK_EQ(gmpi_ptrset_add(&s, ptr_of(3)), 1); /* usable after clear */
  CHECK_EQ(gmpi_ptrset_has(&s, ptr_of(3)), 1);
  gmpi_ptrset_clear(&s);
  free(member);
  printf("unit_ptrset: %zu agreements checked, %d failures\n", checked, failures);
  return failures ? 1 : 0;
}
