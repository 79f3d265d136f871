/*
 * The way of one command through a Redis Cluster, as a state machine with
 * no I/O: the caller sends, tells it what came back and when, and it says
 * what to do next. It exists so that the rules which keep a quorum round
 * honest are in one small place that unit tests can drive through every
 * path:
 *
 *   - A command has one deadline, fixed when it starts (the master
 *     timeout). Redirects and retries happen inside it and never move it.
 *   - At most max_redirects MOVED or ASK replies are followed; then the
 *     command fails (a loop between two nodes that disagree ends).
 *   - A reply that arrives after the deadline is LATE, never DONE: a grant
 *     in it does not count toward the quorum and must be undone, as for
 *     any master that answers late. Once a command has failed or timed
 *     out, every later reply is LATE too.
 *   - MOVED, ASK, TRYAGAIN, CLUSTERDOWN and READONLY mean the command did
 *     not run (it was refused before it ran, or at its first write), so
 *     sending it again cannot apply it twice. A connection lost after the
 *     command was written is different: it may have run, so it is not
 *     resent (RL_ROUTE_ELOST) and the round counts that node as silent,
 *     which puts it in the undo set. A command that could not be written
 *     at all (the node is down) is resent after a backoff.
 *   - TRYAGAIN, CLUSTERDOWN, an unwritable command and an address the
 *     server could not give ("?") are retried after a short backoff that
 *     doubles from RL_ROUTE_BACKOFF_MIN_MS to RL_ROUTE_BACKOFF_MAX_MS, but
 *     only if the retry can still be sent before the deadline.
 *
 * Every resend is written as if new: a command that carries a deadline in
 * the master's clock (the acquire) is encoded again with the clock offset
 * of the node it is now sent to.
 */
#ifndef RL_ROUTE_H
#define RL_ROUTE_H

#include <hiredis/hiredis.h>
#include <stdint.h>

#include "redirect.h"

#define RL_ROUTE_BACKOFF_MIN_MS 5
#define RL_ROUTE_BACKOFF_MAX_MS 50
#define RL_ROUTE_MAX_REDIRECTS 5 /* a sensible max_redirects */

/* What to do next. */
enum {
  RL_ROUTE_SEND = 1, /* send the command (again): see the step */
  RL_ROUTE_DONE,     /* the reply is the command's answer, in time */
  RL_ROUTE_LATE,     /* the reply came too late: not an answer; undo any
                        grant in it */
  RL_ROUTE_FAIL      /* give up; step.fail says why */
};

/* Why a command failed. */
enum {
  RL_ROUTE_ETIMEDOUT = 1, /* the deadline passed (or no retry fits) */
  RL_ROUTE_EREDIRECTS,    /* more than max_redirects MOVED/ASK */
  RL_ROUTE_ECROSSSLOT,    /* the command's keys span slots: a bug */
  RL_ROUTE_ELOST          /* the connection was lost after the command was
                             written: it may have run */
};

typedef struct rl_route_step {
  int action;     /* RL_ROUTE_* */
  /* SEND: where. to_addr 0: the slot's primary in the current map; 1: the
   * address below (after MOVED or ASK). */
  int to_addr;
  char host[RL_REDIRECT_HOST_MAX];
  int port;
  int asking;     /* SEND: write ASKING right before the command */
  uint64_t at;    /* SEND: not before this time (the backoff) */
  int update_map; /* MOVED: rl_slotmap_apply_moved(slot, host, port) */
  int refresh_map; /* fetch a new map (coalesced by the caller) */
  int fail;       /* FAIL: RL_ROUTE_E* */
  int last_kind;  /* FAIL, DONE: the RL_REPLY_* of the last reply, if any */
} rl_route_step;

typedef struct rl_route {
  int slot;
  uint64_t deadline; /* ms on the caller's clock */
  int max_redirects;
  int redirects;     /* MOVED and ASK followed */
  int retries;       /* TRYAGAIN, CLUSTERDOWN, unwritable, "?" */
  uint64_t backoff;  /* the next retry's wait */
  int finished;      /* a DONE, LATE or FAIL was given */
  int last_kind;
  /* The attempt in flight, for a TRYAGAIN (retried where it was sent). */
  int to_addr, asking, port;
  char host[RL_REDIRECT_HOST_MAX];
} rl_route;

/* Starts a command for a slot at time now, with its deadline (now plus
 * the master timeout) and how many redirects it may follow. The step is
 * the first SEND (to the slot's primary, at once), or a FAIL when the
 * deadline has already passed. */
int rl_route_start(rl_route *r, int slot, uint64_t now, uint64_t deadline,
                   int max_redirects, rl_route_step *step);

/*
 * A reply (an error reply included) to the attempt in flight, arrived at
 * now. from_host is the host of the node that sent it, for a redirect that
 * names "the host you asked" (an empty host). Returns step->action.
 */
int rl_route_on_reply(rl_route *r, const redisReply *reply,
                      const char *from_host, uint64_t now,
                      rl_route_step *step);

/* The attempt could not be written (the node's connection is down, or
 * there is no node for the slot in the map). Returns step->action. */
int rl_route_on_unsent(rl_route *r, uint64_t now, rl_route_step *step);

/* The connection was lost after the attempt was written. Returns
 * RL_ROUTE_FAIL (ELOST), or LATE if the command had already finished. */
int rl_route_on_lost(rl_route *r, rl_route_step *step);

/* The deadline passed with the attempt in flight (or waiting for its
 * backoff). Returns RL_ROUTE_FAIL (ETIMEDOUT); a reply that comes later
 * is LATE. */
int rl_route_on_deadline(rl_route *r, rl_route_step *step);

#endif
