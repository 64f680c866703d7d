/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE /* pthread_getattr_np, sbrk */
#include "hostmem.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

_Thread_local gmpi_stack_span_t gmpi_stack_span GMPI_TLS_HOT;

/* From the kernel's map, the mapping named name (NULL: the one that holds p): 1 and [*lo, *hi),
 * or 0. */
static int mapping(const char *name, uintptr_t p, uintptr_t *lo, uintptr_t *hi) {
  char line[512];
  int found = 0;
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return 0;
  while (!found && fgets(line, sizeof(line), f)) {
    unsigned long a = 0, b = 0;
    if (sscanf(line, "%lx-%lx", &a, &b) != 2) continue;
    found = name ? strstr(line, name) != NULL : p >= a && p < b;
    if (found) *lo = (uintptr_t)a, *hi = (uintptr_t)b;
  }
  fclose(f);
  return found;
}

/* The thread's stack as glibc made it. The main thread's is a guess from RLIMIT_STACK (under
 * "unlimited", down to the mapping below), so there it is cut to the mapping this frame is in:
 * a signal stack or coroutine stack mapped inside the guess must not pass for the thread's.
 * Frames deeper than the mapping reached at this first question are then not vouched for. */
void gmpi_stack_learn(gmpi_stack_span_t *s) {
  pthread_attr_t attr;
  void *addr = NULL;
  size_t size = 0;
  uintptr_t lo = 0, hi = 0, here = (uintptr_t)__builtin_frame_address(0);
  s->lo = s->hi = 0;
  s->learnt = 1;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  int got = pthread_attr_getstack(&attr, &addr, &size) == 0 && addr;
  pthread_attr_destroy(&attr);
  if (!got) return;
  s->lo = (uintptr_t)addr;
  s->hi = s->lo + size;
  if (getpid() != (pid_t)syscall(SYS_gettid)) return;
  if (!mapping(NULL, here, &lo, &hi)) {
    s->lo = s->hi = 0;
    return;
  }
  if (lo > s->lo) s->lo = lo;
  if (hi < s->hi) s->hi = hi;
}

static uintptr_t heap_lo; /* 0: not known */
static pthread_once_t heap_once = PTHREAD_ONCE_INIT;

/* Where the break's heap starts: the kernel's [heap] mapping. Before the heap has grown there
 * is no such line, and the heap will start at today's break. Without the map it is never
 * vouched for. */
static void find_heap(void) {
  uintptr_t lo = 0, hi = 0;
  if (access("/proc/self/maps", R_OK) != 0) return;
  heap_lo = mapping("[heap]", 0, &lo, &hi) ? lo : (uintptr_t)sbrk(0);
}

/* The break is read on every question: a heap that shrank gave its top back, and the driver
 * may map there later. */
int gmpi_heap_holds(uintptr_t p) {
  pthread_once(&heap_once, find_heap);
  if (!heap_lo || p < heap_lo) return 0;
  void *brk = sbrk(0);
  return brk != (void *)-1 && p < (uintptr_t)brk;
}
