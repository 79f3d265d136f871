/*
 * Parsing of master addresses, every form in one parser (url.c). A
 * single server is one of:
 *
 *   host:port
 *   redis://[[user]:password@]host[:port][/db]
 *   rediss://[[user]:password@]host[:port][/db]        (TLS)
 *   unix://[[user]:password@]/path/to/socket[?db=N]
 *
 * and a master may also be a Redis Cluster or a Sentinel group, in the
 * forms of topology_url.h (redis-cluster://, redis-sentinel:// and their
 * TLS forms); rl_master_url_parse takes them all.
 *
 * A user and password may be percent-encoded (%40 for '@', %2C for ',',
 * which a comma-separated list of masters needs). Parsing is pure (no
 * resolution, no allocation) so that it can be fuzzed and unit tested;
 * resolution of host names happens once, when a client opens.
 */
#ifndef RL_URL_H
#define RL_URL_H

#include <stddef.h>

#include "topology_url.h"

enum { RL_URL_TCP = 1, RL_URL_UNIX = 2 };

#define RL_URL_HOST_MAX 256
#define RL_URL_PATH_MAX 108 /* sizeof(sun_path) on Linux */
#define RL_URL_PASS_MAX 256
#define RL_URL_USER_MAX 256

typedef struct rl_url {
  int kind;
  int tls;                    /* rediss:// */
  char host[RL_URL_HOST_MAX]; /* without IPv6 brackets; numeric once
                                 resolved */
  char name[RL_URL_HOST_MAX]; /* the host as written: the name a TLS
                                 certificate must carry */
  int port;
  char path[RL_URL_PATH_MAX];
  char user[RL_URL_USER_MAX];     /* "" for none (AUTH password) */
  int has_user;
  char password[RL_URL_PASS_MAX]; /* "" for none */
  int has_password;
  int db; /* 0 when not given */
} rl_url;

/* Parses a single server's address s into *out. Returns 0, or
 * RLOCK_EINVAL with *out undefined. */
int rl_url_parse(const char *s, rl_url *out);
/* The same; on failure *why (when why is not NULL) is a static phrase
 * saying what is wrong with s. */
int rl_url_parse_why(const char *s, rl_url *out, const char **why);

/*
 * One entry of the masters list, whatever its form. For a cluster or a
 * Sentinel group, url is the template of every data node's connection:
 * its TLS, credentials and db (the userinfo and, for Sentinel, db=), with
 * the host and port of the first seed or sentinel; topo has the rest.
 */
typedef struct rl_master_url {
  int kind;      /* 0: a single server; RL_TOPO_CLUSTER, RL_TOPO_SENTINEL */
  rl_url url;
  rl_topo_url topo;
} rl_master_url;

/* Copies the master address s into buf (of size, always NUL-terminated)
 * with every password it may carry replaced by "***": the userinfo's
 * ("redis://user:***@host"), a query's sentinel_password=, and anything
 * before an '@' of a malformed address. For every message that shows an
 * address the user wrote, well-formed or not. */
void rl_url_mask(const char *s, char *buf, size_t size);

/* Parses any master form. 0, or RLOCK_EINVAL with *why (when why is not
 * NULL) a static phrase saying what is wrong. */
int rl_master_url_parse(const char *s, rl_master_url *out, const char **why);

/* A data node of a cluster or Sentinel master: the template with host
 * (also its TLS name) and port. */
void rl_master_url_node(const rl_master_url *m, const char *host, int port,
                        rl_url *out);
/* Seed (or sentinel) k: its host as written is the TLS name, and the
 * address connected to is its numeric form once resolved. */
void rl_master_url_seed(const rl_master_url *m, int k, rl_url *out);

#endif
