/*
 * Read-only questions. Those about the caller's own hold (count, token)
 * come from the client's record, on the loop thread, with no round trip;
 * those about the lock itself ask the masters and answer by majority.
 * A hash-shaped hold (lock, fair, write) is asked with EXISTS, HEXISTS
 * and PTTL; the read side, whose holds are entries of an expiry zset,
 * through the rw_query script (kind.h, rw_query), whose reply the
 * classifiers below read as the same yes, no and PTTL.
 */
#include <stdint.h>
#include <stdlib.h>

#include "kind.h"
#include "lock.h"
#include "ops.h"
#include "quarantine.h"
#include "round.h"
#include "scripts.h"

static void finish_round(rl_round *r, int status) {
  rl_req *req = r->data;
  req->round = NULL;
  rl_req_finish(req, status);
}

static int classify_bool(rl_round *r, int i, const redisReply *rep) {
  if (rep->type != REDIS_REPLY_INTEGER) return RL_VOTE_FAIL;
  r->slot[i].v[0] = rep->integer;
  return rep->integer ? RL_VOTE_YES : RL_VOTE_NO;
}

/* 1 if a majority says yes, 0 if a majority says no, else an error. */
static void bool_done(rl_round *r) {
  if (!rl_votes_settle(r, 0) || r->data == NULL) return;
  if (r->outcome == RL_VOTE_YES)
    finish_round(r, 1);
  else
    finish_round(r, r->no >= r->quorum ? 0 : rl_round_error(r));
}

const rl_round_ops rl_bool_ops = {classify_bool, bool_done, NULL, NULL};

static int classify_pttl(rl_round *r, int i, const redisReply *rep) {
  if (rep->type != REDIS_REPLY_INTEGER) return RL_VOTE_FAIL;
  r->slot[i].v[0] = rep->integer;
  return RL_VOTE_YES;
}

static int cmp_desc(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

/*
 * The lock is held on a majority for as long as the quorum-th longest
 * remaining lease among the answers: no expiry (-1) counts as forever, a
 * missing key (-2) as not held.
 */
static void pttl_done(rl_round *r) {
  if (!rl_votes_settle(r, 0)) return;
  rl_req *req = r->data;
  if (req == NULL) return;
  if (r->outcome != RL_VOTE_YES) {
    finish_round(r, rl_round_error(r));
    return;
  }
  int64_t v[64];
  int k = 0;
  for (int i = 0; i < r->n; i++)
    if (r->slot[i].vote == RL_VOTE_YES)
      v[k++] = r->slot[i].v[0] == -1 ? INT64_MAX : r->slot[i].v[0];
  qsort(v, (size_t)k, sizeof v[0], cmp_desc);
  int64_t m = v[r->quorum - 1];
  req->out_i64 = m == INT64_MAX ? -1 : m < 0 ? -2 : m;
  finish_round(r, RLOCK_OK);
}

const rl_round_ops rl_pttl_ops = {classify_pttl, pttl_done, NULL, NULL};

/* rw_query's reply: {owner's write count, owner's live read count, live
 * readers, write side held, waiting writers, write PTTL, ms until the
 * last read hold ends or -1}. The request (still open while the round
 * is undecided) says which question it answers. */
static int classify_rw_query(rl_round *r, int i, const redisReply *rep) {
  const rl_req *req = r->data;
  if (req == NULL || rep->type != REDIS_REPLY_ARRAY || rep->elements != 7)
    return RL_VOTE_FAIL;
  for (size_t k = 0; k < 7; k++)
    if (rep->element[k]->type != REDIS_REPLY_INTEGER) return RL_VOTE_FAIL;
  long long readers = rep->element[2]->integer;
  long long mine = rep->element[1]->integer;
  long long last = rep->element[6]->integer;
  switch (req->kind) {
    case RL_REQ_IS_LOCKED:
      r->slot[i].v[0] = readers > 0;
      return readers > 0 ? RL_VOTE_YES : RL_VOTE_NO;
    case RL_REQ_IS_HELD:
      r->slot[i].v[0] = mine > 0;
      return mine > 0 ? RL_VOTE_YES : RL_VOTE_NO;
    default: /* RL_REQ_PTTL: no reader is "not held" (-2) */
      r->slot[i].v[0] = last < 0 ? -2 : last;
      return RL_VOTE_YES;
  }
}

const rl_round_ops rl_rwq_bool_ops = {classify_rw_query, bool_done, NULL,
                                      NULL};
const rl_round_ops rl_rwq_pttl_ops = {classify_rw_query, pttl_done, NULL,
                                      NULL};

/* The read side's question: rw_query for the request's owner. */
static void send_rw_query(rl_req *req, const rl_round_ops *ops) {
  rlock *lock = req->lock;
  rl_call call = {RL_FAM(RL_FAM_RW_QUERY), 5, "O"};
  rl_call_vals v;
  rl_lock_vals(lock, &v);
  v.owner = req->kind == RL_REQ_IS_HELD ? req->owner : "";
  v.ownerlen = req->kind == RL_REQ_IS_HELD ? req->ownerlen : 0;
  rl_round *r = rl_call_round(lock->client, &call, &v, ops, req);
  if (r == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  req->round = r;
  rl_round_send(r);
}

static void send_query(rl_req *req, const rl_round_ops *ops, int argc,
                       const char **argv, const size_t *len) {
  rl_round *r = rl_round_new(req->lock->client, ops, req, -1, argc, argv, len);
  if (r == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  req->round = r;
  rl_round_send(r);
}

void rl_query_start(rl_req *req) {
  rlock *lock = req->lock;
  rl_hold *h = rl_req_hold(req);
  if (h != NULL && h->lost) h = NULL;
  if (lock->kind->rw_query &&
      (req->kind == RL_REQ_IS_LOCKED || req->kind == RL_REQ_PTTL ||
       (req->kind == RL_REQ_IS_HELD && h != NULL))) {
    send_rw_query(req, req->kind == RL_REQ_PTTL ? &rl_rwq_pttl_ops
                                                : &rl_rwq_bool_ops);
    return;
  }
  switch (req->kind) {
    case RL_REQ_IS_LOCKED: {
      const char *argv[] = {"EXISTS", rl_lock_key(lock)};
      size_t len[] = {6, lock->keylen};
      send_query(req, &rl_bool_ops, 2, argv, len);
      break;
    }
    case RL_REQ_IS_HELD: {
      if (h == NULL) {
        rl_req_finish(req, 0);
        break;
      }
      const char *argv[] = {"HEXISTS", rl_lock_key(lock), req->owner};
      size_t len[] = {7, lock->keylen, req->ownerlen};
      send_query(req, &rl_bool_ops, 3, argv, len);
      break;
    }
    case RL_REQ_PTTL: {
      const char *argv[] = {"PTTL", rl_lock_key(lock)};
      size_t len[] = {4, lock->keylen};
      send_query(req, &rl_pttl_ops, 2, argv, len);
      break;
    }
    case RL_REQ_HOLD_COUNT:
      rl_req_finish(req, h != NULL ? (int)h->count : 0);
      break;
    case RL_REQ_TOKEN:
      if (h != NULL) req->out_u64 = h->token;
      rl_req_finish(req, h != NULL ? RLOCK_OK : RLOCK_ENOTOWNER);
      break;
    default:
      rl_req_finish(req, RLOCK_EINVAL);
  }
}
