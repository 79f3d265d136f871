/*
 * The fast path's policy (the core's client.c owns its loop lock and says
 * why a caller may start a request under it): which blocking requests a
 * caller starts itself, and when it may also finish them on its own
 * thread. Only a plain acquire or unlock of the reentrant lock, the
 * client's only blocking call in flight, with the client's own loop
 * thread; anything else is posted.
 *
 * The caller's own round: waking the loop thread for the reply and then
 * the caller from the loop costs one or two thread wake-ups per call (5-8
 * us on one CPU, about 80 on the other on the VM of README's figures). So
 * a started request may also be finished on its caller, which keeps the
 * loop lock, waits in poll(2) on its masters' sockets and hands each reply
 * to its command exactly as the loop would (own_round). Why that is safe:
 *  - Only replies that run no user code are read there: the caller takes
 *    its round only when every master is one plain connection (no TLS, no
 *    replica acks) with nothing queued or waiting on it before the start,
 *    and nothing written and unanswered but commands whose rounds are
 *    decided and whose late replies only keep or undo a grant (the last
 *    masters' replies of the caller's previous call, undos, fence
 *    catch-ups: rl_conn_idle, rl_round_cmd_settled); while it holds the
 *    lock nothing but its own decision can write to them, so every other
 *    reply it reads is this request's (or a fire-and-forget command its
 *    decision sent). Replies of other requests that are still open on the
 *    same connection, renewals' included, make it start the usual way.
 *  - Deciding runs no user code: the round is a first acquisition (a
 *    reentrant one may find its hold lost and tell the owner) or the last
 *    unlock of a hold (an outer level's may be lost); an async request
 *    that something there finishes all the same has its callback run by
 *    the loop (c->done, on_async); a connection failure found there (end
 *    of stream, a protocol error) is never reported on the caller: the
 *    stream leaves it to the loop (rl_stream_read_off_loop), the
 *    connection defers it to its timer (conn.c), and the caller lets go.
 *  - The loop is never kept waiting past its next timer: the caller polls
 *    no longer than uv_backend_timeout says (a command deadline, a
 *    renewal, a retry), then lets go and wakes the loop, whose timer then
 *    fails the command as always. It also polls the loop's async
 *    descriptor: another thread's request, a wake or a close makes it let
 *    go at once, so that the loop serves them; a close then fails the
 *    request in c->active as any other.
 *  - The sleeping loop thread is not woken by the reply it does not read:
 *    the caller takes its sockets out of the loop's epoll set before it
 *    writes and puts them back, as libuv registered them, before it lets
 *    go (rl_stream_mute). epoll is level-triggered: whatever arrived
 *    meanwhile and is not read (a late reply of another master) wakes the
 *    loop once they are back. An earlier timer armed there wakes it too.
 *
 * The caller's own wait (the hand-off between processes): a first
 * acquisition in its own round whose attempt finds the lock held joins
 * its lock's wait queue (pubsub/). Were the unlock message left to the
 * loop thread, which would then start the next attempt and wake the
 * caller, the hand-off's path would have one thread hop more
 * (bench_floor_handoff hop measures it: 249 us against 124 without). So
 * that caller also waits for
 * the message itself: it polls the subscriber sockets of its lock's
 * channel (muted from the loop's epoll as its command sockets are), reads
 * what comes (rl_conn_read_off_loop) and, when an event chose its waiter,
 * starts its next attempt at once (rl_pubsub_run_woken) and reads that
 * reply too. Why that is safe, beyond the own round's rules:
 *  - Only when every master's subscriber connection is ready, plain TCP,
 *    and owes nothing but its channel's own SUBSCRIBE or UNSUBSCRIBE
 *    (rl_pubsub_own_wait, rl_conn_sub_idle). What it reads there runs
 *    only pub/sub's bookkeeping and dispatch: a message for another
 *    channel wakes that channel's waiter exactly as on the loop (a 0 ms
 *    timer), and that due timer makes the caller let go at once, so the
 *    loop starts that waiter's attempt; nothing read is lost, since the
 *    dispatch is the loop's own. Its log lines are handed to the loop.
 *  - Its own sleep running out, its deadline, a command deadline, a post
 *    or a close from another thread: it lets go as the own round does,
 *    and the loop goes on with the wait where the caller left it (the
 *    waiter is in its queue, its timer armed). End of stream on a
 *    subscriber socket (a master killed) is the loop's to see too.
 *  - A command timer left armed after its reply came would end a long
 *    wait for nothing: it is re-armed for what is still unanswered
 *    (rl_conn_timer_settle) before the caller waits.
 *  - Only while the client holds no lock: an unlock of one of its own
 *    locks in the client may hand that lock to the waiter (transfer.c),
 *    which the loop does when it serves that call.
 *  - The loop thread is not woken after every wait for the waiter's
 *    timer, which closes when it leaves: handles closing count for no
 *    timeout here (rl_client_loop_timeout), as the loop frees them at
 *    its next turn.
 */
#include "fast.h"

#include <errno.h>
#include <poll.h>

#include "kind.h"
#include "lock.h"
#include "pubsub.h"
#include "round.h"

/* The command connection of master i (a single master's one). */
static rl_conn *master_conn(rl_client *c, int i) {
  rl_conn *conn = NULL;
  rl_master_primaries(c->masters[i], &conn, 1);
  return conn;
}

/* At most this many masters for an own round. Measured on the 2-core VM
 * of README's figures, masters local, p50 of a pair in interleaved runs
 * (bench_latency): N = 3, 248 us own round against 275 posted to the
 * loop; N = 5, 518 against 419. With five masters on two cores the
 * replies come spread out, and the caller woken by each of them in turn
 * (and its 10 epoll_ctl a call to mute and unmute) costs more than the
 * loop thread's one wake of it. */
#define RL_OWN_ROUND_MAX_MASTERS 3

/* A command whose reply runs no user code: a round's, decided (round.c). */
static int cmd_settled(const rl_cmd *cmd) {
  const rl_mcmd *m = rl_master_single_mcmd(cmd);
  return m != NULL && rl_round_cmd_settled(m);
}

/* 1 if req, about to start on the caller, may also be finished there
 * (its own round; see the top of this file): its replies will be the
 * only ones its connections carry, and deciding on them runs no user
 * code. loopmu, before the start. */
static int own_round_ok(rl_client *c, rl_req *req) {
  if (c->nmasters > RL_OWN_ROUND_MAX_MASTERS) return 0;
  rl_hold *h = rl_req_hold(req);
  if (req->kind == RL_REQ_ACQUIRE && h != NULL)
    return 0; /* reentrant: a hold found lost is told to its owner */
  if (req->kind == RL_REQ_UNLOCK && (h == NULL || h->lost || h->count != 1))
    return 0; /* outer levels lost when no majority answers */
  for (int i = 0; i < c->nmasters; i++) {
    rl_conn *conn = master_conn(c, i);
    if (c->masters[i]->acks > 0 || conn == NULL || conn->url.tls ||
        !rl_conn_idle(conn, cmd_settled))
      return 0;
  }
  return 1;
}

/* The subscriber connections a caller muted for its own wait, to be put
 * back before it lets go of the loop lock. */
typedef struct own_subs {
  int n;
  rl_conn *conns[RL_MAX_MASTERS];
} own_subs;

/*
 * The caller's own wait (see the top of this file): req's attempt found
 * the lock held and req waits in its wait queue for a message. The
 * subscriber connections to poll into p[at..] (muted from the loop's
 * epoll, once), and how many; -1 when the loop must wait for it instead.
 */
static int own_wait_fds(rl_client *c, rl_req *req, own_subs *subs,
                        struct pollfd *p, rl_conn **conns) {
  /* Only when the client holds nothing: an unlock of a lock it holds
   * (another thread's, an async owner's) may hand that lock to req in the
   * client (transfer.c), which the loop does as soon as it serves that
   * call; a caller in its own wait would only stand in between. */
  if (c->holds.count > 0) return -1;
  int n = rl_pubsub_own_wait(req, conns, RL_MAX_MASTERS);
  if (n <= 0) return -1;
  for (int k = 0; k < n; k++) {
    p[k].fd = rl_conn_fd(conns[k]);
    p[k].events = POLLIN;
    if (p[k].fd < 0) return -1;
  }
  for (int k = 0; k < n; k++) {
    int known = 0;
    for (int j = 0; j < subs->n; j++) known |= subs->conns[j] == conns[k];
    if (known) continue;
    /* Before its SUBSCRIBE goes out: neither its reply nor a message
     * wakes the sleeping loop thread. */
    rl_conn_mute(conns[k], 1);
    subs->conns[subs->n++] = conns[k];
    if (subs->n == 1)
      atomic_fetch_add_explicit(&c->own_waits, 1, memory_order_relaxed);
  }
  /* Its SUBSCRIBE (queued when it joined) goes out now. */
  for (int k = 0; k < n; k++) rl_conn_flush(conns[k]);
  /* A command timer left armed by its last attempt's command, which has
   * its reply, would end the wait when it fired. */
  for (int i = 0; i < c->nmasters; i++)
    rl_conn_timer_settle(master_conn(c, i));
  return n;
}

/*
 * The caller's own round: with loopmu held and the request written, waits
 * for its replies on the masters' sockets and hands them to their
 * commands, exactly as the loop would, until the request finishes; and
 * when its attempt found the lock held, waits for the unlock message on
 * the subscriber sockets too and starts its next attempt itself (its own
 * wait). 1 if it finished; 0 when the loop must take over (see the top of
 * this file).
 */
static int own_round(rl_client *c, rl_req *req, own_subs *subs) {
  uv_loop_t *l = c->loop;
  struct pollfd p[2 * RL_MAX_MASTERS + 1];
  rl_conn *conns[2 * RL_MAX_MASTERS];
  /* The loop's async descriptor: readable once any thread posted a
   * request or a wake (rl_client_post, rl_client_wake, a close), which
   * the loop must then serve. */
  p[0].fd = l->async_io_watcher.fd;
  p[0].events = POLLIN;
  for (;;) {
    if (atomic_load_explicit(&req->finished, memory_order_acquire)) return 1;
    int n = 0;
    for (int i = 0; i < c->nmasters; i++) {
      rl_conn *conn = master_conn(c, i);
      int fd = rl_conn_awaiting_fd(conn);
      if (fd < 0) continue;
      conns[n] = conn;
      p[n + 1].fd = fd;
      p[n + 1].events = POLLIN;
      n++;
    }
    if (n == 0) {
      /* No attempt is out: req waits for a message or a timer. */
      int ns = own_wait_fds(c, req, subs, p + 1, conns);
      if (ns < 0) return 0;
      uv_update_time(l);
      if (rl_pubsub_run_woken(req)) {
        /* An event it read chose it: its next attempt, now. */
        atomic_fetch_add_explicit(&c->own_wakes, 1, memory_order_relaxed);
        for (int i = 0; i < c->nmasters; i++) rl_master_flush(c->masters[i]);
        continue;
      }
      n = ns;
    }
    uv_update_time(l);
    /* Never past the loop's next timer: a command deadline, a renewal,
     * the waiter's own sleep, another waiter an event chose. */
    int timeout = rl_client_loop_timeout(c);
    if (timeout == 0) return 0;
    int r = poll(p, (nfds_t)n + 1, timeout);
    if (r < 0 && errno != EINTR) return 0;
    if (r <= 0) continue;
    if (p[0].revents != 0) return 0;
    uv_update_time(l);
    for (int k = 0; k < n; k++)
      if (p[k + 1].revents != 0 && rl_conn_read_off_loop(conns[k]) < 0)
        return 0;
    /* What deciding queued (a fence catch-up, an undo) goes out now, and
     * what the wait queued (a SUBSCRIBE after a reconnect's resync). Not
     * the UNSUBSCRIBE that leaving the queue queued once req finished:
     * the loop writes it (it is woken for it): a write on loopback runs
     * the master at once, often on this CPU: traced in bench_contention
     * 2 1 2, it took the caller from its reply to its return from 8 us to
     * 33 (median). */
    for (int i = 0; i < c->nmasters; i++) rl_master_flush(c->masters[i]);
    if (!atomic_load_explicit(&req->finished, memory_order_relaxed))
      for (int k = 0; k < subs->n; k++) rl_conn_flush(subs->conns[k]);
  }
}

int rl_fast_start(rl_client *c, rl_req *req) {
  if (!c->fast || req->start != NULL ||
      (req->kind != RL_REQ_ACQUIRE && req->kind != RL_REQ_UNLOCK) ||
      req->lock->kind != &rl_kind_lock ||
      atomic_load_explicit(&c->blocking, memory_order_relaxed) > 1)
    return 0;
  if (!rl_client_fast_enter(c)) return 0;
  int own = own_round_ok(c, req);
  own_subs subs = {.n = 0};
  /* Before anything is written: no reply can wake the loop thread. */
  for (int i = 0; own && i < c->nmasters; i++)
    rl_conn_mute(master_conn(c, i), 1);
  rl_list_push_back(&c->active, &req->node);
  rl_req_start(req);
  for (int i = 0; i < c->nmasters; i++) rl_master_flush(c->masters[i]);
  if (own && !atomic_load_explicit(&req->finished, memory_order_relaxed)) {
    atomic_fetch_add_explicit(&c->own_rounds, 1, memory_order_relaxed);
    if (own_round(c, req, &subs))
      atomic_fetch_add_explicit(&c->own_finished, 1, memory_order_relaxed);
  }
  for (int i = 0; own && i < c->nmasters; i++)
    rl_conn_mute(master_conn(c, i), 0);
  for (int k = 0; k < subs.n; k++) rl_conn_mute(subs.conns[k], 0);
  return rl_client_fast_leave(c, req, own);
}
