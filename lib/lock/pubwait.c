/*
 * The lock layer's side of pub/sub waiting: a waiting acquisition joins
 * its lock's wait queue (pubsub/) with the acquisition's callback that
 * starts its next attempt, sleeps there between attempts, and leaves
 * when it finishes.
 * What pub/sub needs of the client (its loop, its masters, the connection
 * settings) is handed down once, when the first wait makes it.
 *
 * The kind of the handle (kind.h) says which channel a waiter joins: the
 * handle's (a lock's unlock channel, a read-write lock's side), or for a
 * fair waiter a channel of its own, on which an unlock names it; and
 * whether a woken waiter that got its share passes the wake on (readers,
 * who may all go at once). How long it sleeps is the retry policy's
 * (retry.c).
 */
#include <stdlib.h>
#include <string.h>

#include "kind.h"
#include "lock.h"
#include "pubsub.h"
#include "util.h"
#include "waitq.h"

/* The most hand-offs (transfer.c) of one lock in a row, without an unlock
 * that publishes: what a waiter of another client may have to sit out. */
#define RL_HANDOFF_RUN 16

static void on_pubsub_closed(void *data) {
  rl_client *c = data;
  /* As client.c does for its own handles. */
  if (--c->handles_open == 0) rl_client_unref(c);
}

static void on_pubsub_log(void *data, int idx, int level, const char *msg) {
  rl_client *c = data;
  if (level > RLOCK_LOG_WARN) return; /* connects: the command log says */
  rl_log(c, level, "master %s (subscriber): %s", c->masters[idx]->name, msg);
}

/* The client's pub/sub state, made (and connecting) on first use. */
static rl_pubsub *pubsub_of(rl_client *c) {
  if (c->pubsub != NULL) return c->pubsub;
  rl_pubsub_config cfg = {
      .loop = c->loop,
      .n = c->nmasters,
      .masters = c->masters,
      .event_window_ms = (uint64_t)c->opts.master_timeout_ms,
      .data = c,
      .log = on_pubsub_log,
      .closed = on_pubsub_closed,
  };
  c->pubsub = rl_pubsub_new(&cfg);
  /* The whole of pub/sub counts as one of the client's open handles, so
   * that the client outlives its close. */
  if (c->pubsub != NULL) c->handles_open++;
  return c->pubsub;
}

void rl_pubsub_wait(rl_req *req, uint64_t sleep_ms, rl_psw_cb wake) {
  rl_client *c = req->lock->client;
  if (rl_client_closing(c)) {
    rl_req_finish(req, RLOCK_ECLOSED);
    return;
  }
  if (req->psw != NULL) {
    rl_psw_sleep(req->psw, sleep_ms);
    return;
  }
  /* The handle's channel, or a fair waiter's own: <channel>:<owner>. */
  const rlock *lock = req->lock;
  char chan[RL_OWNER_MAX + 700];
  size_t len = lock->channellen;
  memcpy(chan, rl_lock_channel(lock), len);
  if (lock->kind->per_owner && len + 1 + req->ownerlen <= sizeof chan) {
    chan[len++] = ':';
    memcpy(chan + len, req->owner, req->ownerlen);
    len += req->ownerlen;
  }
  rl_pubsub *ps = pubsub_of(c);
  rl_psw *w = ps ? rl_psw_join(ps, chan, len, sleep_ms, wake, req)
                 : NULL;
  if (w == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  req->psw = w;
  RL_ADD(c->metrics.waiters, 1);
}

/* 1 if req's owner holds the lock now (its acquisition succeeded). */
static int owner_holds(rl_req *req) {
  rl_hold *h = rl_req_hold(req);
  return h != NULL && !h->lost && h->count > 0;
}

void rl_pubsub_leave(rl_req *req) {
  rl_psw *w = req->psw;
  if (w == NULL) return;
  req->psw = NULL;
  rl_client *c = req->lock->client;
  RL_ADD(c->metrics.waiters, -1);
  /* A waiter an event chose and that leaves without the lock hands the
   * wake on; a reader hands it on even with its share (kind.h,
   * wake_all). */
  int pass = !owner_holds(req) || req->lock->kind->wake_all;
  rl_psw_leave(w, pass && !rl_client_closing(c));
}

/* Only the reentrant lock: its unlock publishes on the handle's channel
 * whenever it deletes the lock (RL_UNLOCK_RELEASED), and a message there
 * wakes the first waiter, whoever it is, so waking that waiter from the
 * reply is exactly what the message would do, sooner. The other kinds'
 * unlock scripts choose in Lua whom they wake, and the reply does not
 * say: a fair unlock publishes on the queue head's own channel (only the
 * head may take the lock, so waking another waiter of this client would
 * cost it a refused attempt and leave the head to its message), and a
 * read-write unlock publishes on the readers' channel, the writers', or
 * neither, by what is left (rw_scripts.c). Those keep their messages. */
void rl_pubsub_unlocked_by(rl_client *c, const rlock *lock,
                           uint64_t published) {
  if (c->pubsub == NULL || published == 0 || lock->kind != &rl_kind_lock)
    return;
  /* An unlock that ends a run of hand-offs (rl_pubsub_handoff_waiter)
   * wakes nobody here before the message: this client's waiters then
   * learn of it when the other clients' waiters do, and race them as
   * equals. */
  if (rl_psw_handoffs(c->pubsub, rl_lock_channel(lock), lock->channellen, 1) >=
      RL_HANDOFF_RUN)
    return;
  rl_pubsub_unlocked(c->pubsub, rl_lock_channel(lock), lock->channellen,
                     published);
}

/*
 * The hand-off (transfer.c) takes the first waiter of the lock's channel
 * in this client, and only when the waiter is an acquisition of the
 * reentrant lock by another owner that has no hold of it (a first
 * acquisition: the transfer grants as one), between attempts (no round
 * or grants of its own), still within its wait, and when fewer than
 * RL_HANDOFF_RUN hand-offs of the channel followed each other without a
 * message from a master. Waiters of other clients hear nothing of a
 * hand-off (the lock is never free) and sleep on, up to the holder's
 * PTTL; after RL_HANDOFF_RUN hand-offs, the next unlock is a plain one
 * that publishes, and they get their chance.
 */
rl_req *rl_pubsub_handoff_waiter(rl_client *c, const rlock *lock,
                                 const char *owner, size_t ownerlen,
                                 rl_psw_cb wake, rl_psw **psw) {
  if (c->pubsub == NULL || lock->kind != &rl_kind_lock ||
      rl_client_closing(c))
    return NULL;
  void *data = NULL;
  rl_psw *w = rl_psw_first_idle(c->pubsub, rl_lock_channel(lock),
                                lock->channellen, wake, RL_HANDOFF_RUN, &data);
  rl_req *req = data;
  if (w == NULL || req == NULL || req->psw != w) return NULL;
  if (req->kind != RL_REQ_ACQUIRE || req->start != NULL ||
      req->lock->kind != &rl_kind_lock || req->round != NULL ||
      req->grants != NULL || req->queued || req->deciding)
    return NULL;
  if (req->lock->keylen != lock->keylen ||
      memcmp(rl_lock_key(req->lock), rl_lock_key(lock), lock->keylen) != 0)
    return NULL;
  if (req->ownerlen == ownerlen && memcmp(req->owner, owner, ownerlen) == 0)
    return NULL;
  if (req->deadline != RL_FOREVER && rl_now_ms() >= req->deadline)
    return NULL;
  if (rl_req_hold(req) != NULL) return NULL;
  *psw = w;
  return req;
}

int rl_pubsub_own_wait(rl_req *req, rl_conn **conns, int cap) {
  rl_client *c = req->lock->client;
  if (req->psw == NULL || c->pubsub == NULL || rl_client_closing(c))
    return -1;
  return rl_psw_own_conns(req->psw, conns, cap);
}

int rl_pubsub_run_woken(rl_req *req) {
  return req->psw != NULL && rl_psw_run_woken(req->psw);
}

void rl_pubsub_shutdown(rl_client *c) {
  rl_pubsub *ps = c->pubsub;
  if (ps == NULL) return;
  c->pubsub = NULL;
  rl_pubsub_close(ps);
}

rl_pubsub *rl_pubsub_get(rl_client *c) { return pubsub_of(c); }
