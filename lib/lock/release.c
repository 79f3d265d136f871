/*
 * Unlock and force unlock. Unlock first asks the client's own record: a
 * thread that never acquired the lock here is not its owner, and is told
 * so without a round trip and without touching another owner's lock. A
 * thread that did acquire it but whose hold Redis no longer has (a
 * majority answers "not owner") lost it, and is told that instead.
 */
#include <stdlib.h>
#include <string.h>

#include "kind.h"
#include "lock.h"
#include "ops.h"
#include "pubsub.h"
#include "quarantine.h"
#include "resp.h"
#include "round.h"
#include "scripts.h"
#include "slot.h"
#include "transfer.h"

static int classify_unlock(rl_round *r, int i, const redisReply *rep) {
  if (rep->type != REDIS_REPLY_INTEGER) return RL_VOTE_FAIL;
  r->slot[i].v[0] = rep->integer;
  if (rep->integer == RL_UNLOCK_RELEASED ||
      rep->integer == RL_UNLOCK_DECREMENTED)
    return RL_VOTE_YES;
  return rep->integer == RL_UNLOCK_NOT_OWNER ? RL_VOTE_NO : RL_VOTE_FAIL;
}

/* The masters that deleted the lock, and so published its unlock. */
static uint64_t published_by(const rl_round *r) {
  uint64_t m = 0;
  for (int i = 0; i < r->n; i++)
    if (r->slot[i].vote == RL_VOTE_YES &&
        r->slot[i].v[0] == RL_UNLOCK_RELEASED)
      m |= 1ull << i;
  return m;
}

static void unlock_outcome(rl_req *req, const rl_round *r,
                           uint64_t published) {
  rl_client *c = req->lock->client;
  rl_hold *h = rl_req_hold(req);
  if (r->outcome == RL_VOTE_YES) {
    if (h != NULL && --h->count <= 0) {
      RL_ADD(c->metrics.releases, 1);
      rl_hold_drop(c, h);
    }
    /* A waiter of this client may start its attempt now (before req,
     * and with it the handle, may be freed). */
    rl_pubsub_unlocked_by(c, req->lock, published);
    rl_req_finish(req, h != NULL ? RLOCK_OK : RLOCK_ENOTOWNER);
  } else if (r->no >= r->quorum) {
    if (h != NULL) {
      /* Lost on a majority: what a minority still has goes too. */
      rl_hold_release_everywhere(c, h);
      rl_hold_drop(c, h);
    }
    rl_req_finish(req, RLOCK_ELOST);
  } else {
    /* No majority either way: the decrement may have landed on some
     * masters (perhaps late) and not on others, and a retry could take it
     * off twice. So the hold ends here: it is released everywhere, best
     * effort, and forgotten; outer reentrant levels are lost (their owner
     * hears RLOCK_ELOST), and whatever is not released expires with its
     * lease, no longer renewed. */
    if (h != NULL) {
      if (h->count > 1) {
        rl_hold_lost(c, h); /* outer levels: told, as any lost hold */
      } else {
        rl_hold_release_everywhere(c, h);
        rl_hold_drop(c, h);
      }
    }
    rl_req_finish(req, rl_round_error(r));
  }
}

static void unlock_done(rl_round *r) {
  if (!rl_votes_settle(r, 0)) return;
  rl_req *req = r->data;
  if (req == NULL) return;
  req->round = NULL;
  unlock_outcome(req, r, published_by(r));
}

const rl_round_ops rl_unlock_ops = {classify_unlock, unlock_done, NULL,
                                        NULL};

void rl_unlock_start(rl_req *req) {
  rl_client *c = req->lock->client;
  rlock *lock = req->lock;
  rl_hold *h = rl_req_live_hold(req);
  if (h == NULL) return;
  /* The last release stops the renewal before the unlock is sent, so no
   * renewal can follow it. */
  if (h->count == 1) rl_watchdog_cancel(&c->watchdog, &h->wd);
  /* The last hold deletes the key whatever the count on each master (they
   * may differ: acquire.c), unless an acquisition of the same owner is in
   * flight: its grant, landing first, must only be decremented. */
  int last = h->count == 1 &&
             rl_holds_find(&c->pending, rl_lock_key(lock), lock->keylen,
                           req->owner, req->ownerlen) == NULL;
  rl_call_vals v;
  rl_lock_vals(lock, &v);
  v.owner = req->owner;
  v.ownerlen = req->ownerlen;
  v.lease_ms = h->lease_ms;
  v.last = last;
  /* A waiter of this client takes it over in the same round trip, when
   * there is one to take it (transfer.c). */
  if (last && rl_transfer_start(req, h, unlock_outcome)) return;
  rl_round *r = rl_call_round(c, &lock->kind->unlock, &v, &rl_unlock_ops, req);
  if (r == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  /* A master whose connection is reconnecting is asked once it is back,
   * while the hold is still valid: after that the lock may be another
   * owner's, and its lease frees it anyway. */
  r->resend_until_ms = h->valid_until_ms;
  req->round = r;
  rl_round_send(r);
}

static int classify_int(rl_round *r, int i, const redisReply *rep) {
  if (rep->type != REDIS_REPLY_INTEGER) return RL_VOTE_FAIL;
  r->slot[i].v[0] = rep->integer;
  return RL_VOTE_YES;
}

static void force_done(rl_round *r) {
  if (!rl_votes_settle(r, 0)) return;
  rl_req *req = r->data;
  if (req == NULL) return;
  req->round = NULL;
  rl_req_finish(req, r->outcome == RL_VOTE_YES ? RLOCK_OK : rl_round_error(r));
}

const rl_round_ops rl_force_ops = {classify_int, force_done, NULL, NULL};

void rl_force_start(rl_req *req) {
  rlock *lock = req->lock;
  rl_call_vals v;
  rl_lock_vals(lock, &v);
  rl_round *r = rl_call_round(lock->client, &lock->kind->force, &v,
                              &rl_force_ops, req);
  if (r == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  req->round = r;
  rl_round_send(r);
}

/* --- release on close ---------------------------------------------------- */

/* A master's answer to a release batch: the count of a server (plain
 * form), or per key 1, 0 or an error text (a cluster node's form, which
 * could not touch a key whose slot it no longer has: those keys are
 * released again alone, routed by their slot). */
static int classify_any(rl_round *r, int i, const redisReply *rep) {
  if (rep->type == REDIS_REPLY_INTEGER) return RL_VOTE_YES;
  if (rep->type != REDIS_REPLY_ARRAY) return RL_VOTE_FAIL;
  int *unhandled = r->data;
  const rl_argv *a = &r->args;
  if (a->argc < 3) return RL_VOTE_FAIL;
  size_t n = (size_t)(a->argc - 3) / 2; /* EVALSHA sha n keys owners */
  if (rep->elements != n) return RL_VOTE_FAIL;
  for (size_t k = 0; k < n && unhandled != NULL; k++)
    if (rep->element[k]->type != REDIS_REPLY_INTEGER) {
      unhandled[k] = 1;
      (void)i;
    }
  return RL_VOTE_YES;
}

static void send_release(rl_client *c, rl_hold *const *hs, const char *const
                         *keys, const size_t *keylens, const char *const
                         *owners, const size_t *ownerlens, size_t n,
                         rl_conn *const *nodes);

static void release_round_done(rl_round *r) {
  rl_client *c = r->client;
  if (!rl_votes_settle(r, 0)) return;
  int *unhandled = r->data;
  const rl_argv *a = &r->args;
  size_t n = (size_t)(a->argc - 3) / 2;
  for (size_t k = 0; k < n && unhandled != NULL; k++)
    if (unhandled[k])
      send_release(c, NULL, &a->argv[3 + k], &a->argvlen[3 + k],
                   &a->argv[3 + n + k], &a->argvlen[3 + n + k], 1, NULL);
  if (--c->releasing == 0) c->release_done(c);
}

static void release_free(rl_round *r) { free(r->data); }

const rl_round_ops rl_release_ops = {classify_any, release_round_done,
                                     NULL, release_free};

/* Sends one release round for n locks (holds, or names): to the nodes
 * given (a batch grouped by node), or routed by the first key's slot. */
static void send_release(rl_client *c, rl_hold *const *hs, const char *const
                         *keys, const size_t *keylens, const char *const
                         *owners, const size_t *ownerlens, size_t n,
                         rl_conn *const *nodes) {
  size_t argc = 3 + 2 * n;
  const char **argv = malloc(argc * sizeof *argv);
  size_t *len = malloc(argc * sizeof *len);
  int *unhandled = nodes != NULL ? calloc(n, sizeof *unhandled) : NULL;
  /* A hold keeps its owner as numbers (holds.h): the fields are written
   * here, and the round copies them. */
  char *ofields = hs != NULL ? malloc(n * RL_HOLDS_OWNER_MAX) : NULL;
  rl_round *r = NULL;
  char nkeys[24];
  if (argv != NULL && len != NULL && (hs == NULL || ofields != NULL)) {
    /* EVALSHA sha n keys owners; a cluster node's form has 0 keys and the
     * same arguments after it (scripts.c). */
    argv[0] = NULL;
    len[0] = 0;
    argv[1] = "0";
    len[1] = 1;
    argv[2] = nkeys;
    len[2] = rl_resp_put_u64(nkeys, n);
    for (size_t k = 0; k < n; k++) {
      argv[3 + k] = hs ? hs[k]->key : keys[k];
      len[3 + k] = hs ? hs[k]->keylen : keylens[k];
      if (hs != NULL) {
        char *o = ofields + k * RL_HOLDS_OWNER_MAX;
        argv[3 + n + k] = o;
        len[3 + n + k] = rl_holds_owner(&c->holds, hs[k], o);
      } else {
        argv[3 + n + k] = owners[k];
        len[3 + n + k] = ownerlens[k];
      }
    }
    argv[1] = NULL; /* the plain form: without the "0" */
    r = rl_round_new(c, &rl_release_ops, unhandled, RL_SCRIPT_RELEASE,
                     (int)argc - 1, argv + 1, len + 1);
    argv[1] = "0";
    if (r != NULL && nodes != NULL &&
        rl_round_pin(r, nodes, RL_SCRIPT_RELEASE_NODE, (int)argc, argv,
                     len) != 0) {
      rl_round_discard(r); /* frees unhandled */
      r = NULL;
      unhandled = NULL;
    }
  }
  free(argv);
  free(len);
  free(ofields);
  if (r == NULL) { /* out of memory: these expire with their lease */
    free(unhandled);
    return;
  }
  r->wait_all = 1; /* bounded by the master timeout */
  r->args.no_resend = 1; /* at close: a lock not released expires */
  c->releasing++;
  rl_round_send(r);
}

/* A hold of another kind than the reentrant lock is released by its own
 * script (its last unlock: a fair one tells the next waiter, a read one
 * is not a hash), one round each. */
static void send_kind_release(rl_client *c, const rl_hold *h) {
  rl_call_vals v;
  char owner[RL_HOLDS_OWNER_MAX];
  rl_lock_vals(h->lock, &v);
  v.owner = owner;
  v.ownerlen = rl_holds_owner(&c->holds, h, owner);
  v.lease_ms = h->lease_ms;
  rl_round *r =
      rl_call_round(c, &h->lock->kind->release, &v, &rl_release_ops, NULL);
  if (r == NULL) return; /* out of memory: it expires with its lease */
  r->wait_all = 1;
  r->args.no_resend = 1;
  c->releasing++;
  rl_round_send(r);
}

/* The holds to release, grouped as the watchdog's batches are: by the
 * nodes they go to when a master has more than one (renew.c). */
typedef struct rgroup {
  rl_conn *nodes[RL_MAX_MASTERS];
  rl_hold **hs;
  size_t n;
} rgroup;

static int multi_node(const rl_client *c) {
  for (int i = 0; i < c->nmasters; i++)
    if (c->masters[i]->kind == RL_MASTER_CLUSTER) return 1;
  return 0;
}

static void release_by_node(rl_client *c, size_t per) {
  rgroup *g = NULL;
  size_t ng = 0;
  rl_conn *nodes[RL_MAX_MASTERS] = {0};
  size_t sz = sizeof nodes[0] * (size_t)c->nmasters;
  for (size_t b = 0; b < c->holds.nbuckets; b++)
    for (rl_hold *h = c->holds.buckets[b]; h; h = h->hnext) {
      if (h->lost) continue;
      if (h->lock != NULL && h->lock->kind != &rl_kind_lock) {
        send_kind_release(c, h);
        continue;
      }
      int slot = rl_slot_of(h->key, h->keylen);
      for (int i = 0; i < c->nmasters; i++)
        nodes[i] = rl_master_node_of(c->masters[i], slot);
      size_t k = 0;
      while (k < ng && memcmp(g[k].nodes, nodes, sz) != 0) k++;
      if (k == ng) {
        rgroup *more = realloc(g, (ng + 1) * sizeof *g);
        if (more == NULL) continue; /* expires with its lease */
        g = more;
        memcpy(g[ng].nodes, nodes, sz);
        g[ng].hs = malloc(per * sizeof *g[ng].hs);
        g[ng].n = 0;
        if (g[ng].hs == NULL) continue;
        ng++;
      }
      g[k].hs[g[k].n++] = h;
      if (g[k].n == per) {
        send_release(c, g[k].hs, NULL, NULL, NULL, NULL, per, g[k].nodes);
        g[k].n = 0;
      }
    }
  for (size_t k = 0; k < ng; k++) {
    if (g[k].n > 0)
      send_release(c, g[k].hs, NULL, NULL, NULL, NULL, g[k].n, g[k].nodes);
    free(g[k].hs);
  }
  free(g);
}

void rl_release_all(rl_client *c, void (*done)(rl_client *c)) {
  size_t per = (size_t)c->opts.watchdog_batch, n = 0;
  c->release_done = done;
  c->releasing = 1; /* until every round is sent */
  if (multi_node(c)) {
    release_by_node(c, per);
  } else {
    rl_hold **batch = malloc(per * sizeof *batch);
    for (size_t b = 0; batch != NULL && b < c->holds.nbuckets; b++)
      for (rl_hold *h = c->holds.buckets[b]; h; h = h->hnext) {
        if (h->lost) continue;
        if (h->lock != NULL && h->lock->kind != &rl_kind_lock) {
          send_kind_release(c, h);
          continue;
        }
        batch[n++] = h;
        if (n == per) {
          send_release(c, batch, NULL, NULL, NULL, NULL, n, NULL);
          n = 0;
        }
      }
    if (n > 0) send_release(c, batch, NULL, NULL, NULL, NULL, n, NULL);
    free(batch);
  }
  /* The rounds copied what they send; the holds can go now. */
  for (size_t b = 0; b < c->holds.nbuckets; b++)
    while (c->holds.buckets[b] != NULL)
      rl_hold_drop(c, c->holds.buckets[b]);
  if (--c->releasing == 0) done(c);
}
