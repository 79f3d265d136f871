/*
 * The public election calls (include/rlock.h, "Elections").
 *
 * Leadership is a hold of the fair lock of the election's name, taken
 * with the watchdog: the fair lock's queue makes the longest waiting
 * campaigner the next leader, its fencing token is the leader's token,
 * and its lost and at-risk callbacks are the leader's. What the lock
 * does not have, the leader record and its observers, is the family
 * layer's (lib/family/election.c). This file composes the two with the
 * public lock calls: a campaign is rlock_lock_async of the fair lock,
 * then the record's write; a resign is its unlock, then a message to the
 * observers. A handle campaigns or leads at most once at a time; its
 * state is under its mutex, since callers of any thread and the loop
 * thread's callbacks both change it.
 */
#include <stdlib.h>
#include <string.h>

#include "election.h"
#include "metrics.h"
#include "util.h"
#include "wait.h"

enum { E_IDLE = 0, E_CAMPAIGNING, E_LEADING, E_RESIGNING };

typedef void (*election_cb)(rlock_election *, int, void *);

typedef struct campaign {
  rlock_election *e;
  char *value;
  size_t len;
  uint64_t owner, token;
  uint64_t t0;
  election_cb cb;
  void *arg;
} campaign;

struct rlock_election {
  atomic_int refs;
  rlock_client *client;
  rlock *lock; /* the fair lock: leadership */
  rlock *obj;  /* the record's keys and channel */
  uint64_t own; /* the blocking calls' owner */
  uv_mutex_t mu;
  /* Under mu. */
  int state;
  int canceled;
  uint64_t owner; /* the campaign's or the leadership's */
  uint64_t token;
  void (*lost_cb)(rlock_election *, void *);
  void *lost_arg;
  void (*risk_cb)(rlock_election *, int, void *);
  void *risk_arg;
  /* Loop thread (through the observer's attach and detach). */
  void (*obs_cb)(rlock_election *, const char *, uint64_t, void *);
  void *obs_arg;
  rl_eobs obs;
};

/* Owners of blocking campaigns: above every owner an async caller is
 * expected to choose (include/rlock.h says so). */
static atomic_uint_fast64_t own_seq = 1;

static void e_ref(rlock_election *e) { atomic_fetch_add(&e->refs, 1); }

static void e_unref(rlock_election *e) {
  if (atomic_fetch_sub(&e->refs, 1) != 1) return;
  rlock_free(e->lock);
  rl_lock_unref(e->obj);
  uv_mutex_destroy(&e->mu);
  free(e);
}

/* --- blocking waits for an async call ----------------------------------- */

/* A blocking call waits on the calling thread's waiter (wait.h), as the
 * lock's blocking calls do, for the async call's callback to post. */
typedef struct sync_wait {
  rl_waiter *w;
  int done, status;
} sync_wait;

static int sync_init(sync_wait *s) {
  s->w = rl_waiter_self();
  s->done = 0;
  s->status = 0;
  return s->w != NULL ? 0 : RLOCK_ENOMEM;
}

static void sync_post(sync_wait *s, int status) {
  uv_mutex_lock(&s->w->mu);
  s->status = status;
  s->done = 1;
  uv_cond_signal(&s->w->cond);
  uv_mutex_unlock(&s->w->mu);
}

static int sync_wait_end(sync_wait *s) {
  uv_mutex_lock(&s->w->mu);
  while (!s->done) uv_cond_wait(&s->w->cond, &s->w->mu);
  uv_mutex_unlock(&s->w->mu);
  return s->status;
}

/* --- the lock's callbacks, forwarded ------------------------------------ */

static void on_lock_lost(rlock *lock, uint64_t owner, int is_thread,
                         void *arg) {
  (void)lock;
  (void)is_thread;
  rlock_election *e = arg;
  uv_mutex_lock(&e->mu);
  int was = e->state == E_LEADING && e->owner == owner;
  if (was) e->state = E_IDLE;
  void (*cb)(rlock_election *, void *) = e->lost_cb;
  void *cb_arg = e->lost_arg;
  uv_mutex_unlock(&e->mu);
  if (!was) return;
  RL_ADD(e->client->metrics.elect_lost, 1);
  /* Observers learn it now rather than at the lease's end, where the
   * masters are reachable. */
  rl_elect_notify(e->obj);
  if (cb != NULL) cb(e, cb_arg);
}

static void on_lock_risk(rlock *lock, int at_risk, void *arg) {
  (void)lock;
  rlock_election *e = arg;
  uv_mutex_lock(&e->mu);
  int leading = e->state == E_LEADING;
  void (*cb)(rlock_election *, int, void *) = e->risk_cb;
  void *cb_arg = e->risk_arg;
  uv_mutex_unlock(&e->mu);
  if (!leading) return;
  if (at_risk) RL_ADD(e->client->metrics.elect_at_risk, 1);
  if (cb != NULL) cb(e, at_risk, cb_arg);
}

/* --- handles -------------------------------------------------------------- */

int rlock_election_get(rlock_client *client, const char *name,
                       rlock_election **out) {
  if (out == NULL) return RLOCK_EINVAL;
  *out = NULL;
  if (client == NULL || name == NULL) return RLOCK_EINVAL;
  rlock_election *e = calloc(1, sizeof *e);
  if (e == NULL) return RLOCK_ENOMEM;
  int rc = rlock_get_fair(client, name, &e->lock);
  if (rc != 0) {
    free(e);
    return rc;
  }
  rc = rl_elect_object(client, name, &e->obj);
  if (rc != 0) {
    rlock_free(e->lock);
    free(e);
    return rc;
  }
  rc = rlock_set_lost_cb(e->lock, on_lock_lost, e);
  if (rc == 0) rc = rlock_set_risk_cb(e->lock, on_lock_risk, e);
  if (rc != 0) {
    rlock_free(e->lock);
    rl_lock_unref(e->obj);
    free(e);
    return rc;
  }
  uv_mutex_init(&e->mu);
  atomic_init(&e->refs, 1);
  e->client = client;
  e->own = (1ull << 63) | atomic_fetch_add(&own_seq, 1);
  *out = e;
  return 0;
}

const char *rlock_election_name(const rlock_election *e) {
  return e != NULL ? rlock_name(e->lock) : NULL;
}

/* --- campaigns -------------------------------------------------------------- */

static void on_unlocked_quietly(rlock *lock, int status, void *arg) {
  (void)lock;
  (void)status;
  rlock_election *e = arg;
  rl_elect_notify(e->obj);
  e_unref(e);
}

/* Gives back a hold the campaign got and may not keep. */
static void give_back(campaign *k) {
  e_ref(k->e);
  if (rlock_unlock_async(k->e->lock, k->owner, on_unlocked_quietly, k->e) !=
      0)
    e_unref(k->e);
}

static void campaign_end(campaign *k, int status) {
  rlock_election *e = k->e;
  rl_client *c = e->client;
  uv_mutex_lock(&e->mu);
  /* A cancel that came after the last look at the flag has returned 0 to
   * its caller (rlock_election_free counts on that): the campaign ends
   * cancelled and the lock it won is given back. The flag is read here
   * under the mutex that the state changes under, so no cancel falls
   * between the two. */
  int late_cancel = status == 0 && e->canceled;
  if (late_cancel) status = RLOCK_ECANCELED;
  if (status == 0) {
    e->state = E_LEADING;
    e->token = k->token;
  } else {
    e->state = E_IDLE;
  }
  e->canceled = 0;
  uv_mutex_unlock(&e->mu);
  if (late_cancel) give_back(k);
  RL_ADD(c->metrics.elect_campaigners, -1);
  if (status == 0) {
    RL_ADD(c->metrics.elect_won, 1);
    rl_hist_observe(&c->metrics.elect_wait, rl_now_ms() - k->t0);
  }
  k->cb(e, status, k->arg);
  free(k->value);
  free(k);
  e_unref(e);
}

static int canceled(rlock_election *e) {
  uv_mutex_lock(&e->mu);
  int v = e->canceled;
  uv_mutex_unlock(&e->mu);
  return v;
}

static void on_proclaimed(rlock *obj, int status, void *arg) {
  (void)obj;
  campaign *k = arg;
  if (status == 0 && canceled(k->e)) status = RLOCK_ECANCELED;
  if (status != 0) {
    give_back(k);
    if (status == RLOCK_ENOTOWNER) status = RLOCK_ELOST;
  }
  campaign_end(k, status);
}

static void on_locked(rlock *lock, int status, void *arg) {
  campaign *k = arg;
  if (status == 0 && canceled(k->e)) {
    give_back(k);
    status = RLOCK_ECANCELED;
  }
  if (status == 0) {
    /* Won: from here every failure gives the lock back, or the watchdog
     * would keep a leadership nobody holds. */
    status = rlock_owner_fencing_token(lock, k->owner, &k->token);
    if (status == 0)
      status = rl_elect_proclaim(k->e->obj, k->owner, k->token, k->value,
                                 k->len, on_proclaimed, k);
    if (status == 0) return;
    give_back(k);
  }
  campaign_end(k, status);
}

static int wait_ok(int64_t wait_ms) {
  return wait_ms >= 0 || wait_ms == RLOCK_WAIT_FOREVER;
}

int rlock_campaign_async(rlock_election *e, const char *value, uint64_t owner,
                         int64_t wait_ms, election_cb cb, void *arg) {
  if (e == NULL || cb == NULL || !wait_ok(wait_ms)) return RLOCK_EINVAL;
  size_t len = value != NULL ? strlen(value) : 0;
  if (len > RL_ELECT_VALUE_MAX) return RLOCK_EINVAL;
  campaign *k = calloc(1, sizeof *k);
  if (k == NULL) return RLOCK_ENOMEM;
  k->value = malloc(len + 1);
  if (k->value == NULL) {
    free(k);
    return RLOCK_ENOMEM;
  }
  memcpy(k->value, value != NULL ? value : "", len + 1);
  k->len = len;
  k->e = e;
  k->owner = owner;
  k->cb = cb;
  k->arg = arg;
  k->t0 = rl_now_ms();
  uv_mutex_lock(&e->mu);
  if (e->state != E_IDLE) {
    uv_mutex_unlock(&e->mu);
    free(k->value);
    free(k);
    return RLOCK_EINVAL;
  }
  e->state = E_CAMPAIGNING;
  e->canceled = 0;
  e->owner = owner;
  uv_mutex_unlock(&e->mu);
  e_ref(e);
  RL_ADD(e->client->metrics.elect_campaigners, 1);
  int rc = rlock_lock_async(e->lock, owner, wait_ms, RLOCK_WATCHDOG, on_locked,
                            k);
  if (rc != 0) {
    uv_mutex_lock(&e->mu);
    e->state = E_IDLE;
    uv_mutex_unlock(&e->mu);
    RL_ADD(e->client->metrics.elect_campaigners, -1);
    free(k->value);
    free(k);
    e_unref(e);
  }
  return rc;
}

static void on_sync_done(rlock_election *e, int status, void *arg) {
  (void)e;
  sync_post(arg, status);
}

static int off_loop(rlock_election *e) {
  return !rl_client_on_loop(e->client);
}

int rlock_campaign(rlock_election *e, const char *value, int64_t wait_ms) {
  if (e == NULL || !wait_ok(wait_ms)) return RLOCK_EINVAL;
  if (value != NULL && strlen(value) > RL_ELECT_VALUE_MAX) return RLOCK_EINVAL;
  if (!off_loop(e)) return RLOCK_EDEADLK;
  sync_wait s;
  if (sync_init(&s) != 0) return RLOCK_ENOMEM;
  int rc = rlock_campaign_async(e, value, e->own, wait_ms, on_sync_done, &s);
  return rc != 0 ? rc : sync_wait_end(&s);
}

int rlock_campaign_cancel(rlock_election *e) {
  if (e == NULL) return RLOCK_EINVAL;
  uv_mutex_lock(&e->mu);
  if (e->state != E_CAMPAIGNING) {
    uv_mutex_unlock(&e->mu);
    return RLOCK_ENOTOWNER;
  }
  e->canceled = 1;
  uint64_t owner = e->owner;
  uv_mutex_unlock(&e->mu);
  int rc = rlock_cancel_async(e->lock, owner);
  /* Past the lock's wait (the record is being written), the flag ends
   * it: the hold is given back. */
  return rc == RLOCK_ENOTOWNER ? 0 : rc;
}

/* --- leaders ---------------------------------------------------------------- */

static int leading_owner(rlock_election *e, uint64_t *owner) {
  uv_mutex_lock(&e->mu);
  int leading = e->state == E_LEADING;
  *owner = e->owner;
  uv_mutex_unlock(&e->mu);
  return leading;
}

static void on_proclaim_sync(rlock *obj, int status, void *arg) {
  (void)obj;
  sync_post(arg, status);
}

int rlock_proclaim(rlock_election *e, const char *value) {
  if (e == NULL) return RLOCK_EINVAL;
  size_t len = value != NULL ? strlen(value) : 0;
  if (len > RL_ELECT_VALUE_MAX) return RLOCK_EINVAL;
  uint64_t owner;
  if (!leading_owner(e, &owner)) return RLOCK_ENOTOWNER;
  if (!off_loop(e)) return RLOCK_EDEADLK;
  uv_mutex_lock(&e->mu);
  uint64_t token = e->token;
  uv_mutex_unlock(&e->mu);
  sync_wait s;
  if (sync_init(&s) != 0) return RLOCK_ENOMEM;
  int rc = rl_elect_proclaim(e->obj, owner, token, value ? value : "", len,
                             on_proclaim_sync, &s);
  if (rc != 0) return rc;
  rc = sync_wait_end(&s);
  return rc == RLOCK_ENOTOWNER ? RLOCK_ELOST : rc;
}

typedef struct resign {
  rlock_election *e;
  sync_wait *s;
} resign;

static void on_resigned(rlock *lock, int status, void *arg) {
  (void)lock;
  resign *r = arg;
  rlock_election *e = r->e;
  uv_mutex_lock(&e->mu);
  if (e->state == E_RESIGNING) e->state = E_IDLE;
  uv_mutex_unlock(&e->mu);
  rl_elect_notify(e->obj);
  if (r->s != NULL) sync_post(r->s, status);
  free(r);
  e_unref(e);
}

/* Starts the unlock of the leadership; s NULL: nobody waits. */
static int resign_start(rlock_election *e, sync_wait *s) {
  uint64_t owner;
  uv_mutex_lock(&e->mu);
  if (e->state != E_LEADING) {
    uv_mutex_unlock(&e->mu);
    return RLOCK_ENOTOWNER;
  }
  e->state = E_RESIGNING;
  owner = e->owner;
  uv_mutex_unlock(&e->mu);
  resign *r = malloc(sizeof *r);
  int rc = RLOCK_ENOMEM;
  if (r != NULL) {
    r->e = e;
    r->s = s;
    e_ref(e);
    rc = rlock_unlock_async(e->lock, owner, on_resigned, r);
    if (rc != 0) {
      free(r);
      e_unref(e);
    }
  }
  if (rc != 0) {
    uv_mutex_lock(&e->mu);
    e->state = E_LEADING;
    uv_mutex_unlock(&e->mu);
  }
  return rc;
}

int rlock_resign(rlock_election *e) {
  if (e == NULL) return RLOCK_EINVAL;
  if (!off_loop(e)) return resign_start(e, NULL);
  sync_wait s;
  if (sync_init(&s) != 0) return RLOCK_ENOMEM;
  int rc = resign_start(e, &s);
  return rc != 0 ? rc : sync_wait_end(&s);
}

int rlock_election_token(rlock_election *e, uint64_t *token) {
  if (e == NULL || token == NULL) return RLOCK_EINVAL;
  uv_mutex_lock(&e->mu);
  int leading = e->state == E_LEADING;
  *token = e->token;
  uv_mutex_unlock(&e->mu);
  return leading ? 0 : RLOCK_ENOTOWNER;
}

/* --- reading and observing -------------------------------------------------- */

int rlock_leader(rlock_election *e, char *value, size_t cap, uint64_t *token) {
  if (e == NULL || (value == NULL && cap > 0)) return RLOCK_EINVAL;
  return rl_elect_read(e->obj, value, cap, token, NULL);
}

int rlock_election_status(rlock_election *e, char *value, size_t cap,
                          uint64_t *token, int64_t *lease_ms,
                          char **waiters) {
  if (e == NULL || waiters == NULL || (value == NULL && cap > 0))
    return RLOCK_EINVAL;
  return rl_elect_status(e->obj, value, cap, token, lease_ms, waiters);
}

static void on_observed(void *data, const char *value, size_t len,
                        uint64_t token) {
  (void)len;
  rlock_election *e = data;
  if (e->obs_cb != NULL) e->obs_cb(e, value, token, e->obs_arg);
}

int rlock_observe(rlock_election *e,
                  void (*cb)(rlock_election *, const char *, uint64_t, void *),
                  void *arg) {
  if (e == NULL) return RLOCK_EINVAL;
  /* Detach first (a barrier: no callback of the old observer runs after
   * it), then attach the new one. */
  int rc = rl_elect_detach(e->obj, &e->obs);
  if (cb == NULL) return rc == RLOCK_ECLOSED ? 0 : rc;
  if (rc != 0) return rc;
  e->obs_cb = cb;
  e->obs_arg = arg;
  e->obs.cb = on_observed;
  e->obs.data = e;
  return rl_elect_attach(e->obj, &e->obs);
}

int rlock_election_set_lost_cb(rlock_election *e,
                               void (*cb)(rlock_election *, void *),
                               void *arg) {
  if (e == NULL) return RLOCK_EINVAL;
  uv_mutex_lock(&e->mu);
  e->lost_cb = cb;
  e->lost_arg = arg;
  uv_mutex_unlock(&e->mu);
  return 0;
}

int rlock_election_set_risk_cb(rlock_election *e,
                               void (*cb)(rlock_election *, int, void *),
                               void *arg) {
  if (e == NULL) return RLOCK_EINVAL;
  uv_mutex_lock(&e->mu);
  e->risk_cb = cb;
  e->risk_arg = arg;
  uv_mutex_unlock(&e->mu);
  return 0;
}

void rlock_election_free(rlock_election *e) {
  if (e == NULL) return;
  rlock_election_set_lost_cb(e, NULL, NULL);
  rlock_election_set_risk_cb(e, NULL, NULL);
  /* The lock's own callbacks carry e, and a hold of the lock keeps the
   * lock's handle (and its callbacks) alive for as long as the hold
   * lasts, which may be longer than e if a resign cannot start. Cleared
   * here, before the barrier, no call of them runs after it: one the
   * loop had already taken has returned by then. */
  rlock_set_lost_cb(e->lock, NULL, NULL);
  rlock_set_risk_cb(e->lock, NULL, NULL);
  /* A barrier on the loop too: no observer callback runs after it. */
  rl_elect_detach(e->obj, &e->obs);
  for (;;) {
    uv_mutex_lock(&e->mu);
    int state = e->state;
    uv_mutex_unlock(&e->mu);
    if (state == E_LEADING) {
      if (off_loop(e))
        rlock_resign(e); /* done when this returns */
      else
        resign_start(e, NULL);
    }
    /* A campaign that ended between the look and the cancel may have
     * won: look again, to resign. */
    if (state == E_CAMPAIGNING &&
        rlock_campaign_cancel(e) == RLOCK_ENOTOWNER)
      continue;
    break;
  }
  e_unref(e);
}
