/*
 * Helpers over the captured replies (topology_fixture.h): parsing RESP
 * bytes with hiredis's own reader, finding a capture by name, and reading
 * CLUSTER NODES as an oracle independent of SHARDS and SLOTS.
 */
#include "topology_fixture.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

redisReply *rt_resp_parse(const char *bytes, size_t len) {
  redisReader *rd = redisReaderCreate();
  void *reply = NULL;
  if (rd == NULL) return NULL;
  /* Byte by byte, so that a reply that ends before the bytes do is seen
   * as what it is: not exactly one reply. */
  for (size_t i = 0; i < len; i++) {
    if (reply != NULL || redisReaderFeed(rd, bytes + i, 1) != REDIS_OK ||
        redisReaderGetReply(rd, &reply) != REDIS_OK) {
      if (reply) freeReplyObject(reply);
      redisReaderFree(rd);
      return NULL;
    }
  }
  redisReaderFree(rd);
  return reply;
}

const rt_capture *rt_capture_find(const char *name) {
  for (size_t i = 0; i < rt_ncaptures; i++)
    if (strcmp(rt_captures[i].name, name) == 0) return &rt_captures[i];
  return NULL;
}

redisReply *rt_capture_reply(const char *name) {
  const rt_capture *c = rt_capture_find(name);
  redisReply *r = c ? rt_resp_parse(c->bytes, c->len) : NULL;
  if (r == NULL) fprintf(stderr, "  capture %s: missing or not one reply\n", name);
  return r;
}

long long rt_capture_get_int(const char *name) {
  for (size_t i = 0; i < rt_ncapture_ints; i++)
    if (strcmp(rt_capture_ints[i].name, name) == 0)
      return rt_capture_ints[i].value;
  fprintf(stderr, "  capture int %s: missing\n", name);
  return LLONG_MIN;
}

int rt_view_find(const rt_view *v, const char *id) {
  for (int i = 0; i < v->n; i++)
    if (strcmp(v->node[i].id, id) == 0) return i;
  return -1;
}

/* "ip:port@cport[,hostname]" */
static int parse_addr(const char *s, rt_view_node *n) {
  const char *at = strchr(s, '@');
  if (at == NULL) return -1;
  const char *colon = NULL;
  for (const char *p = s; p < at; p++)
    if (*p == ':') colon = p;
  if (colon == NULL || (size_t)(colon - s) >= sizeof n->host) return -1;
  memcpy(n->host, s, (size_t)(colon - s));
  n->host[colon - s] = '\0';
  n->port = atoi(colon + 1);
  return n->port > 0 ? 0 : -1;
}

int rt_view_parse(const char *text, size_t len, rt_view *v) {
  char *copy = malloc(len + 1);
  if (copy == NULL) return -1;
  memcpy(copy, text, len);
  copy[len] = '\0';
  memset(v, 0, sizeof *v);
  for (int s = 0; s < 16384; s++) v->owner[s] = -1;
  /* Two passes: the ids first, so that slots can name their owner. */
  char *save = NULL;
  int rc = 0;
  char *slots[RT_VIEW_MAX] = {0};
  for (char *line = strtok_r(copy, "\n", &save); line && rc == 0;
       line = strtok_r(NULL, "\n", &save)) {
    char *ls = NULL, *tok[8];
    for (int k = 0; k < 8; k++)
      if (!(tok[k] = strtok_r(k ? NULL : line, " ", &ls))) rc = -1;
    if (rc != 0 || v->n == RT_VIEW_MAX || strlen(tok[0]) != 40) {
      rc = -1;
      break;
    }
    rt_view_node *n = &v->node[v->n];
    strcpy(n->id, tok[0]);
    if (parse_addr(tok[1], n) != 0) rc = -1;
    n->primary = strstr(tok[2], "master") != NULL;
    n->failed = strstr(tok[2], "fail") != NULL && !strstr(tok[2], "fail?");
    if (!n->primary && strlen(tok[3]) == 40) strcpy(n->master, tok[3]);
    slots[v->n] = ls; /* the rest of the line */
    v->n++;
  }
  for (int i = 0; i < v->n && rc == 0; i++) {
    char *ls = NULL;
    for (char *s = slots[i] ? strtok_r(slots[i], " ", &ls) : NULL; s;
         s = strtok_r(NULL, " ", &ls)) {
      if (s[0] == '[') continue;
      char *dash = strchr(s, '-');
      int a = atoi(s), b = dash ? atoi(dash + 1) : a;
      if (a < 0 || b >= 16384 || a > b) {
        rc = -1;
        break;
      }
      for (int slot = a; slot <= b; slot++) v->owner[slot] = (short)i;
    }
  }
  free(copy);
  return rc;
}

/* The k-th node of a tree in pre-order, counting down *k. */
static redisReply *nth(redisReply *r, long *k) {
  if ((*k)-- == 0) return r;
  if (r->type != REDIS_REPLY_ARRAY) return NULL;
  for (size_t i = 0; i < r->elements; i++) {
    redisReply *x = nth(r->element[i], k);
    if (x != NULL) return x;
  }
  return NULL;
}

#define MUTATIONS 11

static int mutate(redisReply *n, int how) {
  static char empty[] = "", x[] = "x", nul[] = "a\0b", q[] = "?",
              err[] = "ERR x";
  switch (how) {
  case 0: n->type = REDIS_REPLY_NIL; break;
  case 1: n->type = REDIS_REPLY_INTEGER; n->integer = -1; break;
  case 2: n->type = REDIS_REPLY_INTEGER; n->integer = 16384; break;
  case 3: n->type = REDIS_REPLY_INTEGER; n->integer = 1LL << 40; break;
  case 4: n->type = REDIS_REPLY_STRING; n->str = empty; n->len = 0; break;
  case 5: n->type = REDIS_REPLY_STRING; n->str = x; n->len = 1; break;
  case 6: n->type = REDIS_REPLY_STRING; n->str = nul; n->len = 3; break;
  case 7: n->type = REDIS_REPLY_STATUS; n->str = q; n->len = 1; break;
  case 8: n->type = REDIS_REPLY_ERROR; n->str = err; n->len = 5; break;
  case 9: n->type = REDIS_REPLY_ARRAY; n->elements = 0; break;
  case 10:
    if (n->type != REDIS_REPLY_ARRAY || n->elements == 0) return -1;
    n->elements--;
    break;
  }
  return 0;
}

long rt_mutate_each(redisReply *root,
                    void (*fn)(const redisReply *tree, void *data),
                    void *data) {
  long seen = 0;
  for (long k = 0;; k++) {
    long left = k;
    redisReply *n = nth(root, &left);
    if (n == NULL) break;
    for (int how = 0; how < MUTATIONS; how++) {
      redisReply saved = *n;
      if (mutate(n, how) == 0) {
        fn(root, data);
        seen++;
      }
      *n = saved;
    }
  }
  return seen;
}
