/*
 * The `exec` subcommand: take a lock (or a semaphore's permits), run a
 * command under it, release it, as flock(1) does with a local lock.
 *
 * It takes locks through the public API of rlock.h alone (client.h gives
 * it the library's drift allowance for a fixed lease). It drives the
 * async API from one thread: library callbacks (acquired, released, lost)
 * run on the library's loop thread and do nothing but store a status and
 * write one byte to a self-pipe; signal handlers likewise write the
 * signal number to a second self-pipe. The main thread polls both pipes,
 * so every decision (forward a signal, terminate the child, release) is
 * made in one place, never in a handler or on the loop thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "rlock.h"
#include "tool.h"

extern char **environ;

/* The async owner id rlock exec holds its lock as (field <client-id>:a1). */
#define EXEC_OWNER 1

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- exec: self-pipes and handlers ------------------------------------ */

static int sig_pipe[2] = {-1, -1}; /* signal numbers, one byte each */
static int ev_pipe[2] = {-1, -1};  /* library events, one byte each */
static atomic_int acquire_status, unlock_status;

/* The signals rlock exec catches, and what they were on entry (restored in
 * the child, so that a command started with SIGINT ignored keeps it so). */
static const int caught[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};
#define NCAUGHT (sizeof caught / sizeof caught[0])
static struct sigaction saved_action[NCAUGHT], saved_pipe;
static sigset_t saved_mask;

static void on_signal(int sig) {
  int saved = errno;
  unsigned char b = (unsigned char)sig;
  ssize_t w = write(sig_pipe[1], &b, 1); /* full pipe: the byte is moot */
  (void)w;
  errno = saved;
}

/* Library callbacks, on the loop thread: store, then wake the main thread. */
static void post_event(char ev) {
  ssize_t w = write(ev_pipe[1], &ev, 1);
  (void)w;
}

static void on_acquired(rlock *lock, int status, void *arg) {
  (void)lock;
  (void)arg;
  atomic_store(&acquire_status, status);
  post_event('A');
}

static void on_released(rlock *lock, int status, void *arg) {
  (void)lock;
  (void)arg;
  atomic_store(&unlock_status, status);
  post_event('U');
}

static void on_lost(rlock *lock, uint64_t owner, int is_thread, void *arg) {
  (void)lock;
  (void)owner;
  (void)is_thread;
  (void)arg;
  post_event('L');
}

/* The same for an election (rlock elect): won, lost. */
static void on_elected(rlock_election *e, int status, void *arg) {
  on_acquired(NULL, status, arg);
  (void)e;
}

static void on_elect_lost(rlock_election *e, void *arg) {
  on_lost(NULL, 0, 0, arg);
  (void)e;
}

/* The same three for a semaphore's permits (exec --sem). */
static void on_sem_acquired(rlock_sem *sem, int status, void *arg) {
  on_acquired(NULL, status, arg);
  (void)sem;
}

static void on_sem_released(rlock_sem *sem, int status, void *arg) {
  on_released(NULL, status, arg);
  (void)sem;
}

static void on_sem_lost(rlock_sem *sem, uint64_t owner, int is_thread,
                        void *arg) {
  on_lost(NULL, owner, is_thread, arg);
  (void)sem;
}

static int make_pipe(int p[2]) {
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
  return 0;
}

static int install_handlers(void) {
  sigprocmask(SIG_SETMASK, NULL, &saved_mask);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < NCAUGHT; i++) {
    if (sigaction(caught[i], NULL, &saved_action[i]) != 0) return -1;
    /* A signal ignored on entry (nohup, a background job) stays ignored,
     * as a shell would leave it. */
    if (caught[i] != SIGCHLD && saved_action[i].sa_handler == SIG_IGN)
      continue;
    if (sigaction(caught[i], &sa, NULL) != 0) return -1;
  }
  /* A closed stderr must not kill rlock while it holds a lock. */
  struct sigaction ign;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &saved_pipe);
  return 0;
}

/*
 * Waits until a library event or a signal arrives, or until deadline (a
 * now_ms() value; -1 for none). Returns the event byte ('A', 'U', 'L'),
 * the signal number as a negative number, or 0 on timeout.
 */
static int next_event(long long deadline) {
  for (;;) {
    unsigned char b;
    if (read(ev_pipe[0], &b, 1) == 1) return (char)b;
    if (read(sig_pipe[0], &b, 1) == 1) return -(int)b;
    int timeout = -1;
    if (deadline >= 0) {
      long long left = deadline - now_ms();
      if (left <= 0) return 0;
      timeout = left > 1000000 ? 1000000 : (int)left;
    }
    struct pollfd p[2] = {{.fd = ev_pipe[0], .events = POLLIN},
                          {.fd = sig_pipe[0], .events = POLLIN}};
    if (poll(p, 2, timeout) < 0 && errno != EINTR) return 0;
  }
}

/* --- exec ---------------------------------------------------------------- */

typedef struct exec_opts {
  long long wait_ms;     /* -1: forever */
  int nowait;
  int conflict_code;
  long long lease_ms;    /* -1: watchdog */
  long long grace_ms;
  long long watchdog_ms; /* 0: library default */
  long long max_lease_ms; /* 0: library default */
  long long connect_ms;
  int verbose;
  int kind;              /* an index into kinds */
  long long sem_limit;   /* --sem NAME:K: K; 0 without --sem */
  long long permits;     /* --permits, with --sem */
  int elect;             /* rlock elect: campaign, lead while it runs */
  const char *value;     /* elect --value */
} exec_opts;

/* What the command runs under: a lock, or with --sem permits of a
 * semaphore; name is either's. */
typedef struct exec_state {
  const exec_opts *o;
  rlock *lock;
  rlock_sem *sem;
  rlock_election *elect;
  const char *name;
  int lost;           /* a lost event was seen */
  int pending_signal; /* a terminating signal that arrived while waiting */
} exec_state;

#define VERBOSE(st, ...)                                                      \
  do {                                                                        \
    if ((st)->o->verbose) fprintf(stderr, "rlock: " __VA_ARGS__);            \
  } while (0)

/*
 * Runs one acquisition attempt and waits for its callback. A terminating
 * signal that arrives meanwhile cancels the attempt and is remembered in
 * st->pending_signal; the callback still comes (with RLOCK_ECANCELED, or
 * with the status the attempt reached first). Returns the status.
 */
static int acquire_once(exec_state *st, long long wait_ms) {
  int64_t lease = st->o->lease_ms > 0 ? st->o->lease_ms : RLOCK_WATCHDOG;
  int rc = st->elect != NULL
               ? rlock_campaign_async(st->elect, st->o->value, EXEC_OWNER,
                                      wait_ms, on_elected, NULL)
           : st->sem != NULL
               ? rlock_sem_acquire_async(st->sem, EXEC_OWNER, st->o->permits,
                                         wait_ms, lease, on_sem_acquired,
                                         NULL)
               : rlock_lock_async(st->lock, EXEC_OWNER, wait_ms, lease,
                                  on_acquired, NULL);
  if (rc != 0) return rc;
  for (;;) {
    int ev = next_event(-1);
    if (ev == 'A') return atomic_load(&acquire_status);
    if (ev == 'L') st->lost = 1;
    if (ev < 0 && -ev != SIGCHLD && st->pending_signal == 0) {
      st->pending_signal = -ev;
      if (st->elect != NULL)
        rlock_campaign_cancel(st->elect);
      else if (st->sem != NULL)
        rlock_sem_cancel_async(st->sem, EXEC_OWNER);
      else
        rlock_cancel_async(st->lock, EXEC_OWNER);
    }
  }
}

/*
 * Takes the lock. First one attempt with no wait (it waits for the
 * masters' first connection attempt, bounded by --connect-timeout); then,
 * if waiting is allowed and the lock is held by another or a majority of
 * masters could not be reached (a master restarting, a failover), one
 * waiting attempt for what is left of the wait: the library retries both
 * within it, and at its end says which it was. Returns its status.
 */
static int acquire_hold(exec_state *st) {
  long long start = now_ms();
  int rc = acquire_once(st, 0);
  if ((rc != RLOCK_ETIMEDOUT && rc != RLOCK_ENOQUORUM) || st->o->nowait ||
      st->pending_signal)
    return rc;
  long long wait = RLOCK_WAIT_FOREVER;
  if (st->o->wait_ms >= 0) {
    wait = st->o->wait_ms - (now_ms() - start);
    if (wait <= 0) return rc;
  }
  if (rc == RLOCK_ENOQUORUM)
    VERBOSE(st, "a majority of masters could not be reached; retrying\n");
  else
    VERBOSE(st, "waiting for %s %s\n", st->sem ? "semaphore" : "lock",
            st->name);
  return acquire_once(st, wait);
}

/* Waits for the release callback; bounded, since rlock_client_close
 * releases whatever is still held anyway. Returns its status. */
static int release_hold(exec_state *st) {
  if (st->elect != NULL) return rlock_resign(st->elect);
  int rc = st->sem != NULL
               ? rlock_sem_release_async(st->sem, EXEC_OWNER, st->o->permits,
                                         on_sem_released, NULL)
               : rlock_unlock_async(st->lock, EXEC_OWNER, on_released, NULL);
  if (rc != 0) return rc;
  long long deadline = now_ms() + 10000;
  for (;;) {
    int ev = next_event(deadline);
    if (ev == 'U') return atomic_load(&unlock_status);
    if (ev == 0) return RLOCK_ENOQUORUM;
    if (ev == 'L') st->lost = 1;
    /* Signals now change nothing: the child is gone, the release is sent. */
  }
}

/* Copies environ without RLOCK_TOKEN and RLOCK_NAME, and adds both. */
static char **child_env(uint64_t token, const char *name) {
  size_t n = 0;
  while (environ[n]) n++;
  char **env = calloc(n + 3, sizeof *env);
  if (env == NULL) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "RLOCK_TOKEN=", 12) != 0 &&
        strncmp(environ[i], "RLOCK_NAME=", 11) != 0)
      env[k++] = environ[i];
  if (asprintf(&env[k], "RLOCK_TOKEN=%" PRIu64, token) < 0) {
    free(env);
    return NULL;
  }
  if (asprintf(&env[k + 1], "RLOCK_NAME=%s", name) < 0) {
    free(env[k]);
    free(env);
    return NULL;
  }
  env[k + 2] = NULL;
  /* The two added strings are found again at k and k + 1 to be freed. */
  return env;
}

static void free_env(char **env) {
  if (env == NULL) return;
  for (size_t i = 0; env[i]; i++)
    if (strncmp(env[i], "RLOCK_TOKEN=", 12) == 0 ||
        strncmp(env[i], "RLOCK_NAME=", 11) == 0)
      free(env[i]);
  free(env);
}

static void write_stderr(const char *s) {
  ssize_t w = write(STDERR_FILENO, s, strlen(s));
  (void)w;
}

/* The child between fork and exec: async-signal-safe calls only, since the
 * parent has other threads. */
static void run_child(char **argv, char **env, pid_t parent) {
  for (size_t i = 0; i < NCAUGHT; i++)
    sigaction(caught[i], &saved_action[i], NULL);
  sigaction(SIGPIPE, &saved_pipe, NULL);
  sigprocmask(SIG_SETMASK, &saved_mask, NULL);
  /* If rlock dies (even by SIGKILL), the lock stops being renewed: the
   * command should not go on believing it holds it. */
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(RT_EXIT_LOST);
  execvpe(argv[0], argv, env);
  int e = errno;
  write_stderr("rlock: cannot execute ");
  write_stderr(argv[0]);
  write_stderr(e == ENOENT ? ": not found\n"
                  : e == EACCES ? ": permission denied\n" : ": exec failed\n");
  _exit(e == ENOENT ? 127 : 126);
}

/*
 * Supervises the child: forwards terminating signals, and when the lock is
 * lost (lost callback, or a fixed lease running out) sends SIGTERM, then
 * SIGKILL after the grace period. Returns the child's wait status.
 */
static int supervise(exec_state *st, pid_t child, long long lease_deadline) {
  long long kill_deadline = -1;
  for (;;) {
    long long deadline = kill_deadline;
    if (!st->lost && lease_deadline >= 0 &&
        (deadline < 0 || lease_deadline < deadline))
      deadline = lease_deadline;
    /* Wake at least every second to reap the child even if a SIGCHLD
     * byte was dropped on a full pipe. */
    long long tick = now_ms() + 1000;
    int ev = next_event(deadline < 0 || deadline > tick ? tick : deadline);
    int lost_now = 0;
    int status;
    if (waitpid(child, &status, WNOHANG) == child) return status;
    if (ev == 0) {
      if (kill_deadline >= 0 && now_ms() >= kill_deadline) {
        VERBOSE(st, "grace period over: SIGKILL to %d\n", (int)child);
        kill(child, SIGKILL);
        kill_deadline = -1;
      } else if (!st->lost && lease_deadline >= 0 &&
                 now_ms() >= lease_deadline) {
        fprintf(stderr, "rlock: the lease of %s ran out while the command "
                        "ran\n", st->name);
        lost_now = 1;
      }
    } else if (ev == 'L') {
      if (!st->lost)
        fprintf(stderr, "rlock: %s %s was lost while the command ran\n",
                st->sem ? "semaphore" : "lock", st->name);
      lost_now = !st->lost;
    } else if (ev < 0 && ev != -SIGCHLD) {
      VERBOSE(st, "forwarding signal %d to %d\n", -ev, (int)child);
      kill(child, -ev);
    }
    if (lost_now) {
      st->lost = 1;
      VERBOSE(st, "SIGTERM to %d\n", (int)child);
      kill(child, SIGTERM);
      kill_deadline = now_ms() + st->o->grace_ms;
    }
  }
}

static const char exec_usage[] =
    "usage: rlock exec [options] NAME [--] COMMAND [ARGS...]\n"
    "       rlock exec [options] --sem NAME:K [--] COMMAND [ARGS...]\n"
    "Takes the distributed lock NAME, runs COMMAND with RLOCK_TOKEN (the\n"
    "fencing token) and RLOCK_NAME in its environment, releases the lock\n"
    "and exits with the command's status (128+N if killed by signal N).\n"
    "With --sem, takes permits of the semaphore NAME of K permits instead:\n"
    "at most K commands run at once, across every client of the masters.\n"
    "      --sem NAME:K               a semaphore of K permits, not a lock\n"
    "                                 (every user must give the same K)\n"
    "      --permits N                permits to take with --sem (default 1)\n"
    "  -w, --wait, --timeout SECONDS  give up after SECONDS (fractions allowed;\n"
    "                                 default: wait forever)\n"
    "  -n, --nonblock                 fail at once if the lock is held\n"
    "  -E, --conflict-exit-code CODE  exit code when the lock cannot be had\n"
    "                                 (held, timed out, or no quorum); default 1\n"
    "      --kind KIND                what to take: lock (the default), fair\n"
    "                                 (waiters served in arrival order), read\n"
    "                                 or write (the sides of a read-write lock)\n"
    "      --fair, --read, --write    short for --kind fair, read, write\n"
    "      --lease MS                 fixed lease instead of the watchdog\n"
    "      --grace SECONDS            SIGTERM-to-SIGKILL delay when the lock\n"
    "                                 is lost (default 5)\n"
    "      --watchdog-timeout MS      watchdog lease (default 30000; renewed\n"
    "                                 every third of it)\n"
    "      --max-lease MS             the longest lease of any client of these\n"
    "                                 masters (default 60000; --lease is at\n"
    "                                 most this)\n"
    "      --connect-timeout MS       how long a connection attempt to a\n"
    "                                 master may take (default 2000; never\n"
    "                                 past -w)\n"
    "  -v, --verbose                  report progress on stderr\n"
    "      --masters URL,...          --prefix P  --cacert FILE  --cert FILE\n"
    "      --key FILE  --sni NAME     --insecure  as for every command\n"
    "Exit: the command's status; CODE (-E) if the lock was not had; 75 if the\n"
    "lock was lost while the command ran; 64 usage, or a semaphore whose\n"
    "masters remember another K; 71 system error.\n";

static const char elect_usage[] =
    "usage: rlock elect [options] NAME [--value V] [--] COMMAND [ARGS...]\n"
    "Campaigns in the election NAME, runs COMMAND while this process leads\n"
    "(RLOCK_TOKEN, the leadership's fencing token, and RLOCK_NAME in its\n"
    "environment), resigns when it exits, and exits with its status. If the\n"
    "leadership is lost, COMMAND gets SIGTERM, SIGKILL after --grace, and\n"
    "rlock exits 75. Campaigners are served in their order of arrival.\n"
    "      --value V                  what observers see (at most 4096 bytes)\n"
    "  -w, --wait, --timeout SECONDS  give up after SECONDS (default: forever)\n"
    "  -n, --nonblock                 fail at once if there is a leader\n"
    "  -E, --conflict-exit-code CODE  exit code when not elected (default 1)\n"
    "      --grace SECONDS            SIGTERM-to-SIGKILL delay (default 5)\n"
    "      --watchdog-timeout MS      the leadership's lease (default 30000)\n"
    "      --connect-timeout MS       as for exec\n"
    "  -v, --verbose                  report progress on stderr\n"
    "Exit: the command's status; CODE (-E) if not elected; 75 if the\n"
    "leadership was lost while the command ran; 64 usage; 71 system error.\n";

enum { OPT_LEASE = 256, OPT_GRACE, OPT_WATCHDOG, OPT_CONNECT,
       OPT_MAX_LEASE, OPT_SEM, OPT_PERMITS, OPT_VALUE };

/* --sem NAME:K: the name into a copy (freed by the caller) and K. 0, or
 * -1 when malformed. */
static int parse_sem(const char *arg, char **name, long long *k) {
  const char *colon = strrchr(arg, ':');
  if (colon == NULL || colon == arg) return -1;
  if (rt_parse_ll(colon + 1, 1, 100000, k) != 0) return -1;
  *name = strndup(arg, (size_t)(colon - arg));
  return *name != NULL ? 0 : -1;
}

/* What each of exec's options with a value takes, for its usage error. */
static const char *option_takes(int opt) {
  switch (opt) {
    case 'w': return "seconds, fractions allowed";
    case 'E': return "an exit code from 0 to 255";
    case OPT_LEASE: return "milliseconds, at least 1";
    case OPT_GRACE: return "seconds, fractions allowed";
    case OPT_WATCHDOG: return "milliseconds, at least 30";
    case OPT_CONNECT: return "milliseconds";
    case OPT_MAX_LEASE: return "milliseconds, 1 to 30 days";
    case OPT_SEM: return "NAME:K: a semaphore's name, a colon and its "
                         "number of permits K, 1 to 100000";
    case OPT_PERMITS: return "a number of permits from 1 to 100000";
    case OPT_VALUE: return "at most 4096 bytes";
    case RT_OPT_KIND: return "lock, fair, read or write";
    case RT_OPT_MASTERS: return "a comma-separated list of master URLs, none "
                             "empty";
    default: return NULL;
  }
}

/* Says which option had a bad value, the value, and what the option takes;
 * the value is left out for --masters, whose URLs may carry passwords. */
static void bad_value(const char *who, int opt, const char *longname,
                      const char *value) {
  char name[64];
  if (longname != NULL)
    snprintf(name, sizeof name, "--%s", longname);
  else
    snprintf(name, sizeof name, "-%c", opt);
  const char *takes = option_takes(opt);
  if (opt == RT_OPT_MASTERS || value == NULL)
    fprintf(stderr, "%s: bad value for %s", who, name);
  else
    fprintf(stderr, "%s: bad value '%s' for %s", who, value, name);
  if (takes != NULL) fprintf(stderr, " (%s)", takes);
  fputc('\n', stderr);
}

static const struct option exec_long_options[] = {
    {"wait", required_argument, NULL, 'w'},
    {"timeout", required_argument, NULL, 'w'},
    {"nonblock", no_argument, NULL, 'n'},
    {"no-wait", no_argument, NULL, 'n'},
    {"conflict-exit-code", required_argument, NULL, 'E'},
    {"lease", required_argument, NULL, OPT_LEASE},
    {"grace", required_argument, NULL, OPT_GRACE},
    {"watchdog-timeout", required_argument, NULL, OPT_WATCHDOG},
    {"max-lease", required_argument, NULL, OPT_MAX_LEASE},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT},
    {"verbose", no_argument, NULL, 'v'},
    {"sem", required_argument, NULL, OPT_SEM},
    {"permits", required_argument, NULL, OPT_PERMITS},
    {"value", required_argument, NULL, OPT_VALUE},
    RT_KIND_LONG_OPTIONS,
    RT_GLOBAL_LONG_OPTIONS,
    RT_HELP_LONG_OPTION_AND_END};

/* What exec's command line says. */
typedef struct exec_cmdline {
  exec_opts o;
  char *sem_name;    /* --sem's NAME, owned; NULL without --sem */
  int permits_given; /* --permits was given */
  const char *name;  /* the lock's or the semaphore's */
  char **cmd;        /* the command and its arguments */
} exec_cmdline;

/* Takes the option c (its value in optarg) into cl, or the global one
 * into g; one of the RT_TAKE_ results. */
static int exec_option(rt_global *g, exec_cmdline *cl, int c) {
  exec_opts *o = &cl->o;
  long long v;
  switch (c) {
  case 'w':
    return rt_parse_seconds(optarg, &o->wait_ms) ? RT_TAKE_BAD : RT_TAKE_OK;
  case 'n': o->nowait = 1; return RT_TAKE_OK;
  case 'E':
    if (rt_parse_ll(optarg, 0, 255, &v) != 0) return RT_TAKE_BAD;
    o->conflict_code = (int)v;
    return RT_TAKE_OK;
  case OPT_LEASE:
    return rt_parse_ll(optarg, 1, (long long)1 << 40, &o->lease_ms)
               ? RT_TAKE_BAD : RT_TAKE_OK;
  case OPT_GRACE:
    return rt_parse_seconds(optarg, &o->grace_ms) ? RT_TAKE_BAD : RT_TAKE_OK;
  case OPT_WATCHDOG:
    return rt_parse_ll(optarg, 3, (long long)1 << 40, &o->watchdog_ms)
               ? RT_TAKE_BAD : RT_TAKE_OK;
  case OPT_CONNECT:
    return rt_parse_ll(optarg, 0, (long long)1 << 40, &o->connect_ms)
               ? RT_TAKE_BAD : RT_TAKE_OK;
  case OPT_MAX_LEASE:
    return rt_parse_ll(optarg, 1, 30LL * 86400000, &o->max_lease_ms)
               ? RT_TAKE_BAD : RT_TAKE_OK;
  case 'v': o->verbose = 1; return RT_TAKE_OK;
  case OPT_VALUE:
    if (strlen(optarg) > 4096) return RT_TAKE_BAD;
    o->value = optarg;
    return RT_TAKE_OK;
  case OPT_SEM:
    free(cl->sem_name);
    cl->sem_name = NULL;
    return parse_sem(optarg, &cl->sem_name, &o->sem_limit) ? RT_TAKE_BAD
                                                           : RT_TAKE_OK;
  case OPT_PERMITS:
    if (rt_parse_ll(optarg, 1, 100000, &o->permits) != 0)
      return RT_TAKE_BAD;
    cl->permits_given = 1;
    return RT_TAKE_OK;
  default:
    if (rt_kind_option(c, optarg, &o->kind))
      return o->kind < 0 ? RT_TAKE_BAD : RT_TAKE_OK;
    return rt_global_option(g, c, optarg);
  }
}

/* Checks what the options say together, and takes NAME and the command
 * from the arguments after them. -1 to go on, or the exit code. */
static int exec_check_args(exec_cmdline *cl, int argc, char **argv) {
  exec_opts *o = &cl->o;
  if (o->elect && (cl->sem_name != NULL || o->kind != 0 || o->lease_ms > 0 ||
                   cl->permits_given)) {
    fprintf(stderr, "rlock elect: --sem, --permits, --kind and --lease do "
                    "not apply to an election\n");
    return RT_EXIT_USAGE;
  }
  if (!o->elect && o->value != NULL) {
    fprintf(stderr, "rlock exec: --value needs rlock elect\n");
    return RT_EXIT_USAGE;
  }
  if (cl->sem_name != NULL && o->kind != 0) {
    fprintf(stderr, "rlock exec: --sem takes no lock kind\n");
    return RT_EXIT_USAGE;
  }
  if (cl->permits_given && cl->sem_name == NULL) {
    fprintf(stderr, "rlock exec: --permits needs --sem\n");
    return RT_EXIT_USAGE;
  }
  if (cl->sem_name != NULL && o->permits > o->sem_limit) {
    fprintf(stderr, "rlock exec: --permits %lld is more than the semaphore's "
                    "%lld\n", o->permits, o->sem_limit);
    return RT_EXIT_USAGE;
  }
  /* With --sem the name is the semaphore's; else the first argument. */
  if (cl->sem_name == NULL && optind >= argc) goto usage;
  cl->name = cl->sem_name != NULL ? cl->sem_name : argv[optind++];
  if (optind < argc && strcmp(argv[optind], "--") == 0) optind++;
  if (optind >= argc) goto usage;
  cl->cmd = argv + optind;
  if (o->nowait) o->wait_ms = 0;
  return -1;
usage:
  fputs(exec_usage, stderr);
  return RT_EXIT_USAGE;
}

/* exec_option as an rt_cmdline's taker: says what a bad value was. */
static int exec_take_option(rt_global *g, int opt, const char *longname,
                            void *arg) {
  int taken = exec_option(g, arg, opt);
  if (taken == RT_TAKE_BAD) bad_value("rlock exec", opt, longname, optarg);
  return taken;
}

/* Parses exec's command line into cl. -1 to go on, or the exit code. */
static int exec_parse(rt_global *g, int argc, char **argv, exec_cmdline *cl,
                      int elect) {
  /* '+': stop at NAME, so the command's own options are left alone. */
  rt_cmdline line = {"+w:nE:vh", exec_long_options,
                     elect ? elect_usage : exec_usage, exec_take_option, cl,
                     RT_ANY_OPERANDS};
  memset(cl, 0, sizeof *cl);
  cl->o = (exec_opts){.wait_ms = -1, .conflict_code = RT_EXIT_CONFLICT,
                      .lease_ms = -1, .grace_ms = 5000, .connect_ms = 2000,
                      .permits = 1, .elect = elect};
  int code = rt_parse_options(g, argc, argv, &line);
  return code >= 0 ? code : exec_check_args(cl, argc, argv);
}

/* Opens the client and the handle on NAME (a lock of the kind asked for,
 * or the semaphore), with its lost callback. -1 to go on, or the exit
 * code after saying why. */
static int exec_open(const rt_global *g, const exec_cmdline *cl,
                     exec_state *st, rlock_client **client) {
  const exec_opts *o = &cl->o;
  /* -w bounds the whole call, connecting included (-n bounds only the
   * wait for a holder: connecting keeps its own bound). */
  long long connect_ms = o->connect_ms;
  if (!o->nowait && o->wait_ms > 0 && o->wait_ms < connect_ms)
    connect_ms = o->wait_ms;
  int rc = rt_open_client(g, o->watchdog_ms, o->max_lease_ms, connect_ms,
                          client);
  if (rc != 0) return rc == RLOCK_EINVAL ? RT_EXIT_USAGE : RT_EXIT_OSERR;
  if (o->elect) {
    rc = rlock_election_get(*client, cl->name, &st->elect);
    if (rc != 0) {
      rt_print_lib_error("cannot use election", *client, rc);
      rlock_client_close(*client);
      return rc == RLOCK_EINVAL ? RT_EXIT_USAGE : RT_EXIT_OSERR;
    }
    rlock_election_set_lost_cb(st->elect, on_elect_lost, NULL);
    return -1;
  }
  rc = cl->sem_name != NULL
           ? rlock_sem_get(*client, cl->name, o->sem_limit, &st->sem)
           : rt_get_handle(*client, o->kind, cl->name, &st->lock);
  if (rc != 0) {
    fprintf(stderr, "rlock: bad %s name '%s': %s\n",
            cl->sem_name ? "semaphore" : "lock", cl->name, rlock_strerror(rc));
    rlock_client_close(*client);
    return rc == RLOCK_EINVAL ? RT_EXIT_USAGE : RT_EXIT_OSERR;
  }
  if (st->sem != NULL)
    rlock_sem_set_lost_cb(st->sem, on_sem_lost, NULL);
  else
    rlock_set_lost_cb(st->lock, on_lost, NULL);
  return -1;
}

/* Says why the lock (or the permits) could not be had, giving back what an
 * attempt that a signal interrupted got after all. Returns the exit code. */
static int exec_not_acquired(exec_state *st, rlock_client *client, int rc) {
  const exec_opts *o = st->o;
  if (rc == RLOCK_OK) release_hold(st); /* acquired just as the signal came */
  if (st->pending_signal) return 128 + st->pending_signal;
  if (rc == RLOCK_ETIMEDOUT && st->sem != NULL)
    fprintf(stderr, "rlock: semaphore %s has no %lld permit(s) free%s\n",
            st->name, o->permits, o->nowait ? "" : " (timed out waiting)");
  else if (rc == RLOCK_ETIMEDOUT && st->elect != NULL)
    fprintf(stderr, "rlock: election %s has a leader%s\n", st->name,
            o->nowait ? "" : " (timed out waiting)");
  else if (rc == RLOCK_ETIMEDOUT)
    fprintf(stderr, "rlock: lock %s is held%s\n", st->name,
            o->nowait ? "" : " (timed out waiting)");
  else
    rt_print_lib_error(st->sem ? "cannot take permits" : "cannot take lock",
                       client, rc);
  /* A semaphore whose masters remember another K: the command line is
   * wrong for this deployment. */
  return rc == RLOCK_EINVAL || rc == RLOCK_ECONFLICT ? RT_EXIT_USAGE
                                                     : o->conflict_code;
}

/* Dies of sig, as flock would have, so that a shell sees it. */
static void die_of_signal(int sig) {
  signal(sig, SIG_DFL);
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  sigprocmask(SIG_UNBLOCK, &s, NULL);
  raise(sig);
}

/* The fencing token of the hold just taken. */
static uint64_t held_token(const exec_state *st) {
  uint64_t token = 0;
  if (st->elect != NULL)
    rlock_election_token(st->elect, &token);
  else if (st->sem != NULL)
    rlock_sem_owner_fencing_token(st->sem, EXEC_OWNER, &token);
  else
    rlock_owner_fencing_token(st->lock, EXEC_OWNER, &token);
  return token;
}

/* When a fixed lease (--lease) taken by an attempt that started after t0
 * runs out, less the client's drift allowance (the library's own rule,
 * rl_drift_ms), so that the command is stopped early, never late; -1
 * under the watchdog. */
static long long fixed_lease_deadline(const exec_state *st,
                                      rlock_client *client, long long t0) {
  long long lease_ms = st->o->lease_ms, deadline;
  if (lease_ms <= 0) return -1;
  deadline = t0 + lease_ms;
  if (st->sem == NULL) {
    /* The remaining lease on a majority, measured from before the query,
     * is the better bound. */
    long long q0 = now_ms();
    int64_t left;
    if (rlock_remaining_lease(st->lock, &left) == 0 && left >= 0)
      deadline = q0 + left;
  }
  return deadline - rl_drift_ms(client, lease_ms);
}

/* Runs the command under the hold taken at t0 and supervises it. Returns
 * its exit code (75 if the hold was lost, 71 if it could not start). */
static int exec_run_command(exec_state *st, rlock_client *client,
                            char **cmd, long long t0) {
  uint64_t token = held_token(st);
  long long deadline = fixed_lease_deadline(st, client, t0);
  VERBOSE(st, "acquired %s%s as %s (token %" PRIu64 ") in %lld ms\n",
          st->sem ? "permits of " : "", st->name,
          st->sem ? "semaphore" : rt_kind_names[st->o->kind], token,
          now_ms() - t0);
  char **env = child_env(token, st->name);
  pid_t child = -1;
  pid_t parent = getpid();
  if (env != NULL && !st->lost) {
    fflush(NULL);
    child = fork();
    if (child == 0) run_child(cmd, env, parent);
  }
  int status = 0, code = RT_EXIT_OSERR;
  if (st->lost) {
    fprintf(stderr, "rlock: %s %s was lost before the command started\n",
            st->sem ? "semaphore" : "lock", st->name);
  } else if (child < 0) {
    perror(env == NULL ? "rlock: environment" : "rlock: fork");
  } else {
    status = supervise(st, child, deadline);
  }
  free_env(env);
  if (child > 0)
    code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  return st->lost ? RT_EXIT_LOST : code;
}

/* Releases the hold after the command and says what went wrong; returns
 * code, or 75 when the release finds the hold was lost meanwhile. */
static int release_and_report(exec_state *st, rlock_client *client,
                              int code) {
  int rc = release_hold(st);
  if (rc == RLOCK_OK) {
    VERBOSE(st, "released %s\n", st->name);
  } else if (!st->lost && rc != RLOCK_ELOST) {
    /* Not released here; closing the client tries once more, and the
     * lease bounds the rest. */
    rt_print_lib_error("release failed (the lease will expire)", client, rc);
  } else if (!st->lost) {
    /* Taken away or expired while the command ran, with nothing to tell
     * before it ended (a forced unlock between renewals, a fixed lease):
     * another holder may have run alongside it. */
    fprintf(stderr, "rlock: %s %s was lost while the command ran (found at "
                    "its release)\n",
            st->sem ? "semaphore" : "lock", st->name);
    code = RT_EXIT_LOST;
  }
  return code;
}

/* Takes the hold, runs the command under it and gives it back. */
static int exec_run(const rt_global *g, const exec_cmdline *cl) {
  if (make_pipe(sig_pipe) != 0 || make_pipe(ev_pipe) != 0 ||
      install_handlers() != 0) {
    perror("rlock: pipe or sigaction");
    return RT_EXIT_OSERR;
  }
  rlock_client *client;
  exec_state st = {.o = &cl->o, .name = cl->name};
  int code = exec_open(g, cl, &st, &client);
  if (code >= 0) return code;
  long long t0 = now_ms();
  int rc = acquire_hold(&st);
  if (rc != RLOCK_OK || st.pending_signal)
    code = exec_not_acquired(&st, client, rc);
  else
    code = release_and_report(&st, client,
                              exec_run_command(&st, client, cl->cmd, t0));
  rlock_free(st.lock);
  rlock_sem_free(st.sem);
  rlock_election_free(st.elect);
  rlock_client_close(client);
  /* A signal that came while taking the hold: die of it, now that the
   * hold is given back. */
  if (st.pending_signal) die_of_signal(st.pending_signal);
  return code;
}

int rt_cmd_exec(rt_global *g, int argc, char **argv) {
  exec_cmdline cl;
  int code = exec_parse(g, argc, argv, &cl, strcmp(argv[0], "elect") == 0);
  if (code < 0) code = exec_run(g, &cl);
  free(cl.sem_name);
  return code;
}
