/*
 * Master address parser. It accepts exactly the documented forms (url.h) and
 * rejects everything else with RLOCK_EINVAL, because a typo in a master
 * list must fail at open, not turn into a master that never answers.
 */
#include "url.h"

#include <ctype.h>
#include <string.h>

#include "rlock.h"

/* Parses a decimal integer in [lo, hi] spanning exactly [s, e). */
static int parse_int(const char *s, const char *e, long lo, long hi,
                     int *out) {
  long v = 0;
  if (s == e || e - s > 10) return -1;
  for (const char *p = s; p < e; p++) {
    if (!isdigit((unsigned char)*p)) return -1;
    v = v * 10 + (*p - '0');
  }
  if (v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

static int copy_span(char *dst, size_t size, const char *s, const char *e) {
  size_t n = (size_t)(e - s);
  if (n == 0 || n >= size) return -1;
  memcpy(dst, s, n);
  dst[n] = '\0';
  return 0;
}

/* Parses "host[:port]" or "[v6]:port" in [s, e). port_required for the
 * bare form, where a missing port is more likely a mistake. */
static int parse_hostport(const char *s, const char *e, int port_required,
                          rl_url *u) {
  const char *host_end, *colon = NULL;
  if (s < e && *s == '[') {
    host_end = memchr(s, ']', (size_t)(e - s));
    if (host_end == NULL) return -1;
    if (copy_span(u->host, sizeof u->host, s + 1, host_end) != 0) return -1;
    if (host_end + 1 < e) {
      if (host_end[1] != ':') return -1;
      colon = host_end + 1;
    }
  } else {
    for (const char *p = s; p < e; p++)
      if (*p == ':') colon = p; /* the last one */
    host_end = colon ? colon : e;
    if (copy_span(u->host, sizeof u->host, s, host_end) != 0) return -1;
    if (strchr(u->host, ':') != NULL) return -1; /* IPv6 needs brackets */
  }
  for (const char *p = u->host; *p; p++)
    if (isspace((unsigned char)*p) || *p == '/' || *p == '@') return -1;
  if (colon == NULL) {
    if (port_required) return -1;
    u->port = 6379;
    return 0;
  }
  return parse_int(colon + 1, e, 1, 65535, &u->port);
}

#define FAIL(text)        \
  do {                    \
    if (why) *why = text; \
    return RLOCK_EINVAL;  \
  } while (0)

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Copies [s, e) into dst, percent-decoded. 0, or -1 when it is empty, too
 * long, or badly encoded, or decodes to a NUL. */
static int copy_decoded(char *dst, size_t size, const char *s,
                        const char *e) {
  size_t n = 0;
  for (const char *p = s; p < e; p++) {
    char c = *p;
    if (c == '%') {
      if (e - p < 3) return -1;
      int hi = hex_digit(p[1]), lo = hex_digit(p[2]);
      if (hi < 0 || lo < 0) return -1;
      c = (char)(hi * 16 + lo);
      if (c == '\0') return -1;
      p += 2;
    }
    if (n + 1 >= size) return -1;
    dst[n++] = c;
  }
  if (n == 0) return -1;
  dst[n] = '\0';
  return 0;
}

/* Parses "[user]:password" in [s, e). */
static int parse_userinfo(const char *s, const char *e, rl_url *u,
                          const char **why) {
  const char *c = memchr(s, ':', (size_t)(e - s));
  if (c == NULL) FAIL("userinfo must be :password or user:password");
  if (c != s) {
    if (copy_decoded(u->user, sizeof u->user, s, c) != 0)
      FAIL("user longer than 255 bytes, or badly percent-encoded");
    u->has_user = 1;
  }
  if (copy_decoded(u->password, sizeof u->password, c + 1, e) != 0)
    FAIL("password empty, longer than 255 bytes, or badly percent-encoded");
  u->has_password = 1;
  return 0;
}

/* unix://[userinfo@]/path[?db=N] */
static int parse_unix(const char *s, const char *end, rl_url *u,
                      const char **why) {
  const char *p = s + 7;
  u->kind = RL_URL_UNIX;
  if (*p != '/') {
    const char *slash = memchr(p, '/', (size_t)(end - p));
    if (slash == NULL || slash == p || slash[-1] != '@')
      FAIL("a unix socket path must be absolute "
           "(unix:///path or unix://:password@/path)");
    if (parse_userinfo(p, slash - 1, u, why) != 0) return RLOCK_EINVAL;
    p = slash;
  }
  const char *q = memchr(p, '?', (size_t)(end - p));
  if (copy_span(u->path, sizeof u->path, p, q ? q : end) != 0)
    FAIL("socket path longer than 107 bytes");
  if (q != NULL) {
    if (strncmp(q + 1, "db=", 3) != 0)
      FAIL("the only query a unix socket takes is ?db=N");
    if (parse_int(q + 4, end, 0, 1000000, &u->db) != 0)
      FAIL("the database must be a number from 0 to 1000000");
  }
  return 0;
}

int rl_url_parse(const char *s, rl_url *u) {
  return rl_url_parse_why(s, u, NULL);
}

int rl_url_parse_why(const char *s, rl_url *u, const char **why) {
  if (s == NULL) FAIL("missing (NULL)");
  memset(u, 0, sizeof *u);
  size_t len = strlen(s);
  if (len == 0) FAIL("empty");
  if (len > 1024) FAIL("longer than 1024 bytes");
  const char *end = s + len;

  if (strncmp(s, "unix://", 7) == 0) return parse_unix(s, end, u, why);

  u->kind = RL_URL_TCP;
  const char *p;
  if (strncmp(s, "redis://", 8) == 0) {
    p = s + 8;
  } else if (strncmp(s, "rediss://", 9) == 0) {
    p = s + 9;
    u->tls = 1;
  } else {
    if (strstr(s, "://") != NULL)
      FAIL("unknown scheme (redis://, rediss:// or unix://)");
    if (parse_hostport(s, end, 1, u) != 0)
      FAIL("not host:port (a port from 1 to 65535 is required)");
    memcpy(u->name, u->host, sizeof u->name);
    return 0;
  }

  const char *at = NULL;
  for (const char *q = end; q > p; q--)
    if (q[-1] == '@') {
      at = q - 1;
      break;
    }
  if (at != NULL) {
    if (parse_userinfo(p, at, u, why) != 0) return RLOCK_EINVAL;
    p = at + 1;
  }
  const char *slash = memchr(p, '/', (size_t)(end - p));
  const char *hp_end = slash ? slash : end;
  if (parse_hostport(p, hp_end, 0, u) != 0)
    FAIL("bad host or port (a port from 1 to 65535)");
  memcpy(u->name, u->host, sizeof u->name);
  if (slash != NULL && slash + 1 < end) {
    if (parse_int(slash + 1, end, 0, 1000000, &u->db) != 0)
      FAIL("the database must be a number from 0 to 1000000");
  }
  return 0;
}
