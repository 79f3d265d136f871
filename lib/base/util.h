/*
 * Time, randomness and zeroed memory. Lock validity is measured on the monotonic clock
 * only: wall-clock steps must never make a lease look longer than it is.
 */
#ifndef RL_UTIL_H
#define RL_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Milliseconds on the monotonic clock. */
uint64_t rl_now_ms(void);
/* Nanoseconds on the monotonic clock. */
uint64_t rl_now_ns(void);
/* Microseconds on the wall clock (CLOCK_REALTIME): for fencing floors and
 * fair tickets, never for validity. */
uint64_t rl_wall_us(void);

/* Fills buf from the OS random source; 0, or RLOCK_ENOMEM when the OS
 * gives none (the nearest code: a resource that could not be had). */
int rl_random_bytes(void *buf, size_t len);

/* A uniformly random integer in [0, bound] (bound >= 0); thread-safe. */
uint64_t rl_random_upto(uint64_t bound);

/* A random string suffix helper: writes 2*len hex digits and a NUL. */
void rl_hex(const unsigned char *in, size_t len, char *out);

/* size zeroed bytes from malloc, or NULL: calloc for the objects made
 * and freed per call (commands, requests, ledgers, replies). glibc 2.36
 * (Debian 12) serves a small malloc from the thread's own cache, but
 * every calloc takes the arena's slow path. Not for what lives long: a
 * hold made this way lands in the holes that short-lived objects leave
 * (holds.c). */
void *rl_zalloc(size_t size);

/* A warning that may come once per lock at once (a shard down for a
 * moment): logged at most once a second, with how many were left out. */
typedef struct rl_log_rate {
  uint64_t last_ms; /* when the last line was logged (0: never) */
  uint64_t skipped; /* lines left out since */
} rl_log_rate;

/* 1 if a line may be logged now (*skipped: how many were left out since
 * the last one; the count restarts), else 0 (this one is counted). */
int rl_log_rate_pass(rl_log_rate *r, uint64_t now, uint64_t *skipped);

#endif
