/*
 * Renewal of semaphore permits, and giving them back at close.
 *
 * Permits taken with RLOCK_WATCHDOG are leases renewed every
 * watchdog_timeout_ms / 3, in batches, one lease_renew call per batch and
 * master (lease_scripts.c): an owner's one lease on a master covers all
 * its slots there. The family has a watchdog of its own (the mechanism of
 * watchdog/, a second instance: the lock's hands its due entries to the
 * lock's renewal, renew.c, which knows only locks). The timing rules are
 * the lock's: a renewal counts when it leaves validity, a renewal that
 * misses is retried sooner as the validity runs out, and the hold is lost
 * before its validity ends, never after.
 *
 * What a majority means is the semaphore's: each slot must still be had
 * by a majority of masters, and a master renewed a slot when it renewed
 * the owner's lease and had granted that slot. A master that says the
 * owner's lease is gone loses every slot of the owner (masks), for good;
 * when a slot can no longer have a majority, or has none when the
 * validity runs out, the whole hold is lost (the owner is told): simple,
 * and honest about what the owner can still count on.
 *
 * A cluster master runs a script on the node of its keys' slot, and the
 * keys of one semaphore share its name's slot, not those of another: with
 * a cluster master, each hold is renewed by a call of its own.
 */
#include <stdlib.h>
#include <string.h>

#include "master.h"
#include "ops.h"
#include "quarantine.h"
#include "renew.h"
#include "scripts.h"
#include "sem_renew.h"
#include "util.h"

typedef struct batch {
  size_t n;
  uint64_t *gen;
  uint8_t *said;   /* r->n * n: 1 renewed, 2 gone */
} batch;

/* Argument positions: EVALSHA sha numkeys (tkey key)*n lease owner*n. */
#define HKEY_ARG(k) (3 + 2 * (k) + 1)
#define OWNER_ARG(b, k) (3 + 2 * (b)->n + 1 + (k))

static int classify_renew(rl_round *r, int i, const redisReply *rep) {
  batch *b = r->data;
  if (b == NULL) return RL_VOTE_FAIL;
  /* lease_renew answers one character per hold, '1' or '0'. */
  if (rep->type != REDIS_REPLY_STRING || (size_t)rep->len != b->n)
    return RL_VOTE_FAIL;
  for (size_t k = 0; k < b->n; k++)
    if (rep->str[k] != '0' && rep->str[k] != '1') return RL_VOTE_FAIL;
  uint8_t *said = b->said + (size_t)i * b->n;
  for (size_t k = 0; k < b->n; k++) said[k] = rep->str[k] == '1' ? 1 : 2;
  return RL_VOTE_YES;
}

/* The masters that renewed the hold's lease (said 1) and those that said
 * it is gone, among the votes that count. */
static void masters_said(const rl_round *r, const batch *b, size_t k,
                         uint64_t *renewed, uint64_t *gone) {
  *renewed = *gone = 0;
  for (int i = 0; i < r->n; i++) {
    if (r->slot[i].vote != RL_VOTE_YES) continue;
    uint8_t said = b->said[(size_t)i * b->n + k];
    if (said == 1) *renewed |= 1ull << i;
    if (said == 2) *gone |= 1ull << i;
  }
}

/* Tells the handle of the hold's first acquisition that its permits are
 * at risk (1) or no longer (0), as renew.c does for locks. */
static void say_risk(rl_hold *h, int at_risk) {
  rlock_sem *sem = rl_permits_of(h)->sem;
  rlock_sem_risk_cb cb = atomic_load(&sem->risk_cb);
  if (cb != NULL) cb(sem, at_risk, atomic_load(&sem->risk_arg));
}

static void renew_done(rl_round *r) {
  batch *b = r->data;
  rl_client *c = r->client;
  if (!rl_votes_settle(r, 0) || b == NULL || c->shut_down) return;
  rl_family *f = c->family;
  if (f == NULL) return;
  rl_watchdog *w = &f->watchdog;
  int64_t lease = c->opts.watchdog_timeout_ms;
  int64_t drift = rl_drift_ms(c, lease);
  uint64_t now = rl_now_ms();
  int fresh = lease - (int64_t)(now - r->t_start) - drift > 0;
  for (size_t k = 0; k < b->n; k++) {
    const rl_argv *a = &r->args;
    size_t ki = HKEY_ARG(k), oi = OWNER_ARG(b, k);
    rl_hold *h = rl_holds_find(&f->permits, a->argv[ki], a->argvlen[ki],
                               a->argv[oi], a->argvlen[oi]);
    if (h == NULL || h->gen != b->gen[k] || h->lost || h->wd.armed)
      continue; /* released, replaced, or already re-armed */
    rl_permits *p = rl_permits_of(h);
    uint64_t renewed, gone;
    masters_said(r, b, k, &renewed, &gone);
    int all = 1, doomed = 0;
    for (size_t j = 0; j < p->n; j++) {
      p->mask[j] &= ~gone; /* the owner's lease ran out there */
      if (__builtin_popcountll(p->mask[j] & renewed) < r->quorum) all = 0;
      if (__builtin_popcountll(p->mask[j]) < r->quorum) doomed = 1;
    }
    if (all && fresh) {
      RL_ADD(c->metrics.renewals, 1);
      h->valid_until_ms = r->t_start + (uint64_t)(lease - drift);
      rl_watchdog_start(w, &h->wd);
      if (h->at_risk) {
        h->at_risk = 0;
        say_risk(h, 0);
      }
      continue;
    }
    if (doomed) {
      rl_sem_hold_lost(c, h); /* a slot can no longer have a majority */
      continue;
    }
    RL_ADD(c->metrics.renewal_failures, 1);
    rl_log(c, RLOCK_LOG_WARN, "renewal of permits of %.*s missed a majority",
           (int)h->keylen, h->key);
    rl_renew_miss miss;
    rl_renew_missed(c, h, now, w->period_ms, &miss);
    if (miss.at_risk) {
      h->at_risk = 1; /* at risk, said before a loss */
      RL_ADD(c->metrics.locks_at_risk, 1);
      say_risk(h, 1);
      if (h->lost || h->wd.armed) continue;
    }
    if (miss.lost) {
      rl_sem_hold_lost(c, h); /* no time for another round: say so now */
      continue;
    }
    rl_watchdog_arm(w, &h->wd, miss.retry_ms);
  }
}

static void renew_release(rl_round *r) {
  batch *b = r->data;
  if (b == NULL) return;
  free(b->said);
  free(b);
}

static const rl_round_ops renew_ops = {classify_renew, renew_done, NULL,
                                       renew_release};

void rl_sem_watch(rl_client *c, rl_hold *h) {
  rl_watchdog *w = rl_family_watchdog(c, rl_sem_renew_due);
  if (w != NULL) rl_watchdog_start(w, &h->wd);
  /* Out of memory: not renewed, so lost at the end of its lease, which
   * the owner learns at its release. */
}

/* Sends one renewal round for n due holds. */
static void send_renew(rl_client *c, rl_wheel_node **due, size_t n) {
  rl_family *f = c->family;
  batch *b = calloc(1, sizeof *b + n * sizeof(uint64_t));
  rl_round *r = NULL;
  if (b != NULL) {
    b->n = n;
    b->gen = (uint64_t *)(b + 1);
    b->said = calloc((size_t)c->nmasters * n, 1);
  }
  /* The owner fields, written from the holds' numbers (holds.h); the
   * round copies them. */
  char *owners = b != NULL ? malloc(n * RL_HOLDS_OWNER_MAX) : NULL;
  if (b != NULL && b->said != NULL && owners != NULL) {
    rl_args a;
    rl_args_init(&a);
    rl_args_str(&a, NULL, 0);
    rl_args_i64(&a, (int64_t)(2 * n));
    for (size_t k = 0; k < n; k++) {
      rl_hold *h = rl_container_of(due[k], rl_hold, wd);
      const rlock_sem *sem = rl_permits_of(h)->sem;
      rl_args_str(&a, sem->tkey, sem->tkeylen);
      rl_args_str(&a, h->key, h->keylen);
      b->gen[k] = h->gen;
    }
    rl_args_i64(&a, c->opts.watchdog_timeout_ms);
    for (size_t k = 0; k < n; k++) {
      rl_hold *h = rl_container_of(due[k], rl_hold, wd);
      char *o = owners + k * RL_HOLDS_OWNER_MAX;
      rl_args_str(&a, o, rl_holds_owner(&f->permits, h, o));
    }
    r = rl_args_round(&a, c, &renew_ops, b, RL_FAM(RL_FAM_LEASE_RENEW));
    rl_args_free(&a);
  }
  free(owners);
  if (r == NULL) {
    /* Out of memory: try these again soon rather than lose them. */
    if (b != NULL) free(b->said);
    free(b);
    for (size_t k = 0; k < n; k++) rl_watchdog_arm(&f->watchdog, due[k], 100);
    return;
  }
  r->wait_all = 1; /* every master's answer updates the masks */
  rl_round_send(r);
}

/* 1 if some master is a cluster: its batches cannot span slots. */
static int by_slot(const rl_client *c) {
  for (int i = 0; i < c->nmasters; i++)
    if (c->masters[i]->kind == RL_MASTER_CLUSTER) return 1;
  return 0;
}

void rl_sem_renew_due(rl_wheel_node **due, size_t n, void *arg) {
  rl_client *c = arg;
  if (c->family == NULL) return;
  if (!by_slot(c)) {
    send_renew(c, due, n);
    return;
  }
  for (size_t k = 0; k < n; k++) send_renew(c, due + k, 1);
}
