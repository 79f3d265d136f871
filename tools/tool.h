/*
 * Shared declarations of the rlock command-line tool (tools/rlock.c and
 * tools/inspect.c): the exit codes every subcommand documents, the global
 * options (masters, key prefix), and the read-only inspection commands.
 * The tool uses only the public API in rlock.h to take and release locks,
 * and hiredis directly, read-only, to look at what is in Redis.
 */
#ifndef RLOCK_TOOL_H
#define RLOCK_TOOL_H

#include <stddef.h>
#include <stdio.h>

/* Exit codes; tools/rlock.1 documents them. */
#define RT_EXIT_OK 0
#define RT_EXIT_CONFLICT 1 /* default of -E: the lock could not be had */
#define RT_EXIT_FOUND 1    /* scan: a leak or a long lease was found */
#define RT_EXIT_NOMASTER 2 /* status, scan: a master could not be read */
#define RT_EXIT_USAGE 64   /* EX_USAGE: bad command line */
#define RT_EXIT_OSERR 71   /* EX_OSERR: fork, pipe or memory failure */
#define RT_EXIT_LOST 75    /* EX_TEMPFAIL: the lock was lost under the child */

#define RT_DEFAULT_MASTERS "redis://127.0.0.1:6379"
#define RT_DEFAULT_PREFIX "rlock:"

/* Options every subcommand accepts. */
typedef struct rt_global {
  const char **masters; /* split from the comma-separated list */
  size_t nmasters;
  char *masters_buf;    /* owns the strings masters points into */
  const char *prefix;
  /* TLS, as redis-cli names them (--cacert, --cacertdir, --cert, --key,
   * --sni, --insecure), or from RLOCK_CACERT, RLOCK_CACERTDIR, RLOCK_CERT,
   * RLOCK_KEY, RLOCK_SNI, RLOCK_INSECURE=1. NULL / 0 when not given. */
  const char *cacert, *cacertdir, *cert, *key, *sni;
  int insecure;
} rt_global;

/* The TLS options, for every subcommand's getopt_long table (values from
 * 0x7000 up, clear of each table's own). */
enum {
  RT_OPT_CACERT = 0x7000,
  RT_OPT_CACERTDIR,
  RT_OPT_CERT,
  RT_OPT_KEY,
  RT_OPT_SNI,
  RT_OPT_INSECURE
};
#define RT_TLS_LONG_OPTIONS                                    \
  {"cacert", required_argument, NULL, RT_OPT_CACERT},          \
      {"cacertdir", required_argument, NULL, RT_OPT_CACERTDIR}, \
      {"cert", required_argument, NULL, RT_OPT_CERT},           \
      {"key", required_argument, NULL, RT_OPT_KEY},             \
      {"sni", required_argument, NULL, RT_OPT_SNI},             \
      {"insecure", no_argument, NULL, RT_OPT_INSECURE}
#define RT_TLS_USAGE                                                        \
  "  --cacert FILE      CA bundle to verify rediss:// masters (default: the\n" \
  "                     system's; $RLOCK_CACERT), --cacertdir DIR likewise\n" \
  "  --cert FILE        client certificate ($RLOCK_CERT), with --key FILE\n" \
  "                     ($RLOCK_KEY), for masters that require one\n"        \
  "  --sni NAME         the name to send and verify instead of each URL's\n" \
  "                     host ($RLOCK_SNI)\n"                                 \
  "  --insecure         do not verify masters' certificates (encrypted but\n" \
  "                     not authenticated; $RLOCK_INSECURE=1)\n"

/* Takes one of the TLS options into g: 1 if opt was one, else 0. */
int rt_tls_option(rt_global *g, int opt, const char *arg);
/* Takes the TLS settings of the environment into g (before options). */
void rt_tls_from_env(rt_global *g);

/*
 * Splits a comma-separated master list into g (replacing any earlier
 * one). Returns 0, or -1 if the list is empty or has an empty element.
 */
int rt_set_masters(rt_global *g, const char *list);
void rt_global_free(rt_global *g);

/* The subcommands that only read Redis, in tools/inspect.c. argv[0] is
 * the subcommand's name. */
int rt_cmd_status(rt_global *g, int argc, char **argv);
int rt_cmd_scan(rt_global *g, int argc, char **argv);

/* Blocking access to one master for status and scan (tools/masterconn.c):
 * the library's master layer (a server, or a cluster routed by slot),
 * AUTH, SELECT and TLS from the URL and g, every wait bounded by
 * timeout_ms. Commands take hiredis's format and go to node when it is
 * not NULL (one of rt_master_nodes), else by slot (RL_MCMD_ANY_SLOT for
 * any primary). Replies are the caller's to free with freeReplyObject. */
struct rl_conn;
typedef struct rt_master rt_master;
typedef struct redisReply redisReply;
rt_master *rt_master_open(const char *spec, const rt_global *g,
                          long long timeout_ms, char *err, size_t errsize);
/* Queues a command; REDIS_OK or REDIS_ERR. */
int rt_master_append(rt_master *c, struct rl_conn *node, int slot,
                     const char *fmt, ...);
/* The next queued command's reply, and the address of the node that
 * answered (when node is not NULL); REDIS_OK, or REDIS_ERR (see
 * errstr). */
int rt_master_get_reply(rt_master *c, redisReply **out, char *node,
                        size_t nodesize);
/* One command and its reply, or NULL (see errstr); nothing queued. */
redisReply *rt_master_command(rt_master *c, struct rl_conn *node, int slot,
                              const char *fmt, ...);
/* The nodes that serve lock keys: the server, or every primary. */
int rt_master_nodes(rt_master *c, struct rl_conn **out, int cap);
int rt_master_is_cluster(const rt_master *c);
const char *rt_master_errstr(const rt_master *c);
void rt_master_free(rt_master *c);

/* Parses a non-negative decimal number of seconds (fractions allowed)
 * into milliseconds. Returns 0, or -1 if s is not such a number. */
int rt_parse_seconds(const char *s, long long *ms);
/* Parses a decimal integer in [lo, hi]. Returns 0 or -1. */
int rt_parse_ll(const char *s, long long lo, long long hi, long long *out);

#endif
