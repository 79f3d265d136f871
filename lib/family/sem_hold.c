/*
 * Semaphore holds (sem_hold.h): an owner's permits as one record in the
 * client's family table, the masters behind each slot, and giving slots
 * back on a master; what the acquisition, the release, the renewal and
 * the client's shutdown all work on. Loop thread only, save the handle's
 * references.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quarantine.h"
#include "scripts.h"
#include "sem_hold.h"
#include "util.h"

void rl_sem_ref(rlock_sem *sem) { atomic_fetch_add(&sem->refs, 1); }

void rl_sem_unref(rlock_sem *sem) {
  if (atomic_fetch_sub(&sem->refs, 1) != 1) return;
  rl_lock_unref(sem->obj);
  free(sem->tkey);
  free(sem);
}

static rl_holds *permits_table(rl_client *c) {
  rl_family *f = rl_family_get(c);
  return f != NULL ? &f->permits : NULL;
}

rl_hold *rl_sem_hold_find(rl_client *c, const rlock_sem *sem,
                          const char *owner, size_t ownerlen) {
  rl_holds *t = permits_table(c);
  return t ? rl_holds_find(t, rl_lock_key(sem->obj), sem->obj->keylen, owner,
                           ownerlen)
           : NULL;
}

static void close_all(rl_client *c, rl_family *f);

rl_hold *rl_sem_hold_add(rl_client *c, rlock_sem *sem, const rl_req *req) {
  rl_holds *t = permits_table(c);
  rl_permits *p = calloc(1, sizeof *p);
  rl_hold *h = p && t ? rl_holds_add(t, rl_lock_key(sem->obj), sem->obj->keylen,
                                     req->owner, req->ownerlen)
                      : NULL;
  if (h == NULL) {
    free(p);
    return NULL;
  }
  p->sem = sem;
  rl_sem_ref(sem);
  h->ext = p;
  /* The client's shutdown gives every permit back (close_all). */
  c->family->close_all = close_all;
  h->gen = ++c->hold_gen;
  h->owner_id = req->owner_id;
  h->owner_is_thread = req->owner_is_thread;
  rl_wheel_node_init(&h->wd);
  return h;
}

int rl_sem_hold_push(rl_hold *h, int64_t slot, uint64_t mask) {
  rl_permits *p = rl_permits_of(h);
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 4;
    int64_t *s = realloc(p->slot, cap * sizeof *s);
    if (s != NULL) p->slot = s;
    uint64_t *m = realloc(p->mask, cap * sizeof *m);
    if (m != NULL) p->mask = m;
    if (s == NULL || m == NULL) return RLOCK_ENOMEM;
    p->cap = cap;
  }
  p->slot[p->n] = slot;
  p->mask[p->n++] = mask;
  h->count = (int64_t)p->n;
  return 0;
}

void rl_sem_hold_drop(rl_client *c, rl_hold *h) {
  rl_family *f = c->family;
  rl_permits *p = rl_permits_of(h);
  if (f != NULL && f->watchdog_open) rl_watchdog_cancel(&f->watchdog, &h->wd);
  if (!h->lost) RL_ADD(c->metrics.sem_permits_held, -(int64_t)p->n);
  rlock_sem *sem = p->sem;
  free(p->slot);
  free(p->mask);
  free(p);
  if (f != NULL) rl_holds_remove(&f->permits, h);
  rl_sem_unref(sem);
}

size_t rl_sem_hold_slots_on(const rl_hold *h, int idx, int64_t *out) {
  const rl_permits *p = rl_permits_of(h);
  size_t k = 0;
  for (size_t j = 0; j < p->n; j++)
    if (p->mask[j] & (1ull << idx)) out[k++] = p->slot[j];
  return k;
}

/* The masters whose votes count now (not a duplicate of another, not in
 * restart quarantine), as a mask. */
static uint64_t counted_masters(rl_client *c) {
  uint64_t m = 0;
  for (int i = 0; i < c->nmasters; i++)
    if (!rl_master_duplicate(c, i)) m |= 1ull << i;
  return m;
}

int rl_sem_hold_intact(rl_client *c, const rl_hold *h) {
  const rl_permits *p = rl_permits_of(h);
  uint64_t counted = counted_masters(c);
  int quorum = c->nmasters / 2 + 1;
  for (size_t j = 0; j < p->n; j++)
    if (__builtin_popcountll(p->mask[j] & counted) < quorum) return 0;
  return 1;
}

/* One script to one master, fire and forget: key, tkey, owner, slots. */
static void send_slots(rl_client *c, const rlock_sem *sem, int script,
                       const char *owner, size_t ownerlen,
                       const int64_t *slots, size_t n, int idx) {
  rl_args a;
  rl_args_init(&a);
  rl_args_str(&a, NULL, 0);
  rl_args_str(&a, "2", 1);
  rl_args_str(&a, rl_lock_key(sem->obj), sem->obj->keylen);
  rl_args_str(&a, sem->tkey, sem->tkeylen);
  rl_args_str(&a, owner, ownerlen);
  for (size_t k = 0; k < n; k++) rl_args_i64(&a, slots[k]);
  rl_round *u = rl_args_round(&a, c, NULL, NULL, script);
  rl_args_free(&a);
  if (u != NULL) rl_round_send_one(u, idx);
  /* Out of memory: the slots go with the owner's lease. */
}

void rl_sem_send_release(rl_client *c, const rlock_sem *sem,
                         const char *owner, size_t ownerlen,
                         const int64_t *slots, size_t n, int idx) {
  if (n > 0)
    send_slots(c, sem, RL_FAM(RL_FAM_SEM_RELEASE), owner, ownerlen, slots, n,
               idx);
}

void rl_sem_send_drop(rl_client *c, const rlock_sem *sem, const char *owner,
                      size_t ownerlen, const int64_t *keep, size_t n,
                      int idx) {
  send_slots(c, sem, RL_FAM(RL_FAM_SEM_DROP), owner, ownerlen, keep, n, idx);
}

void rl_sem_drop_everywhere(rl_client *c, const rl_hold *h) {
  const rl_permits *p = rl_permits_of(h);
  char owner[RL_HOLDS_OWNER_MAX];
  size_t ownerlen = rl_holds_owner(&c->holds, h, owner);
  for (int i = 0; i < c->nmasters; i++)
    rl_sem_send_drop(c, p->sem, owner, ownerlen, NULL, 0, i);
}

void rl_sem_hold_lost(rl_client *c, rl_hold *h) {
  if (h->lost) return;
  rl_permits *p = rl_permits_of(h);
  h->lost = 1;
  RL_ADD(c->metrics.sem_permits_held, -(int64_t)p->n);
  RL_ADD(c->metrics.sem_permits_lost, (int64_t)p->n);
  char owner[RL_HOLDS_OWNER_MAX];
  size_t ownerlen = rl_holds_owner(&c->holds, h, owner);
  rl_log(c, RLOCK_LOG_ERROR, "%zu permit(s) of semaphore %.*s lost by %.*s",
         p->n, (int)h->keylen, h->key, (int)ownerlen, owner);
  if (c->family != NULL && c->family->watchdog_open)
    rl_watchdog_cancel(&c->family->watchdog, &h->wd);
  rl_sem_drop_everywhere(c, h);
  rlock_sem_lost_cb cb = atomic_load(&p->sem->lost_cb);
  if (cb != NULL)
    cb(p->sem, h->owner_id, h->owner_is_thread,
       atomic_load(&p->sem->lost_arg));
}

/* The family's shutdown hook, set with the first hold. */
static void close_all(rl_client *c, rl_family *f) {
  /* Every permit still held goes back, written before the connections
   * close (fire-and-forget commands are: conn.h). A permit not given
   * back goes with its lease. */
  char owner[RL_HOLDS_OWNER_MAX];
  for (size_t b = 0; b < f->permits.nbuckets; b++)
    for (rl_hold *h = f->permits.buckets[b]; h; h = h->hnext)
      if (!h->lost) {
        size_t ownerlen = rl_holds_owner(&f->permits, h, owner);
        for (int i = 0; i < c->nmasters; i++)
          rl_sem_send_drop(c, rl_permits_of(h)->sem, owner, ownerlen, NULL,
                           0, i);
      }
  for (size_t b = 0; b < f->permits.nbuckets; b++)
    while (f->permits.buckets[b] != NULL)
      rl_sem_hold_drop(c, f->permits.buckets[b]);
}
