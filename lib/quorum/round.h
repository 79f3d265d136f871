/*
 * Quorum rounds. A round sends one command (usually a script) to every
 * master at once and counts the answers: YES, NO or FAIL (timeout, dropped
 * connection, error reply). It is decided as soon as the outcome is known,
 * YES when a majority said yes, NO when a majority can no longer say yes,
 * without waiting for the slowest master. Answers that come after the
 * decision, or after a master's timeout, go to the operation's late hook:
 * that is where a late grant is undone.
 *
 * A round lives until every master has answered or dropped, so that late
 * replies always find it. Loop thread only.
 */
#ifndef RL_ROUND_H
#define RL_ROUND_H

#include <hiredis/hiredis.h>
#include <stdint.h>

#include "conn.h"
#include "master.h"

struct rlock_client;
typedef struct rl_round rl_round;

/* The argument vector of a round's command, kept for the operations that
 * need it again (an undo names the key and owner of the acquisition). */
typedef struct rl_argv {
  int argc;
  const char **argv;
  size_t *argvlen;
  int script; /* an rl_script_id when argv[0] is EVALSHA, else -1 */
  /* After NOSCRIPT, a command is written again after SCRIPT LOAD, behind
   * every command sent since: fine when the sender waits for this reply
   * before sending anything else about the lock, wrong for a
   * fire-and-forget undo or release, which could then land after the
   * same owner's next acquisition. */
  int no_resend;
} rl_argv;

enum { RL_VOTE_PENDING = 0, RL_VOTE_YES, RL_VOTE_NO, RL_VOTE_FAIL };

typedef struct rl_round_slot {
  int vote;
  int timed_out;
  int error_reply; /* the master answered with an error reply */
  int granted;     /* operation-specific: acquire got a grant here */
  int unsent;      /* not sent yet: the master's connection was down
                     when the round was sent (resend_until_ms) */
  int node_quarantined; /* the node that answered was in restart
                           quarantine then (kinds whose server changes;
                           a single master's is judged by its index) */
  const struct rl_conn *answered; /* the node whose reply was counted */
  int64_t v[3];    /* operation-specific values parsed from the reply */
  rl_mcmd cmd;     /* the command to this master */
} rl_round_slot;

typedef struct rl_round_ops {
  /* Classifies an in-time reply (never NULL, may be an error reply) into
   * RL_VOTE_YES, _NO or _FAIL, keeping what it needs in r->slot[idx]. */
  int (*classify)(rl_round *r, int idx, const redisReply *reply);
  /* Runs once, when the round is decided. */
  void (*done)(rl_round *r);
  /* A final reply (NULL when dropped) that was not counted: it came after
   * the master timed out, or after the round was decided. Optional. */
  void (*late)(rl_round *r, int idx, const redisReply *reply);
  /* Runs just before the round is freed. Optional. */
  void (*release)(rl_round *r);
} rl_round_ops;

struct rl_round {
  struct rlock_client *client;
  const rl_round_ops *ops;
  void *data;
  int n, quorum;
  int yes, no, fail;
  int decided;
  int outcome; /* RL_VOTE_YES or RL_VOTE_NO once decided */
  int keep;    /* acquire: the grants are kept (not undone) */
  int wait_all; /* decide only once every master answered or failed */
  /* Set by the round's maker: its late hook runs no user code (it only
   * keeps or gives back a grant), so a caller in its own round may read a
   * decided round's late reply itself (rl_round_cmd_settled). */
  int late_is_quiet;
  /* 0, or a monotonic ms until which a master whose connection is down
   * (not refused) when the round is sent is not counted as failed: its
   * command is sent once the connection is ready again (polled by a
   * timer of the round's own), or fails at that time. Only a command
   * that was never written is sent later, so nothing a master runs is
   * ever sent to it twice. Set before rl_round_send. */
  uint64_t resend_until_ms;
  int refs;    /* commands still owed a final callback, + 1 until sent */
  uint64_t t_start, t_decided; /* monotonic ms */
  uv_buf_t wire; /* the formatted command, shared by all masters */
  size_t sha_off; /* EVALSHA: where the script's SHA is in wire */
  int clocked;   /* the connection appends a master-clock deadline */
  int key_slot;  /* the slot of its first key (routing), or
                    RL_MCMD_ANY_SLOT */
  /* A batch grouped by node (rl_round_pin): per master, the node it goes
   * to, and the form cluster nodes run (keys in ARGV), or NULL. */
  rl_conn **pinned;
  uv_buf_t node_wire;
  int node_script;
  rl_argv args;
  rl_round_slot slot[];
};

/*
 * Stands, as the last element of a round's argv, for a deadline in each
 * master's own clock (microseconds of its wall clock; "0" for none): the
 * connection to each master computes it and appends it as it writes the
 * command there (rl_conn_send_clocked), so it is right for the clock of
 * whichever server the bytes go to, and it is known even for a command
 * queued before the connection's handshake measured that clock. Its
 * length in argvlen is ignored; it is not in r->args.
 */
extern const char rl_arg_master_deadline[];

/*
 * Creates a round for the client's masters, copying the command: argv[0]
 * is the command name, or NULL with script >= 0 for EVALSHA of that script
 * (then argv[1..] are numkeys, keys and arguments); the last may be
 * rl_arg_master_deadline. NULL when out of memory.
 */
rl_round *rl_round_new(struct rlock_client *c, const rl_round_ops *ops,
                       void *data, int script, int argc, const char **argv,
                       const size_t *argvlen);

/*
 * The same, for a round whose operation never reads its arguments again:
 * the strings are formatted into the command but not kept, and r->args
 * holds the script and no_resend only (argc 0, argv NULL). A renewal call
 * of a hundred locks copied two hundred keys and owners for nothing.
 */
rl_round *rl_round_new_wire(struct rlock_client *c, const rl_round_ops *ops,
                            void *data, int script, int argc,
                            const char **argv, const size_t *argvlen);

/*
 * Makes r a batch grouped by node: master i's command goes to nodes[i] (as
 * rl_master_node_of gave it in this loop turn; NULL: that master fails),
 * unrouted. For cluster nodes, whose scripts cannot declare keys of
 * several slots, it runs node_script with node_argv instead (argv as for
 * rl_round_new, the keys passed as arguments). 0, or RLOCK_ENOMEM.
 */
int rl_round_pin(rl_round *r, rl_conn *const *nodes, int node_script,
                 int node_argc, const char **node_argv,
                 const size_t *node_argvlen);

/* Sends to every master and takes the round's own reference away; the
 * round may be decided (and done run) before this returns, if too few
 * masters are connected (and, with resend_until_ms, the others cannot
 * change the outcome by then). */
void rl_round_send(rl_round *r);

/* Sends to one master only, as a fire-and-forget command (an undo): the
 * round is decided from the start and every reply goes to late. */
void rl_round_send_one(rl_round *r, int idx);

/*
 * 1 if c is a round's command and the round is decided, and what a late
 * reply runs is known to run no user code (no late hook, or the
 * acquisition's, which keeps or undoes the grant): a caller in its own
 * round may read that reply (lib/lock/fast.c).
 */
int rl_round_cmd_settled(const rl_mcmd *c);

/* RLOCK_EREDIS if a master sent an error reply, else RLOCK_ENOQUORUM:
 * the error of a round that could not reach a majority. */
int rl_round_error(const rl_round *r);

/* A master index's vote. */
static inline int rl_round_vote(const rl_round *r, int idx) {
  return r->slot[idx].vote;
}

#endif
