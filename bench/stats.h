/*
 * Clocks, percentiles and JSON distribution points shared by every bench
 * program, rlock's and the raw floors' alike, so that both sides of a ratio
 * are timed and summarized by the same code. Header only, no rlock and no
 * hiredis: the floor programs include it too.
 */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void bench_sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u),
                        (long)(ns % 1000000000u)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static inline int bench_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Sorts v in place (ns). */
static inline void bench_sort(uint64_t *v, long n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp_u64);
}

/* The p-quantile of sorted v (ns), in µs; 0 for an empty set. */
static inline double bench_pct_us(const uint64_t *v, long n, double p) {
  if (n <= 0) return 0;
  long i = (long)(p * (double)(n - 1) + 0.5);
  return (double)v[i] / 1000.0;
}

/* Prints ,"points":[[p,us],...] for the report's distribution chart; v is
 * sorted. */
static inline void bench_print_points(const uint64_t *v, long n) {
  static const double ps[] = {0.01, 0.05, 0.10, 0.25, 0.50,
                              0.75, 0.90, 0.95, 0.99, 0.999};
  printf(",\"points\":[");
  for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++)
    printf("%s[%.3f,%.1f]", k ? "," : "", ps[k], bench_pct_us(v, n, ps[k]));
  printf("]");
}

/* Splits "host:port"; 0, or -1 if it is not of that form. */
static inline int bench_host_port(const char *addr, char *host, size_t size,
                                  int *port) {
  char fmt[32];
  snprintf(fmt, sizeof fmt, "%%%zu[^:]:%%d", size - 1);
  return sscanf(addr, fmt, host, port) == 2 ? 0 : -1;
}

#endif
