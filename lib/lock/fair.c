/*
 * The fair lock's row in the kind table (kind.h): a reentrant lock whose
 * waiters are served in the order they asked, across clients and
 * processes. The scripts and why they look as they do are in
 * fair_scripts.c; what the C layer adds is here and in the generic paths:
 *
 * - A ticket per acquisition (the caller's wall clock in microseconds when
 *   the call began, acquire.c), sent unchanged with every attempt, so
 *   that every master orders the waiters the same way.
 * - Waiting attempts queue (argument A); single attempts and re-entries do
 *   not. A waiter stays queued only while it attempts at least every
 *   third of waiter_alive_ms (heartbeat): a dead one is skipped.
 * - Each waiter listens on its own channel (per_owner), on which an
 *   unlock names the next waiter: one unlock wakes one waiter, wherever
 *   it is.
 * - A waiter that gives up leaves every master's queue (leave); one that
 *   won leaves the queues of the masters that did not grant (acquire.c);
 *   an undone grant gives the waiter its place back while it still waits
 *   (argument a).
 */
#include "kind.h"
#include "scripts.h"

/*
 * {1, token, count, existed, ticket}; {0, pttl, place, head_wait}: the
 * sleep bound is the holder's PTTL, or when the lock is free the time
 * until the waiter ahead may be skipped; {-1, now_us}: late.
 */
static int parse_fair_grant(const redisReply *rep, rl_round_slot *sl) {
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1) return -1;
  for (size_t k = 0; k < rep->elements; k++)
    if (rep->element[k]->type != REDIS_REPLY_INTEGER) return -1;
  long long ok = rep->element[0]->integer;
  if (ok == RL_FAM_REPLY_GRANTED && rep->elements == 5) {
    sl->v[0] = rep->element[1]->integer;
    sl->v[1] = rep->element[2]->integer;
    sl->v[2] = rep->element[3]->integer;
    return 1;
  }
  if (ok == RL_FAM_REPLY_BUSY && rep->elements == 4) {
    long long pttl = rep->element[1]->integer;
    long long head = rep->element[3]->integer;
    sl->v[2] = pttl >= 0 ? pttl : head >= 0 ? head : -1;
    return 0;
  }
  if (ok == RL_FAM_REPLY_LATE && rep->elements == 2) {
    sl->v[2] = RL_GRANT_LATE;
    return 0;
  }
  return -1;
}

static const char *const fair_keys[] = {"", ":fence", ":q", ":qt"};

const rl_kind rl_kind_fair = {
    .name = "fair",
    .id = RL_KIND_FAIR,
    .suffixes = fair_keys,
    .nkeys = 4,
    .hold = 0,
    .fence = 1,
    .chan_key = 0,
    .per_owner = 1,
    .acquire = {RL_FAM(RL_FAM_FAIR_ACQUIRE), 4, "LOCFTAD"},
    .unlock = {RL_FAM(RL_FAM_FAIR_UNLOCK), 4, "LOl"},
    .undo = {RL_FAM(RL_FAM_FAIR_UNDO), 4, "OTaC"},
    .force = {RL_FAM(RL_FAM_FAIR_FORCE), 4, ""},
    .release = {RL_FAM(RL_FAM_FAIR_UNLOCK), 4, "LO1"},
    .leave = {RL_FAM(RL_FAM_FAIR_LEAVE), 4, "O"},
    .renew = RL_SCRIPT_RENEW,
    .parse_grant = parse_fair_grant,
    .heartbeat = 1,
};
