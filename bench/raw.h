/*
 * What rlock sends for one lock+unlock pair, sent by plain synchronous
 * hiredis: the raw floors' side of every ratio. Nothing here links rlock;
 * the script bodies come from the generated floor_scripts.h, the argument
 * layouts from lib/lock/acquire.c (attempt) and lib/lock/release.c (rl_unlock_start).
 * With several masters a command goes to all of them at once (every
 * request written, then every reply read as it arrives), never one master
 * after another: that is the parallel floor of a quorum round.
 */
#ifndef BENCH_RAW_H
#define BENCH_RAW_H

#include <hiredis/hiredis.h>
#include <stdint.h>

#define RAW_MAX_MASTERS 16

typedef struct raw_conns {
  redisContext *c[RAW_MAX_MASTERS];
  int n;
  char acquire_sha[41];
  char unlock_sha[41];
} raw_conns;

/* The keys of one lock named name, as rlock derives them. */
typedef struct raw_lock {
  char key[96], fence[112], channel[112];
} raw_lock;

/* Connects to every master ("host:port") and SCRIPT LOADs the acquire and
 * unlock scripts on each. 0, or -1 with a line on stderr. */
int raw_open(raw_conns *rc, char **masters, int n);
void raw_close(raw_conns *rc);

void raw_lock_init(raw_lock *l, const char *name);
/* An owner id of the shape rlock uses: 32 hex digits, ':', a number. */
void raw_owner(char *buf, size_t size, unsigned seed, unsigned thread);

/* One round of the acquire script on every master (lease 10 s, as the
 * benchmarks use). Returns how many masters granted it, or -1 on an I/O
 * error. *quorum_ns, if not NULL, gets the time from the first write to
 * the reply that made a majority (reading still waits for every reply). */
int raw_acquire(raw_conns *rc, const raw_lock *l, const char *owner,
                uint64_t *quorum_ns);
/* One round of the unlock script; returns how many masters released it
 * (reply 1), or -1 on an I/O error. */
int raw_unlock(raw_conns *rc, const raw_lock *l, const char *owner,
               uint64_t *quorum_ns);

/* The acquire (unlock) command of raw_acquire (raw_unlock), formatted as
 * it goes on the wire, for a client that writes and reads the connection
 * itself (several callers sharing one connection, bench/floor_mux.c).
 * Returns its length and sets *cmd (freed with redisFreeCommand), or -1. */
int raw_format_acquire(raw_conns *rc, const raw_lock *l, const char *owner,
                       char **cmd);
int raw_format_unlock(raw_conns *rc, const raw_lock *l, const char *owner,
                      char **cmd);
/* Whether a reply to those commands granted (released) the lock. */
int raw_granted(const redisReply *r);
int raw_released(const redisReply *r);

/* Pipelined pairs on the first master: for each of the count locks, the
 * acquire then the unlock script, all written at once, then every reply
 * read. Returns how many pairs were granted and released, or -1 on an I/O
 * error. */
int raw_pipelined_pairs(raw_conns *rc, const raw_lock *locks, int count,
                        const char *owner);

/* One hand-off in one round trip on the first master: the unlock script
 * for owner from and the acquire script for owner to, written at once,
 * then both replies read (what a script that releases and grants costs,
 * give or take the second command's parsing). Returns 1 if both worked,
 * 0 if not, -1 on an I/O error. */
int raw_relay(raw_conns *rc, const raw_lock *l, const char *from,
              const char *to);
/* The second half of raw_relay: reads the unlock's and then the
 * acquire's reply on c. 1 if the lock was released and granted, 0 if
 * not, -1 on an I/O error. */
int raw_relay_replies(redisContext *c);

#endif
