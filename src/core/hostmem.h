/* SPDX-License-Identifier: BSD-3-Clause */
/* Host memory that the process's own layout vouches for, answered without asking a device
 * driver: the calling thread's stack above the current frame, and the heap below the program
 * break. A driver maps device and managed memory with mmap, never on a thread's stack or
 * inside the break's heap, so a pointer there is host memory whatever any driver would say.
 * Everything else (mmap'd blocks, other threads' stacks, static data) is left to the backend's
 * classification. Assumed: a thread's stack is ordinary host memory (a program that hands
 * pthread_attr_setstack managed or device memory breaks it; none is known). It is for the small
 * host buffers MPI programs pass call after call (a residual's sum on the stack, a small malloc'd
 * array): asking the driver costs about 0.1 us a pointer (docs/gpu-results.md), more than a small
 * MPI call. */
#ifndef GMPI_CORE_HOSTMEM_H
#define GMPI_CORE_HOSTMEM_H

#include <stdint.h>

#include "tls.h"

/* This thread's stack, learnt on its first question: [lo, hi); lo == hi when unknown. */
typedef struct {
  uintptr_t lo, hi;
  int learnt;
} gmpi_stack_span_t;

extern _Thread_local gmpi_stack_span_t gmpi_stack_span GMPI_TLS_HOT;
void gmpi_stack_learn(gmpi_stack_span_t *s);
/* ptr lies in the break's heap (the first question reads where it starts). */
int gmpi_heap_holds(uintptr_t p);

/* ptr is live host memory of this process by its layout alone (1), or unknown (0). On the
 * stack: between this frame and the stack's top, and only while this frame is on the thread's
 * own stack (not a signal stack or a coroutine's). Inline: it stands before every
 * classification, and the stack's answer is a few compares. */
static inline int gmpi_hostmem_surely(const void *ptr) {
  uintptr_t p = (uintptr_t)ptr, here = (uintptr_t)__builtin_frame_address(0);
  gmpi_stack_span_t *s = &gmpi_stack_span;
  if (!s->learnt) gmpi_stack_learn(s);
  if (here >= s->lo && p >= here && p < s->hi) return 1; /* so here < hi too */
  return gmpi_heap_holds(p);
}

#endif
