/*
 * The integration-test harness: real redis-server processes that a test
 * starts, faults (pause, kill, restart) delivered as real signals to them,
 * and a tiny test runner with checks and a per-test watchdog. It lives in
 * one header and one source file so that every test program links the same
 * two files and needs nothing but hiredis and a redis-server binary.
 *
 * Checks (RT_CHECK and the like) may fail on any thread. Everything else
 * is for one thread, the test's main thread: start, stop and fault servers
 * there. Servers are started with PR_SET_PDEATHSIG, which fires when the
 * starting thread exits, so a server must not be started from a thread
 * that ends before the test does.
 */
#ifndef RT_HARNESS_H
#define RT_HARNESS_H

#include <limits.h> /* LLONG_MIN, for rt_redis_int */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

/* Part A: redis-server processes. */

/*
 * The server program every test runs: $RLOCK_TEST_SERVER, a name on PATH
 * or a path (redis-server, valkey-server), else redis-server. Sentinels
 * are the same program with --sentinel, which Redis and Valkey both take.
 */
const char *rt_server_program(void);
/*
 * The server's companion tool ("cli", "benchmark") into buf: the server
 * program's name with its "-server" ending replaced by "-" and the tool
 * (valkey-server: valkey-cli; /opt/x/redis-server: /opt/x/redis-cli), or
 * "redis-" and the tool when the name has no such ending. Returns buf.
 */
const char *rt_server_tool(const char *tool, char *buf, size_t cap);

typedef struct rt_redis {
  int port;          /* TCP port on 127.0.0.1 */
  pid_t pid;         /* 0 when not running */
  char dir[256];     /* its own temp dir (mkdtemp under $TMPDIR or /tmp) */
  char url[300];     /* "127.0.0.1:PORT", or with a password
                        "redis://:PASSWORD@127.0.0.1:PORT" */
  char password[64]; /* "" for none */
  int paused;        /* 1 while SIGSTOPped */
  /* TLS and unix sockets (rt_redis_start_opts); zero for a plain server. */
  int tls;              /* TLS only: port is the TLS port (--port 0) */
  int tls_auth_clients; /* the server requires a client certificate */
  char tls_cert[300];   /* its certificate and key */
  char tls_key[300];
  char unixsock[128];   /* "" or a unix socket it also listens on, which
                           the harness's own commands then use */
  char acl[600];        /* "user password rule..." made at each start */
} rt_redis;

/*
 * Starts a server on a free loopback port in a fresh temporary directory,
 * without persistence, and waits until it answers PING. The server runs in
 * a process group of its own, with stdin on /dev/null, stdout and stderr
 * in DIR/redis.log and no other descriptor of the test. A NULL or empty
 * password means none. Returns 0, or -1 (with a diagnostic and the end of
 * the log on stderr). The struct is overwritten; it need not be
 * initialized.
 */
int rt_redis_start(rt_redis *r, const char *password);
/*
 * rt_redis_start with extras (and, like it, TLS and an ACL user when
 * RT_TLS=1 or RT_ACL=1 are set): env is a NULL-terminated list of
 * "NAME=value" entries added to the server's environment (overriding ours),
 * args a NULL-terminated list of extra redis-server arguments, in which
 * "{dir}" stands for the server's directory (say "--unixsocket",
 * "{dir}/redis.sock"). Either may be NULL. Both are kept for restarts.
 */
int rt_redis_start_ex(rt_redis *r, const char *password,
                      const char *const *env, const char *const *args);
/* Starts n servers without password; on failure stops them all and
 * returns -1. */
int rt_redis_start_many(rt_redis *rs, int n);

/*
 * TLS. rt_tls() makes, on first use and with the openssl command,
 * a throwaway CA and certificates in a temporary directory that is
 * removed at exit: the server's (SAN IP 127.0.0.1 and DNS localhost),
 * one signed by another CA, an expired one, one for another host name,
 * and a client certificate. NULL (with a diagnostic) if openssl failed.
 */
typedef struct rt_tls_files {
  char dir[256];
  char ca[300];           /* the CA the servers' certificates chain to */
  char server_cert[300], server_key[300];
  char other_ca[300];     /* another CA */
  char other_cert[300], other_key[300];     /* signed by other_ca */
  char expired_cert[300], expired_key[300]; /* by ca, expired */
  char wrongname_cert[300], wrongname_key[300]; /* by ca, for another
                                                   host name only */
  char client_cert[300], client_key[300];   /* by ca, for clients */
} rt_tls_files;
const rt_tls_files *rt_tls(void);

/* 1 when RT_TLS=1 is in the environment: rt_redis_start then starts
 * TLS-only servers (rediss:// urls, the harness talking to them over a
 * unix socket), and SSL_CERT_FILE points at rt_tls()'s CA, so that
 * a client that is given no CA verifies them too. */
int rt_tls_mode(void);

/*
 * ACL users. RT_ACL_RULE is the smallest rule rlock needs (README says the
 * same): the handshake's commands, EVALSHA, the commands the scripts run,
 * pub/sub, and the default key prefix's keys and channels. With RT_ACL=1
 * in the environment, rt_redis_start's servers also have a user
 * RT_ACL_USER with exactly that rule, and their url authenticates as it
 * (the harness's own commands stay the default user's).
 */
#define RT_ACL_USER "rlock"
#define RT_ACL_PASSWORD "rlock-pw"
#define RT_ACL_COMMANDS                                                       \
  "+evalsha +script|load +info +time +client|setname +subscribe "          \
  "+unsubscribe +exists +hset +hexists +hincrby +pexpire +pttl +get +set "  \
  "+del +publish +hgetall"
#define RT_ACL_RULE "~rlock:* &rlock:* -@all " RT_ACL_COMMANDS
int rt_acl_mode(void);

typedef struct rt_redis_opts {
  const char *password;  /* NULL or "" for none */
  const char *acl_user;  /* a user to make, with acl_password and acl_rule
                            (space-separated ACL rules); the url then
                            authenticates as it */
  const char *acl_password;
  const char *acl_rule;
  int tls;               /* 1: TLS only (--port 0 --tls-port) */
  const char *tls_cert;  /* NULL: rt_tls()'s server certificate */
  const char *tls_key;
  int tls_auth_clients;  /* 1: --tls-auth-clients yes */
  int unix_socket;       /* 1: also listen on DIR/redis.sock (always with
                            tls) */
  const char *const *env;  /* as rt_redis_start_ex; NULL for none */
  const char *const *args;
  const char *server;      /* the program to run instead of
                              rt_server_program(), kept for restarts; NULL
                              for the default */
} rt_redis_opts;

/* The options rt_redis_start_ex uses: the password, and TLS and an ACL
 * user as RT_TLS and RT_ACL say. */
void rt_redis_opts_default(rt_redis_opts *o, const char *password);

/* rt_redis_start with options, whatever RT_TLS and RT_ACL say (the
 * others follow them); the url is rediss:// for a TLS server. A restart
 * keeps them. 0 or -1. */
int rt_redis_start_opts(rt_redis *r, const rt_redis_opts *o);
/* Kills the server (SIGCONT first if paused) with its process group, so
 * BGSAVE or AOF rewrite children too, reaps it and removes its directory
 * and whatever is in it; clears pid, paused and dir. Safe on a stopped or
 * zeroed struct, and on one whose server the runner already cleaned up. */
void rt_redis_stop(rt_redis *r);
void rt_redis_stop_many(rt_redis *rs, int n);
/* SIGSTOP, returning once the process is stopped; 0 or -1. */
int rt_redis_pause(rt_redis *r);
/* SIGCONT; 0 or -1. */
int rt_redis_resume(rt_redis *r);
/* SIGKILL and reap, keeping the port and the directory for a restart. */
int rt_redis_kill(rt_redis *r);
/* Starts a killed server again on the same port, directory and password,
 * and waits until it answers. 0, or -1 if it could not (for example
 * because another process took the port meanwhile). */
int rt_redis_restart(rt_redis *r);
/* rt_redis_restart with a new extra environment (NULL for none), kept for
 * later restarts too. */
int rt_redis_restart_ex(rt_redis *r, const char *const *env);
/*
 * Makes env (3 entries, NULL-terminated, strings in buf) the environment
 * that runs a server with its wall clock shifted by shift_s seconds:
 * LD_PRELOAD of the clock shim test/clockshift.c, whose path the build
 * passes in RT_CLOCKSHIFT, and CLOCKSHIFT_SECONDS. 0, or -1 when the shim
 * is not known.
 */
int rt_redis_clockshift_env(long long shift_s, char buf[2][512],
                            const char *env[3]);

/*
 * Runs one command, with a 2 s timeout, on a connection cached per server
 * (opened, and authenticated when there is a password, on first use;
 * dropped after any I/O error or timeout, so a late answer can never be
 * taken for the answer to a later command). The format is hiredis's (%s,
 * %b, ...), so it carries no printf format attribute. Returns the reply,
 * which the caller frees with freeReplyObject, or NULL on a connection
 * error or timeout. An error reply is a reply, not NULL.
 */
redisReply *rt_redis_cmd(rt_redis *r, const char *fmt, ...);
/* The integer reply of a command, or LLONG_MIN on error or another type. */
long long rt_redis_int(rt_redis *r, const char *fmt, ...);
/* Prints the last bytes (at most 4096) of the server's log on stderr,
 * after a line that says why: evidence for a failed wait. */
void rt_redis_log_tail(const rt_redis *r, const char *why, size_t bytes);
/* PUBSUB NUMSUB of channel: its subscribers on r, or -1. */
long long rt_redis_numsub(rt_redis *r, const char *channel);
/* DBSIZE, or -1. */
int rt_redis_dbsize(rt_redis *r);
/* How many EVALSHA calls the server has run (INFO commandstats; since its
 * last CONFIG RESETSTAT): 0 when it has run none, -1 when INFO fails. */
long long rt_evalsha_calls(rt_redis *r);
/* Reads read(i, what) every 20 ms until it is want or ms have passed, and
 * returns the last value read: for a check on a master that a call which
 * returned once a majority answered may not have reached yet. */
long long rt_settle(long long (*read)(int i, const char *what), int i,
                    const char *what, long long want, int ms);

/* Part B: the test runner. */

typedef void (*rt_test_fn)(void);
typedef struct rt_test {
  const char *name;
  rt_test_fn fn;
} rt_test;

/* Records a failed check of the current test and prints "  check failed:"
 * to stderr. These are for the macros below. */
void rt__fail(const char *file, int line, const char *expr);
void rt__fail_eq(const char *file, int line, const char *expr, long long a,
                 long long b);

/* Records a failure if cond is false and goes on. */
#define RT_CHECK(cond)                                                        \
  do {                                                                        \
    if (!(cond)) rt__fail(__FILE__, __LINE__, #cond);                         \
  } while (0)

/* Like RT_CHECK, but returns from the enclosing (void) function when cond
 * is false. */
#define RT_REQUIRE(cond)                                                      \
  do {                                                                        \
    if (!(cond)) {                                                            \
      rt__fail(__FILE__, __LINE__, #cond);                                    \
      return;                                                                 \
    }                                                                         \
  } while (0)

/* RT_CHECK(a == b) for integers, printing both values; each argument is
 * evaluated once. */
#define RT_CHECK_EQ_INT(a, b)                                                 \
  do {                                                                        \
    long long rt__a_ = (long long)(a), rt__b_ = (long long)(b);               \
    if (rt__a_ != rt__b_)                                                     \
      rt__fail_eq(__FILE__, __LINE__, #a " == " #b, rt__a_, rt__b_);          \
  } while (0)

/*
 * Runs every test, or only those named in argv[1..] (in that order; an
 * unknown name counts as a failed test), or with argv[1] "--except" every
 * test but those named after it (meson splits a program's tests between
 * suites that way, so that a test added to the program runs somewhere),
 * printing one line per test on
 * stdout, "PASS: name" or "FAIL: name (file:line: expr)" for the first
 * failed check, then "P passed, F failed". Returns 0 if none failed, else
 * 1. Each test gets RT_TEST_TIMEOUT seconds (default 120, 0 for none);
 * on timeout it prints "FAIL: name (timeout)" and the summary, kills the
 * servers and exits with status 1. Servers started outside any test (say
 * in main before rt_main) are shared by all tests and stay until stopped
 * or until exit; those a test leaves running (say after a failed
 * RT_REQUIRE) are stopped after it, with a note on stderr.
 */
int rt_main(int argc, char **argv, const rt_test *tests, size_t ntests);
/* The main of a program whose tests share n servers: starts them in rs
 * (returns 1, with a diagnostic, if that fails), runs rt_main, stops
 * them, and returns rt_main's result. */
int rt_main_servers(int argc, char **argv, rt_redis *rs, int n,
                    const rt_test *tests, size_t ntests);

/* Waits for child pid: its exit status, 128 + the signal that ended it,
 * or -1 if waitpid fails. */
int rt_reap(pid_t pid);

/* Milliseconds on CLOCK_MONOTONIC. */
uint64_t rt_now_ms(void);
/* Microseconds on CLOCK_MONOTONIC (the same clock in every process). */
uint64_t rt_now_us(void);
/* Sleeps ms milliseconds, resuming after signals. */
void rt_sleep_ms(int ms);

#endif /* RT_HARNESS_H */
