/*
 * The harness behind harness.h: redis-server processes and the test
 * runner. It keeps a small static registry of the servers this process
 * started (pid, directory, cached connection) so that atexit, SIGINT and
 * SIGTERM, the watchdog and the runner can kill whatever is left, and so
 * that a signal only ever goes to a pid we started and have not reaped:
 * a stale copy of an rt_redis can never signal a recycled pid. Entries
 * record the process that made them, so a forked test process never
 * touches its parent's servers.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RT_MAX_SERVERS 64
#define RT_START_TRIES 5
#define RT_START_TIMEOUT_MS 5000
#define RT_CMD_TIMEOUT_MS 2000
#define RT_EXTRA_MAX 8
#define RT_EXTRA_LEN 512

typedef struct rt_slot {
  int used;
  pid_t owner;        /* the process that started the server */
  volatile pid_t pid; /* 0 when not running; read by signal handlers */
  char dir[256];
  char log[280];
  char sock[128];     /* its unix socket, or "" */
  redisContext *conn; /* the cached connection of rt_redis_cmd */
  int test_scoped;    /* started inside a test: stopped when it ends */
  /* Extra environment ("NAME=value") and arguments of rt_redis_start_ex,
   * kept for restarts; "{dir}" in an argument is the server's directory. */
  char extra_env[RT_EXTRA_MAX][RT_EXTRA_LEN];
  char extra_arg[RT_EXTRA_MAX][RT_EXTRA_LEN];
  int nenv, narg;
  char server[256];   /* rt_redis_opts.server, or "" for the default */
} rt_slot;

static rt_slot slots[RT_MAX_SERVERS];
/* The process whose test function runs now, or 0: servers started
 * outside a test (say before rt_main) are shared by every test of the
 * program, those started in a test are its own and are stopped after it.
 * A pid rather than a flag, so that a process forked by a test and
 * running a runner of its own starts with no test running. */
static pid_t test_pid;
static int hooks_installed;

uint64_t rt_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int rt_reap(pid_t pid) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

uint64_t rt_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void rt_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR) continue;
}

/* The registry. */

static rt_slot *slot_of(const rt_redis *r) {
  for (int i = 0; i < RT_MAX_SERVERS && r->dir[0] != '\0'; i++)
    if (slots[i].used && slots[i].owner == getpid() &&
        strcmp(slots[i].dir, r->dir) == 0)
      return &slots[i];
  return NULL;
}

/* The slot of a server that is running, as this struct believes. */
static rt_slot *live_slot(const rt_redis *r) {
  rt_slot *s = slot_of(r);
  return s && r->pid > 0 && s->pid == r->pid ? s : NULL;
}

static void drop_conn(rt_slot *s) {
  if (s->conn) redisFree(s->conn);
  s->conn = NULL;
}

/* Kills a server with its process group, which also holds the children
 * it forks for BGSAVE or an AOF rewrite (they would go on writing into
 * its directory), and reaps it. A pid of 0 or less would mean some other
 * group, so it is refused. */
static void kill_and_reap(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGCONT);
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) continue;
}

static int remove_entry(const char *path, const struct stat *st, int type,
                        struct FTW *ftw) {
  (void)st, (void)type, (void)ftw;
  remove(path);
  return 0;
}

/* Kills the server of a slot, removes its directory (with whatever a test
 * made the server write there, such as an appendonlydir) and frees the
 * slot. */
static void slot_release(rt_slot *s) {
  drop_conn(s);
  if (s->pid > 0) kill_and_reap(s->pid);
  s->pid = 0;
  nftw(s->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
  s->used = 0;
}

/* Releases every server this process started (with only_test_scoped,
 * only those the current test started) and returns how many. In a
 * signal handler (in_handler) only async-signal-safe calls are made: the
 * log is the one file a server without persistence writes, so unlinking
 * it lets rmdir remove the directory without listing it. */
static int release_servers(int in_handler, int only_test_scoped) {
  int n = 0;
  for (int i = 0; i < RT_MAX_SERVERS; i++) {
    rt_slot *s = &slots[i];
    if (!s->used || s->owner != getpid()) continue;
    if (only_test_scoped && !s->test_scoped) continue;
    n++;
    if (!in_handler) {
      slot_release(s);
      continue;
    }
    if (s->pid > 0) kill_and_reap(s->pid);
    unlink(s->log);
    if (s->sock[0]) unlink(s->sock);
    rmdir(s->dir);
  }
  return n;
}

static void on_exit_cleanup(void) { release_servers(0, 0); }

static void on_fatal_signal(int sig) {
  release_servers(1, 0);
  raise(sig); /* SA_RESETHAND made it fatal again. */
}

/* Sets a handler for sig; with only_default, only if it has none. */
static void set_handler(int sig, void (*fn)(int), int flags, int only_default) {
  struct sigaction old, sa;
  if (only_default && (sigaction(sig, NULL, &old) != 0 ||
                       old.sa_handler != SIG_DFL))
    return;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
}

/* Registers the atexit handler, and SIGINT and SIGTERM handlers unless
 * the program has handlers of its own. */
static void install_hooks(void) {
  if (hooks_installed) return;
  hooks_installed = 1;
  atexit(on_exit_cleanup);
  set_handler(SIGINT, on_fatal_signal, SA_RESETHAND, 1);
  set_handler(SIGTERM, on_fatal_signal, SA_RESETHAND, 1);
}

/* TLS material. */

static rt_tls_files tls_files;
static int tls_state; /* 0 not made, 1 made, -1 failed */

/* The openssl commands, run by sh in the directory. EC keys: fast. The
 * expired certificate needs "openssl ca", the one command of OpenSSL 3.0
 * that takes explicit validity dates. */
static const char tls_script[] =
    "set -e\n"
    "key() { openssl genpkey -algorithm EC -pkeyopt "
    "ec_paramgen_curve:prime256v1 -out \"$1\"; }\n"
    "ca() { key \"$1.key\"; openssl req -x509 -new -key \"$1.key\" -out "
    "\"$1.crt\" -days 2 -subj \"/CN=$2\" -addext "
    "basicConstraints=critical,CA:TRUE -addext "
    "keyUsage=critical,keyCertSign,cRLSign; }\n"
    "leaf() {\n"
    "  key \"$1.key\"\n"
    "  openssl req -new -key \"$1.key\" -out \"$1.csr\" -subj \"/CN=$1\"\n"
    "  printf 'basicConstraints=CA:FALSE\\nkeyUsage=critical,digitalSignature"
    "\\nextendedKeyUsage=%s\\n%s\\n' \"$4\" \"$3\" > \"$1.ext\"\n"
    "  openssl x509 -req -in \"$1.csr\" -CA \"$2.crt\" -CAkey \"$2.key\" "
    "-set_serial \"$5\" -days 2 -extfile \"$1.ext\" -out \"$1.crt\"\n"
    "}\n"
    "ca ca rt-ca\n"
    "ca other-ca rt-other-ca\n"
    "leaf server ca subjectAltName=IP:127.0.0.1,DNS:localhost "
    "serverAuth,clientAuth 11\n"
    "leaf other other-ca subjectAltName=IP:127.0.0.1,DNS:localhost "
    "serverAuth 12\n"
    "leaf wrongname ca subjectAltName=DNS:other.example serverAuth 13\n"
    "leaf client ca '' clientAuth 14\n"
    "key expired.key\n"
    "openssl req -new -key expired.key -out expired.csr -subj /CN=expired\n"
    "mkdir -p ca.db; : > ca.db/index.txt; echo 1000 > ca.db/serial\n"
    "printf '[ca]\\ndefault_ca = rt\\n[rt]\\ndir = .\\n"
    "database = ca.db/index.txt\\nserial = ca.db/serial\\n"
    "new_certs_dir = ca.db\\ncertificate = ca.crt\\nprivate_key = ca.key\\n"
    "default_md = sha256\\npolicy = any\\nx509_extensions = ext\\n"
    "[any]\\ncommonName = supplied\\n[ext]\\nbasicConstraints = CA:FALSE\\n"
    "subjectAltName = IP:127.0.0.1,DNS:localhost\\n"
    "extendedKeyUsage = serverAuth\\n' > ca.cnf\n"
    "openssl ca -batch -config ca.cnf -in expired.csr -out expired.crt "
    "-startdate 20200101000000Z -enddate 20200102000000Z\n";

static void remove_tls_dir(void) {
  if (tls_state == 1 && tls_files.dir[0] != '\0')
    nftw(tls_files.dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

#define TLS_PATH(field, name) \
  snprintf(f->field, sizeof f->field, "%.200s/%s", f->dir, name)

const rt_tls_files *rt_tls(void) {
  if (tls_state != 0) return tls_state == 1 ? &tls_files : NULL;
  tls_state = -1;
  rt_tls_files *f = &tls_files;
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  snprintf(f->dir, sizeof f->dir, "%s/rt_tls.XXXXXX", tmp);
  if (mkdtemp(f->dir) == NULL) {
    fprintf(stderr, "rt_tls: cannot make a directory under %s\n", tmp);
    return NULL;
  }
  char path[400], cmd[1200];
  snprintf(path, sizeof path, "%.200s/gen.sh", f->dir);
  FILE *out = fopen(path, "w");
  if (out == NULL || fputs(tls_script, out) < 0 || fclose(out) != 0) {
    fprintf(stderr, "rt_tls: cannot write %s\n", path);
    return NULL;
  }
  snprintf(cmd, sizeof cmd, "cd '%.200s' && sh gen.sh > gen.log 2>&1", f->dir);
  int st = system(cmd);
  tls_state = 1; /* the directory exists: removed at exit either way */
  atexit(remove_tls_dir);
  if (st != 0) {
    fprintf(stderr, "rt_tls: openssl failed (status %d); see %s/gen.log\n",
            st, f->dir);
    snprintf(cmd, sizeof cmd, "tail -20 '%.200s/gen.log' >&2", f->dir);
    if (system(cmd) != 0) { /* nothing more to say */ }
    tls_state = -1;
    return NULL;
  }
  TLS_PATH(ca, "ca.crt");
  TLS_PATH(server_cert, "server.crt");
  TLS_PATH(server_key, "server.key");
  TLS_PATH(other_ca, "other-ca.crt");
  TLS_PATH(other_cert, "other.crt");
  TLS_PATH(other_key, "other.key");
  TLS_PATH(expired_cert, "expired.crt");
  TLS_PATH(expired_key, "expired.key");
  TLS_PATH(wrongname_cert, "wrongname.crt");
  TLS_PATH(wrongname_key, "wrongname.key");
  TLS_PATH(client_cert, "client.crt");
  TLS_PATH(client_key, "client.key");
  return f;
}

int rt_tls_mode(void) {
  const char *e = getenv("RT_TLS");
  if (e == NULL || strcmp(e, "1") != 0) return 0;
  const rt_tls_files *f = rt_tls();
  /* Clients given no CA verify the servers through the default store,
   * which this environment variable replaces. */
  if (f != NULL) setenv("SSL_CERT_FILE", f->ca, 1);
  return 1;
}

/* Servers. */

/* A port that was free a moment ago; the caller copes with the race. */
static int free_port(void) {
  struct sockaddr_in a = {.sin_family = AF_INET};
  socklen_t len = sizeof a;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) close(fd);
  return port;
}

/* Connects to the server (over its unix socket when it has one: a TLS
 * server has no plain port) and authenticates when there is a password;
 * the timeout covers the connect and every command. */
static redisContext *connect_to(const rt_redis *r, int ms) {
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  redisContext *c =
      r->unixsock[0] ? redisConnectUnixWithTimeout(r->unixsock, tv)
                     : redisConnectWithTimeout("127.0.0.1", r->port, tv);
  if (c && !c->err && redisSetTimeout(c, tv) == REDIS_OK) {
    fcntl(c->fd, F_SETFD, FD_CLOEXEC);
    if (r->password[0] == '\0') return c;
    redisReply *rep = redisCommand(c, "AUTH %s", r->password);
    int ok = rep && rep->type != REDIS_REPLY_ERROR;
    if (rep) freeReplyObject(rep);
    if (ok) return c;
  }
  if (c) redisFree(c);
  return NULL;
}

/* Whether our server answers: the port may also answer for another
 * process, one that won the race for it, so the pid must match. */
static int probe(const rt_redis *r) {
  redisContext *c = connect_to(r, 500);
  redisReply *rep = c ? redisCommand(c, "INFO server") : NULL;
  char want[40];
  snprintf(want, sizeof want, "process_id:%d\r\n", (int)r->pid);
  int ok = rep && rep->type == REDIS_REPLY_STRING && strstr(rep->str, want);
  if (rep) freeReplyObject(rep);
  if (c) redisFree(c);
  return ok;
}

/* The child side of spawn: async-signal-safe calls only, since the test
 * may have threads. Output goes to the log, never to the test's. */
static void child_exec(const char **argv, char *const *envp, const char *log,
                       pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(126); /* The parent died before prctl. */
  setpgid(0, 0); /* A group of its own: see kill_and_reap. */
  int in = open("/dev/null", O_RDONLY);
  int out = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (in < 0 || out < 0) _exit(126);
  dup2(in, 0);
  dup2(out, 1);
  dup2(out, 2);
  if (close_range(3, ~0U, 0) != 0)
    for (int fd = 3; fd < 4096; fd++) close(fd);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
  execvpe(argv[0], (char *const *)argv, envp);
  _exit(127);
}

const char *rt_server_program(void) {
  const char *e = getenv("RLOCK_TEST_SERVER");
  return e && *e ? e : "redis-server";
}

const char *rt_server_tool(const char *tool, char *buf, size_t cap) {
  const char *s = rt_server_program();
  size_t n = strlen(s), end = sizeof "-server" - 1;
  if (n > end && strcmp(s + n - end, "-server") == 0)
    snprintf(buf, cap, "%.*s-%s", (int)(n - end), s, tool);
  else
    snprintf(buf, cap, "redis-%s", tool);
  return buf;
}

/* Runs the server program on r->port and waits until it answers. Returns
 * 0, -2 when it exited early (the port was taken; worth another port), or
 * -1 on any other failure. */
static int spawn(rt_redis *r, rt_slot *s) {
  const char *bin = s->server[0] ? s->server : rt_server_program();
  char port[16];
  snprintf(port, sizeof port, "%d", r->port);
  const char *argv[64 + RT_EXTRA_MAX] = {
      bin, "--port", port, "--bind", "127.0.0.1", "--save", "",
      "--appendonly", "no", "--dir", s->dir, "--daemonize", "no",
      "--logfile", s->log, "--protected-mode", "no"};
  int argc = 17;
  if (r->password[0] != '\0') {
    argv[argc++] = "--requirepass";
    argv[argc++] = r->password;
  }
  const rt_tls_files *tf = r->tls ? rt_tls() : NULL;
  if (r->tls) {
    if (tf == NULL) return -1;
    argv[2] = "0"; /* TLS only */
    argv[argc++] = "--tls-port";
    argv[argc++] = port;
    argv[argc++] = "--tls-cert-file";
    argv[argc++] = r->tls_cert;
    argv[argc++] = "--tls-key-file";
    argv[argc++] = r->tls_key;
    argv[argc++] = "--tls-ca-cert-file";
    argv[argc++] = tf->ca;
    argv[argc++] = "--tls-auth-clients";
    argv[argc++] = r->tls_auth_clients ? "yes" : "no";
  }
  char acl[sizeof r->acl];
  if (r->acl[0] != '\0') { /* --user NAME on >PASSWORD RULE... */
    snprintf(acl, sizeof acl, "%s", r->acl);
    argv[argc++] = "--user";
    for (char *save = NULL, *w = strtok_r(acl, " ", &save); w != NULL;
         w = strtok_r(NULL, " ", &save)) {
      if (argc == 56) {
        fprintf(stderr, "rt_redis: ACL rule has too many words\n");
        return -1;
      }
      argv[argc++] = w;
    }
  }
  if (r->unixsock[0] != '\0') {
    argv[argc++] = "--unixsocket";
    argv[argc++] = r->unixsock;
    argv[argc++] = "--unixsocketperm";
    argv[argc++] = "700";
  }
  /* Extra arguments, "{dir}" expanded; built before fork, since the child
   * may only make async-signal-safe calls. */
  char args[RT_EXTRA_MAX][RT_EXTRA_LEN + 256];
  for (int i = 0; i < s->narg; i++) {
    const char *a = s->extra_arg[i], *d = strstr(a, "{dir}");
    if (d)
      snprintf(args[i], sizeof args[i], "%.*s%s%s", (int)(d - a), a, s->dir,
               d + 5);
    else
      snprintf(args[i], sizeof args[i], "%s", a);
    argv[argc++] = args[i];
  }
  argv[argc] = NULL;
  /* The environment: ours, plus the extra entries (which win). */
  extern char **environ;
  size_t nenv = 0;
  while (environ[nenv]) nenv++;
  char **envp = calloc(nenv + (size_t)s->nenv + 1, sizeof *envp);
  if (envp == NULL) return -1;
  size_t k = 0;
  for (size_t i = 0; i < nenv; i++) {
    int overridden = 0;
    for (int j = 0; j < s->nenv && !overridden; j++) {
      size_t n = strcspn(s->extra_env[j], "=");
      overridden = strncmp(environ[i], s->extra_env[j], n + 1) == 0;
    }
    if (!overridden) envp[k++] = environ[i];
  }
  for (int j = 0; j < s->nenv; j++) envp[k++] = s->extra_env[j];
  envp[k] = NULL;
  pid_t parent = getpid(), pid = fork();
  if (pid < 0) {
    free(envp);
    return -1;
  }
  if (pid == 0) child_exec(argv, envp, s->log, parent);
  free(envp);
  setpgid(pid, pid); /* As the child does, so that no kill can come first. */
  s->pid = r->pid = pid;
  for (uint64_t end = rt_now_ms() + RT_START_TIMEOUT_MS;; rt_sleep_ms(10)) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      s->pid = r->pid = 0;
      if (!WIFEXITED(st) || WEXITSTATUS(st) < 126) return -2;
      fprintf(stderr, "rt_redis: cannot run %s\n", bin);
      return -1;
    }
    if (probe(r)) return 0;
    if (rt_now_ms() > end) {
      fprintf(stderr, "rt_redis: no answer on port %d after %d ms\n",
              r->port, RT_START_TIMEOUT_MS);
      kill_and_reap(pid);
      s->pid = r->pid = 0;
      return -1;
    }
  }
}

/* Copies a NULL-terminated list of strings into a slot's table. */
static int copy_extra(char (*dst)[RT_EXTRA_LEN], int *n,
                      const char *const *src) {
  *n = 0;
  for (int i = 0; src && src[i]; i++) {
    if (i >= RT_EXTRA_MAX || strlen(src[i]) >= RT_EXTRA_LEN) {
      fprintf(stderr, "rt_redis: too many or too long extra entries\n");
      return -1;
    }
    strcpy(dst[i], src[i]);
    *n = i + 1;
  }
  return 0;
}

/* Prints the last bytes of a server's log, after a line that says why. */
static void log_tail(const char *log, int port, const char *why,
                     size_t bytes) {
  char buf[4096];
  if (bytes > sizeof buf) bytes = sizeof buf;
  ssize_t n = 0;
  int fd = open(log, O_RDONLY);
  if (fd >= 0) {
    off_t end = lseek(fd, 0, SEEK_END);
    n = pread(fd, buf, bytes, end > (off_t)bytes ? end - (off_t)bytes : 0);
    close(fd);
  }
  fprintf(stderr, "rt_redis: %s (port %d); end of %s:\n%.*s\n", why, port,
          log, n > 0 ? (int)n : 0, buf);
}

static void print_log_tail(const char *what, const rt_redis *r,
                           const char *log) {
  char why[128];
  snprintf(why, sizeof why, "could not %s", what);
  log_tail(log, r->port, why, 1024);
}

void rt_redis_log_tail(const rt_redis *r, const char *why, size_t bytes) {
  char log[300];
  snprintf(log, sizeof log, "%s/redis.log", r->dir);
  log_tail(log, r->port, why, bytes);
}

int rt_redis_start_opts(rt_redis *r, const rt_redis_opts *o) {
  memset(r, 0, sizeof *r);
  const char *password = o->password;
  if (password && strlen(password) >= sizeof r->password) {
    fprintf(stderr, "rt_redis: password too long\n");
    return -1;
  }
  if (password) strcpy(r->password, password);
  r->tls = o->tls;
  r->tls_auth_clients = o->tls_auth_clients;
  if (o->acl_user != NULL &&
      (size_t)snprintf(r->acl, sizeof r->acl, "%s on >%s %s", o->acl_user,
                       o->acl_password, o->acl_rule) >= sizeof r->acl) {
    fprintf(stderr, "rt_redis: ACL rule too long\n");
    return -1;
  }
  if (r->tls) {
    const rt_tls_files *tf = rt_tls();
    if (tf == NULL) return -1;
    snprintf(r->tls_cert, sizeof r->tls_cert, "%s",
             o->tls_cert ? o->tls_cert : tf->server_cert);
    snprintf(r->tls_key, sizeof r->tls_key, "%s",
             o->tls_key ? o->tls_key : tf->server_key);
  }
  install_hooks();
  rt_slot *s = NULL;
  for (int i = 0; i < RT_MAX_SERVERS && !s; i++)
    if (!slots[i].used) s = &slots[i];
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  int n = snprintf(r->dir, sizeof r->dir, "%s/rt_redis.XXXXXX", tmp);
  if (!s || n < 0 || (size_t)n >= sizeof r->dir || !mkdtemp(r->dir)) {
    fprintf(stderr, "rt_redis: no free slot or cannot make a directory "
                    "under %s\n", tmp);
    memset(r, 0, sizeof *r);
    return -1;
  }
  if ((o->tls || o->unix_socket) &&
      (size_t)snprintf(r->unixsock, sizeof r->unixsock, "%s/redis.sock",
                       r->dir) >= sizeof r->unixsock) {
    fprintf(stderr, "rt_redis: %s is too long for a unix socket\n", r->dir);
    rmdir(r->dir);
    memset(r, 0, sizeof *r);
    return -1;
  }
  memset(s, 0, sizeof *s);
  s->used = 1;
  s->owner = getpid();
  s->test_scoped = test_pid == getpid();
  strcpy(s->dir, r->dir);
  strcpy(s->sock, r->unixsock);
  snprintf(s->log, sizeof s->log, "%s/redis.log", r->dir);
  if (o->server != NULL && strlen(o->server) >= sizeof s->server) {
    fprintf(stderr, "rt_redis: the server path %s is too long\n", o->server);
    slot_release(s);
    memset(r, 0, sizeof *r);
    return -1;
  }
  if (o->server != NULL) strcpy(s->server, o->server);
  if (copy_extra(s->extra_env, &s->nenv, o->env) != 0 ||
      copy_extra(s->extra_arg, &s->narg, o->args) != 0) {
    slot_release(s);
    memset(r, 0, sizeof *r);
    return -1;
  }
  int rc = -2;
  for (int i = 0; i < RT_START_TRIES && rc == -2; i++)
    rc = (r->port = free_port()) > 0 ? spawn(r, s) : -1;
  if (rc != 0) {
    print_log_tail("start", r, s->log);
    slot_release(s);
    memset(r, 0, sizeof *r);
    return -1;
  }
  const char *scheme = r->tls ? "rediss" : "redis";
  if (o->acl_user != NULL)
    snprintf(r->url, sizeof r->url, "%s://%s:%s@127.0.0.1:%d", scheme,
             o->acl_user, o->acl_password, r->port);
  else if (r->password[0] != '\0')
    snprintf(r->url, sizeof r->url, "%s://:%s@127.0.0.1:%d", scheme,
             r->password, r->port);
  else if (r->tls)
    snprintf(r->url, sizeof r->url, "rediss://127.0.0.1:%d", r->port);
  else
    snprintf(r->url, sizeof r->url, "127.0.0.1:%d", r->port);
  return 0;
}

int rt_acl_mode(void) {
  const char *e = getenv("RT_ACL");
  return e != NULL && strcmp(e, "1") == 0;
}

void rt_redis_opts_default(rt_redis_opts *o, const char *password) {
  memset(o, 0, sizeof *o);
  o->password = password;
  o->tls = rt_tls_mode();
  if (rt_acl_mode()) {
    o->acl_user = RT_ACL_USER;
    o->acl_password = RT_ACL_PASSWORD;
    o->acl_rule = RT_ACL_RULE;
  }
}

int rt_redis_start_ex(rt_redis *r, const char *password,
                      const char *const *env, const char *const *args) {
  rt_redis_opts o;
  rt_redis_opts_default(&o, password);
  o.env = env;
  o.args = args;
  return rt_redis_start_opts(r, &o);
}

int rt_redis_start(rt_redis *r, const char *password) {
  return rt_redis_start_ex(r, password, NULL, NULL);
}

int rt_redis_start_many(rt_redis *rs, int n) {
  for (int i = 0; i < n; i++)
    if (rt_redis_start(&rs[i], NULL) != 0) return rt_redis_stop_many(rs, i), -1;
  return 0;
}

void rt_redis_stop(rt_redis *r) {
  rt_slot *s = slot_of(r);
  if (s) slot_release(s);
  r->pid = 0;
  r->paused = 0;
  r->dir[0] = '\0';
}

void rt_redis_stop_many(rt_redis *rs, int n) {
  for (int i = 0; i < n; i++) rt_redis_stop(&rs[i]);
}

int rt_redis_pause(rt_redis *r) {
  rt_slot *s = live_slot(r);
  int st;
  pid_t w;
  if (!s || kill(r->pid, SIGSTOP) != 0) return -1;
  while ((w = waitpid(r->pid, &st, WUNTRACED)) < 0 && errno == EINTR)
    continue;
  if (w == r->pid && WIFSTOPPED(st)) return r->paused = 1, 0;
  if (w == r->pid) drop_conn(s), s->pid = r->pid = 0; /* It died. */
  return -1;
}

int rt_redis_resume(rt_redis *r) {
  if (!live_slot(r) || kill(r->pid, SIGCONT) != 0) return -1;
  r->paused = 0;
  return 0;
}

int rt_redis_kill(rt_redis *r) {
  rt_slot *s = live_slot(r);
  if (!s) return -1;
  drop_conn(s);
  kill_and_reap(r->pid);
  s->pid = r->pid = 0;
  r->paused = 0;
  return 0;
}

int rt_redis_restart_ex(rt_redis *r, const char *const *env) {
  rt_slot *s = slot_of(r);
  if (!s || s->pid != 0 || r->port <= 0) return -1;
  if (copy_extra(s->extra_env, &s->nenv, env) != 0) return -1;
  return rt_redis_restart(r);
}

int rt_redis_clockshift_env(long long shift_s, char buf[2][512],
                            const char *env[3]) {
  const char *lib = getenv("RT_CLOCKSHIFT");
  if (lib == NULL || *lib == '\0') {
    fprintf(stderr, "rt_redis: RT_CLOCKSHIFT (the clock shim) is not set\n");
    return -1;
  }
  snprintf(buf[0], 512, "LD_PRELOAD=%s", lib);
  snprintf(buf[1], 512, "CLOCKSHIFT_SECONDS=%lld", shift_s);
  env[0] = buf[0];
  env[1] = buf[1];
  env[2] = NULL;
  return 0;
}

int rt_redis_restart(rt_redis *r) {
  rt_slot *s = slot_of(r);
  if (!s || s->pid != 0 || r->port <= 0) return -1;
  if (spawn(r, s) == 0) return 0;
  print_log_tail("restart", r, s->log);
  return -1;
}

/* A connection is cached only while every command on it got its reply. */
/* Whether a command on a reused connection failed because the server had
 * closed it before reading the command (Sentinel kills every normal client
 * of a server it reconfigures; so do CLIENT KILL and restarts): then the
 * command never ran, and one retry on a new connection is safe. A timeout
 * is not such a failure: the command may have run. */
static int closed_by_server(const redisContext *c) {
  return c->err == REDIS_ERR_EOF ||
         (c->err == REDIS_ERR_IO && (errno == ECONNRESET || errno == EPIPE));
}

static redisReply *vcmd(rt_redis *r, const char *fmt, va_list ap) {
  rt_slot *s = slot_of(r);
  redisContext *c = s ? s->conn : NULL;
  int reused = c != NULL;
  if (!c && r->port > 0)
    c = connect_to(r, RT_CMD_TIMEOUT_MS);
  if (!c) return NULL;
  va_list again;
  va_copy(again, ap);
  redisReply *rep = redisvCommand(c, fmt, ap);
  if (rep == NULL && reused && closed_by_server(c)) {
    redisFree(c);
    if (s) s->conn = NULL;
    c = r->port > 0 ? connect_to(r, RT_CMD_TIMEOUT_MS) : NULL;
    if (c == NULL) {
      va_end(again);
      return NULL;
    }
    rep = redisvCommand(c, fmt, again);
  }
  va_end(again);
  if (s) s->conn = rep && !c->err ? c : NULL;
  if (!s || !s->conn) redisFree(c);
  return rep;
}

redisReply *rt_redis_cmd(rt_redis *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply *rep = vcmd(r, fmt, ap);
  va_end(ap);
  return rep;
}

long long rt_settle(long long (*read)(int i, const char *what), int i,
                    const char *what, long long want, int ms) {
  long long v = read(i, what);
  for (uint64_t end = rt_now_ms() + (uint64_t)ms; v != want && rt_now_ms() < end;
       rt_sleep_ms(20))
    v = read(i, what);
  return v;
}

long long rt_redis_int(rt_redis *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply *rep = vcmd(r, fmt, ap);
  va_end(ap);
  long long v = rep && rep->type == REDIS_REPLY_INTEGER ? rep->integer
                                                         : LLONG_MIN;
  if (rep) freeReplyObject(rep);
  return v;
}

long long rt_redis_numsub(rt_redis *r, const char *channel) {
  redisReply *rep = rt_redis_cmd(r, "PUBSUB NUMSUB %s", channel);
  long long v = -1;
  if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2)
    v = rep->element[1]->integer;
  if (rep) freeReplyObject(rep);
  return v;
}

int rt_redis_dbsize(rt_redis *r) {
  long long v = rt_redis_int(r, "DBSIZE");
  return v == LLONG_MIN ? -1 : (int)v;
}

long long rt_evalsha_calls(rt_redis *r) {
  redisReply *rep = rt_redis_cmd(r, "INFO commandstats");
  long long n = -1;
  if (rep != NULL && rep->type == REDIS_REPLY_STRING) {
    const char *p = strstr(rep->str, "cmdstat_evalsha:calls=");
    n = p ? atoll(p + strlen("cmdstat_evalsha:calls=")) : 0;
  }
  if (rep) freeReplyObject(rep);
  return n;
}

/* The runner. */

static const char *volatile cur_name;
static int cur_failed;
static char cur_where[512];
static volatile int n_pass, n_fail;
/* Checks may fail on any thread of a test. */
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

void rt__fail_eq(const char *file, int line, const char *expr, long long a,
                 long long b) {
  pthread_mutex_lock(&fail_lock);
  if (!cur_failed)
    snprintf(cur_where, sizeof cur_where, "%s:%d: %s", file, line, expr);
  cur_failed = 1;
  fprintf(stderr, "  check failed: %s:%d: %s\n", file, line, expr);
  if (a != b) fprintf(stderr, "    left: %lld, right: %lld\n", a, b);
  pthread_mutex_unlock(&fail_lock);
}

/* Equal values are not printed, so this is a failure without values. */
void rt__fail(const char *file, int line, const char *expr) {
  rt__fail_eq(file, line, expr, 0, 0);
}

/* Async-signal-safe output for the watchdog. */
static void put(const char *s) {
  for (size_t len = strlen(s); len > 0;) {
    ssize_t n = write(STDOUT_FILENO, s, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    s += n;
    len -= (size_t)n;
  }
}

static void put_int(int v) {
  char buf[16], *p = buf + sizeof buf - 1;
  *p = '\0';
  do *--p = (char)('0' + v % 10); while ((v /= 10) > 0);
  put(p);
}

static void on_alarm(int sig) {
  (void)sig;
  put("FAIL: ");
  put(cur_name ? cur_name : "?");
  put(" (timeout)\n");
  put_int(n_pass);
  put(" passed, ");
  put_int(n_fail + 1);
  put(" failed\n");
  release_servers(1, 0);
  _exit(1);
}

static void run_one(const rt_test *t, unsigned timeout) {
  cur_name = t->name;
  cur_failed = 0;
  fflush(stdout);
  fflush(stderr);
  alarm(timeout);
  test_pid = getpid();
  t->fn();
  alarm(0);
  test_pid = 0;
  int left = release_servers(0, 1); /* Shared servers stay. */
  if (left > 0)
    fprintf(stderr, "  note: %s left %d server(s); stopped them\n", t->name,
            left);
  if (cur_failed)
    printf("FAIL: %s (%s)\n", t->name, cur_where);
  else
    printf("PASS: %s\n", t->name);
  n_pass += !cur_failed;
  n_fail += cur_failed;
  fflush(stdout);
  cur_name = NULL;
}

int rt_main(int argc, char **argv, const rt_test *tests, size_t ntests) {
  n_pass = n_fail = cur_failed = 0;
  install_hooks();
  unsigned timeout = 120;
  const char *e = getenv("RT_TEST_TIMEOUT");
  char *end = NULL;
  long v = e && *e ? strtol(e, &end, 10) : -1;
  if (end && *end == '\0' && v >= 0 && v <= 86400)
    timeout = (unsigned)v;
  else if (e && *e)
    fprintf(stderr, "rt_main: ignoring RT_TEST_TIMEOUT=%s\n", e);
  set_handler(SIGALRM, on_alarm, 0, 0);
  if (argc > 1 && strcmp(argv[1], "--except") == 0) {
    /* Every test but those named; a name that is no test fails. */
    for (int k = 2; k < argc; k++) {
      size_t j = 0;
      while (j < ntests && strcmp(tests[j].name, argv[k]) != 0) j++;
      if (j == ntests) {
        n_fail++;
        printf("FAIL: %s (no such test)\n", argv[k]);
        fflush(stdout);
      }
    }
    for (size_t j = 0; j < ntests; j++) {
      int skip = 0;
      for (int k = 2; k < argc && !skip; k++)
        skip = strcmp(tests[j].name, argv[k]) == 0;
      if (!skip) run_one(&tests[j], timeout);
    }
    argc = 1;
    ntests = 0;
  }
  size_t nrun = argc > 1 ? (size_t)argc - 1 : ntests;
  for (size_t i = 0; i < nrun; i++) {
    const rt_test *t = argc > 1 ? NULL : &tests[i];
    for (size_t j = 0; !t && j < ntests; j++)
      if (strcmp(tests[j].name, argv[i + 1]) == 0) t = &tests[j];
    if (t) {
      run_one(t, timeout);
    } else {
      n_fail++;
      printf("FAIL: %s (no such test)\n", argv[i + 1]);
      fflush(stdout);
    }
  }
  printf("%d passed, %d failed\n", n_pass, n_fail);
  fflush(stdout);
  return n_fail ? 1 : 0;
}

int rt_main_servers(int argc, char **argv, rt_redis *rs, int n,
                    const rt_test *tests, size_t ntests) {
  if (rt_redis_start_many(rs, n) != 0) {
    fprintf(stderr, "cannot start %s\n", rt_server_program());
    return 1;
  }
  int rc = rt_main(argc, argv, tests, ntests);
  rt_redis_stop_many(rs, n);
  return rc;
}
