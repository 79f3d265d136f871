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
 *
 * At risk (rlock_set_risk_cb): a renewal that missed a majority when less
 * than half the validity is left puts the hold at risk, said once (1); the
 * next renewal that holds says 0, once; a loss says nothing more (the
 * lost-lock callback does). So that masters that do not answer at all
 * are noticed in time, a missed renewal is tried again no later than the
 * halfway point; one about to be declared lost is put at risk first.
 *
 * Batches by node. A cluster master serves each lock from the node of its
 * slot, and a script runs on one node, so when a master has more than one
 * node the due holds of a tick are grouped by the nodes they go to (one
 * per master) and each group is sent in batches of watchdog_batch, pinned
 * to those nodes; grouping across the watchdog's calls of one tick keeps
 * batches full rather than cut into one piece per node per call. A
 * cluster node runs the batch with the keys as arguments
 * (RL_SCRIPT_RENEW_NODE), and answers per key; a key it could not touch
 * (its slot moved, the cluster is down) is renewed again at once alone,
 * routed by its slot, which follows MOVED and ASK.
 *
 * Each kind renews with its own script (kind.h): locks, fair locks and
 * write holds are hashes renewed by the renew script, read holds are
 * entries of an expiry zset renewed by lease_renew; the due holds of a
 * tick go out in one batch per script and master, or, with a cluster
 * master, per node as above for the hashes (the node form renews any
 * hash with an owner field) and one by one, routed, for read holds.
 */
#include <stdlib.h>
#include <string.h>

#include "kind.h"
#include "lock.h"
#include "master.h"
#include "ops.h"
#include "quarantine.h"
#include "renew.h"
#include "resp.h"
#include "round.h"
#include "scripts.h"
#include "slot.h"
#include "util.h"

/* A batch: its holds, pinned until the round is freed (holds.h: a hold
 * released meanwhile stays readable and is marked removed; a new hold of
 * the same lock and owner is a new record), and per master and hold what
 * the master said (1 renewed, 2 no longer the owner's, 3 not handled: a
 * cluster node without that key), counted when the round is decided, once
 * it is known which masters' votes count. Pointers, not names: looking
 * each hold up again by key and owner when the answer comes was a bucket
 * and a chain read per lock, a third of the watchdog's time at a million
 * locks. */
typedef struct batch {
  size_t n;
  int routed; /* one key, routed by its slot: never rerouted again */
  size_t per;    /* keys per hold: 1, or 2 (the hold key and its pair) */
  rl_hold **holds;
  uint8_t *said; /* r->n * n, made on the first answer */
} batch;

enum { SAID_RENEWED = 1, SAID_GONE = 2, SAID_UNHANDLED = 3 };

static void renew_routed(rl_client *c, rl_hold *h);

/* The renew scripts of a master that is one server (the lock's and
 * lease_renew) answer one character per hold, '1' renewed or '0' not the
 * owner's: one bulk string to parse instead of an array of a hundred
 * integers, which was a third of the loop's work per renewal call. A
 * cluster node's form answers an array, since a key it cannot touch
 * answers an error text (scripts.c). */
static int classify_renew(rl_round *r, int i, const redisReply *rep) {
  batch *b = r->data;
  if (b == NULL) return RL_VOTE_FAIL;
  if (rep->type == REDIS_REPLY_STRING) {
    if ((size_t)rep->len != b->n) return RL_VOTE_FAIL;
    for (size_t k = 0; k < b->n; k++)
      if (rep->str[k] != '0' && rep->str[k] != '1') return RL_VOTE_FAIL;
    if (b->said == NULL && (b->said = calloc((size_t)r->n, b->n)) == NULL)
      return RL_VOTE_FAIL;
    uint8_t *said = b->said + (size_t)i * b->n;
    for (size_t k = 0; k < b->n; k++)
      said[k] = rep->str[k] == '1' ? SAID_RENEWED : SAID_GONE;
    return RL_VOTE_YES;
  }
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements != b->n)
    return RL_VOTE_FAIL;
  for (size_t k = 0; k < b->n; k++) {
    const redisReply *e = rep->element[k];
    if (e->type != REDIS_REPLY_INTEGER && e->type != REDIS_REPLY_STRING &&
        e->type != REDIS_REPLY_STATUS && e->type != REDIS_REPLY_ERROR)
      return RL_VOTE_FAIL;
  }
  if (b->said == NULL && (b->said = calloc((size_t)r->n, b->n)) == NULL)
    return RL_VOTE_FAIL;
  for (size_t k = 0; k < b->n; k++) {
    const redisReply *e = rep->element[k];
    b->said[(size_t)i * b->n + k] = e->type != REDIS_REPLY_INTEGER
                                        ? SAID_UNHANDLED
                                    : e->integer == 1 ? SAID_RENEWED
                                                      : SAID_GONE;
  }
  return RL_VOTE_YES;
}

/* A renewal that missed a majority, logged at most once a second per
 * client: a shard down for a moment misses every lock on it at once, and
 * a line per lock would bury everything else in the log. */
static void log_missed(rl_client *c, const rl_hold *h, uint64_t now) {
  uint64_t skipped;
  if (!rl_log_rate_pass(&c->renew_miss_log, now, &skipped)) return;
  if (skipped > 0)
    rl_log(c, RLOCK_LOG_WARN, "renewal of %.*s missed a majority (and %llu "
           "more since the last such line)", (int)h->keylen, h->key,
           (unsigned long long)skipped);
  else
    rl_log(c, RLOCK_LOG_WARN, "renewal of %.*s missed a majority",
           (int)h->keylen, h->key);
}

/* Tells the hold's first handle's at-risk callback, if one is set. */
static void say_risk(rl_hold *h, int at_risk) {
  rlock *lock = h->lock;
  void *arg = NULL;
  rlock_risk_cb cb = lock != NULL ? rl_lock_risk(lock, &arg) : NULL;
  if (cb != NULL) cb(lock, at_risk, arg);
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
  /* At a million locks the holds are no longer in cache when the answer
   * comes: asking for all of them first overlaps the misses. */
  for (size_t k = 0; k < b->n; k++)
    if (b->holds[k] != NULL) __builtin_prefetch(b->holds[k]);
  /* Renewed holds are armed for one due time, and the timer set once. */
  uint64_t due = rl_watchdog_start_due(w);
  int started = 0;
  for (size_t k = 0; k < b->n; k++) {
    rl_hold *h = b->holds[k];
    if (h == NULL || h->removed || h->lost || h->wd.armed)
      continue; /* released, replaced, or already re-armed */
    int ones = 0, zeros = 0, unhandled = 0;
    for (int i = 0; i < r->n && b->said != NULL; i++) {
      if (r->slot[i].vote != RL_VOTE_YES) continue;
      uint8_t said = b->said[(size_t)i * b->n + k];
      ones += said == SAID_RENEWED;
      zeros += said == SAID_GONE;
      unhandled += said == SAID_UNHANDLED;
      if (said == SAID_GONE) h->masters &= ~(1ull << i); /* gone there */
    }
    if (ones >= r->quorum && fresh) {
      RL_ADD(c->metrics.renewals, 1);
      h->valid_until_ms = r->t_start + (uint64_t)(lease - drift);
      rl_watchdog_start_at(w, &h->wd, due);
      started = 1;
      if (h->at_risk) {
        h->at_risk = 0;
        say_risk(h, 0);
      }
      continue;
    }
    if (zeros > r->n - r->quorum) {
      rl_hold_lost(c, h); /* the owner is gone from too many masters */
      continue;
    }
    if (unhandled > 0 && !b->routed && fresh) {
      renew_routed(c, h); /* where its slot is now */
      continue;
    }
    RL_ADD(c->metrics.renewal_failures, 1);
    log_missed(c, h, now);
    rl_renew_miss miss;
    rl_renew_missed(c, h, now, w->period_ms, &miss);
    if (miss.at_risk) {
      h->at_risk = 1;
      RL_ADD(c->metrics.locks_at_risk, 1);
      say_risk(h, 1);
      if (h->removed || h->lost || h->wd.armed) continue;
    }
    if (miss.lost) {
      rl_hold_lost(c, h); /* no time for another round: say so now */
      continue;
    }
    rl_watchdog_arm(w, &h->wd, miss.retry_ms);
  }
  if (started) rl_watchdog_schedule(w, due);
}

uint64_t rl_renew_round_ms(const rl_client *c) {
  uint64_t mt = (uint64_t)c->opts.master_timeout_ms;
  if (c->opts.replica_acks > 0) mt += (uint64_t)c->opts.replica_ack_timeout_ms;
  return mt;
}

void rl_renew_missed(const rl_client *c, const rl_hold *h, uint64_t now,
                     uint64_t period_ms, rl_renew_miss *out) {
  int64_t lease = c->opts.watchdog_timeout_ms;
  int64_t drift = rl_drift_ms(c, lease);
  uint64_t mt = rl_renew_round_ms(c);
  uint64_t left = h->valid_until_ms > now ? h->valid_until_ms - now : 0;
  uint64_t half = lease > drift ? (uint64_t)(lease - drift) / 2 : 0;
  out->at_risk = !h->at_risk && (left < half || left <= 2 * mt);
  out->lost = left <= 2 * mt;
  out->retry_ms = 0;
  if (out->lost) return;
  uint64_t retry = (left - 2 * mt) / 2;
  if (retry > period_ms) retry = period_ms;
  if (!h->at_risk && !out->at_risk && retry > left - half)
    retry = left - half > 0 ? left - half : 1;
  out->retry_ms = retry;
}

static void batch_free(batch *b) {
  if (b == NULL) return;
  for (size_t k = 0; k < b->n; k++)
    if (b->holds[k] != NULL) rl_holds_unpin(b->holds[k]);
  free(b->said);
  free(b);
}

static void renew_release(rl_round *r) { batch_free(r->data); }

const rl_round_ops rl_renew_ops = {classify_renew, renew_done, NULL,
                                   renew_release};

void *rl_renew_batch_new(size_t n) {
  batch *b = calloc(1, sizeof *b + n * sizeof(rl_hold *));
  if (b == NULL) return NULL;
  b->n = n;
  b->per = 1;
  b->holds = (rl_hold **)(b + 1);
  return b;
}

/* Sends one renewal round for n holds that share a renew script (with
 * pair, each hold's key and the key after it in its handle's vector): to
 * every master's node in nodes (a batch grouped by node, reentrant locks
 * only), or, with nodes NULL, routed by the slot of the first key (one
 * key, or every master a single server). */
static void send_batch(rl_client *c, rl_hold **hs, size_t n, int script,
                       int pair, rl_conn *const *nodes, int routed) {
  size_t per = pair ? 2 : 1;
  size_t argc = 2 + per * n + 1 + n;
  batch *b = rl_renew_batch_new(n);
  /* One allocation for the argument vector, its lengths and the owner
   * fields (a hold keeps its owner as numbers: holds.h), which the round
   * copies. */
  char *mem = malloc((argc + 1) * (sizeof(char *) + sizeof(size_t)) +
                     n * RL_HOLDS_OWNER_MAX);
  char lease[24], nkeys[24];
  rl_round *r = NULL;
  if (b != NULL && mem != NULL) {
    const char **argv = (const char **)(void *)mem;
    size_t *len = (size_t *)(void *)(argv + argc + 1);
    char *owners = (char *)(len + argc + 1);
    b->routed = routed;
    b->per = per;
    size_t ll = rl_resp_put_i64(lease, c->opts.watchdog_timeout_ms);
    size_t nl = rl_resp_put_u64(nkeys, per * n);
    /* EVALSHA sha nkeys keys lease owner1..ownern; a cluster node's form
     * has 0 keys and the same arguments after it (scripts.c). */
    argv[0] = NULL;
    len[0] = 0;
    argv[1] = "0";
    len[1] = 1;
    argv[2] = nkeys;
    len[2] = nl;
    for (size_t k = 0; k < n; k++) {
      rl_hold *h = hs[k];
      argv[3 + per * k] = h->key;
      len[3 + per * k] = h->keylen;
      if (pair) { /* the key after the hold key in the handle's vector */
        int hk = h->lock->kind->hold;
        argv[4 + per * k] = rl_lock_keyk(h->lock, hk + 1);
        len[4 + per * k] = rl_lock_keylenk(h->lock, hk + 1);
      }
      size_t oi = 4 + per * n + k;
      if (k > 0 && h->owner_id == hs[k - 1]->owner_id &&
          h->owner_is_thread == hs[k - 1]->owner_is_thread) {
        /* The owner of the hold before: its field is written once (the
         * locks of one thread or async owner are often renewed
         * together, and writing each was a tenth of a call's work). */
        argv[oi] = argv[oi - 1];
        len[oi] = len[oi - 1];
        continue;
      }
      char *o = owners + k * RL_HOLDS_OWNER_MAX;
      argv[oi] = o;
      len[oi] = rl_holds_owner(&c->holds, h, o);
    }
    argv[3 + per * n] = lease;
    len[3 + per * n] = ll;
    argv[1] = NULL; /* the plain form: without the "0" */
    /* Nothing reads a renewal's arguments again (a hold that needs
     * another round gets a new one): the round does not copy them. */
    r = rl_round_new_wire(c, &rl_renew_ops, b, script, (int)argc, argv + 1,
                          len + 1);
    argv[1] = "0";
    /* Pinned batches (a cluster's) hold hashes only (locks, fair locks,
     * write holds): their node form is RL_SCRIPT_RENEW_NODE, keys as
     * arguments. */
    if (r != NULL && nodes != NULL &&
        rl_round_pin(r, nodes, RL_SCRIPT_RENEW_NODE, (int)argc + 1, argv,
                     len) != 0) {
      rl_round_discard(r); /* frees b, which pins nothing yet */
      r = NULL;
      b = NULL;
    }
  }
  free(mem);
  if (r == NULL) {
    /* Out of memory: try these again soon rather than lose them. */
    batch_free(b);
    for (size_t k = 0; k < n; k++)
      rl_watchdog_arm(&c->watchdog, &hs[k]->wd, 100);
    return;
  }
  for (size_t k = 0; k < n; k++) {
    b->holds[k] = hs[k];
    rl_holds_pin(hs[k]);
  }
  r->wait_all = 1;
  rl_round_send(r);
}

/* The renew script of a hold: its first handle's kind's. */
static const rl_kind *kind_of(const rl_hold *h) {
  return h->lock != NULL ? h->lock->kind : &rl_kind_lock;
}

static void renew_routed(rl_client *c, rl_hold *h) {
  const rl_kind *k = kind_of(h);
  send_batch(c, &h, 1, k->renew, k->renew_pair, NULL, 1);
}

/* One batch per renew script: the holds of that script are moved to the
 * front of what is left, then sent, routed by the first key's slot (every
 * master a single server). */
static void renew_by_kind(rl_client *c, rl_hold **hs, size_t n) {
  size_t done = 0;
  while (done < n) {
    const rl_kind *kind = kind_of(hs[done]);
    size_t m = done;
    for (size_t k = done; k < n; k++) {
      if (kind_of(hs[k])->renew != kind->renew) continue;
      rl_hold *t = hs[m];
      hs[m++] = hs[k];
      hs[k] = t;
    }
    send_batch(c, hs + done, m - done, kind->renew, kind->renew_pair, NULL,
               0);
    done = m;
  }
}

/* --- grouping by node -------------------------------------------------------- */

/* A group's holds are pinned (holds.h), since one may be released before
 * its group is sent (the flush runs later in the loop's turn): it is then
 * marked removed, and skipped. */
typedef struct group {
  rl_conn **nodes; /* one per master */
  rl_hold **e;
  size_t n;
} group;

typedef struct rl_renew_groups {
  /* Sends what the tick grouped, in the same turn of the loop. An idle
   * handle, not a prepare one: a prepare callback runs after the loop
   * decided how long to block, so the connections' own flushes it would
   * start (prepare handles too) would wait for the next event, which
   * might be no earlier than the next watchdog tick, or never while every
   * hold is in flight and the wheel is empty. */
  uv_idle_t flush;
  rl_client *c;
  group *g;
  size_t ng, cap;
} rl_renew_groups;

/* Sends a group's holds that are still held, as one batch. */
static void send_group(rl_renew_groups *rg, group *g) {
  rl_client *c = rg->c;
  rl_hold **hs = malloc((g->n > 0 ? g->n : 1) * sizeof *hs);
  size_t m = 0;
  for (size_t k = 0; k < g->n; k++) {
    rl_hold *h = g->e[k];
    if (h->removed || h->lost || h->wd.armed) continue;
    if (hs != NULL)
      hs[m++] = h;
    else /* out of memory: soon again, alone */
      rl_watchdog_arm(&c->watchdog, &h->wd, 100);
  }
  if (m > 0) send_batch(c, hs, m, RL_SCRIPT_RENEW, 0, g->nodes, 0);
  for (size_t k = 0; k < g->n; k++) rl_holds_unpin(g->e[k]); /* the batch's own */
  g->n = 0;
  free(hs);
}

static void flush_all(rl_renew_groups *rg) {
  for (size_t i = 0; i < rg->ng; i++) send_group(rg, &rg->g[i]);
}

static void on_groups_flush(uv_idle_t *p) {
  uv_idle_stop(p);
  flush_all(p->data);
}

static void on_groups_closed(uv_handle_t *h) {
  rl_renew_groups *rg = h->data;
  rl_client *c = rg->c;
  for (size_t i = 0; i < rg->ng; i++) {
    for (size_t k = 0; k < rg->g[i].n; k++) rl_holds_unpin(rg->g[i].e[k]);
    free(rg->g[i].nodes);
    free(rg->g[i].e);
  }
  free(rg->g);
  free(rg);
  if (--c->handles_open == 0) rl_client_unref(c);
}

void rl_renew_close(rl_client *c) {
  rl_renew_groups *rg = c->renew_groups;
  if (rg == NULL) return;
  c->renew_groups = NULL;
  uv_close((uv_handle_t *)&rg->flush, on_groups_closed);
}

static rl_renew_groups *groups_of(rl_client *c) {
  if (c->renew_groups != NULL) return c->renew_groups;
  rl_renew_groups *rg = calloc(1, sizeof *rg);
  if (rg == NULL) return NULL;
  rg->c = c;
  uv_idle_init(c->loop, &rg->flush);
  rg->flush.data = rg;
  c->handles_open++;
  c->renew_groups = rg;
  return rg;
}

/* The group of holds that go to these nodes, made if needed. */
static group *group_for(rl_renew_groups *rg, rl_conn **nodes, int nm,
                        size_t per) {
  size_t sz = sizeof *nodes * (size_t)nm;
  for (size_t i = 0; i < rg->ng; i++)
    if (memcmp(rg->g[i].nodes, nodes, sz) == 0) return &rg->g[i];
  if (rg->ng == rg->cap) {
    size_t cap = rg->cap ? rg->cap * 2 : 8;
    group *g = realloc(rg->g, cap * sizeof *g);
    if (g == NULL) return NULL;
    rg->g = g;
    rg->cap = cap;
  }
  group *g = &rg->g[rg->ng];
  g->nodes = malloc(sz);
  g->e = malloc(per * sizeof *g->e);
  g->n = 0;
  if (g->nodes == NULL || g->e == NULL) {
    free(g->nodes);
    free(g->e);
    return NULL;
  }
  memcpy(g->nodes, nodes, sz);
  rg->ng++;
  return g;
}

/* Adds a hold to a group, pinned until the group is sent. 0 (a group has
 * room for watchdog_batch holds, and is sent when full). */
static int group_add(rl_renew_groups *rg, group *g, rl_hold *h) {
  (void)rg;
  rl_holds_pin(h);
  g->e[g->n++] = h;
  return 0;
}

/* 1 if some master has more than one node (a cluster). */
static int by_node(const rl_client *c) {
  for (int i = 0; i < c->nmasters; i++)
    if (c->masters[i]->kind == RL_MASTER_CLUSTER) return 1;
  return 0;
}

void rl_renew_due(rl_wheel_node **due, size_t n, void *arg) {
  rl_client *c = arg;
  size_t per = (size_t)c->opts.watchdog_batch;
  rl_renew_groups *rg = by_node(c) ? groups_of(c) : NULL;
  rl_hold **hs = malloc(n * sizeof *hs);
  if (hs == NULL) {
    for (size_t k = 0; k < n; k++) rl_watchdog_arm(&c->watchdog, due[k], 100);
    return;
  }
  /* The holds are in cache (the wheel just walked their nodes); their
   * handles (the kind) and keys are not: asking for all of them at once
   * costs about one miss per batch instead of two per lock. */
  for (size_t k = 0; k < n; k++) {
    hs[k] = rl_container_of(due[k], rl_hold, wd);
    __builtin_prefetch(hs[k]->lock);
    __builtin_prefetch(hs[k]->key);
  }
  if (rg == NULL) {
    renew_by_kind(c, hs, n);
    free(hs);
    return;
  }
  rl_conn *nodes[RL_MAX_MASTERS];
  for (size_t k = 0; k < n; k++) {
    if (kind_of(hs[k])->renew != RL_SCRIPT_RENEW) {
      /* A read hold (an entry of an expiry zset, lease_renew) has no
       * node form: it goes alone, routed by its slot. Locks, fair locks
       * and write holds are hashes with an owner field, which the node
       * form renews. */
      renew_by_kind(c, hs + k, 1);
      continue;
    }
    int slot = rl_slot_of(hs[k]->key, hs[k]->keylen);
    for (int i = 0; i < c->nmasters; i++)
      nodes[i] = rl_master_node_of(c->masters[i], slot);
    group *g = group_for(rg, nodes, c->nmasters, per);
    if (g == NULL || group_add(rg, g, hs[k]) != 0) {
      rl_watchdog_arm(&c->watchdog, &hs[k]->wd, 100);
      continue;
    }
    if (g->n == per) send_group(rg, g);
  }
  free(hs);
  uv_idle_start(&rg->flush, on_groups_flush);
}
