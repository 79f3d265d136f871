/*
 * Cost of the watchdog: one client holds LOCKS watchdog locks on one
 * master for a few renewal periods while the application threads sleep,
 * so the process's CPU time in that window is the loop thread's renewal
 * work. Prints, as JSON: CPU ms per period, its share of one core, and the
 * renewal script calls per period seen by the master (INFO commandstats),
 * next to the number of locks.
 *
 *   watchdog LOCKS WATCHDOG_TIMEOUT_MS PERIODS MASTER   (host:port)
 */
#include <hiredis/hiredis.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "rlock.h"

static atomic_int done_ok, done_err;

static void on_lock(rlock *lock, int status, void *arg) {
  (void)lock;
  (void)arg;
  if (status == 0)
    atomic_fetch_add(&done_ok, 1);
  else
    atomic_fetch_add(&done_err, 1);
}

static double cpu_ms(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static double wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long long evalsha_calls(redisContext *rc) {
  redisReply *r = redisCommand(rc, "INFO commandstats");
  long long calls = -1;
  if (r && r->type == REDIS_REPLY_STRING) {
    const char *p = strstr(r->str, "cmdstat_evalsha:calls=");
    calls = p ? atoll(p + 22) : 0;
  }
  if (r) freeReplyObject(r);
  return calls;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s LOCKS WATCHDOG_TIMEOUT_MS PERIODS MASTER\n",
            argv[0]);
    return 2;
  }
  int nlocks = atoi(argv[1]), periods = atoi(argv[3]);
  int64_t wd = atoll(argv[2]);
  char host[64];
  int port;
  if (sscanf(argv[4], "%63[^:]:%d", host, &port) != 2) return 2;
  redisContext *rc = redisConnect(host, port);
  if (rc == NULL || rc->err) return 1;
  rlock_options o;
  rlock_options_init(&o);
  const char *m[] = {argv[4]};
  o.masters = m;
  o.nmasters = 1;
  o.watchdog_timeout_ms = wd;
  o.master_timeout_ms = 2000;
  rlock_client *c;
  if (rlock_client_open(&c, &o) != 0) return 1;
  rlock **locks = calloc((size_t)nlocks, sizeof *locks);
  size_t heap0 = mallinfo2().uordblks;
  for (int i = 0; i < nlocks; i++) {
    char name[32];
    snprintf(name, sizeof name, "wdb-%d", i);
    if (rlock_get(c, name, &locks[i]) != 0) return 1;
  }
  size_t heap1 = mallinfo2().uordblks;
  double t_acq = wall_ms();
  for (int i = 0; i < nlocks; i++)
    while (rlock_lock_async(locks[i], 1, 30000, RLOCK_WATCHDOG, on_lock,
                            NULL) != 0)
      usleep(1000);
  while (atomic_load(&done_ok) + atomic_load(&done_err) < nlocks)
    usleep(1000);
  t_acq = wall_ms() - t_acq;
  usleep(100000); /* let the last rounds be freed */
  size_t heap2 = mallinfo2().uordblks;
  /* Skip the first period: acquisitions were spread over it. */
  usleep((useconds_t)(wd / 3 * 1000));
  long long calls0 = evalsha_calls(rc);
  double cpu0 = cpu_ms(), w0 = wall_ms();
  usleep((useconds_t)(wd / 3 * 1000 * periods));
  long long calls1 = evalsha_calls(rc);
  double cpu1 = cpu_ms(), w1 = wall_ms();
  double p = (w1 - w0) / (double)(wd / 3);
  long long keys = -1;
  redisReply *r = redisCommand(rc, "DBSIZE");
  if (r && r->type == REDIS_REPLY_INTEGER) keys = r->integer;
  if (r) freeReplyObject(r);
  printf("{\"bench\":\"watchdog\",\"locks\":%d,\"acquired\":%d,"
         "\"acquire_ms\":%.0f,\"watchdog_timeout_ms\":%lld,\"periods\":%.2f,"
         "\"cpu_ms_per_period\":%.2f,\"cpu_share_of_core\":%.4f,"
         "\"renew_calls_per_period\":%.1f,\"locks_per_call\":%.1f,"
         "\"keys_on_master\":%lld,\"bytes_per_handle\":%.0f,"
         "\"bytes_per_lock\":%.0f}\n",
         nlocks, atomic_load(&done_ok), t_acq, (long long)wd, p,
         (cpu1 - cpu0) / p, (cpu1 - cpu0) / (w1 - w0),
         (double)(calls1 - calls0) / p,
         nlocks / ((double)(calls1 - calls0) / p), keys,
         (double)(heap1 - heap0) / nlocks, (double)(heap2 - heap1) / nlocks);
  rlock_client_close(c);
  for (int i = 0; i < nlocks; i++) rlock_free(locks[i]);
  free(locks);
  redisFree(rc);
  return atomic_load(&done_err) ? 1 : 0;
}
