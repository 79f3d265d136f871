/*
 * One command connection to one master: connect with a timeout, AUTH and
 * SELECT from the URL, per-command deadlines, EVALSHA with a NOSCRIPT
 * fallback, and reconnection with backoff. Loop thread only.
 *
 * A command's callback runs once with a final status (REPLY, LATE or
 * DROPPED). If its deadline passes first, it also runs once before that
 * with TIMEOUT: the command is then failed as far as a round is concerned,
 * but the connection keeps it until hiredis answers, because a reply
 * cannot be cancelled and a late grant must still be seen (and undone).
 */
#ifndef RL_CONN_H
#define RL_CONN_H

#include <hiredis/async.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "list.h"
#include "url.h"

enum {
  RL_CMD_REPLY = 0,   /* final: the reply, in time */
  RL_CMD_TIMEOUT = 1, /* not final: the deadline passed, reply is NULL */
  RL_CMD_LATE = 2,    /* final: the reply, after a TIMEOUT */
  RL_CMD_DROPPED = 3  /* final: no reply will come (connection lost) */
};

enum { RL_CONN_DOWN = 0, RL_CONN_CONNECTING, RL_CONN_READY, RL_CONN_CLOSED };

typedef struct rl_cmd rl_cmd;
typedef struct rl_conn rl_conn;
typedef void (*rl_cmd_cb)(rl_cmd *cmd, redisReply *reply, int status);
typedef void (*rl_conn_state_cb)(rl_conn *conn, int state);

/* The argument vector of a command, owned by the sender and kept alive
 * until the command's final callback (a NOSCRIPT fallback re-reads it). */
typedef struct rl_argv {
  int argc;
  const char **argv;
  size_t *argvlen;
  int script; /* an rl_script_id when argv[0] is EVALSHA, else -1 */
  /* After NOSCRIPT, a resent EVAL runs after every command sent since:
   * fine when the sender waits for this reply before sending anything
   * else about the lock, wrong for a fire-and-forget undo or release,
   * which could then land after the same owner's next acquisition. */
  int no_resend;
} rl_argv;

struct rl_cmd {
  rl_list node; /* in conn->pending, in send order */
  rl_conn *conn;
  uint64_t deadline;
  int timed_out;
  int fallback; /* resent as EVAL after NOSCRIPT */
  const rl_argv *args;
  rl_cmd_cb cb;
  void *data;
  int idx;
};

typedef struct rl_conn_config {
  uint64_t command_timeout_ms;
  uint64_t connect_timeout_ms;
  int guard_sigpipe;
} rl_conn_config;

struct rl_conn {
  uv_loop_t *loop;
  rl_url url; /* host is numeric once resolved */
  const rl_conn_config *cfg;
  redisAsyncContext *ac;
  int state;
  uv_timer_t timer; /* command deadlines, and the connect timeout */
  uv_timer_t retry; /* reconnect backoff */
  int handles_open;
  rl_list pending;
  uint64_t backoff_ms;
  /* Counters, read by metrics snapshots from any thread. */
  atomic_uint_fast64_t connects; /* successful connections so far */
  atomic_uint_fast64_t timeouts; /* commands that passed their deadline */
  atomic_uint_fast64_t errors;   /* error replies */
  atomic_int up;                 /* 1 while READY */
  /* The server's run_id from the last handshake, and restarts noticed
   * (counted by the owner's on_info hook). */
  char run_id[48];
  atomic_uint_fast64_t restarts;
  /* Called after the handshake's INFO reply, before any reply to a lock
   * command on this connection; optional. */
  void (*on_info)(rl_conn *conn, const char *run_id, uint64_t uptime_ms);
  char err[160];       /* the last connection error, for diagnostics */
  rl_conn_state_cb on_state;
  void *data;
  void (*on_closed)(rl_conn *conn); /* after rl_conn_close's handles close */
  /* Reports connection events for the client's log; optional. */
  void (*on_log)(rl_conn *conn, int level, const char *msg);
};

/* Initializes and starts connecting. 0 or a negative libuv error. */
int rl_conn_start(rl_conn *conn, uv_loop_t *loop, const rl_url *url,
                  const rl_conn_config *cfg);

/*
 * Sends a command. buf/len is the formatted command (redisFormatCommandArgv
 * of *args), shared by every master of a round; args is kept for a
 * NOSCRIPT fallback. Returns 0 and later calls cb, or -1 (not connected)
 * and never calls cb.
 */
int rl_conn_send(rl_conn *conn, const char *buf, size_t len,
                 const rl_argv *args, rl_cmd_cb cb, void *data, int idx);

/* Writes the commands sent since the last flush now (see
 * rl_adapter_flush). */
void rl_conn_flush(rl_conn *conn);

/* 1 if commands can be sent now. */
static inline int rl_conn_ready(const rl_conn *conn) {
  return conn->state == RL_CONN_READY;
}

/*
 * Closes the connection: pending commands get DROPPED (synchronously),
 * timers close, and on_closed runs once libuv has closed them.
 */
void rl_conn_close(rl_conn *conn);

#endif
