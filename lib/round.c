/*
 * Quorum round bookkeeping; see round.h for what a round is. The command
 * is formatted once and the same bytes go to every master (the connection
 * takes an array of buffers, so that a part that differs per master can
 * be added without copying the rest).
 *
 * A master that refused its connection's handshake (a wrong password, a
 * database it does not have) answers every command with that refusal:
 * the round counts it as an error reply, so that the caller gets
 * RLOCK_EREDIS and the server's text rather than "no quorum".
 */
#include "round.h"

#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "ops.h"
#include "resp.h"
#include "scripts.h"
#include "util.h"

const char rl_arg_master_deadline[] = "<master deadline>";

rl_round *rl_round_new(struct rlock_client *c, const rl_round_ops *ops,
                       void *data, int script, int argc, const char **argv,
                       const size_t *argvlen) {
  int clocked = argc > 0 && argv[argc - 1] == rl_arg_master_deadline;
  if (clocked) argc--; /* appended by each connection */
  int n = c->nmasters;
  int total = argc + (script >= 0 ? 1 : 0);
  size_t strbytes = 0;
  for (int i = 0; i < argc; i++)
    if (argv[i] != NULL) strbytes += argvlen[i] + 1;
  /* The RESP size: each argument costs its length plus at most 26 bytes
   * of framing; the exact size is computed once the vector is built. */
  size_t respmax = 32 + 47 + 8 + 26 * (size_t)total + strbytes;
  size_t size = sizeof(rl_round) + sizeof(rl_round_slot) * (size_t)n +
                sizeof(char *) * (size_t)total +
                sizeof(size_t) * (size_t)total + strbytes + respmax;
  rl_round *r = calloc(1, size);
  if (r == NULL) return NULL;
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
  return r;
}

static void maybe_free(rl_round *r) {
  if (r->refs > 0 || !r->decided) return;
  if (r->ops && r->ops->release) r->ops->release(r);
  free(r);
}

void rl_round_discard(rl_round *r) {
  if (r->ops && r->ops->release) r->ops->release(r);
  free(r);
}

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
static void note_refusal(rl_round *r, int i) {
  char text[sizeof r->client->conns[i].err];
  memcpy(text, r->client->conns[i].err, sizeof text);
  r->slot[i].error_reply = 1;
  rl_client_note_error(r->client, text, strlen(text));
}

static void on_cmd(rl_cmd *cmd, redisReply *reply, int status) {
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
      note_refusal(r, i);
    } else if (reply != NULL) {
      if (reply->type == REDIS_REPLY_ERROR) {
        sl->error_reply = 1;
        r->client->conns[i].errors++;
        rl_client_note_error(r->client, reply->str, reply->len);
      } else {
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

/* Sends to master i; 0, or the connection's refusal. */
static int send_to(rl_round *r, int i) {
  rl_conn *conn = &r->client->conns[i];
  int rc = r->clocked ? rl_conn_send_clocked(conn, &r->wire, 1,
                                             r->args.script,
                                             r->args.no_resend, on_cmd, r, i)
                      : rl_conn_send(conn, &r->wire, 1, r->args.script,
                                     r->args.no_resend, on_cmd, r, i);
  if (rc == 0) r->refs++;
  return rc;
}

void rl_round_send(rl_round *r) {
  r->t_start = rl_now_ms();
  for (int i = 0; i < r->n; i++) {
    int rc = send_to(r, i);
    if (rc != 0) {
      if (rc == RL_CONN_EREFUSED) note_refusal(r, i);
      r->slot[i].vote = RL_VOTE_FAIL;
      count(r, RL_VOTE_FAIL);
    }
  }
  r->refs--;
  maybe_decide(r);
  maybe_free(r);
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
