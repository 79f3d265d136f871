/*
 * The rlock command-line tool's internal header: the exit codes every
 * subcommand documents, the global options (masters, key prefix, TLS),
 * the subcommands main.c dispatches to, and the helpers they share
 * (args.c, output.c, masters.c, libclient.c, masterconn.c). The tool
 * takes and releases locks through the public API in rlock.h, and reads
 * what is in Redis, read-only, through the library's master layer.
 */
#ifndef RLOCK_TOOL_H
#define RLOCK_TOOL_H

#include <getopt.h>
#include <limits.h>
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

/* --- the command line (args.c) ---------------------------------------- */

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

/* The options several subcommands' getopt_long tables share (values from
 * 0x7000 up, clear of each table's own, which start at 256). */
enum {
  RT_OPT_CACERT = 0x7000,
  RT_OPT_CACERTDIR,
  RT_OPT_CERT,
  RT_OPT_KEY,
  RT_OPT_SNI,
  RT_OPT_INSECURE,
  RT_OPT_MASTERS,
  RT_OPT_PREFIX,
  RT_OPT_KIND,
  RT_OPT_FAIR,
  RT_OPT_READ,
  RT_OPT_WRITE,
  RT_OPT_JSON,
  RT_OPT_TIMEOUT
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

/* The options every subcommand takes: the masters, the prefix, TLS. */
#define RT_GLOBAL_LONG_OPTIONS                                 \
  {"masters", required_argument, NULL, RT_OPT_MASTERS},        \
      {"prefix", required_argument, NULL, RT_OPT_PREFIX},      \
      RT_TLS_LONG_OPTIONS
/* And those the read-only subcommands (status, scan) add. */
#define RT_READ_LONG_OPTIONS                                   \
  {"json", no_argument, NULL, RT_OPT_JSON},                    \
      {"timeout", required_argument, NULL, RT_OPT_TIMEOUT}
/* The end of every subcommand's table: --help, then the terminator. */
#define RT_HELP_LONG_OPTION_AND_END \
  {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}

/* Takes one of the TLS options into g: 1 if opt was one, else 0. */
int rt_tls_option(rt_global *g, int opt, const char *arg);
/* Takes one of RT_GLOBAL_LONG_OPTIONS into g: RT_TAKE_OK,
 * RT_TAKE_NOT_MINE, or RT_TAKE_BAD for a bad --masters (the caller says
 * so, in its own words). */
int rt_global_option(rt_global *g, int opt, const char *arg);

/* What an option taker made of one option (outcomes, not error codes:
 * none is negative). */
enum {
  RT_TAKE_BAD = 0,  /* a bad value: the taker said why */
  RT_TAKE_NOT_MINE, /* not an option of this subcommand */
  RT_TAKE_OK,
  RT_TAKE_DONE      /* answered (--version): exit 0 */
};

/* A subcommand's command line: its getopt_long options ("+" first to
 * stop at the first operand), its usage (printed on stdout for -h, on
 * stderr after an unknown option or a wrong number of operands), the
 * function that takes each of its options (optarg holding the value;
 * longname the long option's name, NULL for a short one), returning one
 * of the RT_TAKE_ results, and how many operands may follow. */
typedef struct rt_cmdline {
  const char *shortopts;
  const struct option *longopts;
  const char *usage;
  int (*take)(rt_global *g, int opt, const char *longname, void *arg);
  void *arg;
  int min_operands, max_operands;
} rt_cmdline;
#define RT_ANY_OPERANDS 0, INT_MAX

/* Reads the options of argv (argv[0] is the command's name) with cl, and
 * checks the number of operands. Returns -1 to go on (the operands start
 * at optind), or the exit code. */
int rt_parse_options(rt_global *g, int argc, char **argv,
                     const rt_cmdline *cl);

/* The values of RT_READ_LONG_OPTIONS. */
typedef struct rt_read_args {
  int json;
  long long timeout_ms;
} rt_read_args;

/* Takes one of RT_GLOBAL_LONG_OPTIONS or RT_READ_LONG_OPTIONS into g and
 * ra, saying as who why a value is bad. */
int rt_read_option(rt_global *g, const char *who, int opt, rt_read_args *ra);
/* Takes the TLS settings of the environment into g (before options). */
void rt_tls_from_env(rt_global *g);

/*
 * Splits a comma-separated master list into g (replacing any earlier
 * one). Returns 0, or -1 if the list is empty or has an empty element.
 */
int rt_set_masters(rt_global *g, const char *list);
void rt_global_free(rt_global *g);

/* Parses a non-negative decimal number of seconds (fractions allowed)
 * into milliseconds. Returns 0, or -1 if s is not such a number. */
int rt_parse_seconds(const char *s, long long *ms);
/* Parses a decimal integer in [lo, hi]. Returns 0 or -1. */
int rt_parse_ll(const char *s, long long lo, long long hi, long long *out);

/* The subcommands, each in its own file. argv[0] is the subcommand's
 * name; each returns the tool's exit code. */
int rt_cmd_exec(rt_global *g, int argc, char **argv); /* exec, elect */
int rt_cmd_observe(rt_global *g, int argc, char **argv);
int rt_cmd_unlock(rt_global *g, int argc, char **argv);
int rt_cmd_status(rt_global *g, int argc, char **argv);
int rt_cmd_scan(rt_global *g, int argc, char **argv);

/* --- the library's client, for exec and unlock (libclient.c) ---------- */

typedef struct rlock_client rlock_client;
typedef struct rlock rlock;

/* Opens a client on the global masters with the given watchdog timeout
 * (0: the library's default), longest lease and connect timeout (0: the
 * library's defaults). Prints why on failure; returns the library's
 * status. */
int rt_open_client(const rt_global *g, long long watchdog_ms,
                   long long max_lease_ms, long long connect_ms,
                   rlock_client **out);
/* Prints a library error, with the master's error reply when there is
 * one, and which masters failed when a majority could not be reached. */
void rt_print_lib_error(const char *what, rlock_client *c, int rc);

/* The kinds a NAME may be taken as, by index: lock, fair, read, write. */
extern const char *const rt_kind_names[];
/* A handle on NAME of kind k (an index into rt_kind_names). */
int rt_get_handle(rlock_client *c, int k, const char *name, rlock **out);
/* --kind and its shorthands: 1 if opt was one of them (*kind set, or -1
 * for a bad value), else 0. */
int rt_kind_option(int opt, const char *arg, int *kind);
#define RT_KIND_LONG_OPTIONS                                  \
  {"kind", required_argument, NULL, RT_OPT_KIND},             \
      {"fair", no_argument, NULL, RT_OPT_FAIR},               \
      {"read", no_argument, NULL, RT_OPT_READ},               \
      {"write", no_argument, NULL, RT_OPT_WRITE}

/* --- output (output.c) ------------------------------------------------ */

/* Writes s (n bytes) as a JSON string. Bytes that are not valid UTF-8
 * (Redis keys are binary) are written as \u00XX, their Latin-1 reading,
 * so the output always parses. */
void rt_json_str(FILE *f, const char *s, size_t n);
/* The same for a C string; NULL is written as null. */
void rt_json_cstr(FILE *f, const char *s);
/* Prints s (n bytes) for a human, with control bytes escaped. */
void rt_human_str(FILE *f, const char *s, size_t n);

/* --- master URLs of status and scan (masters.c) ----------------------- */

typedef struct rt_master_url {
  const char *spec;  /* as given */
  int cluster;
  char display[600]; /* the URL with its password masked, for output */
} rt_master_url;

/* Parses every master URL of g up front, so that a typo is a usage error
 * rather than an unreachable master: 0 and *out (the caller frees it), or
 * -1 after printing why. */
int rt_parse_masters(const rt_global *g, rt_master_url **out);

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

#endif
