/*
 * The read-write lock's two rows in the kind table (kind.h): a read side
 * any number of owners share and a write side that excludes everyone. A
 * read handle and a write handle got with one name are the two sides of
 * one lock; their keys are the same five (rw_scripts.c), and each side's
 * holds are its own records in the client's table (hold key :r or :w).
 *
 * - Read holds live in a sorted set with an expiry each, so the watchdog
 *   renews them with lease_renew over (:r, :rc) and a crashed reader's
 *   share runs out alone (renew_pair).
 * - A waiting writer registers on its attempts and must keep attempting
 *   (heartbeat) to hold new readers back; one that gives up leaves.
 * - Readers wait on :r:ch, writers on :w:ch; a woken reader that got its
 *   share wakes the next one (wake_all), so all readers go at once.
 * - A read holder asking for the write side is refused at once: by the
 *   client from its own record (acquire.c), and by a master (-2) if the
 *   record did not know.
 * - The queries about a read handle go through rw_query (rw_query).
 */
#include "kind.h"
#include "lock.h"
#include "scripts.h"

/* A read holder that asks for the write side would wait for itself
 * forever: refused at once, from the client's own record. The write
 * holder may take the read side, and keeps writing: no refusal then. */
static int refuse_upgrade(rl_req *req) {
  const rlock *lock = req->lock;
  rl_holds *t = &lock->client->holds;
  const rl_hold *r =
      rl_holds_find(t, rl_lock_keyk(lock, 1), rl_lock_keylenk(lock, 1),
                    req->owner, req->ownerlen);
  if (r == NULL || r->lost) return 0;
  const rl_hold *w = rl_holds_find(t, rl_lock_key(lock), lock->keylen,
                                   req->owner, req->ownerlen);
  return w != NULL && !w->lost ? 0 : RLOCK_EDEADLK;
}

/* {1, token, count, existed}; {0, wait_ms, why}; {-1, now_us} late;
 * {-2} a read holder asked for the write side. */
static int parse_rw_grant(const redisReply *rep, rl_round_slot *sl) {
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1) return -1;
  for (size_t k = 0; k < rep->elements; k++)
    if (rep->element[k]->type != REDIS_REPLY_INTEGER) return -1;
  long long ok = rep->element[0]->integer;
  if (ok == RL_FAM_REPLY_GRANTED && rep->elements == 4) {
    sl->v[0] = rep->element[1]->integer;
    sl->v[1] = rep->element[2]->integer;
    sl->v[2] = rep->element[3]->integer;
    return 1;
  }
  if (ok == RL_FAM_REPLY_BUSY && rep->elements == 3) {
    long long wait = rep->element[1]->integer;
    sl->v[2] = wait >= 0 ? wait : -1;
    return 0;
  }
  if (ok == RL_FAM_REPLY_LATE && rep->elements == 2) {
    sl->v[2] = RL_GRANT_LATE;
    return 0;
  }
  if (ok == RL_FAM_REPLY_DEADLK && rep->elements == 1) {
    sl->v[2] = RL_GRANT_DEADLK;
    return 0;
  }
  return -1;
}

static const char *const rw_keys[] = {":w", ":r", ":rc", ":wq", ":w:fence"};

const rl_kind rl_kind_read = {
    .name = "read",
    .id = RL_KIND_READ,
    .suffixes = rw_keys,
    .nkeys = 5,
    .hold = 1,
    .fence = 4,
    .chan_key = 1,
    .acquire = {RL_FAM(RL_FAM_RW_READ_ACQUIRE), 5, "LOCFD"},
    .unlock = {RL_FAM(RL_FAM_RW_READ_UNLOCK), 5, "Ol"},
    .undo = {RL_FAM(RL_FAM_RW_READ_UNLOCK), 5, "O0C"},
    .force = {RL_FAM(RL_FAM_RW_FORCE), 5, "r"},
    .release = {RL_FAM(RL_FAM_RW_READ_UNLOCK), 5, "O1"},
    .leave = {-1, 0, ""},
    .renew = RL_FAM(RL_FAM_LEASE_RENEW),
    .renew_pair = 1,
    .parse_grant = parse_rw_grant,
    .wake_all = 1,
    .rw_query = 1,
};

const rl_kind rl_kind_write = {
    .name = "write",
    .id = RL_KIND_WRITE,
    .suffixes = rw_keys,
    .nkeys = 5,
    .hold = 0,
    .fence = 4,
    .chan_key = 0,
    .acquire = {RL_FAM(RL_FAM_RW_WRITE_ACQUIRE), 5, "LOCFAD"},
    .unlock = {RL_FAM(RL_FAM_RW_WRITE_UNLOCK), 5, "LOl"},
    .undo = {RL_FAM(RL_FAM_RW_WRITE_UNDO), 5, "OaC"},
    .force = {RL_FAM(RL_FAM_RW_FORCE), 5, "w"},
    .release = {RL_FAM(RL_FAM_RW_WRITE_UNLOCK), 5, "LO1"},
    .leave = {RL_FAM(RL_FAM_RW_WRITE_LEAVE), 5, "O"},
    .renew = RL_SCRIPT_RENEW,
    .parse_grant = parse_rw_grant,
    .precheck = refuse_upgrade,
    .heartbeat = 1,
};
