/*
 * history.h from several processes and threads at once: records appended
 * to one file stay whole lines, none is lost, and a history of a real
 * mutual exclusion (flock on a file, each thread on its own open file so
 * threads exclude each other too) passes history_check.py, while the same
 * history with one release that nobody made is rejected.
 *
 *   test_history_writer PYTHON3 HISTORY_CHECK_PY
 */
#include "history.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/wait.h>

#define PROCS 4
#define THREADS 2
#define ROUNDS 150

static char hist_path[] = "/tmp/rt_history_XXXXXX";
static char lock_path[] = "/tmp/rt_history_lock_XXXXXX";

typedef struct {
  int proc, thread;
} worker_arg;

static void *worker(void *varg) {
  worker_arg *a = varg;
  char proc[32], owner[48];
  snprintf(proc, sizeof proc, "p%d", a->proc);
  snprintf(owner, sizeof owner, "p%d/t%d", a->proc, a->thread);
  int fd = rt_hist_open(hist_path);
  int lk = open(lock_path, O_RDWR | O_CLOEXEC);
  if (fd < 0 || lk < 0) {
    perror("open");
    exit(1);
  }
  for (int i = 0; i < ROUNDS; i++) {
    rt_hist_rec r = {.proc = proc, .owner = owner, .name = "flock",
                     .kind = "mutex", .op = "acquire", .result = "ok"};
    r.invoke_ns = rt_hist_now();
    if (flock(lk, LOCK_EX) != 0) {
      perror("flock");
      exit(1);
    }
    r.complete_ns = rt_hist_now();
    if (rt_hist_append(fd, &r) != 0) {
      perror("rt_hist_append");
      exit(1);
    }
    r.op = "release";
    r.invoke_ns = rt_hist_now();
    flock(lk, LOCK_UN);
    r.complete_ns = rt_hist_now();
    /* a name with characters JSON must escape, on a second object */
    rt_hist_rec s = r;
    s.name = "q\"u\\o\te";
    s.op = "count_down";
    s.kind = "latch";
    s.result = "fail";
    if (rt_hist_append(fd, &r) != 0 || rt_hist_append(fd, &s) != 0) {
      perror("rt_hist_append");
      exit(1);
    }
  }
  close(lk);
  close(fd);
  return NULL;
}

static int run_checker(char **argv, const char *path) {
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    execl(argv[1], argv[1], argv[2], path, (char *)NULL);
    _exit(127);
  }
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s PYTHON3 HISTORY_CHECK_PY\n", argv[0]);
    return 2;
  }
  int h = mkstemp(hist_path), l = mkstemp(lock_path);
  if (h < 0 || l < 0) {
    perror("mkstemp");
    return 1;
  }
  close(h);
  close(l);
  for (int p = 0; p < PROCS; p++) {
    if (fork() == 0) {
      pthread_t t[THREADS];
      worker_arg a[THREADS];
      for (int i = 0; i < THREADS; i++) {
        a[i] = (worker_arg){p, i};
        pthread_create(&t[i], NULL, worker, &a[i]);
      }
      for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
      _exit(0);
    }
  }
  int failed = 0;
  for (int p = 0; p < PROCS; p++) {
    int st;
    wait(&st);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      failed = 1;
  }
  /* every record a whole line: one per write, as many as written */
  FILE *f = fopen(hist_path, "r");
  char line[4096];
  int lines = 0, torn = 0;
  while (f && fgets(line, sizeof line, f)) {
    size_t n = strlen(line);
    lines++;
    if (n < 2 || line[0] != '{' || line[n - 1] != '\n' || line[n - 2] != '}')
      torn++;
  }
  if (f)
    fclose(f);
  int want = PROCS * THREADS * ROUNDS * 3;
  printf("%d records (want %d), %d torn\n", lines, want, torn);
  if (lines != want || torn)
    failed = 1;

  int rc = run_checker(argv, hist_path);
  printf("checker on the flock history: %d (want 0)\n", rc);
  if (rc != 0)
    failed = 1;

  /* one release reported ok by an owner that never acquired */
  int fd = rt_hist_open(hist_path);
  int64_t t = rt_hist_now();
  rt_hist_rec bad = {.proc = "intruder", .name = "flock", .kind = "mutex",
                     .op = "release", .invoke_ns = t, .complete_ns = t + 1,
                     .result = "ok", .id = "intruder"};
  if (fd < 0 || rt_hist_append(fd, &bad) != 0)
    failed = 1;
  if (fd >= 0)
    close(fd);
  rc = run_checker(argv, hist_path);
  printf("checker with a release by a non-owner: %d (want 1)\n", rc);
  if (rc != 1)
    failed = 1;

  /* a record that cannot fit is refused, not torn */
  static char big[4000];
  memset(big, 'x', sizeof big - 1);
  bad.name = big;
  fd = rt_hist_open("/dev/null");
  if (rt_hist_append(fd, &bad) != -1 || errno != EINVAL) {
    printf("an oversized record was not refused\n");
    failed = 1;
  }
  close(fd);

  unlink(hist_path);
  unlink(lock_path);
  printf("%s: shared_history_file\n", failed ? "FAIL" : "PASS");
  return failed;
}
