/*
 * One connection to one master: a stream (stream.h) with Redis on top.
 * It connects with a timeout, runs the handshake, writes commands,
 * parses replies with hiredis's reply reader and hands each to its
 * command in order, keeps per-command deadlines, retries a dropped
 * connection with backoff, and closes gracefully. Loop thread only, save
 * the atomic counters and the error text, which metrics read from any
 * thread.
 *
 * Commands. rl_conn_send takes the command as buffers written back to
 * back; they belong to the sender and must stay valid until the command's
 * final callback (a NOSCRIPT fallback writes them again). A command's
 * callback runs once with a final status (REPLY, LATE, DROPPED or
 * REFUSED). If its deadline passes first, it also runs once before that
 * with TIMEOUT: the command has failed as far as a round is concerned,
 * but the connection keeps it until the master answers, because a reply
 * cannot be cancelled and a late grant must still be seen (and undone).
 *
 * The handshake, pipelined in one write before the connection counts as
 * ready: AUTH (with the URL's user, if any), SELECT when the db is not 0,
 * CLIENT SETNAME (a NOPERM is tolerated), then in command mode INFO
 * server, TIME, SCRIPT LOAD of every script and the owner's extra
 * commands (which may EVALSHA the scripts). Nothing else is written
 * before it succeeded. An error reply to
 * any of it (but a tolerated one) refuses the connection: it closes, the
 * commands waiting for it complete REFUSED, and the text is kept in err.
 *
 * Readiness. While the first connection attempt since rl_conn_start is in
 * progress, and during any handshake, commands are kept and written once
 * the handshake succeeded (they complete DROPPED or REFUSED if it fails);
 * the connect timeout bounds that wait. Otherwise, while the connection
 * is down, rl_conn_send fails at once, so a dead master costs a round
 * nothing (a round that must reach a master once it is back sends again
 * itself: round.h, resend_until_ms).
 *
 * Close. rl_conn_close completes every command DROPPED, once, except that
 * fire-and-forget commands (no_resend: undos, releases) not yet written
 * are written first; commands whose sender waits for a reply that will
 * never be read are not. What was written is then sent before the socket
 * closes, bounded by the command timeout.
 */
#ifndef RL_CONN_H
#define RL_CONN_H

#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "list.h"
#include "rlock.h"
#include "stream.h"
#include "tls.h"
#include "url.h"

enum {
  RL_CMD_REPLY = 0,   /* final: the reply, in time */
  RL_CMD_TIMEOUT = 1, /* not final: the deadline passed, reply is NULL */
  RL_CMD_LATE = 2,    /* final: the reply, after a TIMEOUT */
  RL_CMD_DROPPED = 3, /* final: no reply will come (connection lost) */
  RL_CMD_REFUSED = 4  /* final: the master refused the handshake; reply is
                         NULL and conn->err has the master's text */
};

enum {
  RL_CONN_DOWN = 0,
  RL_CONN_CONNECTING, /* the stream is connecting (TLS handshake too) */
  RL_CONN_HANDSHAKE,  /* the Redis handshake is in flight */
  RL_CONN_READY,
  RL_CONN_CLOSED
};

/* What the connection is for: it decides the handshake, and how replies
 * are matched. */
enum {
  RL_CONN_COMMAND = 0,  /* the full handshake; replies in order */
  RL_CONN_SUBSCRIBER,   /* AUTH, SELECT, SETNAME; messages go to on_push */
  RL_CONN_BARE          /* AUTH and SELECT only (the tool) */
};

/* rl_conn_send's failures, as public codes (one code space). A master
 * that cannot be sent to is a vote missing from the quorum, hence
 * ENOQUORUM; a master that refused the handshake (AUTH, SELECT) answered
 * with an error reply, hence EREDIS. */
#define RL_CONN_EDOWN RLOCK_ENOQUORUM /* not connected, or out of memory */
#define RL_CONN_EREFUSED RLOCK_EREDIS /* down because the master refused
                                         the handshake: conn->err says why */

/* Every command in a pipeline, a NOSCRIPT fallback's resend included,
 * is bounded by this many buffers. */
#define RL_CONN_MAX_BUFS 4

typedef struct rl_cmd rl_cmd;
typedef struct rl_conn rl_conn;
typedef void (*rl_cmd_cb)(rl_cmd *cmd, redisReply *reply, int status);

struct rl_cmd {
  rl_list node; /* in one of conn's lists, in send order */
  rl_conn *conn;
  uint64_t deadline; /* loop ms; 0 for none */
  int timed_out;
  int script;    /* an rl_script_id when it is EVALSHA, else -1 */
  int no_resend; /* fire-and-forget: never written twice */
  int fallback;  /* written again after NOSCRIPT */
  int kind;      /* 0, or what the connection's own command is for */
  int clocked;   /* rl_conn_send_clocked: a master-clock deadline is
                    appended at each write */
  int64_t until_us; /* on rl_conn_now_us's clock: deadline's start plus
                       the command timeout; 0 for none */
  int64_t fixed_until_us; /* rl_conn_send_until: the deadline given, or 0 */
  int64_t queued_us; /* the connection's TIME: when it was queued, at or
                        before it was written */
  /* A subscriber connection's UNSUBSCRIBE: the channel, to tell its reply
   * from the same words pushed unasked (rl_conn_send_sub). */
  const char *sub_channel;
  size_t sub_channel_len;
  int sub_unsubscribe;
  rl_cmd_cb cb;
  void *data;
  int idx;
  unsigned nbufs;
  uv_buf_t bufs[RL_CONN_MAX_BUFS];
};

typedef struct rl_conn_config {
  uint64_t command_timeout_ms; /* 0: commands have no deadline */
  uint64_t connect_timeout_ms; /* connect, TLS and Redis handshakes */
  int mode;                    /* RL_CONN_COMMAND, ... */
  const char *client_name;     /* CLIENT SETNAME; NULL for none */
  rl_tls_ctx *tls;             /* for rediss:// masters */
  const char *tls_server_name; /* NULL: the URL's host */
  int cluster;                 /* a cluster node: its scripts' forms too */
} rl_conn_config;

/*
 * An owner's extra handshake command's reply (an error reply included).
 * Return 0 to go on, nonzero to refuse the connection (with the reply's
 * text when it is an error reply).
 */
typedef int (*rl_conn_extra_cb)(rl_conn *conn, int i, const redisReply *reply,
                                void *data);

struct rl_conn {
  uv_loop_t *loop;
  rl_url url; /* host is numeric once resolved */
  const rl_conn_config *cfg;
  rl_stream *stream; /* the current attempt's, or NULL */
  void *reader;      /* its redisReader */
  int state;
  int first;   /* the first attempt since rl_conn_start is in progress */
  int refused; /* the last attempt's handshake was refused */
  uv_timer_t timer;   /* command deadlines, and the connect timeout */
  uv_timer_t retry;   /* reconnect backoff; when ready, the TIME refresh */
  uv_prepare_t flush; /* writes what was queued before the loop blocks */
  int handles_open;
  rl_list pending; /* written, awaiting a reply */
  rl_list unsent;  /* queued while ready, to be written */
  rl_list waiting; /* sent before the handshake completed */
  int hs_left;     /* handshake replies still to come */
  uint64_t backoff_ms;
  /* A host name that did not resolve at open is resolved before each
   * attempt until it does, off the loop (uv_getaddrinfo runs getaddrinfo
   * on libuv's thread pool): resolving while the request is out,
   * resolve_wanted while the current attempt waits for its answer (an
   * attempt that timed out no longer does; the answer is kept for the
   * next), unresolved until an answer gave an address. */
  uv_getaddrinfo_t gai;
  int resolving, resolve_wanted, unresolved;
  int replied; /* the current attempt's master has sent a reply */
  int dispatching; /* inside the reply loop */
  /* A failure found off the loop thread (a caller reading its own
   * replies, lib/lock/fast.c), to be reported by the loop: its timer fires at
   * once and fails the attempt there, so that the owner's hooks (the
   * log, user code) never run on that caller. */
  int fail_deferred;
  int deferred_refused, deferred_tls;
  char deferred_why[160];
  /* Counters, read by metrics snapshots from any thread. */
  atomic_uint_fast64_t connects; /* completed handshakes so far */
  atomic_uint_fast64_t timeouts; /* commands that passed their deadline */
  atomic_uint_fast64_t errors;   /* error replies, refused handshakes */
  atomic_int up;                 /* ready and not stalled */
  int stalled; /* a command passed its deadline with no reply since */
  /* The master's run_id at the last handshake (set before on_info), and
   * the restarts the owner noticed (counted by its on_info hook: the
   * restart quarantine is the lock layer's, lib/quorum/quarantine.c). */
  char run_id[48];
  /* INFO said redis_mode (Valkey: server_mode) standalone: not a cluster
   * node (whose scripts may not touch a key of another slot, such as the
   * lease horizon). */
  int standalone;
  atomic_uint_fast64_t restarts;
  /* The master's clock, from TIME: master_wall_us >= now_us +
   * clock_offset_us held at clock_at_us; read it with
   * rl_conn_clock_offset, which ages it. */
  int64_t clock_offset_us;
  int64_t clock_at_us;
  /* And an upper bound: master_wall_us <= now_us + clock_upper_us, held
   * at clock_upper_at_us (from when the TIME was queued, not when its
   * reply came); aged upward when read. */
  int64_t clock_upper_us;
  int64_t clock_upper_at_us;
  int clock_valid;
  /* While the estimate is loose (conn.c), the wait before the TIME after
   * the next; 0 when it is not. */
  uint64_t clock_resample_ms;
  /* Why the connection is not up ("" while it is), loop thread; err_copy
   * is the same for other threads, under errmu. */
  char err[160];
  char err_copy[160];
  uv_mutex_t errmu;
  char logged[160]; /* the last error logged, to log each text once */
  /* The owner's extra handshake commands (rl_conn_set_handshake_extra). */
  char *extra;
  size_t extra_len;
  int extra_n;
  rl_conn_extra_cb extra_cb;
  void *extra_data;

  /* The master the connection serves (master.h), or NULL. */
  struct rl_master *master;

  /* Hooks for the owner; each optional, set before rl_conn_start. */
  void *data;
  /* Called on every change of state. */
  void (*on_state)(rl_conn *conn, int state);
  /* After the INFO reply, before the connection is ready and before any
   * reply to a non-handshake command is delivered. uptime_ms is at most
   * the server's real uptime when it answered: the whole seconds it
   * reports, less the second they may overstate (conn.c). */
  void (*on_info)(rl_conn *conn, const char *run_id, uint64_t uptime_ms);
  /* A failed connection attempt: refused is 1 when the master refused the
   * handshake, tls 1 when TLS failed. Called once per change of text. */
  void (*on_error)(rl_conn *conn, const char *text, int refused, int tls);
  /* Subscriber mode: a message (["message", channel, payload], or
   * "smessage", "pmessage"), or an unsubscribe no command asked for
   * (["sunsubscribe", channel, count]: a cluster node dropped a shard
   * channel whose slot left it). */
  void (*on_push)(rl_conn *conn, const redisReply *msg);
  /* Connection events for the owner's log. */
  void (*on_log)(rl_conn *conn, int level, const char *msg);
  /* After rl_conn_close, once every handle has closed. */
  void (*on_closed)(rl_conn *conn);
};

/* Initializes (the error mutex too) and starts connecting. 0 or a
 * negative libuv error. */
int rl_conn_start(rl_conn *conn, uv_loop_t *loop, const rl_url *url,
                  const rl_conn_config *cfg);

/*
 * Sends a command: nbufs (at most RL_CONN_MAX_BUFS) buffers written back
 * to back, which stay the sender's and valid until the final callback.
 * script is the rl_script_id of an EVALSHA command, or -1; after a
 * NOSCRIPT reply a command with no_resend 0 is written again after a
 * SCRIPT LOAD, one with no_resend 1 completes with the NOSCRIPT reply. It
 * is written before the loop next blocks (or by rl_conn_flush). Returns
 * 0 and later calls cb, or RL_CONN_EDOWN or RL_CONN_EREFUSED and never
 * calls cb.
 */
int rl_conn_send(rl_conn *conn, const uv_buf_t *bufs, unsigned nbufs,
                 int script, int no_resend, rl_cmd_cb cb, void *data, int idx);

/*
 * rl_conn_send for a command whose last argument is a deadline in the
 * master's own clock, after which the master must not act on it (the
 * acquire script grants nothing late). The connection appends that
 * argument itself each time it writes the command: the moment it stops
 * waiting for the reply (the command's own deadline: now plus
 * command_timeout_ms, counted from when the handshake completed for a
 * command that waited for it) in microseconds of the master's wall clock,
 * through rl_conn_clock_offset, whose estimate is a lower bound (so a
 * master may refuse a grant a little early, never late); "0" (none) when
 * there is no estimate or commands have no deadline. The offset is known
 * by the time anything is written: the handshake measures it before
 * commands that waited for it go out. The RESP array header in bufs must
 * count that argument.
 */
int rl_conn_send_clocked(rl_conn *conn, const uv_buf_t *bufs, unsigned nbufs,
                         int script, int no_resend, rl_cmd_cb cb, void *data,
                         int idx);

/*
 * rl_conn_send (clocked 0) or rl_conn_send_clocked (clocked 1) with the
 * command's deadline given: until_us on rl_conn_now_us's clock instead of
 * now plus command_timeout_ms (0: that default). A command routed through
 * redirects keeps its first attempt's deadline this way, and a clocked
 * one tells the master that same deadline, in its own clock. A deadline
 * already past times the command out at once (it is still written: its
 * reply is LATE).
 */
int rl_conn_send_until(rl_conn *conn, const uv_buf_t *bufs, unsigned nbufs,
                       int script, int no_resend, int clocked,
                       int64_t until_us, rl_cmd_cb cb, void *data, int idx);

/*
 * Subscriber mode: sends a SUBSCRIBE-like (unsubscribe 0) or
 * UNSUBSCRIBE-like (unsubscribe 1) command of one channel, fire-and-forget
 * and without a deadline. The channel (valid until the callback) lets the
 * reply to an UNSUBSCRIBE be told from an unsubscribe the server pushes by
 * itself: a ["sunsubscribe", channel, n] is this command's reply only when
 * this command is the oldest one waiting, else it goes to on_push.
 */
int rl_conn_send_sub(rl_conn *conn, const uv_buf_t *bufs, unsigned nbufs,
                     const char *channel, size_t len, int unsubscribe,
                     rl_cmd_cb cb, void *data, int idx);

/* Writes the commands sent since the last write now. */
void rl_conn_flush(rl_conn *conn);

/*
 * Adds commands to every later handshake, after INFO, TIME and the
 * scripts (command mode): n commands in RESP, back to back in
 * resp[0..len) (copied). Their replies go to cb in order, before the
 * connection is ready and before any other command's reply. n = 0 removes
 * them. A handshake already written keeps the commands it had. 0, or
 * RLOCK_ENOMEM.
 */
int rl_conn_set_handshake_extra(rl_conn *conn, const char *resp, size_t len,
                                int n, rl_conn_extra_cb cb, void *data);

/* Microseconds on CLOCK_MONOTONIC: the clock clock offsets are from. */
int64_t rl_conn_now_us(void);

/*
 * The master's clock: 1 and *offset_us such that, barring a step of the
 * master's wall clock, master_wall_us >= rl_conn_now_us() + *offset_us
 * for as long as the connection lives (the estimate from the handshake's
 * TIME, the tightest of its refreshes about every 30 s, sooner while a
 * reply read late leaves it loose (conn.c), aged by 500 ppm of drift); 0
 * when there is none (not connected yet).
 */
int rl_conn_clock_offset(const rl_conn *conn, int64_t *offset_us);

/* 1 if commands are written at once (not waiting, not failing). */
static inline int rl_conn_ready(const rl_conn *conn) {
  return conn->state == RL_CONN_READY;
}

/*
 * For a caller that finishes its own round under the client's loop lock
 * (lib/lock/fast.c): 1 if the connection is ready, nothing is queued or waiting
 * on it, and every command written and unanswered is the connection's
 * own clock refresh or script load, or one that settled says is settled
 * (its reply runs no user code; settled may be NULL: none is), so that
 * every reply it reads next is one of those or answers a command sent
 * from then on.
 */
int rl_conn_idle(const rl_conn *conn, int (*settled)(const rl_cmd *cmd));

/*
 * For a caller that waits for a pub/sub message on its own thread under
 * the client's loop lock (lib/lock/fast.c's own wait): 1 if this subscriber
 * connection is ready, plain TCP, nothing waits for its handshake, and
 * every command queued or unanswered on it is a SUBSCRIBE or UNSUBSCRIBE
 * of channel (or the connection's own), so that every reply it reads
 * next is a message or one of those.
 */
int rl_conn_sub_idle(const rl_conn *conn, const char *channel, size_t len);

/* rl_stream_mute for the connection's stream, if it has one. */
void rl_conn_mute(rl_conn *conn, int mute);

/* The socket to poll(2) while commands written on a ready connection
 * await their replies; -1 when none do (or it is not ready). */
int rl_conn_awaiting_fd(const rl_conn *conn);

/* The same caller, before it waits long: the command timer is armed for
 * the first deadline of a command still unanswered, or stopped when there
 * is none (it is left armed after a reply, and would end the wait for
 * nothing when it fired). */
void rl_conn_timer_settle(rl_conn *conn);

/* The socket of a ready connection (for poll(2)), or -1. */
int rl_conn_fd(const rl_conn *conn);

/*
 * The same caller: reads the replies the kernel holds and hands each to
 * its command, on the calling thread (rl_stream_off_loop set). 1 if any
 * bytes came, 0 if none; -1 when the loop must take over: the stream
 * ended or failed, or a failure was found and deferred to the loop.
 */
int rl_conn_read_off_loop(rl_conn *conn);

/*
 * Whether a master's error reply to SCRIPT LOAD says that it has no Lua
 * scripting at all, rather than refusing this script: Valkey 9 built or
 * run without its Lua engine answers "ERR Could not find scripting engine
 * 'lua'", and a server whose SCRIPT command is renamed away or removed
 * "ERR unknown command 'SCRIPT'..." (or "unknown subcommand"). The
 * handshake then fails with a text that says so, since rlock cannot work
 * on such a master; other refusals (NOPERM, OOM, ...) keep the master's
 * own text.
 */
int rl_conn_no_scripting(const char *text, size_t len);

/* Copies the connection's error text ("" while up) for any thread. */
void rl_conn_error_text(rl_conn *conn, char *buf, size_t size);

/* Closes the connection; see the top of this file. on_closed follows. */
void rl_conn_close(rl_conn *conn);

#endif
