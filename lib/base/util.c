/*
 * Time and randomness helpers. Jitter between retries only needs to be
 * unpredictable across clients, not secret, so a per-thread xorshift
 * generator seeded from the OS random source is enough and costs no lock.
 */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "rlock.h"

uint64_t rl_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t rl_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rl_wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int rl_random_bytes(void *buf, size_t len) {
  unsigned char *p = buf;
  while (len > 0) {
    ssize_t n = getrandom(p, len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return RLOCK_ENOMEM; /* a resource the OS would not give */
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

static __thread uint64_t rl__rng_state;

uint64_t rl_random_upto(uint64_t bound) {
  uint64_t x = rl__rng_state;
  if (x == 0) {
    if (rl_random_bytes(&x, sizeof x) != 0 || x == 0)
      x = rl_now_ms() * 0x9E3779B97F4A7C15ull + 1;
  }
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  rl__rng_state = x;
  if (bound == UINT64_MAX) return x;
  return x % (bound + 1);
}

void rl_hex(const unsigned char *in, size_t len, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < len; i++) {
    out[2 * i] = digits[in[i] >> 4];
    out[2 * i + 1] = digits[in[i] & 15];
  }
  out[2 * len] = '\0';
}

void *rl_zalloc(size_t size) {
  void *p = malloc(size);
  if (p == NULL) return NULL;
  /* Without this barrier GCC turns malloc and memset back into calloc. */
  __asm__ volatile("" : : "r"(p) : "memory");
  memset(p, 0, size);
  return p;
}

int rl_log_rate_pass(rl_log_rate *r, uint64_t now, uint64_t *skipped) {
  if (r->last_ms != 0 && now - r->last_ms < 1000) {
    r->skipped++;
    return 0;
  }
  *skipped = r->skipped;
  r->last_ms = now;
  r->skipped = 0;
  return 1;
}
