/*
 * A scheduler that runs its jobs only while it leads. Three schedulers
 * (threads here, each with a client of its own, as three processes would
 * have) campaign in one election over the masters given. The leader runs
 * jobs, each stamped with its leadership's fencing token, checking before
 * each one that it still leads; after a few it steps down (as it would to
 * be upgraded) and the scheduler that has waited longest leads next.
 * Every scheduler observes the election and prints each change of
 * leader, so a follower always knows whom to defer to. Inside a
 * job each scheduler checks that no other runs one, and every job checks
 * that its token is not below an earlier job's: both are visible in the
 * output, and the program exits 1 if either failed.
 *
 *   election SECONDS MASTER [MASTER...]
 */
#include <inttypes.h>
#include <pthread.h>
#include <rlock.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define SCHEDULERS 3
#define JOBS_PER_TERM 3

static atomic_int running;     /* jobs running now, over all schedulers */
static atomic_int violations;  /* two at once, or a token going back */
static atomic_long jobs_run;
static atomic_uint_fast64_t last_token;
static double deadline;

typedef struct {
  int id;
  rlock_client *client;
  rlock_election *e;
  atomic_int lost; /* the current leadership was lost */
  int terms;
} scheduler;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* On the client's loop thread: the leadership is gone (its renewals
 * failed). The job loop checks the flag before each job. */
static void on_lost(rlock_election *e, void *arg) {
  (void)e;
  scheduler *s = arg;
  atomic_store(&s->lost, 1);
  printf("scheduler %d: leadership lost\n", s->id);
}

/* On the loop thread: every change of leader, as this scheduler sees it. */
static void on_leader(rlock_election *e, const char *value, uint64_t token,
                      void *arg) {
  (void)e;
  scheduler *s = arg;
  if (value == NULL)
    printf("scheduler %d sees: no leader\n", s->id);
  else
    printf("scheduler %d sees: leader %s (token %" PRIu64 ")\n", s->id,
           value, token);
}

/* One job, run as the leader with token. */
static void run_job(scheduler *s, uint64_t token, int k) {
  if (atomic_fetch_add(&running, 1) != 0) {
    printf("VIOLATION: scheduler %d started a job while another ran\n", s->id);
    atomic_fetch_add(&violations, 1);
  }
  uint64_t before = atomic_load(&last_token);
  while (before < token &&
         !atomic_compare_exchange_weak(&last_token, &before, token)) {
  }
  if (before > token) {
    printf("VIOLATION: token %" PRIu64 " after %" PRIu64 "\n", token, before);
    atomic_fetch_add(&violations, 1);
  }
  printf("scheduler %d: job %d with token %" PRIu64 "\n", s->id, k, token);
  usleep(100 * 1000); /* the work */
  atomic_fetch_sub(&running, 1);
  atomic_fetch_add(&jobs_run, 1);
}

static void *scheduler_main(void *arg) {
  scheduler *s = arg;
  char me[32];
  snprintf(me, sizeof me, "scheduler-%d", s->id);
  while (now_s() < deadline) {
    atomic_store(&s->lost, 0);
    /* Waits in the queue for at most a second at a time, so that the
     * program ends on time; observing goes on meanwhile. */
    int rc = rlock_campaign(s->e, me, 1000);
    if (rc == RLOCK_ETIMEDOUT) continue;
    if (rc != 0) {
      fprintf(stderr, "scheduler %d: campaign: %s\n", s->id,
              rlock_strerror(rc));
      usleep(200 * 1000);
      continue;
    }
    s->terms++;
    uint64_t token;
    for (int k = 0; k < JOBS_PER_TERM && now_s() < deadline; k++) {
      /* Still the leader? No round trip: the handle knows, and the lost
       * callback has cleared it if the leadership went. */
      if (atomic_load(&s->lost) || rlock_election_token(s->e, &token) != 0)
        break;
      run_job(s, token, k);
    }
    if (!atomic_load(&s->lost)) {
      rc = rlock_resign(s->e);
      if (rc != 0 && rc != RLOCK_ENOTOWNER)
        fprintf(stderr, "scheduler %d: resign: %s\n", s->id,
                rlock_strerror(rc));
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s SECONDS MASTER [MASTER...]\n", argv[0]);
    return 2;
  }
  double seconds = atof(argv[1]);
  if (seconds <= 0) seconds = 2;
  scheduler s[SCHEDULERS] = {{0}};
  rlock_options opts;
  rlock_options_init(&opts);
  opts.masters = (const char *const *)(argv + 2);
  opts.nmasters = (size_t)(argc - 2);
  for (int i = 0; i < SCHEDULERS; i++) {
    s[i].id = i;
    int rc = rlock_client_open(&s[i].client, &opts);
    if (rc == 0) rc = rlock_election_get(s[i].client, "scheduler", &s[i].e);
    if (rc == 0) rc = rlock_election_set_lost_cb(s[i].e, on_lost, &s[i]);
    if (rc == 0) rc = rlock_observe(s[i].e, on_leader, &s[i]);
    if (rc != 0) {
      fprintf(stderr, "scheduler %d: %s\n", i, rlock_strerror(rc));
      return 1;
    }
  }
  deadline = now_s() + seconds;
  pthread_t t[SCHEDULERS];
  for (int i = 0; i < SCHEDULERS; i++)
    pthread_create(&t[i], NULL, scheduler_main, &s[i]);
  for (int i = 0; i < SCHEDULERS; i++) pthread_join(t[i], NULL);
  int leaders = 0;
  for (int i = 0; i < SCHEDULERS; i++) {
    leaders += s[i].terms > 0;
    rlock_election_free(s[i].e); /* resigns a leadership still held */
    rlock_client_close(s[i].client);
  }
  long jobs = atomic_load(&jobs_run);
  int bad = atomic_load(&violations);
  printf("%ld jobs, %d of %d schedulers led, %d violations\n", jobs, leaders,
         SCHEDULERS, bad);
  return bad == 0 && jobs > 0 ? 0 : 1;
}
