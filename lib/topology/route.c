/*
 * The redirect state machine of route.h. Each entry point fills a step
 * from scratch, so a caller never acts on a field left from an earlier
 * step, and marks the command finished once it has given its one DONE or
 * FAIL, after which only LATE comes out.
 */
#include "route.h"

#include <string.h>

static void clear(rl_route_step *step, int action) {
  memset(step, 0, sizeof *step);
  step->action = action;
}

static int give_fail(rl_route *r, rl_route_step *step, int why) {
  clear(step, RL_ROUTE_FAIL);
  step->fail = why;
  step->last_kind = r->last_kind;
  r->finished = 1;
  return step->action;
}

/* A SEND at now + delay, or a FAIL when that is not before the deadline:
 * an attempt sent at the deadline cannot be answered in time. */
static int give_send(rl_route *r, rl_route_step *step, uint64_t now,
                     uint64_t delay) {
  if (now + delay >= r->deadline)
    return give_fail(r, step, RL_ROUTE_ETIMEDOUT);
  clear(step, RL_ROUTE_SEND);
  step->to_addr = r->to_addr;
  step->asking = r->asking;
  step->port = r->port;
  memcpy(step->host, r->host, sizeof step->host);
  step->at = now + delay;
  return step->action;
}

/* The next backoff: MIN, then doubling up to MAX. */
static uint64_t next_backoff(rl_route *r) {
  uint64_t d = r->backoff;
  r->backoff = d * 2 > RL_ROUTE_BACKOFF_MAX_MS ? RL_ROUTE_BACKOFF_MAX_MS
                                               : d * 2;
  r->retries++;
  return d;
}

/* The next attempt goes to the slot's primary in the map. */
static void by_map(rl_route *r) {
  r->to_addr = 0;
  r->asking = 0;
  r->port = 0;
  r->host[0] = '\0';
}

int rl_route_start(rl_route *r, int slot, uint64_t now, uint64_t deadline,
                   int max_redirects, rl_route_step *step) {
  memset(r, 0, sizeof *r);
  r->slot = slot;
  r->deadline = deadline;
  r->max_redirects = max_redirects < 0 ? 0 : max_redirects;
  r->backoff = RL_ROUTE_BACKOFF_MIN_MS;
  r->last_kind = -1;
  by_map(r);
  return give_send(r, step, now, 0);
}

/* MOVED or ASK: the next attempt goes to the address given. */
static int follow(rl_route *r, const rl_redirect *rd, const char *from_host,
                  uint64_t now, rl_route_step *step) {
  if (++r->redirects > r->max_redirects)
    return give_fail(r, step, RL_ROUTE_EREDIRECTS);
  if (rd->host_unknown) {
    /* The server has no address for the node: a fresh map may. */
    by_map(r);
    give_send(r, step, now, next_backoff(r));
    step->refresh_map = 1;
    return step->action;
  }
  const char *host = rd->host[0] ? rd->host : from_host;
  if (host == NULL || *host == '\0' || strlen(host) >= sizeof r->host) {
    by_map(r);
    give_send(r, step, now, next_backoff(r));
    step->refresh_map = 1;
    return step->action;
  }
  r->to_addr = 1;
  r->asking = rd->kind == RL_REPLY_ASK;
  r->port = rd->port;
  strcpy(r->host, host);
  give_send(r, step, now, 0);
  if (step->action == RL_ROUTE_SEND && rd->kind == RL_REPLY_MOVED) {
    step->update_map = 1;
    /* A node the map lacks may be a promoted replica: apply_moved says
     * so, and the caller refreshes then; MOVED alone does not ask. */
  }
  return step->action;
}

int rl_route_on_reply(rl_route *r, const redisReply *reply,
                      const char *from_host, uint64_t now,
                      rl_route_step *step) {
  rl_redirect rd;
  int kind = rl_redirect_classify(reply, &rd);
  if (r->finished || now > r->deadline) {
    r->finished = 1;
    clear(step, RL_ROUTE_LATE);
    step->last_kind = kind;
    return step->action;
  }
  r->last_kind = kind;
  switch (kind) {
  case RL_REPLY_MOVED:
  case RL_REPLY_ASK:
    return follow(r, &rd, from_host, now, step);
  case RL_REPLY_TRYAGAIN:
    /* Same node, same ASKING: the keys are split between source and
     * target for a moment. */
    return give_send(r, step, now, next_backoff(r));
  case RL_REPLY_CLUSTERDOWN:
    by_map(r);
    give_send(r, step, now, next_backoff(r));
    step->refresh_map = 1;
    return step->action;
  case RL_REPLY_READONLY:
    /* The node is no primary any more; nothing was written. */
    if (++r->redirects > r->max_redirects)
      return give_fail(r, step, RL_ROUTE_EREDIRECTS);
    by_map(r);
    give_send(r, step, now, next_backoff(r));
    step->refresh_map = 1;
    return step->action;
  case RL_REPLY_CROSSSLOT:
    return give_fail(r, step, RL_ROUTE_ECROSSSLOT);
  case RL_REPLY_NONLOCAL:
    /* A batch script ran partly: its caller must see the reply, and the
     * map is stale for one of its keys. */
    clear(step, RL_ROUTE_DONE);
    step->refresh_map = 1;
    step->last_kind = kind;
    r->finished = 1;
    return step->action;
  default: /* a result, or an ordinary error reply */
    clear(step, RL_ROUTE_DONE);
    step->last_kind = kind;
    r->finished = 1;
    return step->action;
  }
}

int rl_route_on_unsent(rl_route *r, uint64_t now, rl_route_step *step) {
  if (r->finished) {
    clear(step, RL_ROUTE_LATE);
    return step->action;
  }
  /* The address a redirect gave may be the dead one; ask the map. */
  by_map(r);
  give_send(r, step, now, next_backoff(r));
  step->refresh_map = 1;
  return step->action;
}

int rl_route_on_lost(rl_route *r, rl_route_step *step) {
  if (r->finished) {
    clear(step, RL_ROUTE_LATE);
    return step->action;
  }
  give_fail(r, step, RL_ROUTE_ELOST);
  step->refresh_map = 1;
  return step->action;
}

int rl_route_on_deadline(rl_route *r, rl_route_step *step) {
  if (r->finished) {
    clear(step, RL_ROUTE_LATE);
    return step->action;
  }
  return give_fail(r, step, RL_ROUTE_ETIMEDOUT);
}
