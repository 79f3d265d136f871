/*
 * Quorum round bookkeeping; see round.h for what a round is. The command
 * is formatted once and the same bytes go to every master (the connection
 * takes an array of buffers, so that a part that differs per master can
 * be added without copying the rest: a cluster node runs the shard form
 * of a script that publishes, whose SHA replaces the one in the bytes).
 * Each master decides where its command goes (master.h): the round gives
 * it the slot of the command's first key, or, for a batch grouped by
 * node, the node.
 *
 * A master that refused its connection's handshake (a wrong password, a
 * database it does not have) answers every command with that refusal:
 * the round counts it as an error reply, so that the caller gets
 * RLOCK_EREDIS and the server's text rather than "no quorum".
 *
 * A master whose connection is down when the round is sent (it dropped,
 * and reconnects) fails at once, unless the round has a resend deadline
 * (resend_until_ms): then the command waits, unwritten, and a timer of
 * the round's own tries to send it every RL_RESEND_POLL_MS until the
 * connection takes it, the deadline passes, the round is decided by the
 * others, or the client closes. A refusal stays an error at once.
 */
#include "round.h"

#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "quarantine.h"
#include "resp.h"
#include "scripts.h"
#include "slot.h"
#include "util.h"

const char rl_arg_master_deadline[] = "<master deadline>";

/* The slot of a command's first key: an EVALSHA's first declared key, or
 * a plain command's first argument; RL_MCMD_ANY_SLOT for a script that
 * declares none. */
static int command_slot(const rl_argv *a) {
  if (a->script >= 0) {
    if (a->argc < 4 || (a->argvlen[2] == 1 && a->argv[2][0] == '0'))
      return RL_MCMD_ANY_SLOT;
    return rl_slot_of(a->argv[3], a->argvlen[3]);
  }
  return a->argc >= 2 ? rl_slot_of(a->argv[1], a->argvlen[1])
                      : RL_MCMD_ANY_SLOT;
}

/* copy: keep the arguments in the round (rl_round_new), or only the
 * formatted command (rl_round_new_wire). */
static rl_round *round_new(struct rlock_client *c, const rl_round_ops *ops,
                           void *data, int script, int argc,
                           const char **argv, const size_t *argvlen,
                           int copy) {
  int clocked = argc > 0 && argv[argc - 1] == rl_arg_master_deadline;
  if (clocked) argc--; /* appended by each connection */
  int n = c->nmasters;
  int total = argc + (script >= 0 ? 1 : 0);
  size_t strbytes = 0;
  for (int i = 0; i < argc; i++)
    if (argv[i] != NULL) strbytes += argvlen[i] + 1;
  size_t keptbytes = copy ? strbytes : 0;
  /* The RESP size: each argument costs its length plus at most 26 bytes
   * of framing; the exact size is computed once the vector is built. */
  size_t respmax = 32 + 47 + 8 + 26 * (size_t)total + strbytes;
  size_t size = sizeof(rl_round) + sizeof(rl_round_slot) * (size_t)n +
                sizeof(char *) * (size_t)total +
                sizeof(size_t) * (size_t)total + keptbytes + respmax;
  /* Only the round and its slots start zeroed: clearing the rest, which is
   * written below, cost a renewal of a hundred locks a fifth of its work. */
  rl_round *r = malloc(size);
  if (r == NULL) return NULL;
  memset(r, 0, sizeof(rl_round) + sizeof(rl_round_slot) * (size_t)n);
  r->client = c;
  r->ops = ops;
  r->data = data;
  r->n = n;
  r->quorum = n / 2 + 1;
  r->refs = 1;
  const char **av = (const char **)(void *)&r->slot[n];
  size_t *al = (size_t *)(void *)(av + total);
  char *s = (char *)(al + total);
  int j = 0;
  if (script >= 0) {
    av[j] = "EVALSHA";
    al[j++] = 7;
    av[j] = rl_script_sha((rl_script_id)script);
    al[j++] = 40;
  }
  for (int i = 0; i < argc; i++) {
    if (argv[i] == NULL) continue; /* the EVALSHA placeholder */
    if (!copy) { /* the caller's, read only below */
      av[j] = argv[i];
      al[j++] = argvlen[i];
      continue;
    }
    memcpy(s, argv[i], argvlen[i]);
    s[argvlen[i]] = '\0';
    av[j] = s;
    al[j++] = argvlen[i];
    s += argvlen[i] + 1;
  }
  r->args.argc = j;
  r->args.argv = av;
  r->args.argvlen = al;
  r->args.script = script;
  r->clocked = clocked;
  /* One allocation for the round, its arguments and the formatted
   * command, which every master is sent (its header counts the deadline
   * a connection appends). */
  r->wire =
      uv_buf_init(s, (unsigned)rl_resp_write_head(s, clocked, j, av, al));
  if (script >= 0) {
    /* "*N\r\n$7\r\nEVALSHA\r\n$40\r\n" comes before the SHA. */
    const char *sha = memchr(s, '\n', r->wire.len);
    r->sha_off = (size_t)(sha - s) + 1 + 13 + 5;
  }
  r->key_slot = command_slot(&r->args);
  if (!copy) { /* the strings are the caller's, gone once this returns */
    r->args.argc = 0;
    r->args.argv = NULL;
    r->args.argvlen = NULL;
  }
  return r;
}

rl_round *rl_round_new(struct rlock_client *c, const rl_round_ops *ops,
                       void *data, int script, int argc, const char **argv,
                       const size_t *argvlen) {
  return round_new(c, ops, data, script, argc, argv, argvlen, 1);
}

rl_round *rl_round_new_wire(struct rlock_client *c, const rl_round_ops *ops,
                            void *data, int script, int argc,
                            const char **argv, const size_t *argvlen) {
  return round_new(c, ops, data, script, argc, argv, argvlen, 0);
}

int rl_round_pin(rl_round *r, rl_conn *const *nodes, int node_script,
                 int node_argc, const char **node_argv,
                 const size_t *node_argvlen) {
  size_t npin = sizeof(rl_conn *) * (size_t)r->n;
  const char **av = malloc(sizeof *av * (size_t)(node_argc + 1));
  size_t *al = malloc(sizeof *al * (size_t)(node_argc + 1));
  if (av == NULL || al == NULL) {
    free(av);
    free(al);
    return RLOCK_ENOMEM;
  }
  int j = 0;
  av[j] = "EVALSHA";
  al[j++] = 7;
  av[j] = rl_script_sha((rl_script_id)node_script);
  al[j++] = 40;
  for (int i = 0; i < node_argc; i++) {
    if (node_argv[i] == NULL) continue;
    av[j] = node_argv[i];
    al[j++] = node_argvlen[i];
  }
  size_t wlen = rl_resp_size(j, av, al);
  char *p = malloc(npin + wlen);
  if (p == NULL) {
    free(av);
    free(al);
    return RLOCK_ENOMEM;
  }
  r->pinned = (rl_conn **)(void *)p;
  memcpy(r->pinned, nodes, npin);
  r->node_wire = uv_buf_init(p + npin, (unsigned)rl_resp_write(p + npin, j,
                                                               av, al));
  r->node_script = node_script;
  free(av);
  free(al);
  return 0;
}

static void round_free(rl_round *r) {
  if (r->ops && r->ops->release) r->ops->release(r);
  free(r->pinned); /* with node_wire */
  free(r);
}

static void maybe_free(rl_round *r) {
  if (r->refs > 0 || !r->decided) return;
  round_free(r);
}

void rl_round_discard(rl_round *r) { round_free(r); }

static void decide(rl_round *r, int outcome) {
  r->decided = 1;
  r->outcome = outcome;
  r->t_decided = rl_now_ms();
  if (r->ops && r->ops->done) r->ops->done(r);
}

static void maybe_decide(rl_round *r) {
  if (r->decided) return;
  if (r->wait_all && r->yes + r->no + r->fail < r->n) return;
  if (r->yes >= r->quorum)
    decide(r, RL_VOTE_YES);
  else if (r->no + r->fail > r->n - r->quorum)
    decide(r, RL_VOTE_NO);
}

static void count(rl_round *r, int vote) {
  if (vote == RL_VOTE_YES)
    r->yes++;
  else if (vote == RL_VOTE_NO)
    r->no++;
  else
    r->fail++;
}

/* A master that refused the handshake: an error reply, whose text the
 * connection kept (and counted). */
static void note_refusal(rl_round *r, int i, const rl_conn *node) {
  char text[sizeof node->err];
  if (node != NULL) {
    memcpy(text, node->err, sizeof text);
  } else {
    rlock_master_metrics mm;
    rl_master_metrics(r->client->masters[i], &mm);
    snprintf(text, sizeof text, "%s", mm.error);
  }
  r->slot[i].error_reply = 1;
  rl_client_note_error(r->client, text, strlen(text));
}

static void on_resend(uv_timer_t *t);

static void on_cmd(rl_mcmd *cmd, rl_conn *node, redisReply *reply,
                   int status) {
  rl_round *r = cmd->data;
  int i = cmd->idx;
  rl_round_slot *sl = &r->slot[i];
  if (status == RL_CMD_TIMEOUT) {
    if (sl->vote == RL_VOTE_PENDING) {
      sl->vote = RL_VOTE_FAIL;
      sl->timed_out = 1;
      count(r, RL_VOTE_FAIL);
      maybe_decide(r);
    }
    return;
  }
  r->refs--;
  if (sl->vote == RL_VOTE_PENDING && !r->decided) {
    int vote = RL_VOTE_FAIL;
    if (status == RL_CMD_REFUSED) {
      note_refusal(r, i, node);
    } else if (reply != NULL) {
      if (reply->type == REDIS_REPLY_ERROR) {
        sl->error_reply = 1;
        rl_master_count_error(r->client->masters[i], node);
        rl_client_note_error(r->client, reply->str, reply->len);
      } else {
        sl->node_quarantined =
            r->client->hooks->node_quarantined(r->client, i, node);
        sl->answered = node;
        vote = r->ops->classify(r, i, reply);
      }
    }
    sl->vote = vote;
    count(r, vote);
    maybe_decide(r);
  } else if (r->ops && r->ops->late) {
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR) reply = NULL;
    r->ops->late(r, i, reply);
  }
  maybe_free(r);
}

/* The command's bytes for a node of the given flavor (master.h). */
static unsigned encode(rl_mcmd *c, int flavor, uv_buf_t *bufs, int *script) {
  rl_round *r = c->data;
  int s = r->args.script;
  if (flavor == RL_FLAVOR_CLUSTER && r->pinned != NULL) {
    bufs[0] = r->node_wire;
    *script = r->node_script;
    return 1;
  }
  int v = s >= 0 && flavor == RL_FLAVOR_CLUSTER
              ? (int)rl_script_shard((rl_script_id)s)
              : s;
  *script = v;
  if (v == s) {
    bufs[0] = r->wire;
    return 1;
  }
  /* The same bytes around another SHA of the same length. */
  bufs[0] = uv_buf_init(r->wire.base, (unsigned)r->sha_off);
  bufs[1] = uv_buf_init((char *)rl_script_sha((rl_script_id)v), 40);
  bufs[2] = uv_buf_init(r->wire.base + r->sha_off + 40,
                        (unsigned)(r->wire.len - r->sha_off - 40));
  return 3;
}

/* Sends to master i; 0, or the master's refusal. */
static int send_to(rl_round *r, int i) {
  rl_mcmd *c = &r->slot[i].cmd;
  c->slot = r->key_slot;
  c->node = NULL;
  if (r->pinned != NULL) {
    c->node = r->pinned[i];
    if (c->node == NULL) return RL_CONN_EDOWN;
  }
  c->no_resend = r->args.no_resend;
  c->clocked = r->clocked;
  c->durable = rl_script_durable(r->args.script) != 0;
  c->encode = encode;
  c->cb = on_cmd;
  c->data = r;
  c->idx = i;
  int rc = rl_master_send(r->client->masters[i], c);
  if (rc == 0) r->refs++;
  return rc;
}

/* --- sending again once a connection is back ----------------------------- */

/* How often a round with unsent masters tries them again. */
#define RL_RESEND_POLL_MS 10

typedef struct rl_resend {
  uv_timer_t timer;
  rl_round *round;
  rlock_client *client; /* outlives the timer's close (handles_open) */
} rl_resend;

static void on_resend_closed(uv_handle_t *h) {
  rl_resend *s = h->data;
  rlock_client *c = s->client;
  free(s);
  if (--c->handles_open == 0) rl_client_unref(c);
}

/* The resend timer, while r has unsent masters; 0 or -1 (out of
 * memory). */
static int resend_start(rl_round *r) {
  rl_resend *s = malloc(sizeof *s);
  if (s == NULL) return -1;
  s->round = r;
  s->client = r->client;
  uv_timer_init(r->client->loop, &s->timer);
  s->timer.data = s;
  uv_timer_start(&s->timer, on_resend, RL_RESEND_POLL_MS, RL_RESEND_POLL_MS);
  r->client->handles_open++;
  r->refs++; /* the timer's, until it stops */
  return 0;
}

/* Counts master i, still unsent, as failed (refused: with the master's
 * refusal). */
static void unsent_fails(rl_round *r, int i, int refused) {
  r->slot[i].unsent = 0;
  if (r->decided) return;
  if (refused) note_refusal(r, i, NULL);
  r->slot[i].vote = RL_VOTE_FAIL;
  count(r, RL_VOTE_FAIL);
}

static void on_resend(uv_timer_t *t) {
  rl_resend *s = t->data;
  rl_round *r = s->round;
  int stop = r->decided || rl_client_closing(r->client) ||
             rl_now_ms() >= r->resend_until_ms;
  int left = 0;
  for (int i = 0; i < r->n; i++) {
    if (!r->slot[i].unsent) continue;
    int rc = stop ? RL_CONN_EDOWN : send_to(r, i);
    if (rc == 0)
      r->slot[i].unsent = 0;
    else if (stop || rc == RL_CONN_EREFUSED)
      unsent_fails(r, i, rc == RL_CONN_EREFUSED);
    else
      left++;
  }
  maybe_decide(r);
  if (left > 0 && !r->decided) return;
  /* Decided by the others, or nothing left to send: a master still
   * unsent no longer matters. */
  for (int i = 0; i < r->n; i++) r->slot[i].unsent = 0;
  uv_timer_stop(&s->timer);
  uv_close((uv_handle_t *)&s->timer, on_resend_closed);
  r->refs--;
  maybe_free(r);
}

void rl_round_send(rl_round *r) {
  r->t_start = rl_now_ms();
  int later = r->resend_until_ms > r->t_start && !rl_client_closing(r->client);
  int unsent = 0;
  for (int i = 0; i < r->n; i++) {
    int rc = send_to(r, i);
    if (rc == RL_CONN_EDOWN && later) {
      r->slot[i].unsent = 1; /* sent when its connection is back */
      unsent++;
    } else if (rc != 0) {
      if (rc == RL_CONN_EREFUSED) note_refusal(r, i, NULL);
      r->slot[i].vote = RL_VOTE_FAIL;
      count(r, RL_VOTE_FAIL);
    }
  }
  if (unsent > 0 && resend_start(r) != 0)
    for (int i = 0; i < r->n; i++)
      if (r->slot[i].unsent) unsent_fails(r, i, 0);
  r->refs--;
  maybe_decide(r);
  maybe_free(r);
}

int rl_round_cmd_settled(const rl_mcmd *c) {
  if (c->cb != on_cmd) return 0;
  const rl_round *r = c->data;
  return r->decided &&
         (r->ops == NULL || r->ops->late == NULL || r->late_is_quiet);
}

void rl_round_send_one(rl_round *r, int idx) {
  r->t_start = rl_now_ms();
  r->args.no_resend = 1; /* nobody waits for it: it must not be reordered */
  r->decided = 1;
  r->outcome = RL_VOTE_NO;
  send_to(r, idx);
  r->refs--;
  maybe_free(r);
}

int rl_round_error(const rl_round *r) {
  for (int i = 0; i < r->n; i++)
    if (r->slot[i].error_reply) return RLOCK_EREDIS;
  return RLOCK_ENOQUORUM;
}
