/*
 * Lock handles and request dispatch. A handle is immutable after rlock_get
 * (its key names are computed once), so threads share it without locking;
 * it is reference counted so that async requests still pending keep it
 * alive after rlock_free.
 */
#include "lock.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "kind.h"
#include "options.h"
#include "util.h"
#include "pubsub.h"
#include "wait.h"

void rl_lock_ref(rlock *lock) { atomic_fetch_add(&lock->refs, 1); }

void rl_lock_unref(rlock *lock) {
  if (atomic_fetch_sub(&lock->refs, 1) != 1) return;
  rl_client *c = lock->client;
  free(lock);
  rl_client_unref(c);
}

rlock *rl_lock_alloc(rl_client *c, const char *name, int nkeys,
                     const char *const *suffixes, int hold, int fence,
                     int chan_key) {
  size_t plen = strlen(c->prefix), nlen = strlen(name);
  size_t base = plen + nlen + 2, slen[RL_KIND_MAXKEYS];
  /* Key k is kept inside key in_key[k]: the one whose suffix is the
   * longest that begins with k's (itself, when no other does). */
  int in_key[RL_KIND_MAXKEYS];
  size_t size = sizeof(rlock) + (size_t)nkeys * (sizeof(char *) + sizeof(size_t));
  for (int k = 0; k < nkeys; k++) slen[k] = strlen(suffixes[k]);
  for (int k = 0; k < nkeys; k++) {
    in_key[k] = k;
    for (int j = 0; j < nkeys; j++)
      if (slen[j] > slen[in_key[k]] &&
          memcmp(suffixes[j], suffixes[k], slen[k]) == 0)
        in_key[k] = j;
    if (in_key[k] == k) size += base + slen[k] + 1;
  }
  size += base + slen[chan_key] + 4 + nlen + 1; /* the channel, the name */
  rlock *lock = malloc(size);
  if (lock == NULL) return NULL;
  memset(lock, 0, sizeof *lock);
  lock->nkeys = nkeys;
  lock->keylens = (size_t *)(void *)&lock->keys[nkeys];
  char *p = (char *)&lock->keylens[nkeys];
  for (int k = 0; k < nkeys; k++) {
    if (in_key[k] != k) continue;
    memcpy(p, c->prefix, plen);
    p[plen] = '{';
    memcpy(p + plen + 1, name, nlen);
    p[plen + 1 + nlen] = '}';
    memcpy(p + base, suffixes[k], slen[k] + 1);
    lock->keys[k] = p;
    p += base + slen[k] + 1;
  }
  for (int k = 0; k < nkeys; k++) {
    lock->keys[k] = lock->keys[in_key[k]];
    lock->keylens[k] = base + slen[k];
  }
  lock->key = lock->keys[hold];
  lock->keylen = (uint32_t)lock->keylens[hold];
  lock->fence = lock->keys[fence];
  lock->fencelen = (uint32_t)lock->keylens[fence];
  memcpy(p, lock->keys[chan_key], lock->keylens[chan_key]);
  memcpy(p + lock->keylens[chan_key], ":ch", 4);
  lock->channel = p;
  lock->channellen = (uint32_t)lock->keylens[chan_key] + 3;
  p += lock->channellen + 1;
  memcpy(p, name, nlen + 1);
  lock->name = p;
  atomic_init(&lock->refs, 1);
  atomic_init(&lock->lost_cb, NULL);
  atomic_init(&lock->lost_arg, NULL);
  lock->client = c;
  atomic_fetch_add(&c->refs, 1);
  return lock;
}

/* A handle of the given kind: its keys, prefix{name} followed by each of
 * the kind's suffixes, and its channel, in one allocation. */
static int get_kind(rlock_client *c, const char *name, const rl_kind *kind,
                    rlock **out) {
  if (out == NULL) return RLOCK_EINVAL;
  *out = NULL;
  if (c == NULL || rl_name_check(name) != 0) return RLOCK_EINVAL;
  if (kind != &rl_kind_lock) {
    int rc = rl_family_refused(
        c, kind == &rl_kind_fair ? "fair locks" : "read-write locks");
    if (rc != 0) return rc;
  }
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
  return lock != NULL ? lock->name : NULL;
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
  v->keys = lock->keys;
  v->keylens = lock->keylens;
  v->channel = lock->channel;
  v->channellen = lock->channellen;
}

rl_hold *rl_req_hold(rl_req *req) {
  rlock *lock = req->lock;
  return rl_holds_find(&lock->client->holds, lock->key, lock->keylen,
                       req->owner, req->ownerlen);
}

rl_hold *rl_req_live_hold(rl_req *req) {
  rl_hold *h = rl_req_hold(req);
  if (h == NULL) {
    rl_req_finish(req, RLOCK_ENOTOWNER);
    return NULL;
  }
  if (h->lost) {
    rl_hold_drop(req->lock->client, h);
    rl_req_finish(req, RLOCK_ELOST);
    return NULL;
  }
  return h;
}

void rl_req_start(rl_req *req) {
  if (req->start != NULL) {
    req->start(req);
    return;
  }
  switch (req->kind) {
    case RL_REQ_ACQUIRE: rl_acquire_start(req); break;
    case RL_REQ_UNLOCK: rl_unlock_start(req); break;
    case RL_REQ_FORCE: rl_force_start(req); break;
    case RL_REQ_EXTEND: rl_extend_start(req); break;
    case RL_REQ_CANCEL: rl_cancel_start(req); break;
    default: rl_query_start(req); break;
  }
}
