/*
 * A shared checker over critical sections, for tests of who may hold a
 * lock at once: threads and forked processes stamp each section they
 * hold, [enter, leave] on CLOCK_MONOTONIC (one clock for every process
 * of the machine), in memory shared across fork, marked shared (a read
 * hold) or exclusive (a lock, a fair lock, a write hold). Afterwards the
 * checker finds every pair that overlaps: two shared sections may; an
 * exclusive one may overlap no other. enter is taken after the acquiring
 * call returned and leave before the releasing call is made, so a lock
 * that works never shows an overlap, and one that lets two holders in at
 * once shows one as soon as their sections intersect.
 */
#ifndef RT_SECTIONS_H
#define RT_SECTIONS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

typedef struct rt_section {
  int64_t enter_ns, leave_ns;
  int32_t shared; /* a read hold */
  int32_t who;    /* the test's name for the holder */
  uint64_t token;
  int32_t done;
} rt_section;

typedef struct rt_sections {
  int64_t n;   /* sections begun (may pass cap: the rest are dropped) */
  int64_t cap;
  rt_section s[];
} rt_sections;

static inline int64_t rt_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Room for cap sections, shared with the processes forked after it. */
static inline rt_sections *rt_sections_new(int64_t cap) {
  size_t size = sizeof(rt_sections) + (size_t)cap * sizeof(rt_section);
  rt_sections *t = mmap(NULL, size, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (t == MAP_FAILED) return NULL;
  t->cap = cap;
  return t;
}

static inline void rt_sections_free(rt_sections *t) {
  if (t != NULL)
    munmap(t, sizeof(rt_sections) + (size_t)t->cap * sizeof(rt_section));
}

/* Right after an acquisition returned: the section's index, or -1 when
 * the table is full. */
static inline int64_t rt_section_enter(rt_sections *t, int shared, int who,
                                       uint64_t token) {
  int64_t now = rt_mono_ns();
  int64_t i = __atomic_fetch_add(&t->n, 1, __ATOMIC_SEQ_CST);
  if (i >= t->cap) return -1;
  t->s[i].enter_ns = now;
  t->s[i].shared = shared;
  t->s[i].who = who;
  t->s[i].token = token;
  return i;
}

/* Right before the release is called. */
static inline void rt_section_leave(rt_sections *t, int64_t i) {
  if (i < 0) return;
  t->s[i].leave_ns = rt_mono_ns();
  __atomic_store_n(&t->s[i].done, 1, __ATOMIC_RELEASE);
}

static inline int rt__by_enter(const void *a, const void *b) {
  const rt_section *x = *(rt_section *const *)a, *y = *(rt_section *const *)b;
  return x->enter_ns < y->enter_ns ? -1 : x->enter_ns > y->enter_ns;
}

/*
 * Counts the overlapping pairs that are not both shared (violations,
 * printed, the first few, to stderr) and, in *shared_overlaps, those that
 * are (readers sharing the lock, which a test of sharing wants to see).
 * A section never left counts as a violation too.
 */
static inline int64_t rt_sections_check(const rt_sections *t,
                                        int64_t *shared_overlaps) {
  int64_t n = t->n < t->cap ? t->n : t->cap, bad = 0, shared = 0;
  const rt_section **v = malloc((size_t)(n + 1) * sizeof *v);
  if (v == NULL) return 1;
  for (int64_t i = 0; i < n; i++) {
    v[i] = &t->s[i];
    if (!t->s[i].done) {
      fprintf(stderr, "  section of %d never left\n", t->s[i].who);
      bad++;
    }
  }
  qsort(v, (size_t)n, sizeof *v, rt__by_enter);
  for (int64_t a = 0; a < n; a++)
    for (int64_t b = a + 1; b < n && v[b]->enter_ns < v[a]->leave_ns; b++) {
      if (v[a]->shared && v[b]->shared) {
        shared++;
        continue;
      }
      if (bad++ < 5)
        fprintf(stderr,
                "  overlap: %s of %d [%lld, %lld] and %s of %d [%lld, %lld]\n",
                v[a]->shared ? "read" : "exclusive", v[a]->who,
                (long long)v[a]->enter_ns, (long long)v[a]->leave_ns,
                v[b]->shared ? "read" : "exclusive", v[b]->who,
                (long long)v[b]->enter_ns, (long long)v[b]->leave_ns);
    }
  free(v);
  if (shared_overlaps != NULL) *shared_overlaps = shared;
  return bad;
}

/*
 * Fencing over the same sections: of two sections not both shared, the
 * one that entered after the other left has the larger token (a read
 * hold's token included: rlock gives every first hold the next token),
 * and they never share one. Two read sections are not compared: a reader
 * may be granted before another and stamp its enter after the other's
 * leave, since nothing kept the other out meanwhile. Returns the number
 * of violations, printing the first few.
 */
static inline int64_t rt_sections_check_tokens(const rt_sections *t) {
  int64_t n = t->n < t->cap ? t->n : t->cap, bad = 0;
  for (int64_t a = 0; a < n; a++)
    for (int64_t b = 0; b < n; b++) {
      const rt_section *x = &t->s[a], *y = &t->s[b];
      if (a == b || (x->shared && y->shared)) continue;
      int wrong = 0;
      if (x->leave_ns < y->enter_ns && x->token >= y->token) wrong = 1;
      if (a < b && x->token == y->token) wrong = 1;
      if (wrong && bad++ < 5)
        fprintf(stderr, "  tokens: %s of %d token %llu, then %s of %d "
                        "token %llu\n",
                x->shared ? "read" : "exclusive", x->who,
                (unsigned long long)x->token, y->shared ? "read" : "exclusive",
                y->who, (unsigned long long)y->token);
    }
  return bad;
}

#endif
