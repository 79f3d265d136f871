/*
 * Lock handles. A handle is immutable after rlock_get
 * (its key names are computed once), so threads share it without locking;
 * it is reference counted so that async requests still pending keep it
 * alive after rlock_free.
 */
#include "lock.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "kind.h"
#include "options.h"
#include "pubsub.h"
#include "util.h"
#include "wait.h"

/* The callbacks and their arguments are set and read together under the
 * client's queue mutex (taken briefly, and last in the lock order). Both
 * share one allocation, made when the first is set, changed in place
 * under the mutex, and freed when neither is set: a program may set a
 * callback before every acquisition without the handle growing, and
 * removing one never fails. The reader copies the pair and calls it after
 * letting go. */
static int set_cbs(rlock *lock, int risk, void (*cb)(void), void *arg) {
  rl_lost *fresh = NULL, *drop = NULL;
  if (cb != NULL && (fresh = calloc(1, sizeof *fresh)) == NULL)
    return RLOCK_ENOMEM;
  rl_client *c = lock->client;
  uv_mutex_lock(&c->qmu);
  rl_lost *l = lock->lost;
  if (l == NULL && fresh != NULL) {
    l = lock->lost = fresh;
    fresh = NULL;
  }
  if (l != NULL) {
    if (risk) {
      l->risk_cb = (rlock_risk_cb)cb;
      l->risk_arg = cb != NULL ? arg : NULL;
    } else {
      l->cb = (rlock_lost_cb)cb;
      l->arg = cb != NULL ? arg : NULL;
    }
    if (l->cb == NULL && l->risk_cb == NULL) {
      drop = l;
      lock->lost = NULL;
    }
  }
  uv_mutex_unlock(&c->qmu);
  free(fresh);
  free(drop);
  return 0;
}

int rl_lock_set_lost(rlock *lock, rlock_lost_cb cb, void *arg) {
  return set_cbs(lock, 0, (void (*)(void))cb, arg);
}

int rl_lock_set_risk(rlock *lock, rlock_risk_cb cb, void *arg) {
  return set_cbs(lock, 1, (void (*)(void))cb, arg);
}

rlock_lost_cb rl_lock_lost(rlock *lock, void **arg) {
  rl_client *c = lock->client;
  uv_mutex_lock(&c->qmu);
  rlock_lost_cb cb = lock->lost ? lock->lost->cb : NULL;
  *arg = lock->lost ? lock->lost->arg : NULL;
  uv_mutex_unlock(&c->qmu);
  return cb;
}

rlock_risk_cb rl_lock_risk(rlock *lock, void **arg) {
  rl_client *c = lock->client;
  uv_mutex_lock(&c->qmu);
  rlock_risk_cb cb = lock->lost ? lock->lost->risk_cb : NULL;
  *arg = lock->lost ? lock->lost->risk_arg : NULL;
  uv_mutex_unlock(&c->qmu);
  return cb;
}

/* The longest name and prefix make keys the client's table and a handle's
 * 16-bit offsets take (the longest suffix is a few bytes). */
_Static_assert(RL_PREFIX_MAX + RL_NAME_MAX + 2 + 64 <= RL_HOLDS_KEY_MAX,
               "a hold key longer than a hold record takes");

rlock *rl_lock_alloc(rl_client *c, const char *name, int nkeys,
                     const char *const *suffixes, int hold, int fence,
                     int chan_key) {
  size_t plen = strlen(c->prefix), nlen = strlen(name);
  size_t base = plen + nlen + 2, slen[RL_KIND_MAXKEYS];
  /* Key k is kept inside key in_key[k]: the one whose suffix is the
   * longest that begins with k's (itself, when no other does). */
  int in_key[RL_KIND_MAXKEYS];
  size_t head =
      offsetof(rlock, at) + (size_t)(2 * nkeys + 1) * sizeof(uint16_t);
  size_t text = nlen + 1;
  for (int k = 0; k < nkeys; k++) slen[k] = strlen(suffixes[k]);
  for (int k = 0; k < nkeys; k++) {
    in_key[k] = k;
    for (int j = 0; j < nkeys; j++)
      if (slen[j] > slen[in_key[k]] &&
          memcmp(suffixes[j], suffixes[k], slen[k]) == 0)
        in_key[k] = j;
    if (in_key[k] == k) text += base + slen[k] + 1;
  }
  text += base + slen[chan_key] + 4; /* the channel */
  /* Offsets and lengths are 16 bits: names and prefixes are bounded
   * (options.h) far below that. */
  if (text > UINT16_MAX || nkeys > RL_KIND_MAXKEYS ||
      base + slen[hold] > RL_HOLDS_KEY_MAX)
    return NULL;
  rlock *lock = malloc(head + text);
  if (lock == NULL) return NULL;
  memset(lock, 0, head);
  lock->nkeys = (uint8_t)nkeys;
  lock->hold = (uint8_t)hold;
  lock->fence = (uint8_t)fence;
  lock->chan_key = (uint8_t)chan_key;
  char *t = (char *)lock + head, *p = t;
  memcpy(p, name, nlen + 1);
  p += nlen + 1;
  for (int k = 0; k < nkeys; k++) {
    if (in_key[k] != k) continue;
    rl_key_base(p, c->prefix, plen, name, nlen);
    memcpy(p + base, suffixes[k], slen[k] + 1);
    lock->at[k] = (uint16_t)(p - t);
    p += base + slen[k] + 1;
  }
  for (int k = 0; k < nkeys; k++) {
    lock->at[k] = lock->at[in_key[k]];
    lock->at[nkeys + k] = (uint16_t)(base + slen[k]);
  }
  lock->keylen = (uint16_t)(base + slen[hold]);
  memcpy(p, t + lock->at[chan_key], base + slen[chan_key]);
  memcpy(p + base + slen[chan_key], ":ch", 4);
  lock->at[2 * nkeys] = (uint16_t)(p - t);
  lock->channellen = (uint16_t)(base + slen[chan_key] + 3);
  atomic_init(&lock->refs, 1);
  lock->lost = NULL;
  lock->client = c;
  atomic_fetch_add(&c->refs, 1);
  return lock;
}

int rl_family_refused(rl_client *c, const char *what) {
  if (rl_client_forked(c)) return RLOCK_EFORKED;
  for (int i = 0; i < c->nmasters; i++) {
    if (c->masters[i]->kind != RL_MASTER_CLUSTER) continue;
    char text[200];
    int n = snprintf(text, sizeof text,
                     "%s are not yet supported on a redis-cluster:// master "
                     "(masters[%d])",
                     what, i);
    rl_client_note_error(c, text, (size_t)n);
    return RLOCK_EINVAL;
  }
  return 0;
}

/* A handle of the given kind: its keys, prefix{name} followed by each of
 * the kind's suffixes, and its channel, in one allocation. */
static int get_kind(rlock_client *c, const char *name, const rl_kind *kind,
                    rlock **out) {
  if (out == NULL) return RLOCK_EINVAL;
  *out = NULL;
  if (c == NULL || rl_name_check(name) != 0) return RLOCK_EINVAL;
  if (rl_client_forked(c)) return RLOCK_EFORKED;
  rlock *lock = rl_lock_alloc(c, name, kind->nkeys, kind->suffixes,
                              kind->hold, kind->fence, kind->chan_key);
  if (lock == NULL) return RLOCK_ENOMEM;
  lock->kind = kind;
  *out = lock;
  return 0;
}

int rlock_get(rlock_client *c, const char *name, rlock **out) {
  return get_kind(c, name, &rl_kind_lock, out);
}

int rlock_get_fair(rlock_client *c, const char *name, rlock **out) {
  return get_kind(c, name, &rl_kind_fair, out);
}

int rlock_get_read(rlock_client *c, const char *name, rlock **out) {
  return get_kind(c, name, &rl_kind_read, out);
}

int rlock_get_write(rlock_client *c, const char *name, rlock **out) {
  return get_kind(c, name, &rl_kind_write, out);
}

const char *rlock_kind(const rlock *lock) {
  return lock != NULL ? lock->kind->name : NULL;
}

void rlock_free(rlock *lock) {
  if (lock != NULL) rl_lock_unref(lock);
}

const char *rlock_name(const rlock *lock) {
  return lock != NULL ? rl_lock_text(lock) : NULL;
}

void rl_owner_thread(rl_client *c, rl_req *req) {
  req->owner_id = rl_thread_seq();
  req->owner_is_thread = 1;
  /* holds.c owns the owner field's format: a hold keeps it as numbers. */
  req->ownerlen = rl_owner_format(c->id, req->owner_id, 1, req->owner);
}

void rl_owner_async(rl_client *c, uint64_t owner, rl_req *req) {
  req->owner_id = owner;
  req->owner_is_thread = 0;
  req->ownerlen = rl_owner_format(c->id, owner, 0, req->owner);
}

void rl_lock_vals(const rlock *lock, rl_call_vals *v) {
  memset(v, 0, sizeof *v);
  for (int k = 0; k < lock->nkeys; k++) {
    v->keyv[k] = rl_lock_keyk(lock, k);
    v->lenv[k] = rl_lock_keylenk(lock, k);
  }
  v->keys = v->keyv;
  v->keylens = v->lenv;
  v->channel = rl_lock_channel(lock);
  v->channellen = lock->channellen;
}

rl_hold *rl_req_hold(rl_req *req) {
  rlock *lock = req->lock;
  return rl_holds_find(&lock->client->holds, rl_lock_key(lock), lock->keylen,
                       req->owner, req->ownerlen);
}
