/*
 * What waking a sleeping thread or process costs on this machine: the
 * physics under the blocking path and the hand-off targets. A blocking
 * rlock call crosses threads twice (the caller wakes the loop thread
 * through libuv's eventfd, the loop thread wakes the caller through a
 * condition variable), and a hand-off ends with a waiter woken by a
 * message; raw synchronous hiredis pays none of these, only the wake-up
 * of its own blocking read. Each case here measures one wake-up: the
 * waker stamps CLOCK_MONOTONIC, signals, and the sleeper stamps when it
 * runs, GAP µs after it went to sleep (50 µs: a round trip's idle; 1 ms:
 * a waiter during a hold). Placement matters more than the mechanism on a
 * virtual machine whose idle CPUs halt: "same" pins waker and sleeper to
 * CPU 0, "other" puts the sleeper on CPU 1 (a wake-up that needs an
 * inter-processor interrupt), "any" leaves it to the scheduler. Links
 * nothing but libc. Prints JSON lines.
 *
 *   wakeup [SAMPLES]   (default 1000 per case)
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stats.h"

typedef struct shared {
  _Atomic uint64_t t0;
  atomic_int done, quit;
  uint64_t v[100000];
} shared;

static shared *sh;
static int samples = 1000;
static int sleeper_cpu = -1; /* -1: any */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int signalled;
static int efd, epfd, pipefd[2];

enum { CONDVAR, EVENTFD_EPOLL, PIPE_PROCESS };
static const char *names[] = {"condvar_thread", "eventfd_epoll_thread",
                              "pipe_process"};

/* Blocks until woken by the mechanism; 0, or -1 when told to quit. */
static int sleep_on(int mech) {
  if (mech == CONDVAR) {
    pthread_mutex_lock(&mu);
    while (!signalled) pthread_cond_wait(&cv, &mu);
    signalled = 0;
    pthread_mutex_unlock(&mu);
  } else if (mech == EVENTFD_EPOLL) {
    struct epoll_event ev;
    while (epoll_wait(epfd, &ev, 1, -1) != 1) {
    }
    uint64_t x;
    if (read(efd, &x, sizeof x) != sizeof x) return -1;
  } else {
    char b;
    if (read(pipefd[0], &b, 1) != 1) return -1;
  }
  return atomic_load(&sh->quit) ? -1 : 0;
}

static void wake(int mech) {
  if (mech == CONDVAR) {
    pthread_mutex_lock(&mu);
    signalled = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
  } else if (mech == EVENTFD_EPOLL) {
    uint64_t one = 1;
    if (write(efd, &one, sizeof one) != sizeof one) abort();
  } else {
    if (write(pipefd[1], "x", 1) != 1) abort();
  }
}

/* Pins the calling thread to cpu, or lets it run anywhere (cpu < 0). */
static void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  for (long i = 0; i < n; i++)
    if (cpu < 0 || i == cpu) CPU_SET(i, &set);
  sched_setaffinity(0, sizeof set, &set);
}

static void sleeper(int mech) {
  pin(sleeper_cpu);
  for (int i = 0; sleep_on(mech) == 0; i++) {
    uint64_t t1 = bench_now_ns();
    if (i < samples) sh->v[i] = t1 - atomic_load(&sh->t0);
    atomic_store(&sh->done, 1);
  }
}

static void *sleeper_thread(void *arg) {
  sleeper((int)(long)arg);
  return NULL;
}

static const char *placements[] = {"same", "other", "any"};

static void measure(int mech, int gap_us, int placement) {
  memset(sh, 0, sizeof *sh);
  pin(placement == 2 ? -1 : 0);
  sleeper_cpu = placement == 2 ? -1 : placement;
  pthread_t th;
  pid_t pid = -1;
  if (mech == PIPE_PROCESS) {
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
      sleeper(mech);
      _exit(0);
    }
  } else {
    pthread_create(&th, NULL, sleeper_thread, (void *)(long)mech);
  }
  for (int i = 0; i < samples; i++) {
    bench_sleep_ns((uint64_t)gap_us * 1000u);
    atomic_store(&sh->done, 0);
    atomic_store(&sh->t0, bench_now_ns());
    wake(mech);
    while (!atomic_load(&sh->done)) bench_sleep_ns(5000);
  }
  atomic_store(&sh->quit, 1);
  wake(mech);
  if (mech == PIPE_PROCESS)
    waitpid(pid, NULL, 0);
  else
    pthread_join(th, NULL);
  bench_sort(sh->v, samples);
  printf("{\"bench\":\"wakeup\",\"impl\":\"libc\",\"mechanism\":\"%s\","
         "\"cpus\":\"%s\",\"gap_us\":%d,\"samples\":%d,\"p50_us\":%.1f,"
         "\"p99_us\":%.1f}\n",
         names[mech], placements[placement], gap_us, samples,
         bench_pct_us(sh->v, samples, 0.5),
         bench_pct_us(sh->v, samples, 0.99));
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc > 1) samples = atoi(argv[1]);
  if (samples < 1 || samples > 100000) return 2;
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return 1;
  efd = eventfd(0, 0);
  epfd = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN};
  epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev);
  if (pipe(pipefd) != 0) return 1;
  int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
  for (int mech = 0; mech < 3; mech++)
    for (int placement = 0; placement < 3; placement++)
      if (placement != 1 || cpus > 1) measure(mech, 1000, placement);
  measure(CONDVAR, 50, 2);
  if (cpus > 1) measure(CONDVAR, 50, 1);
  pin(-1);
  return 0;
}
