/*
 * The master URLs of the read-only subcommands (status, scan): parsed by
 * the library's own parser, so that the tool and the library never
 * disagree about what a master URL means, and shown with their password
 * masked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "url.h"

/* Parses one master address with the library's own parser (the tool links
 * the library statically for it), so that the tool and the library can
 * never disagree about what a master URL means. Returns 0, or -1 if it is
 * malformed. */
static int parse_master(const char *s, rt_master_url *u, const char **why) {
  static rl_master_url mu; /* large; the tool is single-threaded */
  memset(u, 0, sizeof *u);
  u->spec = s;
  if (rl_master_url_parse(s, &mu, why) != 0) return -1;
  const rl_url *p = &mu.url;
  /* The URL as shown: its password masked. */
  const char *secret = p->has_password ? ":***@" : "";
  if (mu.kind != 0) {
    const rl_topo_addr *a = &mu.topo.addr[0];
    int v6 = strchr(a->host, ':') != NULL;
    u->cluster = mu.kind == RL_TOPO_CLUSTER;
    snprintf(u->display, sizeof u->display, "%s-%s://%.200s%s%s%.200s%s:%d",
             p->tls ? "rediss" : "redis",
             u->cluster ? "cluster" : "sentinel", p->has_user ? p->user : "",
             secret, v6 ? "[" : "", a->host, v6 ? "]" : "", a->port);
    return 0;
  }
  if (p->kind == RL_URL_UNIX) {
    if (p->has_password || p->db != 0)
      snprintf(u->display, sizeof u->display, "unix://%.200s%s%s?db=%d",
               p->has_user ? p->user : "", secret, p->path, p->db);
    else
      snprintf(u->display, sizeof u->display, "%s", s);
    return 0;
  }
  if (strstr(s, "://") == NULL) {
    snprintf(u->display, sizeof u->display, "%s", s);
    return 0;
  }
  int v6 = strchr(p->host, ':') != NULL;
  snprintf(u->display, sizeof u->display, "%s://%.200s%s%s%.200s%s:%d/%d",
           p->tls ? "rediss" : "redis", p->has_user ? p->user : "", secret,
           v6 ? "[" : "", p->host, v6 ? "]" : "", p->port, p->db);
  return 0;
}

/* Checks every master URL up front, so that a typo is a usage error
 * rather than an unreachable master. */
int rt_parse_masters(const rt_global *g, rt_master_url **out) {
  rt_master_url *us = calloc(g->nmasters, sizeof *us);
  if (us == NULL) return -1;
  for (size_t i = 0; i < g->nmasters; i++) {
    const char *why = "invalid";
    if (parse_master(g->masters[i], &us[i], &why) != 0) {
      char shown[600]; /* without its password */
      rl_url_mask(g->masters[i], shown, sizeof shown);
      fprintf(stderr, "rlock: bad master address '%s': %s\n", shown, why);
      free(us);
      return -1;
    }
  }
  *out = us;
  return 0;
}
