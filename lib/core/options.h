/*
 * Option defaults and validation. Validation happens in full before a
 * client allocates anything, so that bad options change nothing.
 */
#ifndef RL_OPTIONS_H
#define RL_OPTIONS_H

#include "rlock.h"
#include "url.h"

#define RL_PREFIX_MAX 64
#define RL_NAME_MAX 512

/* The longest lease ever accepted (30 days: far beyond any sane lock),
 * and the default max_lease_ms. */
#define RL_LEASE_MAX_MS (30LL * 86400000LL)
#define RL_DEFAULT_MAX_LEASE_MS 60000

/* The most replicas a grant may be made to wait for (rlock_options). */
#define RL_REPLICA_ACKS_MAX 64

/* Checks opts and parses the masters into urls[opts->nmasters] (host names
 * still unresolved). 0 or RLOCK_EINVAL. */
int rl_options_check(const rlock_options *opts, rl_master_url *urls);

/* 1 if masters of that kind (rl_master_url.kind) can be opened. */
int rl_master_kind_supported(int kind);

/* Replaces a host name in u by a numeric address. 0 or RLOCK_ENOTFOUND. */
int rl_url_resolve(rl_url *u);
/* The same for every address of a master (a cluster's seeds too). */
int rl_master_url_resolve(rl_master_url *m);

/* Refuses two masters that are one server once resolved (same numeric
 * address and port, or same socket path; a cluster by its first seed): a
 * quorum must count servers, not addresses. 0 or RLOCK_EINVAL, with both
 * entries named. */
int rl_masters_check_unique(const rlock_options *opts,
                            const rl_master_url *urls);

/* The one spelling of a resolved master's address ("host:port",
 * "[v6]:port" or "unix:/real/path"), for comparisons and records. */
void rl_url_canonical(const rl_url *u, char *buf, size_t size);

/* Sets the reason rlock_open_error reports on this thread (printf-like),
 * or clears it. */
void rl_open_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rl_open_error_clear(void);

/* 0 if name is a valid lock name (1 to RL_NAME_MAX bytes, no brace),
 * else RLOCK_EINVAL. */
int rl_name_check(const char *name);

/* 0 if p is a valid key_prefix (at most RL_PREFIX_MAX bytes, no brace,
 * which would move the hash tag of every key), else RLOCK_EINVAL. */
int rl_prefix_check(const char *p);

#endif
