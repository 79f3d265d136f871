/*
 * The observation helpers of facts.h: one-line replies, shown commands,
 * and a subscriber's read with a timeout that does not break the
 * connection (hiredis's own timeout leaves a context in an error state).
 */
#include "facts.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static size_t append(char *buf, size_t cap, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static size_t append(char *buf, size_t cap, size_t at, const char *fmt, ...) {
  if (at >= cap) return at;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + at, cap - at, fmt, ap);
  va_end(ap);
  return n < 0 ? at : at + (size_t)n;
}

static size_t show_at(const redisReply *r, char *buf, size_t cap, size_t at) {
  if (!r) return append(buf, cap, at, "(no reply)");
  switch (r->type) {
    case REDIS_REPLY_STRING:
      return append(buf, cap, at, "\"%.*s\"", (int)r->len, r->str);
    case REDIS_REPLY_STATUS:
      return append(buf, cap, at, "+%s", r->str);
    case REDIS_REPLY_ERROR:
      return append(buf, cap, at, "(error) %s", r->str);
    case REDIS_REPLY_INTEGER:
      return append(buf, cap, at, "%lld", r->integer);
    case REDIS_REPLY_NIL:
      return append(buf, cap, at, "nil");
    case REDIS_REPLY_ARRAY:
      at = append(buf, cap, at, "[");
      for (size_t i = 0; i < r->elements; i++) {
        if (i) at = append(buf, cap, at, ", ");
        at = show_at(r->element[i], buf, cap, at);
      }
      return append(buf, cap, at, "]");
    default:
      return append(buf, cap, at, "(type %d)", r->type);
  }
}

char *rt_show(const redisReply *rep, char *buf, size_t cap) {
  buf[0] = '\0';
  size_t n = show_at(rep, buf, cap, 0);
  if (n >= cap && cap > 4) strcpy(buf + cap - 4, "...");
  return buf;
}

redisReply *rt_obs(int port, redisReply *rep, const char *fmt, ...) {
  char cmd[512], out[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  for (char *p = cmd; *p; p++)
    if (*p == '\n') *p = '|'; /* a script's lines, on one line */
  fprintf(stderr, "  | %d> %s => %s\n", port, cmd,
          rt_show(rep, out, sizeof out));
  return rep;
}

void rt_note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("  | ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

redisContext *rt_connect(const rt_redis *r) {
  struct timeval tv = {2, 0};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
  if (!c || c->err || redisSetTimeout(c, tv) != REDIS_OK) {
    if (c) redisFree(c);
    return NULL;
  }
  fcntl(c->fd, F_SETFD, FD_CLOEXEC);
  if (r->password[0]) {
    redisReply *rep = redisCommand(c, "AUTH %s", r->password);
    int ok = rt_is_text(rep, REDIS_REPLY_STATUS, "OK");
    if (rep) freeReplyObject(rep);
    if (!ok) {
      redisFree(c);
      return NULL;
    }
  }
  return c;
}

int rt_ctx_port(redisContext *c) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  if (!c || getpeername(c->fd, (struct sockaddr *)&a, &len) != 0) return 0;
  return ntohs(a.sin_port);
}

redisReply *rt_next_reply(redisContext *c, int ms) {
  void *r = NULL;
  if (c->err) return NULL;
  if (redisGetReplyFromReader(c, &r) != REDIS_OK) return NULL;
  for (uint64_t end = rt_now_ms() + (uint64_t)ms; !r;) {
    uint64_t now = rt_now_ms();
    if (now >= end) return NULL;
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    if (poll(&p, 1, (int)(end - now)) <= 0) continue;
    if (redisBufferRead(c) != REDIS_OK ||
        redisGetReplyFromReader(c, &r) != REDIS_OK)
      return NULL;
  }
  return r;
}

int rt_is_array(const redisReply *rep, size_t n) {
  return rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == n;
}

int rt_is_text(const redisReply *rep, int type, const char *text) {
  return rep && rep->type == type && rep->str && strcmp(rep->str, text) == 0;
}

int rt_is_text_free(redisReply *rep, int type, const char *text) {
  int ok = rt_is_text(rep, type, text);
  if (rep) freeReplyObject(rep);
  return ok;
}

int rt_err_starts_free(redisReply *rep, const char *prefix) {
  int ok = rep && rep->type == REDIS_REPLY_ERROR &&
           strncmp(rep->str, prefix, strlen(prefix)) == 0;
  if (rep) freeReplyObject(rep);
  return ok;
}
