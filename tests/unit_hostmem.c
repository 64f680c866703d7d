/* SPDX-License-Identifier: BSD-3-Clause */
/* Host memory vouched for by the process's layout (core/hostmem.h), against the kernel's own
 * map (/proc/self/maps): vouched only inside the [heap] mapping or this thread's live stack,
 * never for mmap'd memory (where a driver puts device memory), another thread's stack, a
 * frame that has returned or static data. What a backend would answer for the rest is not
 * asked here. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../src/core/hostmem.h"
#include "unit_util.h"

/* The name of the mapping that holds p ("" for an unnamed one), or NULL when none does. */
static const char *mapping_of(const void *ptr, char *name, size_t cap) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512];
  uintptr_t p = (uintptr_t)ptr;
  const char *found = NULL;
  while (f && !found && fgets(line, sizeof(line), f)) {
    unsigned long lo = 0, hi = 0;
    int at = 0;
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &at) < 2 || p < lo || p >= hi)
      continue;
    snprintf(name, cap, "%s", at ? line + at : "");
    name[strcspn(name, "\n")] = 0;
    found = name;
  }
  if (f) fclose(f);
  return found;
}

/* What the layout says of p, asked from a frame below the caller's. */
static int __attribute__((noinline)) asked(const void *p) { return gmpi_hostmem_surely(p); }

static int checked;

/* p is vouched for exactly when the kernel names its mapping [heap]; the stack's cases are
 * asserted apart (a thread's stack is named [stack] only on the main thread). */
static void expect_heap_rule(const void *p, const char *what) {
  char name[512];
  const char *m = mapping_of(p, name, sizeof(name));
  int heap = m && strcmp(m, "[heap]") == 0;
  if (asked(p) != heap) fprintf(stderr, "FAIL: %s at %p (mapping '%s')\n", what, p, m ? m : "-");
  CHECK_EQ(asked(p), heap);
  checked++;
}

static uintptr_t gone_frame;
static void __attribute__((noinline)) leave_a_frame(void) {
  volatile char local[64];
  local[0] = 1;
  gone_frame = (uintptr_t)&local[0];
}

static char static_data[4096];
static const char *main_stack_buffer;

/* p lies in the stack glibc made for this thread (a sanitizer may keep locals elsewhere). */
static int in_own_stack(const void *p) {
  pthread_attr_t attr;
  void *lo = NULL;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return 0;
  pthread_attr_getstack(&attr, &lo, &size);
  pthread_attr_destroy(&attr);
  return (const char *)p >= (const char *)lo && (const char *)p < (const char *)lo + size;
}

static void *other_thread(void *arg) {
  (void)arg;
  char mine[256] = {0};
  CHECK_EQ(asked(mine), in_own_stack(mine)); /* this thread's own stack */
  CHECK_EQ(asked(main_stack_buffer), 0);     /* another thread's stack */
  void *small = malloc(64);                  /* a thread arena: mmap'd */
  expect_heap_rule(small, "malloc(64) on a second thread");
  free(small);
  return NULL;
}

int main(void) {
  char buffer[1024];
  memset(buffer, 1, sizeof(buffer));
  main_stack_buffer = buffer;
  char name[512];
  const char *m = mapping_of(buffer, name, sizeof(name));
  int on_stack = m && strcmp(m, "[stack]") == 0; /* unless a sanitizer keeps locals elsewhere */
  CHECK_EQ(on_stack, in_own_stack(buffer));
  CHECK_EQ(asked(buffer), on_stack); /* the caller's stack, asked from a deeper frame */
  CHECK_EQ(asked(buffer + sizeof(buffer) - 1), on_stack);
  leave_a_frame();
  CHECK_EQ(asked((const void *)gone_frame), 0); /* below this frame: not live */

  void *small = malloc(64), *large = malloc(64 << 20);
  expect_heap_rule(small, "malloc(64)"); /* brk heap normally; a sanitizer's allocator mmaps */
  expect_heap_rule(large, "malloc(64 MiB)");
  void *mapped = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK_EQ(mapped != MAP_FAILED, 1);
  if (mapped != MAP_FAILED) {
    CHECK_EQ(asked(mapped), 0); /* where a driver maps device memory */
    expect_heap_rule((char *)mapped + 4096, "mmap'd page");
    munmap(mapped, 1 << 20);
  }
  CHECK_EQ(asked(static_data), 0);
  CHECK_EQ(asked(NULL), 0);
  free(small);
  free(large);

  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, other_thread, NULL), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK_EQ(checked, 4);
  if (!failures) printf("unit_hostmem: ok\n");
  return failures != 0;
}
