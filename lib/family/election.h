/*
 * Elections in the family layer: the leader record's rounds (write it,
 * read it, tell the observers) and the observation of one election by
 * any number of handles of a client. Leadership itself is a fair lock's
 * hold, which lib/api/election.c takes and gives back with the lock
 * calls; this file owns what the fair lock does not have: the record
 * (election_scripts.c) and its observers. Loop thread only, save the
 * posting calls.
 */
#ifndef RL_ELECTION_H
#define RL_ELECTION_H

#include <stddef.h>
#include <stdint.h>

#include "family.h"
#include "list.h"

/* The longest value a leader may proclaim, in bytes. */
#define RL_ELECT_VALUE_MAX 4096

/* One master's answer to a read: token 0 when it has no leader record. */
typedef struct rl_erec {
  int answered;
  uint64_t token;
  int64_t pttl;
  char *value;
  size_t len;
} rl_erec;

enum { RL_ELECT_UNDECIDED = 0, RL_ELECT_LEADER, RL_ELECT_NONE };

/*
 * What n masters' answers say (pure logic, tested without Redis): LEADER
 * when some (token, value) is the record of at least quorum masters (the
 * highest such token; *at is one of those masters, *expiry_ms when fewer
 * than quorum of them will still have it if none renews: -1 unknown);
 * NONE when at least quorum masters have no record; else UNDECIDED (a
 * write or an expiry under way, or too few answers).
 */
int rl_elect_decide(const rl_erec *rec, int n, int quorum, int *at,
                    int64_t *expiry_ms);

/*
 * The object handle of the election called name: keys "<p>{name}" (the
 * fair lock's hash) and "<p>{name}:q" (its queue), channel
 * "<p>{name}:e:ch". 0, RLOCK_EINVAL for a bad name, or RLOCK_ENOMEM.
 */
int rl_elect_object(rl_client *c, const char *name, rlock **out);

/* Posts the record write of owner's leadership (async owner id) with
 * token and value (copied): cb gets 0 when a majority wrote it,
 * RLOCK_ENOTOWNER when a majority says the owner does not hold the lock,
 * else the round's error. Any thread; 0 or an error (cb never runs). */
int rl_elect_proclaim(rlock *obj, uint64_t owner, uint64_t token,
                      const char *value, size_t len, rlock_cb cb, void *arg);

/* Posts a message to the observers (fire and forget). Any thread. */
int rl_elect_notify(rlock *obj);

/* Reads the record (blocking; not on the loop thread): 0 and the leader's
 * value (copied into value[0..cap), NUL-terminated, cut to fit) and token;
 * RLOCK_ENOENT when a majority has none; RLOCK_ENOQUORUM when the masters
 * do not agree (a change under way) or too few answered. */
int rl_elect_read(rlock *obj, char *value, size_t cap, uint64_t *token,
                  int64_t *lease_ms);

/* For rlock status: the record (as rl_elect_read, value, owner and
 * lease ms) and the waiting campaigners' owner fields, as one master of
 * the majority sees them, in queue order, written into a text of lines
 * "owner ticket\n" (malloc'd, *waiters). */
int rl_elect_status(rlock *obj, char *value, size_t cap, uint64_t *token,
                    int64_t *lease_ms, char **waiters);

/*
 * An observer: embedded in its owner's handle. cb runs on the loop thread
 * with the current state when it is attached (or after the first read, if
 * none is known yet), then on every change of leader or value; value NULL
 * (len 0) when there is no leader, token then the last leader's (0 if
 * none was seen). Tokens never go back: a record older than one reported
 * is not reported.
 */
typedef struct rl_ewatch rl_ewatch;
typedef struct rl_eobs {
  rl_list node;
  rl_ewatch *w; /* NULL while detached */
  void (*cb)(void *data, const char *value, size_t len, uint64_t token);
  void *data;
  int told;
} rl_eobs;

/* Attaches o (cb, data set) to the election of obj, or detaches it (o->cb
 * unused); blocking off the loop thread, direct on it. 0, RLOCK_ENOMEM,
 * RLOCK_ECLOSED (detach then still leaves o detached). */
int rl_elect_attach(rlock *obj, rl_eobs *o);
int rl_elect_detach(rlock *obj, rl_eobs *o);

/* At client shutdown (rl_family_shutdown, through the family's
 * close_watches) every observer is detached and every observation ends. */

#endif
