/*
 * Parsers for Sentinel and replication replies (sentinel_proto.h). They
 * take what the network sent, so each checks types and bounds before it
 * reads, keeps only what fits its fixed-size fields, and refuses strings
 * with NUL bytes (a host cut short at a NUL would be another host).
 */
#include "sentinel_proto.h"

#include <string.h>

static int is_text(const redisReply *r) {
  return r != NULL &&
         (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
         r->str != NULL && memchr(r->str, '\0', r->len) == NULL;
}

static int text_is(const redisReply *r, const char *s) {
  return is_text(r) && r->len == strlen(s) && memcmp(r->str, s, r->len) == 0;
}

static int copy_text(char *dst, size_t cap, const redisReply *r) {
  if (!is_text(r) || r->len == 0 || r->len >= cap) return -1;
  memcpy(dst, r->str, r->len);
  dst[r->len] = '\0';
  return 0;
}

/* A decimal number in [s, s + len), optionally negative. 0 or -1. */
static int parse_ll(const char *s, size_t len, long long *out) {
  size_t i = 0;
  int neg = 0;
  long long v = 0;
  if (len > 0 && s[0] == '-') neg = i = 1;
  if (i == len || len - i > 18) return -1;
  for (; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  *out = neg ? -v : v;
  return 0;
}

/* An integer reply or a decimal string. 0 or -1. */
static int int_of(const redisReply *r, long long *out) {
  if (r == NULL) return -1;
  if (r->type == REDIS_REPLY_INTEGER) {
    *out = r->integer;
    return 0;
  }
  if (!is_text(r)) return -1;
  return parse_ll(r->str, r->len, out);
}

static int port_of(const redisReply *r, int *port) {
  long long v;
  if (int_of(r, &v) != 0 || v < 1 || v > 65535) return -1;
  *port = (int)v;
  return 0;
}

static int hostport_of(const redisReply *host, const redisReply *port,
                       rl_hostport *out) {
  if (copy_text(out->host, sizeof out->host, host) != 0) return -1;
  for (const char *p = out->host; *p; p++)
    if ((unsigned char)*p <= ' ') return -1;
  return port_of(port, &out->port);
}

int rl_sentinel_parse_addr(const redisReply *r, rl_hostport *out) {
  memset(out, 0, sizeof *out);
  if (r == NULL) return RLOCK_EPROTO;
  if (r->type == REDIS_REPLY_NIL) return RLOCK_ENOTFOUND;
  if (r->type == REDIS_REPLY_ERROR) return RLOCK_EREDIS;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      hostport_of(r->element[0], r->element[1], out) != 0) {
    memset(out, 0, sizeof *out);
    return RLOCK_EPROTO;
  }
  return 0;
}

/* The next space-separated word of [*p, end): [*w, *w + *n). */
static int next_word(const char **p, const char *end, const char **w,
                     size_t *n) {
  const char *s = *p;
  if (s >= end) return -1;
  const char *sp = memchr(s, ' ', (size_t)(end - s));
  const char *e = sp ? sp : end;
  if (e == s) return -1; /* two spaces, or a leading one */
  *w = s;
  *n = (size_t)(e - s);
  *p = sp ? sp + 1 : end;
  if (sp && *p == end) return -1; /* a trailing space */
  return 0;
}

static int word_hostport(const char **p, const char *end, rl_hostport *hp) {
  const char *w;
  size_t n;
  long long port;
  if (next_word(p, end, &w, &n) != 0 || n >= sizeof hp->host) return -1;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)w[i] < ' ') return -1;
  memcpy(hp->host, w, n);
  hp->host[n] = '\0';
  if (next_word(p, end, &w, &n) != 0 || parse_ll(w, n, &port) != 0 ||
      port < 1 || port > 65535)
    return -1;
  hp->port = (int)port;
  return 0;
}

int rl_sentinel_parse_switch(const char *s, size_t len,
                             rl_switch_master *out) {
  memset(out, 0, sizeof *out);
  if (s == NULL || memchr(s, '\0', len) != NULL) return RLOCK_EPROTO;
  const char *p = s, *end = s + len, *w;
  size_t n;
  if (next_word(&p, end, &w, &n) != 0 || n >= sizeof out->name ||
      word_hostport(&p, end, &out->from) != 0 ||
      word_hostport(&p, end, &out->to) != 0 || p != end) {
    memset(out, 0, sizeof *out);
    return RLOCK_EPROTO;
  }
  memcpy(out->name, w, n);
  out->name[n] = '\0';
  return 0;
}

int rl_sentinel_parse_push(const redisReply *r, rl_switch_master *out) {
  memset(out, 0, sizeof *out);
  if (r == NULL || r->type != REDIS_REPLY_ARRAY) return 1;
  const redisReply *channel, *payload;
  if (r->elements == 3 && text_is(r->element[0], "message")) {
    channel = r->element[1];
    payload = r->element[2];
  } else if (r->elements == 4 && text_is(r->element[0], "pmessage")) {
    channel = r->element[2];
    payload = r->element[3];
  } else {
    return 1;
  }
  if (!text_is(channel, "+switch-master")) return 1;
  if (payload == NULL || payload->type != REDIS_REPLY_STRING ||
      payload->str == NULL)
    return RLOCK_EPROTO;
  return rl_sentinel_parse_switch(payload->str, payload->len, out);
}

static int link_of(const redisReply *r) {
  static const struct {
    const char *word;
    int link;
  } words[] = {{"none", RL_LINK_NONE},           {"connect", RL_LINK_CONNECT},
               {"connecting", RL_LINK_CONNECTING}, {"handshake", RL_LINK_HANDSHAKE},
               {"sync", RL_LINK_SYNC},           {"connected", RL_LINK_CONNECTED}};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (text_is(r, words[i].word)) return words[i].link;
  return RL_LINK_OTHER;
}

static int role_master(const redisReply *r, rl_role *out) {
  if (r->elements != 3 || int_of(r->element[1], &out->offset) != 0 ||
      r->element[2] == NULL || r->element[2]->type != REDIS_REPLY_ARRAY)
    return -1;
  const redisReply *list = r->element[2];
  for (size_t i = 0; i < list->elements; i++) {
    const redisReply *e = list->element[i];
    rl_role_replica rep;
    memset(&rep, 0, sizeof rep);
    if (e == NULL || e->type != REDIS_REPLY_ARRAY || e->elements != 3 ||
        hostport_of(e->element[0], e->element[1], &rep.addr) != 0 ||
        int_of(e->element[2], &rep.offset) != 0)
      return -1;
    if (out->nreplicas < RL_ROLE_MAX_LISTED) out->replica[out->nreplicas] = rep;
    out->nreplicas++;
  }
  return 0;
}

static int role_replica(const redisReply *r, rl_role *out) {
  if (r->elements != 5 ||
      hostport_of(r->element[1], r->element[2], &out->master) != 0 ||
      !is_text(r->element[3]) || int_of(r->element[4], &out->offset) != 0)
    return -1;
  out->link = link_of(r->element[3]);
  return 0;
}

static int role_sentinel(const redisReply *r, rl_role *out) {
  if (r->elements != 2 || r->element[1] == NULL ||
      r->element[1]->type != REDIS_REPLY_ARRAY)
    return -1;
  const redisReply *list = r->element[1];
  for (size_t i = 0; i < list->elements; i++) {
    char name[RL_SENTINEL_NAME_MAX];
    if (copy_text(name, sizeof name, list->element[i]) != 0) return -1;
    if (out->nnames < RL_ROLE_MAX_LISTED)
      memcpy(out->name[out->nnames], name, sizeof name);
    out->nnames++;
  }
  return 0;
}

int rl_role_parse(const redisReply *r, rl_role *out) {
  memset(out, 0, sizeof *out);
  if (r != NULL && r->type == REDIS_REPLY_ERROR) return RLOCK_EREDIS;
  if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 2)
    return RLOCK_EPROTO;
  int rc = -1;
  const redisReply *kind = r->element[0];
  if (text_is(kind, "master")) {
    out->role = RL_ROLE_MASTER;
    rc = role_master(r, out);
  } else if (text_is(kind, "slave") || text_is(kind, "replica")) {
    out->role = RL_ROLE_REPLICA;
    rc = role_replica(r, out);
  } else if (text_is(kind, "sentinel")) {
    out->role = RL_ROLE_SENTINEL;
    rc = role_sentinel(r, out);
  }
  if (rc != 0) {
    memset(out, 0, sizeof *out);
    return RLOCK_EPROTO;
  }
  return 0;
}

int rl_role_monitors(const rl_role *role, const char *name) {
  if (role->role != RL_ROLE_SENTINEL) return 0;
  int n = role->nnames < RL_ROLE_MAX_LISTED ? role->nnames : RL_ROLE_MAX_LISTED;
  for (int i = 0; i < n; i++)
    if (strcmp(role->name[i], name) == 0) return 1;
  return role->nnames > RL_ROLE_MAX_LISTED ? -1 : 0;
}

int rl_wait_parse(const redisReply *r, long long *acked) {
  *acked = 0;
  if (r != NULL && r->type == REDIS_REPLY_ERROR) return RLOCK_EREDIS;
  if (r == NULL || r->type != REDIS_REPLY_INTEGER || r->integer < 0)
    return RLOCK_EPROTO;
  *acked = r->integer;
  return 0;
}
