/*
 * The public metrics calls: a snapshot of the client's counters, and the
 * Prometheus text format. The exposition is written by hand (no
 * allocation): an operator's scrape must not be able to disturb the
 * locks.
 */
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

int rlock_metrics_snapshot(rlock_client *c, rlock_metrics *m) {
  if (c == NULL || m == NULL) return RLOCK_EINVAL;
  if (rl_client_forked(c)) return RLOCK_EFORKED; /* the parent's figures */
  memset(m, 0, sizeof *m);
  const rl_metrics *s = &c->metrics;
  m->acquisitions = LOAD(s->acquisitions);
  m->failed_timedout = LOAD(s->failed_timedout);
  m->failed_noquorum = LOAD(s->failed_noquorum);
  m->failed_redis = LOAD(s->failed_redis);
  m->failed_closed = LOAD(s->failed_closed);
  m->failed_canceled = LOAD(s->failed_canceled);
  m->failed_other = LOAD(s->failed_other);
  m->releases = LOAD(s->releases);
  m->renewals = LOAD(s->renewals);
  m->renewal_failures = LOAD(s->renewal_failures);
  m->locks_lost = LOAD(s->locks_lost);
  m->locks_at_risk = LOAD(s->locks_at_risk);
  m->locks_held = LOAD(s->locks_held);
  m->waiters = LOAD(s->waiters);
  for (int k = 0; k < RLOCK_KINDS; k++)
    m->acquisitions_by_kind[k] = LOAD(s->acquisitions_kind[k]);
  rl_hist_snapshot(&s->wait, &m->wait);
  rl_hist_snapshot(&s->hold, &m->hold);
  m->sem_acquisitions = LOAD(s->sem_acquisitions);
  m->sem_acquire_failures = LOAD(s->sem_acquire_failures);
  m->sem_releases = LOAD(s->sem_releases);
  m->sem_permits_lost = LOAD(s->sem_permits_lost);
  m->sem_permits_held = LOAD(s->sem_permits_held);
  m->sem_waiters = LOAD(s->sem_waiters);
  m->latch_count_downs = LOAD(s->latch_count_downs);
  m->latch_opened = LOAD(s->latch_opened);
  m->latch_waiters = LOAD(s->latch_waiters);
  m->lock_all_acquisitions = LOAD(s->lock_all_acquisitions);
  m->elections_won = LOAD(s->elect_won);
  m->elections_lost = LOAD(s->elect_lost);
  m->election_at_risk = LOAD(s->elect_at_risk);
  m->election_leader_changes = LOAD(s->elect_leader_changes);
  m->election_campaigners = LOAD(s->elect_campaigners);
  rl_hist_snapshot(&s->elect_wait, &m->election_wait);
  m->nmasters = (size_t)c->nmasters;
  for (int i = 0; i < c->nmasters; i++) {
    uint64_t unacked = atomic_load(&c->masters[i]->unacked);
    uint64_t failovers = atomic_load(&c->masters[i]->failovers);
    m->grants_unacked += unacked;
    m->failovers += failovers;
    if (i >= RLOCK_METRICS_MASTERS) continue;
    rl_master_metrics(c->masters[i], &m->masters[i]);
    m->masters[i].unacked = unacked;
    m->masters[i].failovers = failovers;
  }
  return 0;
}

/* An snprintf that keeps counting past the end of the buffer. */
typedef struct out {
  char *buf;
  size_t size, len;
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = o->len < o->size ? o->size - o->len : 0;
  int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
  va_end(ap);
  if (n > 0) o->len += (size_t)n;
}

static void counter(out *o, const char *name, const char *help, uint64_t v) {
  put(o, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
      (unsigned long long)v);
}

static void gauge(out *o, const char *name, const char *help, int64_t v) {
  put(o, "# HELP %s %s\n# TYPE %s gauge\n%s %lld\n", name, help, name, name,
      (long long)v);
}

static void histogram(out *o, const char *name, const char *help,
                      const rlock_histogram *h) {
  put(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
  for (int i = 0; i < RLOCK_HIST_BUCKETS; i++) {
    if (h->le_ms[i] < 0)
      put(o, "%s_bucket{le=\"+Inf\"} %llu\n", name,
          (unsigned long long)h->buckets[i]);
    else
      put(o, "%s_bucket{le=\"%g\"} %llu\n", name, h->le_ms[i] / 1000.0,
          (unsigned long long)h->buckets[i]);
  }
  put(o, "%s_sum %.6f\n%s_count %llu\n", name, h->sum_ms / 1000.0, name,
      (unsigned long long)h->count);
}

static void per_master(out *o, const rlock_metrics *m, const char *name,
                       const char *type, const char *help, int which) {
  put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
  for (size_t i = 0; i < m->nmasters && i < RLOCK_METRICS_MASTERS; i++) {
    const rlock_master_metrics *mm = &m->masters[i];
    uint64_t v = which == 0   ? (uint64_t)mm->up
                 : which == 1 ? mm->timeouts
                 : which == 2 ? mm->errors
                 : which == 3 ? mm->reconnects
                 : which == 5 ? mm->unacked
                 : which == 6 ? mm->failovers
                              : mm->restarts;
    put(o, "%s{master=\"%zu\",address=\"", name, i);
    for (const char *p = mm->address; *p; p++) /* label escaping */
      put(o, "%s%c", (*p == '"' || *p == '\\') ? "\\" : "", *p);
    put(o, "\"} %llu\n", (unsigned long long)v);
  }
}

int rlock_metrics_prometheus(rlock_client *c, char *buf, size_t size) {
  if (c == NULL || (buf == NULL && size > 0)) return RLOCK_EINVAL;
  if (rl_client_forked(c)) return RLOCK_EFORKED;
  rlock_metrics m;
  rlock_metrics_snapshot(c, &m);
  out o = {buf, size, 0};
  counter(&o, "rlock_acquisitions_total", "Successful acquisitions.",
          m.acquisitions);
  put(&o, "# HELP rlock_acquisitions_by_kind_total Successful acquisitions, "
          "by the kind of handle.\n"
          "# TYPE rlock_acquisitions_by_kind_total counter\n");
  static const char *const kinds[RLOCK_KINDS] = {"lock", "fair", "read",
                                                 "write"};
  for (int k = 0; k < RLOCK_KINDS; k++)
    put(&o, "rlock_acquisitions_by_kind_total{kind=\"%s\"} %llu\n", kinds[k],
        (unsigned long long)m.acquisitions_by_kind[k]);
  put(&o, "# HELP rlock_acquire_failures_total Acquisitions that failed, "
          "by reason.\n# TYPE rlock_acquire_failures_total counter\n");
  const struct {
    const char *reason;
    uint64_t v;
  } f[] = {{"timeout", m.failed_timedout}, {"no_quorum", m.failed_noquorum},
           {"redis", m.failed_redis},      {"closed", m.failed_closed},
           {"canceled", m.failed_canceled}, {"other", m.failed_other}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    put(&o, "rlock_acquire_failures_total{reason=\"%s\"} %llu\n", f[i].reason,
        (unsigned long long)f[i].v);
  counter(&o, "rlock_releases_total", "Last unlocks that released a lock.",
          m.releases);
  counter(&o, "rlock_renewals_total", "Watchdog renewals that held.",
          m.renewals);
  counter(&o, "rlock_renewal_failures_total",
          "Watchdog renewals that missed a majority.", m.renewal_failures);
  counter(&o, "rlock_locks_lost_total", "Held locks found lost.",
          m.locks_lost);
  counter(&o, "rlock_locks_at_risk_total",
          "Times a held lock's renewals missed a majority past half its "
          "validity.",
          m.locks_at_risk);
  gauge(&o, "rlock_locks_held", "Locks held by this client now.",
        m.locks_held);
  gauge(&o, "rlock_waiters", "Acquisitions waiting now.", m.waiters);
  histogram(&o, "rlock_wait_seconds", "From request to acquisition.",
            &m.wait);
  histogram(&o, "rlock_hold_seconds",
            "From first acquisition to release or loss.", &m.hold);
  per_master(&o, &m, "rlock_master_up", "gauge",
             "1 if the command connection is up.", 0);
  per_master(&o, &m, "rlock_master_timeouts_total", "counter",
             "Commands that passed the master timeout.", 1);
  per_master(&o, &m, "rlock_master_errors_total", "counter",
             "Error replies.", 2);
  per_master(&o, &m, "rlock_master_reconnects_total", "counter",
             "Connections after the first.", 3);
  per_master(&o, &m, "rlock_master_restarts_total", "counter",
             "Restarts noticed (run_id changed).", 4);
  counter(&o, "rlock_grants_unacked_total",
          "Grants, renewals and fencing write-backs that did not count for "
          "want of replica acknowledgement.", m.grants_unacked);
  counter(&o, "rlock_failovers_total",
          "Sentinel failovers followed.", m.failovers);
  per_master(&o, &m, "rlock_master_grants_unacked_total", "counter",
             "Grants, renewals and fencing write-backs not acknowledged by "
             "enough replicas.", 5);
  per_master(&o, &m, "rlock_master_failovers_total", "counter",
             "Sentinel failovers followed.", 6);
  counter(&o, "rlock_sem_acquisitions_total",
          "Successful semaphore acquisitions.", m.sem_acquisitions);
  counter(&o, "rlock_sem_acquire_failures_total",
          "Semaphore acquisitions that failed.", m.sem_acquire_failures);
  counter(&o, "rlock_sem_releases_total", "Semaphore releases.",
          m.sem_releases);
  counter(&o, "rlock_sem_permits_lost_total",
          "Semaphore permits found lost.", m.sem_permits_lost);
  gauge(&o, "rlock_sem_permits_held", "Semaphore permits held now.",
        m.sem_permits_held);
  gauge(&o, "rlock_sem_waiters", "Semaphore acquisitions waiting now.",
        m.sem_waiters);
  counter(&o, "rlock_latch_count_downs_total",
          "Latch count-downs a majority applied.", m.latch_count_downs);
  counter(&o, "rlock_latch_opened_total",
          "Latch awaits that returned with the latch open.", m.latch_opened);
  gauge(&o, "rlock_latch_waiters", "Latch awaits waiting now.",
        m.latch_waiters);
  counter(&o, "rlock_lock_all_acquisitions_total",
          "Successful rlock_lock_all calls.", m.lock_all_acquisitions);
  counter(&o, "rlock_elections_won_total",
          "Campaigns that made this client's caller the leader.",
          m.elections_won);
  counter(&o, "rlock_elections_lost_total",
          "Leaderships of this client found lost.", m.elections_lost);
  counter(&o, "rlock_election_at_risk_total",
          "Times a leadership of this client went at risk.",
          m.election_at_risk);
  counter(&o, "rlock_election_leader_changes_total",
          "Changes of leader seen by this client's observers.",
          m.election_leader_changes);
  gauge(&o, "rlock_election_campaigners", "Campaigns waiting now.",
        m.election_campaigners);
  histogram(&o, "rlock_election_wait_seconds",
            "From campaign to leadership.", &m.election_wait);
  return o.len > (size_t)INT32_MAX ? RLOCK_ENOMEM : (int)o.len;
}
