/*
 * The kind table's machinery (kind.h): building a script call from its
 * argument codes, and the reentrant lock's own row.
 *
 * Why codes rather than one function per operation and kind: the calls
 * differ only in which values go where, and a string per call keeps each
 * kind's whole protocol on one screen, next to its scripts' documented
 * layouts, where a reviewer can hold them side by side.
 */
#include "kind.h"

#include <string.h>

#include "client.h"
#include "resp.h"
#include "scripts.h"

int rl_call_build(const rl_call *call, const rl_call_vals *v,
                  const char **argv, size_t *len, char (*buf)[24]) {
  int n = 0, b = 0;
  argv[n] = NULL; /* EVALSHA and the SHA */
  len[n++] = 0;
  len[n] = rl_resp_put_i64(buf[b], call->nkeys);
  argv[n++] = buf[b++];
  for (int k = 0; k < call->nkeys; k++) {
    argv[n] = v->keys[k];
    len[n++] = v->keylens[k];
  }
  static const char *const lit[] = {"0", "1", "r", "w"};
  for (const char *p = call->args; *p != '\0'; p++) {
    int64_t num = 0;
    int is_num = 1;
    switch (*p) {
      case 'L': num = v->lease_ms; break;
      case 'C': num = v->count; break;
      case 'F': num = (int64_t)v->floor; break;
      case 'T': num = (int64_t)v->ticket; break;
      case 'A':
      case 'a': num = v->alive_ms; break;
      default: is_num = 0; break;
    }
    if (is_num) {
      len[n] = rl_resp_put_i64(buf[b], num);
      argv[n++] = buf[b++];
      continue;
    }
    switch (*p) {
      case 'O':
        argv[n] = v->owner;
        len[n] = v->ownerlen;
        break;
      case 'c':
        argv[n] = v->channel;
        len[n] = v->channellen;
        break;
      case 'l':
        argv[n] = lit[v->last ? 1 : 0];
        len[n] = 1;
        break;
      case 'D':
        argv[n] = rl_arg_master_deadline; /* appended per connection */
        len[n] = 0;
        break;
      default: /* '0', '1', 'r', 'w' */
        argv[n] = *p == '0' ? lit[0] : *p == '1' ? lit[1] : *p == 'r' ? lit[2]
                                                                     : lit[3];
        len[n] = 1;
        break;
    }
    n++;
  }
  return n;
}

rl_round *rl_call_round(struct rlock_client *c, const rl_call *call,
                        const rl_call_vals *v, const rl_round_ops *ops,
                        void *data) {
  const char *argv[RL_CALL_MAXARGS];
  size_t len[RL_CALL_MAXARGS];
  char buf[RL_CALL_MAXARGS][24];
  int argc = rl_call_build(call, v, argv, len, buf);
  return rl_round_new(c, ops, data, call->script, argc, argv, len);
}

void rl_call_send_one(struct rlock_client *c, const rl_call *call,
                      const rl_call_vals *v, int idx) {
  if (call->script < 0) return;
  rl_round *u = rl_call_round(c, call, v, NULL, NULL);
  if (u != NULL) rl_round_send_one(u, idx);
  /* Out of memory: what it would have given back expires with its
   * lease. */
}

/* {1, token, count, existed} or {0, holder_pttl}: holder_pttl -3 is
 * RL_GRANT_LATE, the acquire script's own code for a passed deadline. */
int rl_parse_lock_grant(const redisReply *rep, rl_round_slot *sl) {
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 2) return -1;
  for (size_t k = 0; k < rep->elements; k++)
    if (rep->element[k]->type != REDIS_REPLY_INTEGER) return -1;
  long long ok = rep->element[0]->integer;
  if (ok == 1 && rep->elements == 4) {
    sl->v[0] = rep->element[1]->integer; /* token */
    sl->v[1] = rep->element[2]->integer; /* count */
    sl->v[2] = rep->element[3]->integer; /* the owner's field was there */
    return 1;
  }
  if (ok == 0 && rep->elements == 2) {
    sl->v[2] = rep->element[1]->integer; /* the holder's PTTL, or late */
    return 0;
  }
  return -1;
}

static const char *const lock_keys[] = {"", ":fence"};

/* The reentrant lock: scripts.c. */
const rl_kind rl_kind_lock = {
    .name = "lock",
    .id = RL_KIND_LOCK,
    .suffixes = lock_keys,
    .nkeys = 2,
    .hold = 0,
    .fence = 1,
    .chan_key = 0,
    .acquire = {RL_SCRIPT_ACQUIRE, 2, "LOCFD"},
    .unlock = {RL_SCRIPT_UNLOCK, 1, "LOcl"},
    .undo = {RL_SCRIPT_UNDO, 1, "OcC"},
    .force = {RL_SCRIPT_FORCE, 1, "c"},
    .release = {RL_SCRIPT_RELEASE, 1, "O"},
    .leave = {-1, 0, ""},
    .renew = RL_SCRIPT_RENEW,
    .parse_grant = rl_parse_lock_grant,
};
