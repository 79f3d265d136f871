/*
 * An LD_PRELOAD shim that shifts the wall clock of one process, so that a
 * test can run a redis-server whose clock is hours behind (or ahead of)
 * the clients', as a VM restored from a snapshot or a container with a bad
 * clock would be.
 *
 * Why not libfaketime: version 0.9.10 (Debian 12's) hangs redis-server 7.0
 * at start. This shim does one thing only: CLOCK_REALTIME and
 * CLOCK_REALTIME_COARSE from clock_gettime, gettimeofday and time() are
 * read with the raw system call and shifted by CLOCKSHIFT_SECONDS (a signed
 * integer taken from the environment when the library loads; 0 or unset
 * shifts nothing). The monotonic clocks are left alone: Redis measures
 * durations on them, and a wall clock that is merely wrong, not jumping,
 * is the fault being simulated.
 *
 * The raw system call bypasses the vDSO and cannot recurse into the shim.
 */
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long shift_s;

__attribute__((constructor)) static void read_shift(void) {
  const char *s = getenv("CLOCKSHIFT_SECONDS");
  shift_s = s != NULL ? strtoll(s, NULL, 10) : 0;
}

static int real_clock_gettime(clockid_t clk, struct timespec *ts) {
  return (int)syscall(SYS_clock_gettime, clk, ts);
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
  int rc = real_clock_gettime(clk, ts);
  if (rc == 0 &&
      (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE))
    ts->tv_sec += shift_s;
  return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
  (void)tz; /* obsolete; Redis passes NULL */
  struct timespec ts;
  int rc = real_clock_gettime(CLOCK_REALTIME, &ts);
  if (rc == 0) {
    tv->tv_sec = ts.tv_sec + shift_s;
    tv->tv_usec = ts.tv_nsec / 1000;
  }
  return rc;
}

time_t time(time_t *out) {
  struct timespec ts;
  time_t t = (time_t)-1;
  if (real_clock_gettime(CLOCK_REALTIME, &ts) == 0) t = ts.tv_sec + shift_s;
  if (out != NULL) *out = t;
  return t;
}
