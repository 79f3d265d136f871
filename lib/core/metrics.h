/*
 * Metrics and logging inside the library. Counters are relaxed atomics:
 * the loop thread writes them and any thread may read a snapshot, with no
 * lock and no cost worth measuring on the paths that count.
 */
#ifndef RL_METRICS_H
#define RL_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

#include "rlock.h"

typedef struct rl_hist {
  atomic_uint_fast64_t buckets[RLOCK_HIST_BUCKETS]; /* not cumulative */
  atomic_uint_fast64_t count;
  atomic_uint_fast64_t sum_us;
} rl_hist;

typedef struct rl_metrics {
  atomic_uint_fast64_t acquisitions, releases;
  atomic_uint_fast64_t failed_timedout, failed_noquorum, failed_redis,
      failed_closed, failed_canceled, failed_other;
  atomic_uint_fast64_t renewals, renewal_failures, locks_lost, locks_at_risk;
  atomic_int_fast64_t locks_held, waiters;
  rl_hist wait, hold;
  /* Successful acquisitions by the kind of handle (kind.h's ids). */
  atomic_uint_fast64_t acquisitions_kind[RLOCK_KINDS];
  /* The lock family (sem.c, latch.c, multi.c). */
  atomic_uint_fast64_t sem_acquisitions, sem_acquire_failures, sem_releases,
      sem_permits_lost, latch_count_downs, latch_opened,
      lock_all_acquisitions;
  atomic_int_fast64_t sem_permits_held, sem_waiters, latch_waiters;
  /* Elections (lib/family/election.c, lib/api/election.c). */
  atomic_uint_fast64_t elect_won, elect_lost, elect_at_risk,
      elect_leader_changes;
  atomic_int_fast64_t elect_campaigners;
  rl_hist elect_wait;
} rl_metrics;

#define RL_ADD(field, n) \
  atomic_fetch_add_explicit(&(field), (n), memory_order_relaxed)

void rl_hist_observe(rl_hist *h, uint64_t ms);

/* An acquisition that failed with status, counted by its cause. */
void rl_metrics_count_failure(rl_metrics *m, int status);

/* The histogram as the public type: cumulative buckets, as Prometheus
 * counts them. */
void rl_hist_snapshot(const rl_hist *h, rlock_histogram *out);

#endif
