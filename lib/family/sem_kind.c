/*
 * Semaphore acquisition: one quorum round of sem_acquire per attempt,
 * waiting between attempts on the semaphore's channel, the token written
 * back as a lock's is. The rules a lock's acquisition follows (acquire.c)
 * hold here too; what differs is what a majority means.
 *
 * A majority of masters granting "some n slots" is not enough: the owner
 * holds slot s when a majority granted it s (sem_scripts.c says why). So
 * an attempt counts the masters behind each slot, among those whose votes
 * count (quorum.c's settling), and succeeds when n slots, none of them
 * already the owner's, have a majority each, within the validity of the
 * lease. When only more answers could tell, the round waits for every
 * master. When masters chose differently and no n slots have a majority
 * (a split), everything is given back, and two things make the masters
 * converge. The next attempt hints every slot it was granted, the
 * slots with the most grants first and ties in a random order: each
 * master gives the first hinted slot it has free, so masters whose free
 * slots agree on one give the same. And it comes after a random pause
 * (back_off) that no message cuts short: contenders that retried at once,
 * woken by each other's give-backs, each took back on every master the
 * slot it had just given back there, and stayed split.
 *
 * No grant outlives its attempt. The attempt keeps a ledger of what each
 * master granted, shared by its round and its request, which ends kept or
 * abandoned. Kept: the won slots join the owner's hold, with the masters
 * that granted each; every other grant is given back, by slot where the
 * reply named them, and where a master has not answered yet by a drop of
 * every slot of the owner but those its hold has there, sent at once so
 * that it lands right behind the acquire (the grant that master may still
 * make is unknown). Late grants are given back. Abandoned (a failed round,
 * the deadline, a cancel, the client closing): everything, the same way.
 * A master reached twice under two addresses never gets a drop (it would
 * take the slots granted through the other address): its late reply names
 * what to give back.
 *
 * Adding to a hold: a master whose count of the owner's slots comes back
 * lower than the client knows lost the owner's lease there meanwhile (one
 * lease covers all an owner's slots on a master), so none of its old slots
 * are counted there any more; a hold left without a majority for some
 * slot is lost (the owner is told), given back, and the attempt starts
 * again as a first acquisition.
 *
 * This file is the semaphore's row of the acquisition engine (rl_acq_sem,
 * grants.h; the engine is lib/lock/acquire.c): the ledger, its rules,
 * late replies, the retry policy (with its split back-off) and the
 * fencing write-back are the engine's; the semaphore's script, how a
 * reply reads, the slot-majority decision with its hints, how grants go
 * back by slot, and the hold are here.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fence.h"
#include "grants.h"
#include "ops.h"
#include "quarantine.h"
#include "retry.h"
#include "scripts.h"
#include "sem_hold.h"
#include "sem_renew.h"
#include "util.h"


/* A refusal's code in its round slot's v[0] (v[1] its value). */
enum { R_BUSY = RL_FAM_REPLY_BUSY, R_LATE = RL_FAM_REPLY_LATE,
       R_MISMATCH = RL_FAM_REPLY_MISMATCH, R_BADARG = RL_FAM_REPLY_BADARG };

/* The semaphore's part of an attempt's ledger (rl_grants.ext). */
typedef struct rl_sem_attempt {
  rl_client *c;
  rlock_sem *sem;  /* a reference */
  char *owner;
  size_t ownerlen;
  uint64_t base_gen; /* the hold it adds to; 0: none */
  int nm;
  int64_t **slots;  /* per master, the slots it granted */
  size_t *nslots;
  int64_t *freed;   /* per master, the slots it says it has freed, from
                       a refusal (-1: not said) */
  int64_t *chosen;  /* won: the slots, and per slot its masters */
  uint64_t *chmask;
  size_t nchosen;
} rl_sem_attempt;

extern const rl_acq rl_acq_sem;

static void attempt(rl_req *req) { rl_attempt_next(req, &rl_acq_sem); }

/* An attempt that failed: the retry policy (retry.c) says when (pass:
 * hand the wake on, pass_wake). */
static void fail_attempt(rl_sem_req *sr, int err, int64_t wait_ms,
                         int pass) {
  sr->pass = pass;
  rl_attempt_failed(&sr->req, &rl_acq_sem, err, wait_ms, 0, NULL);
}

/* After a split: the retry policy's random back-off (retry.c says why),
 * its window growing with the splits in a row. */
static void back_off(rl_sem_req *sr) {
  rl_attempt_failed(&sr->req, &rl_acq_sem, RL_EBUSY, -1, 1, &sr->splits);
}

/* --- the ledger ------------------------------------------------------------- */

static void ext_free(void *ext) {
  rl_sem_attempt *a = ext;
  if (a->slots != NULL)
    for (int i = 0; i < a->nm; i++) free(a->slots[i]);
  free(a->slots);
  free(a->nslots);
  free(a->freed);
  free(a->chosen);
  free(a->chmask);
  if (a->sem != NULL) rl_sem_unref(a->sem);
  free(a);
}

static rl_sem_attempt *ext_new(rl_sem_req *sr, uint64_t base_gen) {
  rl_client *c = sr->req.lock->client;
  int nm = c->nmasters;
  rl_sem_attempt *a = calloc(1, sizeof *a + sr->req.ownerlen + 1);
  if (a == NULL) return NULL;
  a->nm = nm;
  a->slots = calloc((size_t)nm, sizeof *a->slots);
  a->nslots = calloc((size_t)nm, sizeof *a->nslots);
  a->freed = malloc((size_t)nm * sizeof *a->freed);
  if (a->slots == NULL || a->nslots == NULL || a->freed == NULL) {
    ext_free(a);
    return NULL;
  }
  for (int i = 0; i < nm; i++) a->freed[i] = -1;
  a->c = c;
  a->sem = sr->sem;
  rl_sem_ref(a->sem);
  a->owner = (char *)(a + 1);
  memcpy(a->owner, sr->req.owner, sr->req.ownerlen);
  a->ownerlen = sr->req.ownerlen;
  a->base_gen = base_gen;
  return a;
}

/* Records the slots of a grant reply (elements 4..) for master i. */
static void record_slots(rl_grants *g, int i, const redisReply *rep) {
  rl_sem_attempt *a = g->ext;
  size_t n = rep->elements - 4;
  free(a->slots[i]);
  a->slots[i] = n ? malloc(n * sizeof(int64_t)) : NULL;
  if (n && a->slots[i] == NULL) {
    g->slot[i] |= RL_G_UNKNOWN; /* given back by a drop */
    a->nslots[i] = 0;
    return;
  }
  for (size_t k = 0; k < n; k++) a->slots[i][k] = rep->element[4 + k]->integer;
  a->nslots[i] = n;
}

/* The hold the attempt builds on, as it is now (NULL if gone). */
static rl_hold *current_hold(rl_sem_attempt *a) {
  return rl_sem_hold_find(a->c, a->sem, a->owner, a->ownerlen);
}

/* Gives back master i's grant: by slot, or by a drop when its slots are
 * unknown (keeping what the hold has there). */
static void give_back(rl_grants *g, int i, const int64_t *slots, size_t n) {
  rl_sem_attempt *a = g->ext;
  rl_client *c = a->c;
  g->slot[i] |= RL_G_UNDONE;
  if (!(g->slot[i] & RL_G_UNKNOWN)) {
    rl_sem_send_release(c, a->sem, a->owner, a->ownerlen, slots, n, i);
    return;
  }
  if (rl_master_duplicate(c, i)) return;
  rl_hold *h = current_hold(a);
  int64_t *keep = h ? malloc((size_t)h->count * sizeof *keep) : NULL;
  size_t nk = keep ? rl_sem_hold_slots_on(h, i, keep) : 0;
  if (h != NULL && keep == NULL) return; /* out of memory: the lease */
  rl_sem_send_drop(c, a->sem, a->owner, a->ownerlen, keep, nk, i);
  free(keep);
}

/* The engine's undo (rl_acq.undo): what master i granted goes back by
 * slot; what a master that has not answered may still grant, by a drop
 * (never to a master reached twice: its late reply names the slots). */
static void undo(rl_grants *g, int i) {
  rl_sem_attempt *a = g->ext;
  if (g->slot[i] & RL_G_GRANTED) {
    give_back(g, i, a->slots[i], a->nslots[i]);
  } else if (!rl_master_duplicate(g->c, i)) {
    g->slot[i] |= RL_G_UNKNOWN;
    give_back(g, i, NULL, 0);
  }
}

/* The won slots are the hold's now (h has them): every other grant, and
 * whatever a master that has not answered may grant, goes back. */
static void attempt_keep(rl_grants *g) {
  rl_sem_attempt *a = g->ext;
  g->state = RL_G_KEPT;
  if (g->round != NULL) g->round->args.no_resend = 1;
  int64_t *rest = NULL;
  for (int i = 0; i < a->nm; i++) {
    if (g->slot[i] & RL_G_UNDONE) continue;
    if (g->slot[i] & RL_G_GRANTED) {
      size_t k = 0;
      free(rest);
      rest = malloc((a->nslots[i] + 1) * sizeof *rest);
      if (rest == NULL) continue; /* out of memory: the lease */
      for (size_t s = 0; s < a->nslots[i]; s++) {
        int counted = 0;
        for (size_t j = 0; j < a->nchosen; j++)
          if (a->chosen[j] == a->slots[i][s] && (a->chmask[j] & (1ull << i)))
            counted = 1;
        if (!counted) rest[k++] = a->slots[i][s];
      }
      if (k > 0 || (g->slot[i] & RL_G_UNKNOWN)) give_back(g, i, rest, k);
    } else if (rl_grants_pending(g, i) && !rl_master_duplicate(a->c, i)) {
      g->slot[i] |= RL_G_UNKNOWN;
      give_back(g, i, NULL, 0);
    }
  }
  free(rest);
}

/* --- replies ---------------------------------------------------------------- */

/* 1 granted (v: token, held, free), 0 refused (v[0] the R_* code, v[1]
 * its value, v[2] free), -1 malformed. */
static int parse(const redisReply *rep, rl_round_slot *sl) {
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 2) return -1;
  for (size_t k = 0; k < rep->elements; k++)
    if (rep->element[k]->type != REDIS_REPLY_INTEGER) return -1;
  long long code = rep->element[0]->integer;
  if (code == 1 && rep->elements >= 4) {
    sl->v[0] = rep->element[1]->integer;
    sl->v[1] = rep->element[2]->integer;
    sl->v[2] = rep->element[3]->integer;
    return 1;
  }
  if (code == 0 && (rep->elements == 4 || rep->elements == 5)) {
    sl->v[0] = R_BUSY;
    sl->v[1] = rep->element[1]->integer;
    sl->v[2] = rep->element[2]->integer;
    return 0;
  }
  if ((code == R_LATE || code == R_MISMATCH || code == R_BADARG) &&
      rep->elements == 2) {
    sl->v[0] = code;
    sl->v[1] = rep->element[1]->integer;
    sl->v[2] = 0;
    return 0;
  }
  return -1;
}

/* The engine's reading of a reply (rl_acq.read): a grant's slots go
 * into the ledger, a busy refusal's count of freed slots too. */
static int read_reply(rl_round *r, int i, const redisReply *rep,
                      rl_round_slot *sl, int late) {
  rl_grants *g = r->data;
  int gr = parse(rep, sl);
  if (gr < 0) return -1;
  if (gr == 0) {
    if (!late && sl->v[0] == R_BUSY && g != NULL && rep->elements == 5)
      ((rl_sem_attempt *)g->ext)->freed[i] = rep->element[4]->integer;
    return sl->v[0] == R_LATE ? 2 : 0;
  }
  if (!late && sl->v[0] > 0) rl_note_token(r->client, sl->v[0]);
  if (g != NULL) record_slots(g, i, rep);
  return 1;
}

static void late(rl_round *r, int i, const rl_round_slot *got) {
  rl_grants *g = r->data;
  if (g != NULL) rl_grants_late(g, i, got != NULL);
}

/* Kept: a late grant is not the hold's, and goes back. */
static void kept_late(rl_grants *g, int i) {
  rl_sem_attempt *a = g->ext;
  if (!(g->slot[i] & RL_G_UNDONE)) give_back(g, i, a->slots[i], a->nslots[i]);
}

/* --- choosing slots ----------------------------------------------------- */

typedef struct slot_votes {
  int64_t slot;
  int votes;
  uint64_t mask;
  uint64_t tie; /* a random rank among slots of as many votes (hints) */
} slot_votes;

static int cmp_pair(const void *x, const void *y) {
  const slot_votes *a = x, *b = y;
  return a->slot < b->slot ? -1 : a->slot > b->slot;
}

static int cmp_votes(const void *x, const void *y) {
  const slot_votes *a = x, *b = y;
  if (a->votes != b->votes) return b->votes - a->votes;
  return a->slot < b->slot ? -1 : a->slot > b->slot;
}

static int cmp_hint(const void *x, const void *y) {
  const slot_votes *a = x, *b = y;
  if (a->votes != b->votes) return b->votes - a->votes;
  return a->tie < b->tie ? -1 : a->tie > b->tie;
}

static int in_hold(const rl_hold *h, int64_t slot) {
  if (h == NULL) return 0;
  const rl_permits *p = rl_permits_of(h);
  for (size_t j = 0; j < p->n; j++)
    if (p->slot[j] == slot) return 1;
  return 0;
}

/* Counts the masters behind each granted slot. 1 with a->chosen set when
 * n slots have a majority each; 0 with sr's hint set when not; -1 when
 * out of memory. */
static int choose(rl_sem_attempt *a, rl_round *r, rl_sem_req *sr) {
  size_t total = 0, n = (size_t)sr->n;
  for (int i = 0; i < r->n; i++)
    if (r->slot[i].vote == RL_VOTE_YES) total += a->nslots[i];
  slot_votes *v = malloc((total + 1) * sizeof *v);
  if (v == NULL) return -1;
  size_t k = 0;
  for (int i = 0; i < r->n; i++) {
    if (r->slot[i].vote != RL_VOTE_YES) continue;
    for (size_t s = 0; s < a->nslots[i]; s++)
      v[k++] = (slot_votes){a->slots[i][s], 1, 1ull << i, 0};
  }
  qsort(v, k, sizeof *v, cmp_pair);
  size_t m = 0;
  for (size_t j = 0; j < k; j++) {
    if (m > 0 && v[m - 1].slot == v[j].slot) {
      v[m - 1].votes++;
      v[m - 1].mask |= v[j].mask;
    } else {
      v[m++] = v[j];
    }
  }
  qsort(v, m, sizeof *v, cmp_votes);
  rl_hold *h = a->base_gen ? current_hold(a) : NULL;
  size_t won = 0, hints = 0;
  for (size_t j = 0; j < m; j++)
    if (v[j].votes >= r->quorum && !in_hold(h, v[j].slot)) won++;
  if (won >= n) {
    a->chosen = malloc(n * sizeof *a->chosen);
    a->chmask = malloc(n * sizeof *a->chmask);
    if (a->chosen == NULL || a->chmask == NULL) {
      free(v);
      return -1;
    }
    for (size_t j = 0; j < m && a->nchosen < n; j++) {
      if (v[j].votes < r->quorum || in_hold(h, v[j].slot)) continue;
      a->chosen[a->nchosen] = v[j].slot;
      a->chmask[a->nchosen++] = v[j].mask;
    }
    free(v);
    return 1;
  }
  /* The hint: every slot granted, most grants first, and among slots of
   * as many grants a random order. Each master gives the first of them
   * that it has free, so masters whose free slots agree on one choose
   * alike; slot order (the old tie-break, which every contender shared)
   * kept asking for a slot taken on the masters that had chosen
   * differently, and got the same split again. */
  for (size_t j = 0; j < m; j++) v[j].tie = rl_random_upto(UINT32_MAX);
  qsort(v, m, sizeof *v, cmp_hint);
  free(sr->hint);
  sr->hint = malloc((m + 1) * sizeof *sr->hint);
  sr->nhint = 0;
  for (size_t j = 0; j < m && sr->hint != NULL; j++)
    if (!in_hold(h, v[j].slot)) sr->hint[hints++] = v[j].slot;
  sr->nhint = hints;
  free(v);
  return 0;
}

/* --- deciding --------------------------------------------------------------- */

/* The won slots join the owner's hold; the request succeeds. */
static void commit(rl_sem_req *sr) {
  rl_req *req = &sr->req;
  rl_client *c = req->lock->client;
  rl_grants *g = req->grants;
  rl_sem_attempt *a = g->ext;
  rl_hold *h = rl_sem_hold_find(c, sr->sem, req->owner, req->ownerlen);
  if (h != NULL && h->lost) {
    rl_sem_hold_drop(c, h);
    h = NULL;
  }
  int first = h == NULL;
  if (first) {
    h = rl_sem_hold_add(c, sr->sem, req);
    if (h == NULL) {
      rl_req_finish(req, RLOCK_ENOMEM); /* the grants are given back */
      return;
    }
    h->token = req->token;
    h->acquired_ms = req->t_start;
  }
  for (size_t j = 0; j < a->nchosen; j++) {
    if (rl_sem_hold_push(h, a->chosen[j], a->chmask[j]) != 0) {
      /* Out of memory: what was pushed stays held (and is released with
       * the hold); the rest is given back with the attempt. */
      a->nchosen = j;
      break;
    }
  }
  if (first || req->lease_ms > h->lease_ms) h->lease_ms = req->lease_ms;
  h->watchdog = h->watchdog || req->watchdog;
  uint64_t valid =
      req->t_start + (uint64_t)(req->lease_ms - rl_drift_ms(c, req->lease_ms));
  if (first || valid < h->valid_until_ms) h->valid_until_ms = valid;
  if (h->watchdog && !h->wd.armed) rl_sem_watch(c, h);
  attempt_keep(g);
  RL_ADD(c->metrics.sem_permits_held, (int64_t)a->nchosen);
  if (a->nchosen < (size_t)sr->n) {
    rl_attempt_end(req, 1, 0);
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  RL_ADD(c->metrics.sem_acquisitions, 1);
  rl_attempt_end(req, 1, 0);
  req->out_u64 = h->token;
  req->count = h->count;
  rl_req_finish(req, RLOCK_OK);
}

/* A first acquisition's token: the largest among the granting masters,
 * handed out as a lock's is (fence.c). */
static void hand_out_token(rl_sem_req *sr, rl_round *won) {
  rl_client *c = sr->req.lock->client;
  int64_t token = 0;
  for (int i = 0; i < won->n; i++)
    if (won->slot[i].vote == RL_VOTE_YES && won->slot[i].v[0] > token)
      token = won->slot[i].v[0];
  if (token <= 0) token = (int64_t)rl_token_floor(c);
  rl_note_token(c, token);
  sr->req.token = (uint64_t)token;
  int64_t stored[RL_MAX_MASTERS];
  rl_fence_in in = {rl_lock_fence(sr->sem->obj), rl_lock_fencelen(sr->sem->obj),
                    (uint64_t)token, won->quorum, stored, 0, 0, NULL, 0};
  for (int i = 0; i < won->n; i++) {
    stored[i] = won->slot[i].granted ? won->slot[i].v[0] : -1;
    if (won->slot[i].vote == RL_VOTE_YES) in.counted |= 1ull << i;
  }
  rl_attempt_write_back(&sr->req, &in);
}

static void won(rl_sem_req *sr, rl_round *r) {
  rl_req *req = &sr->req;
  rl_client *c = req->lock->client;
  rl_sem_attempt *a = req->grants->ext;
  if (a->base_gen == 0) {
    hand_out_token(sr, r);
    return;
  }
  rl_hold *h = current_hold(a);
  int live = h != NULL && h->gen == a->base_gen && !h->lost;
  if (live) {
    /* A master that counts fewer of the owner's slots than the client
     * knows it had lost the owner's lease there meanwhile. */
    int64_t *on = malloc((size_t)h->count * sizeof *on);
    rl_permits *p = rl_permits_of(h);
    for (int i = 0; i < r->n && on != NULL; i++) {
      if (r->slot[i].vote != RL_VOTE_YES) continue;
      int64_t had = (int64_t)rl_sem_hold_slots_on(h, i, on);
      if (r->slot[i].v[1] - (int64_t)a->nslots[i] < had)
        for (size_t j = 0; j < p->n; j++) p->mask[j] &= ~(1ull << i);
    }
    free(on);
    if (!rl_sem_hold_intact(c, h)) {
      /* Told, and given back everywhere, behind this attempt. The
       * callback runs with the request deciding: no cancel from it. */
      req->deciding = 1;
      rl_sem_hold_lost(c, h);
      req->deciding = 0;
      live = 0;
    }
  }
  if (!live) {
    rl_attempt_end(req, 0, 0);
    attempt(req); /* afresh, behind the give-back */
    return;
  }
  req->token = h->token;
  commit(sr);
}

static void note_conflict(rl_sem_req *sr, int64_t stored) {
  char why[200];
  int n = snprintf(why, sizeof why,
                   "semaphore %.100s has a limit of %lld permits; this "
                   "handle's is %lld",
                   rl_lock_text(sr->sem->obj), (long long)stored,
                   (long long)sr->sem->permits);
  rl_client_note_error(sr->req.lock->client, why, (size_t)n);
}

/*
 * Whether a refused attempt hands on the wake that may have started it.
 * A message wakes one waiter per client, the first in its queue for the
 * channel (pubsub/waitq.h); when that one wants more permits than came
 * back it is refused here, and a waiter behind it that wants fewer would
 * sleep through the free permits until its own sleep ran out (the
 * holder's lease, or its whole wait: test_sem's mixed_wants). So when a
 * majority of masters had a permit free, such a waiter could have taken,
 * the refused one goes to the back of the queue and the wake goes to the
 * one now first (fail_attempt, requeue_passing). But only for frees it has
 * not seen refused before: two waiters that each want more than is free
 * would otherwise hand the same wake to each other forever, one script
 * per master each time. Each refusal says how many slots that master has
 * freed so far (sem_scripts.c); the wake is handed on when a master's
 * count differs from the one it said at this request's last refusal
 * there (it can only go back to 0 when no slot was taken meanwhile). So
 * one release makes at most one more attempt per waiter of the client,
 * and one by the first of them again (requeue_passing).
 */
static int pass_wake(rl_sem_req *sr, const rl_sem_attempt *a,
                     const rl_round *r) {
  rl_client *c = sr->req.lock->client;
  if (sr->seen == NULL) {
    sr->seen = malloc((size_t)a->nm * sizeof *sr->seen);
    if (sr->seen == NULL) return 0;
    for (int i = 0; i < a->nm; i++) sr->seen[i] = -1;
  }
  int with_free = 0, fresh = 0;
  for (int i = 0; i < r->n && i < a->nm; i++) {
    const rl_round_slot *sl = &r->slot[i];
    if (!rl_master_duplicate(c, i) &&
        (sl->vote == RL_VOTE_YES ||
         (sl->vote == RL_VOTE_NO && !sl->granted && sl->v[0] == R_BUSY &&
          sl->v[2] > 0)))
      with_free++;
    if (a->freed[i] < 0) continue;
    if (a->freed[i] != sr->seen[i]) fresh = 1;
    sr->seen[i] = a->freed[i];
  }
  return fresh && with_free >= r->quorum;
}

/* The engine's decision (rl_acq.decide) on a settled round. */
static void decide(rl_req *req, rl_round *r, rl_grants *g) {
  rl_sem_req *sr = (rl_sem_req *)req;
  rl_sem_attempt *a = g->ext;
  for (int i = 0; i < r->n; i++) {
    const rl_round_slot *sl = &r->slot[i];
    if (sl->vote != RL_VOTE_NO || sl->granted) continue;
    if (sl->v[0] == R_MISMATCH) {
      note_conflict(sr, sl->v[1]);
      rl_req_finish(req, RLOCK_ECONFLICT);
      return;
    }
    if (sl->v[0] == R_BADARG) {
      rl_req_finish(req, RLOCK_EINVAL);
      return;
    }
  }
  if (r->outcome == RL_VOTE_YES) {
    int got = choose(a, r, sr);
    if (got < 0) {
      rl_req_finish(req, RLOCK_ENOMEM);
      return;
    }
    if (!got && r->yes + r->no + r->fail < r->n) {
      /* More answers may still make n slots a majority. */
      r->wait_all = 1;
      r->decided = 0;
      req->round = r;
      return;
    }
    if (got && rl_acquire_valid(req)) {
      won(sr, r);
      return;
    }
    rl_attempt_end(req, 0, 0);
    if (got) {
      fail_attempt(sr, RLOCK_ENOQUORUM, -1, 0);
      return;
    }
    atomic_fetch_add(&sr->sem->splits, 1);
    back_off(sr);
    return;
  }
  int pass = pass_wake(sr, a, r);
  rl_attempt_end(req, 0, 0);
  int64_t wait = -1;
  int busy = 0, any_error = 0;
  for (int i = 0; i < r->n; i++) {
    const rl_round_slot *sl = &r->slot[i];
    if (sl->error_reply) any_error = 1;
    if (sl->vote != RL_VOTE_NO || sl->granted || sl->v[0] != R_BUSY) continue;
    busy = 1;
    if (sl->v[1] >= 0 && (wait < 0 || sl->v[1] < wait)) wait = sl->v[1];
  }
  if (busy)
    fail_attempt(sr, RL_EBUSY, wait, pass);
  else
    fail_attempt(sr, any_error ? RLOCK_EREDIS : RLOCK_ENOQUORUM, -1, 0);
}


/* --- attempts and waiting --------------------------------------------------- */

static void retry(rl_req *req) { attempt(req); }

static void on_backoff_closed(uv_handle_t *h) { free(h); }

static void on_backoff(uv_timer_t *t) {
  rl_sem_req *sr = t->data;
  if (sr != NULL) attempt(&sr->req);
}

static void stop_backoff(rl_sem_req *sr) {
  if (sr->backoff == NULL) return;
  sr->backoff->data = NULL;
  uv_close((uv_handle_t *)sr->backoff, on_backoff_closed);
  sr->backoff = NULL;
}

/*
 * Sleeps for ms at the back of the client's queue for the semaphore's
 * channel, handing the wake that started this attempt, if one did, to the
 * waiter now first (pass_wake says when and why); rl_psw_leave hands a
 * wake on only when its waiter got one. The request joins behind, in its
 * other wait, before it leaves its place: the channel stays subscribed
 * even when it was the only waiter (else it was unsubscribed and
 * subscribed again). Then the wake comes back to it and it tries once
 * more: it may have been poked by a release during the attempt, and if
 * not, pass_wake finds no new frees and it sleeps.
 */
static int requeue_passing(rl_sem_req *sr, uint64_t ms) {
  rl_client *c = sr->req.lock->client;
  rl_fwait *old = &sr->waits[sr->cur], *back = &sr->waits[!sr->cur];
  int rc = rl_fwait_sleep(back, &sr->req, rl_lock_channel(sr->sem->obj),
                          sr->sem->obj->channellen, ms, retry,
                          &c->metrics.sem_waiters);
  rl_fwait_leave(old, 1);
  if (rc == 0) sr->cur = !sr->cur;
  return rc;
}

/* Sleeps as the retry policy said (rl_acq.wait): after a split, on the
 * back-off timer, which no message cuts short; else in the semaphore's
 * channel's queue, passing the wake on if pass_wake said so. */
static void wait_next(rl_req *req, int how, const rl_retry *p) {
  rl_sem_req *sr = (rl_sem_req *)req;
  rl_client *c = req->lock->client;
  int pass = sr->pass;
  sr->pass = 0;
  if (how == RL_RETRY_BACKOFF) {
    if (sr->backoff == NULL) {
      sr->backoff = malloc(sizeof *sr->backoff);
      if (sr->backoff == NULL) {
        rl_req_finish(req, RLOCK_ENOMEM);
        return;
      }
      uv_timer_init(c->loop, sr->backoff);
      sr->backoff->data = sr;
    }
    uv_timer_start(sr->backoff, on_backoff, p->ms, 0);
    return;
  }
  sr->splits = 0;
  const char *channel = rl_lock_channel(sr->sem->obj);
  int rc;
  rl_fwait *w = &sr->waits[sr->cur];
  if (pass && p->err == RL_EBUSY && w->psw != NULL && w->channel == channel)
    rc = requeue_passing(sr, p->ms);
  else
    rc = rl_fwait_sleep(w, req, channel, sr->sem->obj->channellen, p->ms,
                        retry, &c->metrics.sem_waiters);
  if (rc != 0) rl_req_finish(req, RLOCK_ENOMEM);
}

/* The engine's next attempt (rl_acq.round): the ledger with the
 * semaphore's part, and the round of sem_acquire, hinting the slots the
 * last split was granted. */
static rl_round *make_round(rl_req *req, rl_grants **out) {
  rl_sem_req *sr = (rl_sem_req *)req;
  rl_client *c = req->lock->client;
  rlock_sem *sem = sr->sem;
  /* A lost hold was given back everywhere when it was found lost, before
   * this attempt: build on nothing. */
  rl_hold *h = rl_sem_hold_find(c, sem, req->owner, req->ownerlen);
  if (h != NULL && h->lost) {
    rl_sem_hold_drop(c, h);
    h = NULL;
  }
  rl_args args;
  rl_args_init(&args);
  rl_args_str(&args, NULL, 0);
  rl_args_str(&args, "3", 1);
  rl_args_str(&args, rl_lock_key(sem->obj), sem->obj->keylen);
  rl_args_str(&args, sem->tkey, sem->tkeylen);
  rl_args_str(&args, rl_lock_fence(sem->obj), rl_lock_fencelen(sem->obj));
  rl_args_i64(&args, req->lease_ms);
  rl_args_str(&args, req->owner, req->ownerlen);
  rl_args_i64(&args, (int64_t)rl_token_floor(c));
  rl_args_i64(&args, sem->permits);
  rl_args_i64(&args, sr->n);
  rl_args_i64(&args, c->opts.sem_limit_ttl_ms);
  for (size_t k = 0; k < sr->nhint; k++) rl_args_i64(&args, sr->hint[k]);
  /* Last: the deadline in each master's own clock (round.h). */
  rl_args_deadline(&args);
  rl_grants *g = rl_grants_new_kind(req, &rl_acq_sem);
  *out = g;
  rl_sem_attempt *a = g != NULL ? ext_new(sr, h != NULL ? h->gen : 0) : NULL;
  if (g != NULL) g->ext = a;
  rl_round *r = a == NULL ? NULL
                          : rl_args_round(&args, c, &rl_acquire_ops, g,
                                          RL_FAM(RL_FAM_SEM_ACQUIRE));
  rl_args_free(&args);
  if (r != NULL) atomic_fetch_add(&sem->attempts, 1);
  return r;
}

static void commit_req(rl_req *req) { commit((rl_sem_req *)req); }

const rl_acq rl_acq_sem = {
    .script = "sem_acquire",
    .round = make_round,
    .read = read_reply,
    .undo = undo,
    .late = late,
    .decide = decide,
    .kept_late = kept_late,
    .commit = commit_req,
    .wait = wait_next,
    .free = ext_free,
};

void rl_sem_acquire_start(rl_req *req) {
  rl_sem_req *sr = (rl_sem_req *)req;
  rl_client *c = req->lock->client;
  if (rl_family_get(c) == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  if (!req->owner_is_thread) {
    int rc = rl_acquire_mark_pending(req, req->lock, &sr->pending);
    if (rc != 0) {
      rl_req_finish(req, rc);
      return;
    }
  }
  attempt(req);
}

void rl_sem_acquire_end(rl_req *req, int status) {
  rl_sem_req *sr = (rl_sem_req *)req;
  rl_client *c = req->lock->client;
  int got = status == RLOCK_OK;
  stop_backoff(sr);
  rl_attempt_end(req, got, 0);
  /* A waiter that a wake chose hands it on as it leaves (rl_psw_leave
   * passes only a wake its waiter got): one message wakes one waiter per
   * client. Without its permits, the wake was not used. With them, while
   * others are still free, the next waiter may take those. And when it
   * took every free one: the waiters behind it were refused before its
   * grant, and its release is announced only if someone was refused after
   * (sem_scripts.c), which the next waiter now is, so that it hears of
   * that release instead of sleeping through it (test_sem's in_turn). */
  rl_fwait_leave(&sr->waits[sr->cur], !rl_client_closing(c));
  rl_fwait_leave(&sr->waits[!sr->cur], 0); /* idle: nothing to leave */
  free(sr->seen);
  sr->seen = NULL;
  if (sr->pending != NULL) {
    rl_holds_remove(&c->pending, sr->pending);
    sr->pending = NULL;
  }
  if (!got) RL_ADD(c->metrics.sem_acquire_failures, 1);
}
