/*
 * The client's counters and histograms (metrics.h): a wait or hold time
 * counted into its bucket, and a histogram read as the public type. The
 * public calls that read them are lib/api/metrics.c.
 */
#include "metrics.h"

static const double bounds_ms[RLOCK_HIST_BUCKETS] = {
    1, 5, 10, 25, 50, 100, 250, 500, 1000, 5000, 30000, -1};

void rl_hist_observe(rl_hist *h, uint64_t ms) {
  int i = 0;
  while (i < RLOCK_HIST_BUCKETS - 1 && (double)ms > bounds_ms[i]) i++;
  RL_ADD(h->buckets[i], 1);
  RL_ADD(h->count, 1);
  RL_ADD(h->sum_us, ms * 1000);
}

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

void rl_hist_snapshot(const rl_hist *h, rlock_histogram *out) {
  uint64_t cum = 0;
  for (int i = 0; i < RLOCK_HIST_BUCKETS; i++) {
    cum += LOAD(h->buckets[i]);
    out->buckets[i] = cum;
    out->le_ms[i] = bounds_ms[i];
  }
  out->count = LOAD(h->count);
  out->sum_ms = (double)LOAD(h->sum_us) / 1000.0;
}

void rl_metrics_count_failure(rl_metrics *m, int status) {
  switch (status) {
    case RLOCK_ETIMEDOUT: RL_ADD(m->failed_timedout, 1); break;
    case RLOCK_ENOQUORUM: RL_ADD(m->failed_noquorum, 1); break;
    case RLOCK_EREDIS: RL_ADD(m->failed_redis, 1); break;
    case RLOCK_ECLOSED: RL_ADD(m->failed_closed, 1); break;
    case RLOCK_ECANCELED: RL_ADD(m->failed_canceled, 1); break;
    default: RL_ADD(m->failed_other, 1); break;
  }
}
