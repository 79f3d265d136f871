/*
 * Renewal of watchdog locks: the routine the watchdog (watchdog/) hands
 * due holds to, and the quorum rounds that renew them in batches.
 *
 * Timing: a hold is renewed every period (watchdog_timeout_ms / 3). A
 * renewal counts only if a majority of masters renewed it and the
 * renewal's own validity, lease - elapsed - drift, is still positive; the
 * hold's validity then runs from the start of that round. A renewal that
 * reaches no majority is retried, sooner as the validity runs out, and when
 * too little validity is left to finish one more round (two master
 * timeouts), the lock is declared lost: before its validity ends, never
 * after. A renewal that finds the owner gone on so many masters that no
 * majority can hold it declares it lost at once.
 */
#include <stdlib.h>
#include <string.h>

#include "lock.h"
#include "ops.h"
#include "quarantine.h"
#include "round.h"
#include "scripts.h"
#include "util.h"

/* A batch: its holds' generations, and per master and hold what the
 * master said (1 renewed, 2 no longer the owner's), counted when the round
 * is decided, once it is known which masters' votes count. */
typedef struct batch {
  size_t n;
  uint64_t *gen;
  uint8_t *said; /* r->n * n, made on the first answer */
} batch;

/* Argument positions: EVALSHA sha numkeys key1..keyn lease owner1..ownern */
#define KEY_ARG(k) (3 + (k))
#define OWNER_ARG(b, k) (3 + (b)->n + 1 + (k))

static int classify_renew(rl_round *r, int i, const redisReply *rep) {
  batch *b = r->data;
  if (b == NULL) return RL_VOTE_FAIL;
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements != b->n)
    return RL_VOTE_FAIL;
  for (size_t k = 0; k < b->n; k++) {
    const redisReply *e = rep->element[k];
    if (e->type != REDIS_REPLY_INTEGER) return RL_VOTE_FAIL;
  }
  if (b->said == NULL && (b->said = calloc((size_t)r->n, b->n)) == NULL)
    return RL_VOTE_FAIL;
  for (size_t k = 0; k < b->n; k++)
    b->said[(size_t)i * b->n + k] = rep->element[k]->integer == 1 ? 1 : 2;
  return RL_VOTE_YES;
}

static void renew_done(rl_round *r) {
  batch *b = r->data;
  rl_client *c = r->client;
  if (!rl_votes_settle(r, 0) || b == NULL || c->shut_down) return;
  rl_watchdog *w = &c->watchdog;
  int64_t lease = c->opts.watchdog_timeout_ms;
  int64_t drift = rl_drift_ms(c, lease);
  uint64_t now = rl_now_ms();
  int fresh = lease - (int64_t)(now - r->t_start) - drift > 0;
  uint64_t mt = (uint64_t)c->opts.master_timeout_ms;
  if (c->opts.replica_acks > 0) mt += (uint64_t)c->opts.replica_ack_timeout_ms;
  for (size_t k = 0; k < b->n; k++) {
    const rl_argv *a = &r->args;
    size_t ki = KEY_ARG(k), oi = OWNER_ARG(b, k);
    rl_hold *h = rl_holds_find(&c->holds, a->argv[ki], a->argvlen[ki],
                               a->argv[oi], a->argvlen[oi]);
    if (h == NULL || h->gen != b->gen[k] || h->lost || h->wd.armed)
      continue; /* released, replaced, or already re-armed */
    int ones = 0, zeros = 0;
    for (int i = 0; i < r->n && b->said != NULL; i++) {
      if (r->slot[i].vote != RL_VOTE_YES) continue;
      uint8_t said = b->said[(size_t)i * b->n + k];
      ones += said == 1;
      zeros += said == 2;
      if (said == 2) h->masters &= ~(1ull << i); /* gone there */
    }
    if (ones >= r->quorum && fresh) {
      RL_ADD(c->metrics.renewals, 1);
      h->valid_until_ms = r->t_start + (uint64_t)(lease - drift);
      rl_watchdog_start(w, &h->wd);
      continue;
    }
    if (zeros > r->n - r->quorum) {
      rl_hold_lost(c, h); /* the owner is gone from too many masters */
      continue;
    }
    RL_ADD(c->metrics.renewal_failures, 1);
    rl_log(c, RLOCK_LOG_WARN, "renewal of %.*s missed a majority",
           (int)h->keylen, h->key);
    uint64_t left = h->valid_until_ms > now ? h->valid_until_ms - now : 0;
    if (left <= 2 * mt) {
      rl_hold_lost(c, h); /* no time for another round: say so now */
      continue;
    }
    uint64_t retry = (left - 2 * mt) / 2;
    if (retry > w->period_ms) retry = w->period_ms;
    rl_watchdog_arm(w, &h->wd, retry);
  }
}

static void renew_release(rl_round *r) {
  batch *b = r->data;
  if (b != NULL) free(b->said);
  free(b);
}

const rl_round_ops rl_renew_ops = {classify_renew, renew_done, NULL,
                                   renew_release};

void *rl_renew_batch_new(size_t n) {
  batch *b = calloc(1, sizeof *b + n * sizeof(uint64_t));
  if (b == NULL) return NULL;
  b->n = n;
  b->gen = (uint64_t *)(b + 1);
  return b;
}

void rl_renew_due(rl_wheel_node **due, size_t n, void *arg) {
  rl_client *c = arg;
  size_t argc = 2 + n + 1 + n;
  batch *b = rl_renew_batch_new(n);
  const char **argv = malloc(argc * sizeof *argv);
  size_t *len = malloc(argc * sizeof *len);
  char lease[24], nkeys[24];
  rl_round *r = NULL;
  if (b != NULL && argv != NULL && len != NULL) {
    int ll = snprintf(lease, sizeof lease, "%lld",
                      (long long)c->opts.watchdog_timeout_ms);
    int nl = snprintf(nkeys, sizeof nkeys, "%zu", n);
    argv[0] = NULL;
    len[0] = 0;
    argv[1] = nkeys;
    len[1] = (size_t)nl;
    for (size_t k = 0; k < n; k++) {
      rl_hold *h = rl_container_of(due[k], rl_hold, wd);
      argv[2 + k] = h->key;
      len[2 + k] = h->keylen;
      argv[3 + n + k] = h->owner;
      len[3 + n + k] = h->ownerlen;
      b->gen[k] = h->gen;
    }
    argv[2 + n] = lease;
    len[2 + n] = (size_t)ll;
    r = rl_round_new(c, &rl_renew_ops, b, RL_SCRIPT_RENEW, (int)argc, argv,
                     len);
  }
  free(argv);
  free(len);
  if (r == NULL) {
    /* Out of memory: try these again soon rather than lose them. */
    if (b != NULL) free(b->said);
    free(b);
    for (size_t k = 0; k < n; k++) rl_watchdog_arm(&c->watchdog, due[k], 100);
    return;
  }
  r->wait_all = 1;
  rl_round_send(r);
}
