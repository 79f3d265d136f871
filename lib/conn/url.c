/*
 * Master address parser, for every form a master takes (url.h): a single
 * server, a Redis Cluster, a Sentinel group. It accepts exactly the
 * documented forms and rejects everything else with RLOCK_EINVAL and a
 * reason, because a master list is typed by hand and a typo must fail at
 * open, not turn into a master that never answers. One file, so that the
 * forms share their rules (percent-encoding, userinfo, addresses).
 */
#include "url.h"

#include <ctype.h>
#include <stdio.h>
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

/* Splits "[user]:password" in [s, e), percent-decoded, into the fields
 * of an rl_url or an rl_topo_url (both 256 bytes). */
static int split_userinfo(const char *s, const char *e, char *user,
                          int *has_user, char *password, int *has_password,
                          const char **why) {
  const char *c = memchr(s, ':', (size_t)(e - s));
  if (c == NULL) FAIL("userinfo must be :password or user:password");
  if (c != s) {
    if (copy_decoded(user, RL_URL_USER_MAX, s, c) != 0)
      FAIL("user longer than 255 bytes, or badly percent-encoded");
    *has_user = 1;
  }
  if (copy_decoded(password, RL_URL_PASS_MAX, c + 1, e) != 0)
    FAIL("password empty, longer than 255 bytes, or badly percent-encoded");
  *has_password = 1;
  return 0;
}

static int parse_userinfo(const char *s, const char *e, rl_url *u,
                          const char **why) {
  return split_userinfo(s, e, u->user, &u->has_user, u->password,
                        &u->has_password, why);
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
      FAIL("unknown scheme (redis://, rediss://, unix://, redis-cluster://, "
           "rediss-cluster://, redis-sentinel:// or rediss-sentinel://)");
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
  if (memchr(p, '?', (size_t)(end - p)) != NULL)
    FAIL("a query after the address: a redis:// URL gives its database as "
         "the path, redis://host:port/db (only unix:// takes ?db=N)");
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

/* --- cluster and Sentinel forms (topology_url.h) ------------------------ */

/* "host[:port]" or "[v6][:port]" in [s, e), the port defaulting to def. */
static int topo_addr(const char *s, const char *e, int def,
                      rl_topo_addr *a) {
  const char *hs = s, *he, *colon = NULL;
  if (s < e && *s == '[') {
    const char *close = memchr(s, ']', (size_t)(e - s));
    if (close == NULL) return -1;
    hs = s + 1;
    he = close;
    if (close + 1 < e) {
      if (close[1] != ':') return -1;
      colon = close + 1;
    }
    if (memchr(hs, ':', (size_t)(he - hs)) == NULL) return -1; /* not v6 */
  } else {
    colon = memchr(s, ':', (size_t)(e - s));
    he = colon ? colon : e;
  }
  size_t n = (size_t)(he - hs);
  if (n == 0 || n >= sizeof a->host) return -1;
  for (const char *p = hs; p < he; p++) {
    unsigned char c = (unsigned char)*p;
    if (c <= ' ' || c == 0x7f || strchr("/@?&=[]%,#", c) != NULL ||
        (c == ':' && hs == s))
      return -1;
  }
  memcpy(a->host, hs, n);
  a->host[n] = '\0';
  if (colon == NULL) {
    a->port = def;
    return 0;
  }
  const char *p = colon + 1;
  long v = 0;
  if (p == e || e - p > 5) return -1;
  for (; p < e; p++) {
    if (*p < '0' || *p > '9') return -1;
    v = v * 10 + (*p - '0');
  }
  if (v < 1 || v > 65535) return -1;
  a->port = (int)v;
  return 0;
}

/* Adds an address; refuses a duplicate and one too many. */
static int add_addr(rl_topo_url *u, const char *s, const char *e, int def,
                    const char **why) {
  rl_topo_addr a;
  if (topo_addr(s, e, def, &a) != 0)
    FAIL("bad address (host, host:port or [v6]:port, port 1 to 65535)");
  for (int i = 0; i < u->naddrs; i++)
    if (u->addr[i].port == a.port && strcmp(u->addr[i].host, a.host) == 0)
      FAIL("an address is given twice");
  if (u->naddrs == RL_TOPO_MAX_ADDRS)
    FAIL("more than 16 seeds or sentinels");
  u->addr[u->naddrs++] = a;
  return 0;
}

/* "[user]:password" in [s, e), for the data nodes. */
static int topo_userinfo(const char *s, const char *e, rl_topo_url *u,
                         const char **why) {
  return split_userinfo(s, e, u->user, &u->has_user, u->password,
                        &u->has_password, why);
}

/* A percent-encoded option value, given at most once. */
static int set_text(char *dst, size_t cap, int *has, const char *s,
                    const char *e, const char **why) {
  if (*has) FAIL("an option is given twice");
  if (copy_decoded(dst, cap, s, e) != 0)
    FAIL("an option's value is empty, longer than 255 bytes, or badly "
         "percent-encoded");
  *has = 1;
  return 0;
}

static int name_is(const char *s, const char *e, const char *name) {
  size_t n = strlen(name);
  return (size_t)(e - s) == n && memcmp(s, name, n) == 0;
}

/* One "name=value" of the query. */
static int topo_option(rl_topo_url *u, const char *s, const char *e,
                        int *has_db, const char **why) {
  const char *eq = memchr(s, '=', (size_t)(e - s));
  if (eq == NULL) FAIL("an option is not name=value");
  const char *v = eq + 1;
  if (u->kind == RL_TOPO_CLUSTER) {
    if (name_is(s, eq, "seed"))
      return add_addr(u, v, e, RL_TOPO_CLUSTER_PORT, why);
    FAIL("unknown option (a cluster URL takes seed=)");
  }
  if (name_is(s, eq, "sentinel"))
    return add_addr(u, v, e, RL_TOPO_SENTINEL_PORT, why);
  if (name_is(s, eq, "sentinel_user"))
    return set_text(u->sentinel_user, sizeof u->sentinel_user,
                    &u->has_sentinel_user, v, e, why);
  if (name_is(s, eq, "sentinel_password"))
    return set_text(u->sentinel_password, sizeof u->sentinel_password,
                    &u->has_sentinel_password, v, e, why);
  if (name_is(s, eq, "db")) {
    long db = 0;
    if (*has_db) FAIL("an option is given twice");
    if (v == e || e - v > 7) FAIL("db must be a number from 0 to 1000000");
    for (const char *p = v; p < e; p++) {
      if (*p < '0' || *p > '9') FAIL("db must be a number from 0 to 1000000");
      db = db * 10 + (*p - '0');
    }
    if (db > 1000000) FAIL("db must be a number from 0 to 1000000");
    u->db = (int)db;
    *has_db = 1;
    return 0;
  }
  FAIL("unknown option (a sentinel URL takes sentinel=, sentinel_user=, "
       "sentinel_password= and db=)");
}

static int topo_query(rl_topo_url *u, const char *s, const char *end,
                       const char **why) {
  int has_db = 0;
  while (s < end) {
    const char *amp = memchr(s, '&', (size_t)(end - s));
    const char *e = amp ? amp : end;
    if (e == s) FAIL("an empty option (&& or a trailing &)");
    if (topo_option(u, s, e, &has_db, why) != 0) return RLOCK_EINVAL;
    s = amp ? amp + 1 : end;
    if (amp && s == end) FAIL("an empty option (&& or a trailing &)");
  }
  if (u->has_sentinel_user && !u->has_sentinel_password)
    FAIL("sentinel_user= needs sentinel_password=");
  return 0;
}

static const struct {
  const char *prefix;
  int kind, tls;
} schemes[] = {
    {"redis-cluster://", RL_TOPO_CLUSTER, 0},
    {"rediss-cluster://", RL_TOPO_CLUSTER, 1},
    {"redis-sentinel://", RL_TOPO_SENTINEL, 0},
    {"rediss-sentinel://", RL_TOPO_SENTINEL, 1},
};

static int scheme_of(const char *s) {
  for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
    if (strncmp(s, schemes[i].prefix, strlen(schemes[i].prefix)) == 0)
      return (int)i;
  return -1;
}

int rl_topo_url_is(const char *s) { return s != NULL && scheme_of(s) >= 0; }

int rl_topo_url_parse(const char *s, rl_topo_url *u, const char **why) {
  if (s == NULL) FAIL("missing (NULL)");
  memset(u, 0, sizeof *u);
  int sc = scheme_of(s);
  if (sc < 0)
    FAIL("not a redis-cluster://, rediss-cluster://, redis-sentinel:// or "
         "rediss-sentinel:// URL");
  size_t len = strlen(s);
  if (len > 4096) FAIL("longer than 4096 bytes");
  if (memchr(s, ',', len) != NULL)
    FAIL("a comma (commas separate masters; give more seeds or sentinels "
         "with seed= or sentinel=, and encode a comma in a password as %2C)");
  u->kind = schemes[sc].kind;
  u->tls = schemes[sc].tls;
  const char *p = s + strlen(schemes[sc].prefix), *end = s + len;

  /* The query starts at the first '?'; '@', '/' and '?' inside the
   * userinfo must be percent-encoded, so the authority ends at the first
   * '/' or '?' after the last '@' before them. */
  const char *q = memchr(p, '?', (size_t)(end - p));
  const char *qend = q ? q : end;
  const char *at = NULL;
  for (const char *c = p; c < qend; c++)
    if (*c == '@') at = c;
  if (at != NULL) {
    if (memchr(p, '/', (size_t)(at - p)) != NULL)
      FAIL("a '/' in the userinfo must be percent-encoded (%2F)");
    if (topo_userinfo(p, at, u, why) != 0) return RLOCK_EINVAL;
    p = at + 1;
  }
  const char *slash = memchr(p, '/', (size_t)(qend - p));
  const char *auth_end = slash ? slash : qend;
  int def = u->kind == RL_TOPO_CLUSTER ? RL_TOPO_CLUSTER_PORT
                                       : RL_TOPO_SENTINEL_PORT;
  if (add_addr(u, p, auth_end, def, why) != 0) return RLOCK_EINVAL;

  if (u->kind == RL_TOPO_CLUSTER) {
    if (slash != NULL)
      FAIL("a cluster URL has no path (a cluster has only database 0)");
  } else {
    if (slash == NULL || slash + 1 == qend)
      FAIL("a sentinel URL needs the service name as its path "
           "(redis-sentinel://host:port/mymaster)");
    if (memchr(slash + 1, '/', (size_t)(qend - slash - 1)) != NULL)
      FAIL("the service name must not contain '/' (encode it as %2F)");
    if (copy_decoded(u->service, sizeof u->service, slash + 1, qend) != 0)
      FAIL("service name longer than 255 bytes or badly percent-encoded");
    for (const char *c = u->service; *c; c++)
      if ((unsigned char)*c <= ' ')
        FAIL("the service name must not contain blanks or control bytes");
  }
  if (q != NULL) {
    if (q + 1 == end) FAIL("an empty query after '?'");
    if (topo_query(u, q + 1, end, why) != 0) return RLOCK_EINVAL;
  }
  return 0;
}

/* --- any master ------------------------------------------------------------ */

void rl_master_url_node(const rl_master_url *m, const char *host, int port,
                        rl_url *out) {
  *out = m->url;
  out->kind = RL_URL_TCP;
  snprintf(out->host, sizeof out->host, "%s", host);
  memcpy(out->name, out->host, sizeof out->name);
  out->port = port;
}

void rl_master_url_seed(const rl_master_url *m, int k, rl_url *out) {
  const rl_topo_addr *a = &m->topo.addr[k];
  rl_master_url_node(m, a->host, a->port, out);
  if (a->numeric[0] != '\0')
    snprintf(out->host, sizeof out->host, "%s", a->numeric);
}

int rl_master_url_parse(const char *s, rl_master_url *out, const char **why) {
  memset(out, 0, sizeof *out);
  if (!rl_topo_url_is(s)) return rl_url_parse_why(s, &out->url, why);
  if (rl_topo_url_parse(s, &out->topo, why) != 0) return RLOCK_EINVAL;
  const rl_topo_url *t = &out->topo;
  out->kind = t->kind;
  rl_url *u = &out->url;
  u->kind = RL_URL_TCP;
  u->tls = t->tls;
  memcpy(u->user, t->user, sizeof u->user);
  u->has_user = t->has_user;
  memcpy(u->password, t->password, sizeof u->password);
  u->has_password = t->has_password;
  u->db = t->db;
  rl_master_url_node(out, t->addr[0].host, t->addr[0].port, u);
  return 0;
}

/* --- masking --------------------------------------------------------------- */

/* Appends [s, s + n) to buf at *used, never past size - 1. */
static void put_span(char *buf, size_t size, size_t *used, const char *s,
                     size_t n) {
  if (*used + 1 >= size) return;
  if (n > size - 1 - *used) n = size - 1 - *used;
  memcpy(buf + *used, s, n);
  *used += n;
  buf[*used] = '\0';
}

void rl_url_mask(const char *s, char *buf, size_t size) {
  if (size == 0) return;
  buf[0] = '\0';
  if (s == NULL) {
    snprintf(buf, size, "(NULL)");
    return;
  }
  size_t used = 0;
  const char *end = s + strlen(s);
  /* The userinfo, as the parsers find it: after the scheme, up to the
   * last '@' (or from the start when there is no scheme). Whatever
   * follows its first ':' is the password; without a ':' all of it may
   * be. Malformed text is masked the same way, so that a typo in a URL
   * never shows its password either. */
  const char *sep = strstr(s, "://");
  const char *p = sep != NULL ? sep + 3 : s;
  const char *at = NULL;
  for (const char *q = p; q < end; q++)
    if (*q == '@') at = q;
  if (at != NULL) {
    const char *colon = memchr(p, ':', (size_t)(at - p));
    put_span(buf, size, &used, s, (size_t)((colon ? colon + 1 : p) - s));
    put_span(buf, size, &used, "***", 3);
    p = at;
  } else {
    put_span(buf, size, &used, s, (size_t)(p - s));
  }
  /* A query's passwords (sentinel_password=), each up to its '&'. */
  while (p < end) {
    const char *pw = strstr(p, "password=");
    if (pw == NULL) break;
    pw += 9;
    put_span(buf, size, &used, p, (size_t)(pw - p));
    put_span(buf, size, &used, "***", 3);
    const char *amp = strchr(pw, '&');
    p = amp != NULL ? amp : end;
  }
  put_span(buf, size, &used, p, (size_t)(end - p));
}
