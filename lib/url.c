/*
 * Master address parser. It accepts exactly the three documented forms and
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

int rl_url_parse(const char *s, rl_url *u) {
  return rl_url_parse_why(s, u, NULL);
}

int rl_url_parse_why(const char *s, rl_url *u, const char **why) {
  if (s == NULL) FAIL("missing (NULL)");
  memset(u, 0, sizeof *u);
  size_t len = strlen(s);
  if (len == 0) FAIL("empty");
  if (len > 1024) FAIL("longer than 1024 bytes");

  if (strncmp(s, "unix://", 7) == 0) {
    const char *p = s + 7;
    if (*p != '/') FAIL("a unix socket path must be absolute (unix:///path)");
    if (copy_span(u->path, sizeof u->path, p, s + len) != 0)
      FAIL("socket path longer than 107 bytes");
    u->kind = RL_URL_UNIX;
    return 0;
  }

  u->kind = RL_URL_TCP;
  if (strncmp(s, "redis://", 8) != 0) {
    if (strstr(s, "://") != NULL) FAIL("unknown scheme");
    if (parse_hostport(s, s + len, 1, u) != 0)
      FAIL("not host:port (a port from 1 to 65535 is required)");
    return 0;
  }

  const char *p = s + 8, *end = s + len;
  const char *at = NULL;
  for (const char *q = end; q > p; q--)
    if (q[-1] == '@') {
      at = q - 1;
      break;
    }
  if (at != NULL) {
    /* Userinfo is ":password" (Redis before ACLs) or "user:password"; only
     * the password is used, as AUTH password. */
    const char *c = memchr(p, ':', (size_t)(at - p));
    if (c == NULL) FAIL("userinfo must be :password or user:password");
    if (c != p) FAIL("named users are not supported");
    if (copy_span(u->password, sizeof u->password, c + 1, at) != 0)
      FAIL("password empty or longer than 255 bytes");
    u->has_password = 1;
    p = at + 1;
  }
  const char *slash = memchr(p, '/', (size_t)(end - p));
  const char *hp_end = slash ? slash : end;
  if (parse_hostport(p, hp_end, 0, u) != 0)
    FAIL("bad host or port (a port from 1 to 65535)");
  if (slash != NULL && slash + 1 < end) {
    if (parse_int(slash + 1, end, 0, 1000000, &u->db) != 0)
      FAIL("the database must be a number from 0 to 1000000");
  }
  return 0;
}
