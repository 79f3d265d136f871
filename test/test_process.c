/*
 * Mutual exclusion and fencing across processes: forked children, each
 * with its own client and several threads, increment a counter in shared
 * memory with a deliberately non-atomic read-pause-write inside the lock,
 * and append their fencing tokens to a shared log. The counter must end
 * exact and the logged tokens must strictly increase, N = 1 and N = 3.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define PROCS 4
#define THREADS 3
#define ITERS 25
#define TOTAL (PROCS * THREADS * ITERS)

static rt_redis srv[3];

typedef struct shared {
  volatile long counter;
  volatile uint64_t tokens[TOTAL + 16];
  volatile int errors;
} shared;

typedef struct {
  rlock *lock;
  shared *sh;
} thread_arg;

static void *child_thread(void *p) {
  thread_arg *a = p;
  for (int i = 0; i < ITERS; i++) {
    int rc = rlock_lock(a->lock, 10000);
    if (rc != 0) {
      __atomic_add_fetch(&a->sh->errors, 1, __ATOMIC_SEQ_CST);
      continue;
    }
    uint64_t token = 0;
    if (rlock_fencing_token(a->lock, &token) != 0)
      __atomic_add_fetch(&a->sh->errors, 1, __ATOMIC_SEQ_CST);
    long v = a->sh->counter;
    if (v < TOTAL + 16) a->sh->tokens[v] = token;
    usleep(200);
    a->sh->counter = v + 1;
    if (rlock_unlock(a->lock) != 0)
      __atomic_add_fetch(&a->sh->errors, 1, __ATOMIC_SEQ_CST);
  }
  return NULL;
}

static int child(int n, shared *sh) {
  rlock_client *c = rt_client(srv, n, 1000);
  if (c == NULL) return 2;
  rlock *l;
  if (rlock_get(c, "processes", &l) != 0) return 3;
  pthread_t th[THREADS];
  thread_arg a = {.lock = l, .sh = sh};
  for (int i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, child_thread, &a);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  rlock_free(l);
  rlock_client_close(c);
  return 0;
}

static void run(int n) {
  shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  RT_REQUIRE(sh != MAP_FAILED);
  memset((void *)sh, 0, sizeof *sh);
  pid_t pids[PROCS];
  for (int i = 0; i < PROCS; i++) {
    pids[i] = fork();
    if (pids[i] == 0) _exit(child(n, sh));
  }
  int bad_exits = 0;
  for (int i = 0; i < PROCS; i++) {
    int st = 0;
    waitpid(pids[i], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad_exits++;
  }
  RT_CHECK_EQ_INT(bad_exits, 0);
  RT_CHECK_EQ_INT(sh->errors, 0);
  RT_CHECK_EQ_INT(sh->counter, TOTAL);
  int regressions = 0;
  for (long i = 1; i < sh->counter && i < TOTAL; i++)
    if (sh->tokens[i] <= sh->tokens[i - 1]) regressions++;
  RT_CHECK_EQ_INT(regressions, 0);
  RT_CHECK(sh->tokens[0] > 0);
  for (int i = 0; i < n; i++)
    RT_CHECK_EQ_INT(rt_redis_int(&srv[i], "EXISTS rlock:{processes}"), 0);
  munmap((void *)sh, sizeof *sh);
}

static void processes_n1(void) { run(1); }
static void processes_n3(void) { run(3); }

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"processes_n1", processes_n1},
      {"processes_n3", processes_n3},
  };
  return rt_main_servers(argc, argv, srv, 3, tests,
                         sizeof tests / sizeof tests[0]);
}
