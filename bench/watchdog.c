/*
 * What held watchdog locks cost at scale: one client
 * takes LOCKS locks with RLOCK_WATCHDOG on one master and holds them for
 * PERIODS renewal periods (timeout / 3 each) while the main thread sleeps.
 * Measured from outside the library:
 *   - memory per lock: resident memory (RSS, after malloc_trim) and heap in
 *     use (mallinfo2) before and after rlock_get of every handle, and
 *     after every lock is held, so a handle and a hold are told apart;
 *   - CPU: the time of every thread but main (rlock's loop thread) over
 *     the window, from /proc/self/task/<tid>/schedstat, as a share of one
 *     core, and the whole process's for comparison;
 *   - renewal script calls per period, from the master's INFO
 *     commandstats (every EVALSHA in the window is a renewal: nothing else
 *     is sent then).
 * The window opens once every lock is held and a full period has passed
 * since the first was taken, so each lock is renewed exactly PERIODS times
 * in it. Acquisitions are kept to 2,000 in flight: with 20,000, renewals
 * queued on the same connection behind them missed their master timeout
 * on a loaded machine (300,000 renewal failures in one run), which
 * measured the benchmark's burst, not the cost of holding. Prints one
 * JSON line.
 *
 *   watchdog LOCKS WATCHDOG_TIMEOUT_MS PERIODS MASTER   (host:port)
 */
#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "proc.h"
#include "ready.h"
#include "rlock.h"
#include "stats.h"

/* Built with -DBENCH_CALLGRIND, the window is the only part callgrind
 * counts (run with --collect-atstart=no): instructions per renewal call
 * are then deterministic where timing on a shared machine is not. */
#ifdef BENCH_CALLGRIND
#include <valgrind/callgrind.h>
#define WINDOW_OPEN() CALLGRIND_START_INSTRUMENTATION
#define WINDOW_CLOSE() CALLGRIND_STOP_INSTRUMENTATION
#else
#define WINDOW_OPEN() ((void)0)
#define WINDOW_CLOSE() ((void)0)
#endif

#define IN_FLIGHT 2000

static atomic_long done_ok, done_err;

static void on_lock(rlock *lock, int status, void *arg) {
  (void)lock;
  (void)arg;
  atomic_fetch_add(status == 0 ? &done_ok : &done_err, 1);
}

static uint64_t process_cpu_ns(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
         (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
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

static long long master_used_memory(redisContext *rc) {
  redisReply *r = redisCommand(rc, "INFO memory");
  long long used = -1;
  if (r && r->type == REDIS_REPLY_STRING) {
    const char *p = strstr(r->str, "used_memory:");
    used = p ? atoll(p + 12) : -1;
  }
  if (r) freeReplyObject(r);
  return used;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s LOCKS WATCHDOG_TIMEOUT_MS PERIODS MASTER\n",
            argv[0]);
    return 2;
  }
  long nlocks = atol(argv[1]);
  int periods = atoi(argv[3]);
  int64_t wd = atoll(argv[2]);
  uint64_t period_ns = (uint64_t)(wd / 3) * 1000000u;
  char host[64];
  int port;
  if (bench_host_port(argv[4], host, sizeof host, &port) != 0) return 2;
  redisContext *rc = redisConnect(host, port);
  if (rc == NULL || rc->err) return 1;
  long long mem_master0 = master_used_memory(rc);
  rlock_options o;
  rlock_options_init(&o);
  const char *addr[] = {argv[4]};
  o.masters = addr;
  o.nmasters = 1;
  o.watchdog_timeout_ms = wd;
  o.master_timeout_ms = 2000;
  rlock_client *c;
  if (rlock_client_open(&c, &o) != 0 || bench_wait_ready(c, 5000) != 0) {
    fprintf(stderr, "watchdog: master not reachable\n");
    return 1;
  }
  rlock **locks = calloc((size_t)nlocks, sizeof *locks);
  memset(locks, 0, (size_t)nlocks * sizeof *locks); /* resident before */
  uint64_t rss0 = bench_rss_bytes(), heap0 = bench_heap_bytes();
  for (long i = 0; i < nlocks; i++) {
    char name[32];
    snprintf(name, sizeof name, "wdb-%ld", i);
    if (rlock_get(c, name, &locks[i]) != 0) return 1;
  }
  uint64_t rss1 = bench_rss_bytes(), heap1 = bench_heap_bytes();
  uint64_t t_first = bench_now_ns();
  for (long i = 0; i < nlocks; i++) {
    while (i - (atomic_load(&done_ok) + atomic_load(&done_err)) >= IN_FLIGHT)
      bench_sleep_ns(200000);
    if (rlock_lock_async(locks[i], 1, 30000, RLOCK_WATCHDOG, on_lock, NULL) !=
        0)
      atomic_fetch_add(&done_err, 1);
  }
  while (atomic_load(&done_ok) + atomic_load(&done_err) < nlocks)
    bench_sleep_ns(1000000);
  double acquire_s = (double)(bench_now_ns() - t_first) / 1e9;
  bench_sleep_ns(200000000); /* let the last rounds be freed */
  uint64_t rss2 = bench_rss_bytes(), heap2 = bench_heap_bytes();
  /* Steady state: every lock has been renewed at least once. */
  if (bench_now_ns() < t_first + period_ns)
    bench_sleep_ns(t_first + period_ns - bench_now_ns());
  rlock_metrics m0, m1;
  rlock_metrics_snapshot(c, &m0);
  long long calls0 = evalsha_calls(rc);
  uint64_t main0, loop0, cpu0 = process_cpu_ns(), w0 = bench_now_ns();
  uint64_t user0, sys0, user1, sys1;
  int others = bench_thread_cpu(&main0, &loop0);
  bench_others_user_sys(&user0, &sys0);
  WINDOW_OPEN();
  bench_sleep_ns(period_ns * (uint64_t)periods);
  WINDOW_CLOSE();
  uint64_t main1, loop1, cpu1 = process_cpu_ns(), w1 = bench_now_ns();
  bench_thread_cpu(&main1, &loop1);
  bench_others_user_sys(&user1, &sys1);
  long long calls1 = evalsha_calls(rc);
  rlock_metrics_snapshot(c, &m1);
  double p = (double)(w1 - w0) / (double)period_ns;
  long long keys = -1;
  redisReply *r = redisCommand(rc, "DBSIZE");
  if (r && r->type == REDIS_REPLY_INTEGER) keys = r->integer;
  if (r) freeReplyObject(r);
  long long mem_master1 = master_used_memory(rc);
  double calls = (double)(calls1 - calls0) / p;
  printf("{\"bench\":\"watchdog\",\"impl\":\"rlock\",\"masters\":1,"
         "\"locks\":%ld,\"acquired\":%ld,\"acquire_s\":%.1f,"
         "\"watchdog_timeout_ms\":%lld,\"period_ms\":%lld,\"periods\":%.2f,"
         "\"loop_cpu_ms_per_period\":%.1f,\"loop_cpu_share_of_core\":%.4f,"
         "\"loop_user_share\":%.4f,\"loop_sys_share\":%.4f,"
         "\"loop_us_per_renew_call\":%.1f,"
         "\"process_cpu_share_of_core\":%.4f,\"other_threads\":%d,"
         "\"renew_calls_per_period\":%.1f,\"locks_per_call\":%.1f,"
         "\"renewals_per_period\":%.0f,\"renewal_failures\":%llu,"
         "\"locks_lost\":%llu,\"locks_held\":%lld,\"keys_on_master\":%lld,"
         "\"master_bytes_per_lock\":%.0f,"
         "\"rss_bytes_per_handle\":%.0f,\"rss_bytes_per_hold\":%.0f,"
         "\"heap_bytes_per_handle\":%.0f,\"heap_bytes_per_hold\":%.0f}\n",
         nlocks, atomic_load(&done_ok), acquire_s, (long long)wd,
         (long long)(wd / 3), p, (double)(loop1 - loop0) / 1e6 / p,
         (double)(loop1 - loop0) / (double)(w1 - w0),
         (double)(user1 - user0) / (double)(w1 - w0),
         (double)(sys1 - sys0) / (double)(w1 - w0),
         calls1 > calls0 ? (double)(loop1 - loop0) / 1e3 /
                               (double)(calls1 - calls0)
                         : 0,
         (double)(cpu1 - cpu0) / (double)(w1 - w0), others, calls,
         calls > 0 ? (double)nlocks / calls : 0,
         (double)(m1.renewals - m0.renewals) / p,
         (unsigned long long)m1.renewal_failures,
         (unsigned long long)m1.locks_lost, (long long)m1.locks_held, keys,
         (double)(mem_master1 - mem_master0) / (double)nlocks,
         ((double)rss1 - (double)rss0) / (double)nlocks,
         ((double)rss2 - (double)rss1) / (double)nlocks,
         ((double)heap1 - (double)heap0) / (double)nlocks,
         ((double)heap2 - (double)heap1) / (double)nlocks);
  fflush(stdout);
  rlock_client_close(c);
  for (long i = 0; i < nlocks; i++) rlock_free(locks[i]);
  free(locks);
  redisFree(rc);
  return atomic_load(&done_err) ? 1 : 0;
}
