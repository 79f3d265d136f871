/*
 * Addresses of a Redis Cluster or of a Sentinel group, written as one
 * entry of the masters list (and so of RLOCK_MASTERS, whose commas
 * separate masters: these forms never need a comma):
 *
 *   redis-cluster://[[user]:password@]host[:port][?seed=host[:port]&...]
 *   rediss-cluster://...                                        (TLS)
 *
 *   redis-sentinel://[[user]:password@]host[:port]/service-name
 *       [?sentinel=host[:port]&...&sentinel_user=U&sentinel_password=P
 *        &db=N]
 *   rediss-sentinel://...          (TLS to the sentinels and the data nodes)
 *
 * The host in the authority is the first seed or sentinel; seed= and
 * sentinel= add more (at most RL_TOPO_MAX_ADDRS in all). Ports default to
 * 6379 for a cluster and 26379 for a sentinel. An IPv6 address is written
 * in brackets: [::1]:7000.
 *
 * Credentials. The userinfo is for the data nodes: every cluster node, or
 * the master and replicas a Sentinel group names. Sentinels are
 * authenticated only when sentinel_password= (and sentinel_user=, for an
 * ACL user) is given, because sentinels are often run without a password
 * while the data nodes have one, and an AUTH sent to a server without a
 * password is refused. User, password and service name are percent-encoded
 * where needed (%40 '@', %2C ',', %26 '&', %2F '/', %3F '?').
 *
 * The service name is the URL's path, and the options its query, in the
 * order every URL parser expects (path, then query); other clients' forms
 * that list hosts with commas (redis-sentinel://h1,h2/...) cannot be used
 * here. A cluster has only database 0, so its URL has no path.
 *
 * Parsing is pure (no resolution, no allocation) and strict: an unknown
 * option, a repeated one, or an address given twice is an error, so that
 * a typo fails at open. The parser is url.c's, which every master form
 * goes through (rl_master_url_parse in url.h).
 */
#ifndef RL_TOPOLOGY_URL_H
#define RL_TOPOLOGY_URL_H

enum { RL_TOPO_CLUSTER = 1, RL_TOPO_SENTINEL = 2 };

#define RL_TOPO_MAX_ADDRS 16
#define RL_TOPO_HOST_MAX 256
#define RL_TOPO_TEXT_MAX 256
#define RL_TOPO_CLUSTER_PORT 6379
#define RL_TOPO_SENTINEL_PORT 26379

typedef struct rl_topo_addr {
  char host[RL_TOPO_HOST_MAX]; /* as written, without IPv6 brackets */
  int port;
  char numeric[RL_TOPO_HOST_MAX]; /* host resolved at open; "" before */
} rl_topo_addr;

typedef struct rl_topo_url {
  int kind; /* RL_TOPO_CLUSTER or RL_TOPO_SENTINEL */
  int tls;  /* rediss-cluster://, rediss-sentinel:// */
  int naddrs; /* seeds, or sentinels; addr[0] is the authority's */
  rl_topo_addr addr[RL_TOPO_MAX_ADDRS];
  /* The data nodes' credentials (the userinfo). */
  char user[RL_TOPO_TEXT_MAX];
  int has_user;
  char password[RL_TOPO_TEXT_MAX];
  int has_password;
  /* The sentinels' credentials (sentinel_user=, sentinel_password=). */
  char sentinel_user[RL_TOPO_TEXT_MAX];
  int has_sentinel_user;
  char sentinel_password[RL_TOPO_TEXT_MAX];
  int has_sentinel_password;
  char service[RL_TOPO_TEXT_MAX]; /* Sentinel: the monitored name */
  int db;                         /* Sentinel: the data nodes' database */
} rl_topo_url;

/* 1 if s starts with one of the four schemes above (so that the masters
 * list parser knows which parser to call), else 0. */
int rl_topo_url_is(const char *s);

/* Parses s. 0, or RLOCK_EINVAL with *why (when why is not NULL) a static
 * phrase saying what is wrong; *out is then undefined. */
int rl_topo_url_parse(const char *s, rl_topo_url *out, const char **why);

#endif
