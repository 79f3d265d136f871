/*
 * rlock: reentrant distributed locks over Redis, for multithreaded C
 * servers.
 *
 * A lock is a Redis hash whose one field is its owner (a client id and a
 * thread, or a client id and a caller-chosen 64-bit owner for the async
 * API) and whose value is the owner's reentry count; the key's TTL is the
 * lease. It is taken by quorum over N independent Redis masters (the
 * Redlock algorithm; N = 1 is the ordinary single-instance lock; a master
 * may be a whole Redis Cluster), and every
 * first acquisition carries a fencing token that grows from one holder to
 * the next, so that a storage layer can reject a holder whose lease ran out
 * while it was paused.
 *
 * Conventions, as in libuv: functions return 0 (RLOCK_OK) or a negative
 * RLOCK_E* code; queries that answer yes or no return 1 or 0, or a negative
 * code. Nothing here prints. No libuv or hiredis type appears in this
 * header.
 *
 * Threads: a client runs one libuv loop, in a thread of its own (the
 * default) or on a loop the caller passes in and runs. The blocking calls
 * (rlock_lock, rlock_trylock, rlock_unlock, the queries) may be made from
 * any thread but the loop thread, where they fail with RLOCK_EDEADLK
 * instead of blocking forever. Async callbacks run on the loop thread.
 *
 * fork(): a client belongs to the process that opened it. In a child of
 * fork() an inherited client is unusable, since its loop thread did not
 * survive the fork and its connections are the parent's: every call on it
 * (and on its lock handles) fails at once with RLOCK_EFORKED, writes
 * nothing and touches none of the parent's connections, so the parent
 * goes on undisturbed. A pre-forking server opens its client in each
 * worker after the fork (or opens one before and one in each child).
 * rlock_client_close and the handles' free functions in the child let go
 * of it without touching anything of the parent's (see
 * rlock_client_close).
 */
#ifndef RLOCK_H
#define RLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(RLOCK_BUILDING) && defined(__GNUC__)
#define RLOCK_EXTERN __attribute__((visibility("default")))
#else
#define RLOCK_EXTERN /* nothing */
#endif

#define RLOCK_VERSION_MAJOR 0
#define RLOCK_VERSION_MINOR 1
#define RLOCK_VERSION_PATCH 0

/*
 * As lease_ms: the lock has no fixed lease. It is given
 * rlock_options.watchdog_timeout_ms and kept alive while it is held.
 */
#define RLOCK_WATCHDOG (-1)

/* As wait_ms: wait until the lock is had, however long that takes. */
#define RLOCK_WAIT_FOREVER (-1)

/*
 * As rlock_options.wait_strategy: how a waiting acquisition learns that a
 * lock held by another owner was released. RLOCK_WAIT_PUBSUB (the
 * default) subscribes to the lock's unlock channel and sleeps until an
 * unlock message wakes it (one waiter per unlock and client, in arrival
 * order), or the holder's remaining lease or the caller's wait runs out.
 * RLOCK_WAIT_POLL retries after retry_delay_ms plus jitter instead, capped
 * by the holder's remaining lease. Either way, failures to reach a
 * majority of masters are retried with the jittered delay.
 */
#define RLOCK_WAIT_PUBSUB 0
#define RLOCK_WAIT_POLL 1

/*
 * Error codes, as one table: every code is negative, and rlock_strerror()
 * names each (the table generates both, as libuv's UV_ERRNO_MAP does).
 * The numbers are stable; new codes are only ever appended.
 */
#define RLOCK_OK 0
#define RLOCK_ERRNO_MAP(XX)                                                   \
  XX(ETIMEDOUT, -1, "lock held by another owner for the whole wait")        \
  XX(ENOTOWNER, -2, "caller does not hold the lock")                        \
  XX(ENOQUORUM, -3, "a majority of masters could not be reached in time")   \
  XX(ELOST, -4, "the lock was lost (expired or taken away)")                \
  XX(EINVAL, -5, "invalid argument")                                        \
  XX(ENOMEM, -6, "out of memory")                                           \
  XX(ECLOSED, -7, "client is closed")                                       \
  XX(EREDIS, -8, "a master answered with an error reply")                   \
  XX(EDEADLK, -9, "the call would deadlock")                                \
  XX(ECANCELED, -10, "the async acquisition was cancelled")                 \
  XX(ELIMIT, -11, "no extensions left for this acquisition")                \
  XX(ENOTFOUND, -12, "a master's host name could not be resolved")          \
  XX(ECONFLICT, -13, "the semaphore's limit differs from this handle's")    \
  XX(ENOENT, -14, "no such latch")                                          \
  XX(EFORKED, -15, "the client was opened by another process (inherited "   \
                   "across fork)")                                          \
  XX(EPROTO, -16, "a master's reply or TLS session broke the protocol")

/*
 * What each code means:
 * RLOCK_ETIMEDOUT  the lock was held by another owner for the whole wait
 *                  (also with wait 0).
 * RLOCK_ENOTOWNER  the caller does not hold the lock it tried to release or
 *                  query.
 * RLOCK_ENOQUORUM  too few masters answered, or a majority could not be had
 *                  in time.
 * RLOCK_ELOST      the caller held the lock, but it expired or was taken
 *                  away.
 * RLOCK_EINVAL     an argument or option is invalid; nothing was changed.
 * RLOCK_ENOMEM     memory could not be allocated; nothing was changed.
 * RLOCK_ECLOSED    the client is closed or closing.
 * RLOCK_EREDIS     a master answered with an error reply; see
 *                  rlock_client_last_error().
 * RLOCK_EDEADLK    the call would deadlock: a blocking call was made on
 *                  the client's loop thread, or the holder of a read lock
 *                  asked for the write side of the same read-write lock.
 * RLOCK_ECANCELED  rlock_cancel_async cancelled this pending
 *                  rlock_lock_async.
 * RLOCK_ELIMIT     rlock_extend: this acquisition has used all its
 *                  extensions.
 * RLOCK_ENOTFOUND  rlock_client_open: the host name of a Cluster seed or of
 *                  a sentinel did not resolve. (A single server's that
 *                  does not resolve is a master that is down; see
 *                  rlock_client_open.)
 * RLOCK_ECONFLICT  a semaphore's limit, as the masters remember it, is not
 *                  the permits its handle was got with (clients disagree
 *                  about K); rlock_client_last_error() names the stored
 *                  limit. Nothing was changed.
 * RLOCK_ENOENT     rlock_latch_count_down: the latch is not set (never
 *                  set, expired, or deleted).
 * RLOCK_EFORKED    the client was opened by another process and inherited
 *                  across fork(): its connections and loop thread are the
 *                  parent's. Open a client of the child's own.
 * RLOCK_EPROTO     a master (or sentinel) answered with a reply that is not
 *                  in the shape its command documents, or its TLS session
 *                  failed (handshake, certificate, decryption); the
 *                  connection's error names the cause.
 */
#define RLOCK_XX_DEFINE(name, code, text) enum { RLOCK_##name = (code) };
RLOCK_ERRNO_MAP(RLOCK_XX_DEFINE)
#undef RLOCK_XX_DEFINE

typedef struct rlock_client rlock_client;
typedef struct rlock rlock;
struct uv_loop_s;

/* Log levels, most severe first. */
#define RLOCK_LOG_ERROR 0
#define RLOCK_LOG_WARN 1
#define RLOCK_LOG_INFO 2
#define RLOCK_LOG_DEBUG 3

/*
 * A log line, without a newline. It runs on the loop thread and must not
 * call blocking rlock functions; msg is valid during the call only.
 */
typedef void (*rlock_log_cb)(int level, const char *msg, void *arg);

/* Options of a client. Fill with rlock_options_init(), then set fields. */
typedef struct rlock_options {
  /*
   * The masters, each one of:
   *   "host:port"
   *   "redis://[[user]:password@]host[:port][/db]"
   *   "rediss://[[user]:password@]host[:port][/db]"  (TLS; see tls_*)
   *   "unix://[[user]:password@]/path/to/socket[?db=N]"
   *   "redis-cluster://[[user]:password@]host[:port][?seed=host[:port]&...]"
   *   "rediss-cluster://..."                          (a cluster over TLS)
   * A cluster URL names a Redis Cluster (7.0 or later) by one seed node or
   * more (seed= adds seeds, so the URL holds no comma); the whole cluster
   * is one master with one vote: each lock goes to the primary that
   * serves its slot, redirects (MOVED, ASK), TRYAGAIN and CLUSTERDOWN are
   * followed within master_timeout_ms, waiters listen on the slot's shard
   * channel, and the watchdog batches renewals per node.
   * docs/deployment.md, "Redis Cluster", says what a failover or a
   * migration may cost. Fair and read-write locks, semaphores, latches
   * and elections work on a cluster master too, each on the primary of
   * its name's slot. Several locks at once are not yet supported there:
   * while any master of a client is a cluster, rlock_lock_all and
   * rlock_unlock_all (and their _async forms) return RLOCK_EINVAL and
   * rlock_client_last_error says so ("several locks at once are not yet
   * supported on a redis-cluster:// master"). Sentinel masters take
   * every kind.
   *   "redis-sentinel://[[user]:password@]host[:port]/service
   *      [?sentinel=host[:port]&...&sentinel_user=U&sentinel_password=P
   *       &db=N]"                        (a Sentinel group's master)
   *   "rediss-sentinel://..."            (TLS to sentinels and servers)
   * A Sentinel master is one master, one vote, whose server is whatever
   * a majority of the sentinels that answer name (port 26379 by default;
   * more sentinels with sentinel=); rlock checks ROLE on it, follows
   * failovers (+switch-master), and never reconnects to a server without
   * asking the sentinels again. The userinfo and db are the servers';
   * sentinel_user= and sentinel_password= authenticate to the sentinels
   * (none by default). The servers' ACL rule needs +role.
   * With a user, rlock authenticates as that ACL user (AUTH user
   * password); with a password alone, as the default user (AUTH
   * password). A user or password may be percent-encoded (%40 for '@',
   * %2C for ','). Host names are resolved once, when the client opens.
   * TLS and plain masters may be mixed. Required: at least one, at most
   * 64, each a different server: two entries that resolve to one address
   * and port (or one socket path) are refused, since that server would
   * vote twice.
   */
  const char *const *masters;
  size_t nmasters;
  /*
   * A libuv loop that the caller runs, or NULL (the default) for a loop in
   * a thread of rlock's own. With a caller's loop, rlock_client_open and
   * rlock_client_close must be called on the thread that runs it.
   */
  struct uv_loop_s *loop;
  /* Lease of a lock taken with RLOCK_WATCHDOG, in ms. Default 30000. */
  int64_t watchdog_timeout_ms;
  /*
   * How long one master may take to answer one command, in ms, before it
   * counts as failed for that round. Small against the lease. Default 200.
   * An acquisition also tells each master this deadline, in the master's
   * own clock (measured by the connection with TIME): a master that runs
   * it later, after a stall, grants nothing.
   */
  int64_t master_timeout_ms;
  /* How long a connection attempt to a master may take. Default 1000. */
  int64_t connect_timeout_ms;
  /*
   * Clock drift allowed per ms of lease: the validity of an acquisition is
   * lease - elapsed - (lease * drift_factor + 2 ms). Default 0.01.
   */
  double drift_factor;
  /*
   * A waiting acquisition retries after retry_delay_ms plus a random
   * 0..retry_jitter_ms, and never sleeps past the holder's remaining lease.
   * Defaults 100 and 100.
   */
  int64_t retry_delay_ms;
  int64_t retry_jitter_ms;
  /*
   * Prefix of every key rlock writes. Default "rlock:". At most 64 bytes,
   * and no '{' or '}'.
   */
  const char *key_prefix;
  /*
   * The watchdog renews due locks in batches of at most this many, one
   * script call per batch and master. Default 100, at most 10000.
   */
  int watchdog_batch;
  /*
   * How many times one acquisition with a fixed lease may be extended with
   * rlock_extend. Unbounded extension would let a stuck holder keep a lock
   * forever, which breaks liveness. Default 10; 0 forbids extension.
   */
  int max_extensions;
  /*
   * RLOCK_WAIT_PUBSUB (the default) or RLOCK_WAIT_POLL; see there. Pub/sub
   * waiting opens one more connection per master, on the first wait.
   */
  int wait_strategy;
  /*
   * Restart quarantine (Redlock's "delayed restart", enforced by the
   * client). A master that restarted may have forgotten locks it granted;
   * until the longest lease any client of the deployment may hold has run
   * out since its start, its grants do not count toward an acquisition
   * quorum (they are still undone or released as usual). rlock reads each
   * master's run_id and uptime when it connects, and keeps a record of
   * every master's run_id on the masters themselves (a hash named
   * <key_prefix>run_ids, written and read in each connection's handshake,
   * before any lock reply on it), so that a client opened after a restart
   * learns of it from the other masters; a master with no record anywhere
   * (a new deployment) is trusted at once. docs/guarantees.md says which
   * restarts are caught. RLOCK_QUARANTINE_AUTO (the default): at most
   * the larger of watchdog_timeout_ms and max_lease_ms, and over as soon
   * as every lease the other masters recorded has run out (each master
   * keeps the latest expiry it granted, the key <key_prefix>horizon;
   * that bound needs every client of the masters to write it, see
   * docs/guarantees.md); 0: off (right when every master persists with
   * appendfsync always); > 0: exactly that many ms, whatever the leases.
   */
  int64_t restart_quarantine_ms;
  /*
   * The longest fixed lease any client of the deployment may take, in ms
   * (the Redlock page's "max TTL"); the restart quarantine covers it, so
   * every client of one set of masters should be given the same value. A
   * lease longer than this is refused with RLOCK_EINVAL (and said so in
   * rlock_client_last_error). Default 60000: above the watchdog's 30 s,
   * and a minute of not counting a master after its restart. At most 30
   * days.
   */
  int64_t max_lease_ms;
  /*
   * Logging. rlock prints nothing by itself; with log_cb set, it reports
   * connection changes, restarts noticed, error replies, renewal failures
   * and lost locks at log_level and above (default RLOCK_LOG_INFO).
   */
  rlock_log_cb log_cb;
  void *log_arg;
  int log_level;
  /*
   * TLS, for rediss:// masters (the names mirror redis-cli's --cacert,
   * --cacertdir, --cert, --key, --sni and --insecure). A master's
   * certificate chain is verified against tls_ca_file (a PEM bundle) or
   * tls_ca_dir (a directory hashed by c_rehash), or else the system's CA
   * store, and the certificate must carry the master's host name (as
   * written in its URL, or tls_server_name) as a DNS name or IP address.
   * tls_cert_file and tls_key_file (PEM, both or neither) are a client
   * certificate for masters that require one (tls-auth-clients yes).
   * tls_server_name, when set, is sent as SNI and verified instead of
   * each TLS master's URL host. Files are read when the client opens: an
   * unreadable file, or a key that does not match its certificate, fails
   * rlock_client_open with the reason in rlock_open_error. Strings are
   * copied; NULL means not set.
   *
   * tls_insecure = 1 turns verification off (chain and host name): the
   * connection is encrypted but the master is not authenticated, so
   * anyone on the path can impersonate it. For tests only.
   */
  const char *tls_ca_file;
  const char *tls_ca_dir;
  const char *tls_cert_file;
  const char *tls_key_file;
  const char *tls_server_name;
  int tls_insecure;
  /*
   * Replica acknowledgement of grants (Redisson's WAIT after each grant).
   * With replica_acks = n > 0, every acquisition, every renewal that
   * extends a lock's validity (the watchdog's and rlock_extend's) and
   * every fencing write-back is followed, on the same connection and in
   * the same write, by WAIT n replica_ack_timeout_ms, and a master's
   * answer counts toward the quorum only if it came within the master
   * timeout and WAIT said, within replica_ack_timeout_ms more, that at
   * least n of its replicas have it. A grant with fewer is treated as a
   * grant that came too late: it does not count, and it is undone (or,
   * if the acquisition won on other masters, kept with the hold and
   * released with it, like any late grant); it is counted in
   * rlock_master_metrics.unacked and logged. An answer that wrote
   * nothing (the lock is held by another) needs no acknowledgement.
   *
   * What it buys: a grant that counted is on n replicas of its master,
   * so a failover to one of them keeps it, and a stale master that a
   * client still writes to (paused through a failover) has no replicas
   * left to acknowledge anything. What it does not: Sentinel promotes the
   * replica it thinks most up to date, not necessarily one of the n, so
   * only n = every replica makes every promotion keep every counted
   * grant (and then one replica down refuses every grant until it is
   * back); and a promoted replica expires the lock by its own wall clock
   * (expirations replicate as absolute times), so a replica whose clock
   * runs ahead shortens the lease. It narrows the failover window; it
   * does not close it: fencing tokens still decide (docs/deployment.md,
   * "Sentinel"). A master is asked for at most the replicas it lists in
   * ROLE (at least one, and none for a Sentinel master that took over
   * from the one in use: docs/deployment.md says when and why).
   * The masters' ACL rule needs +wait. 0 (the default): off. At most 64.
   * replica_ack_timeout_ms: 1 to 60000, default 100; used only when
   * replica_acks > 0. The masters' deadline for these commands is
   * master_timeout_ms + replica_ack_timeout_ms.
   */
  int replica_acks;
  int64_t replica_ack_timeout_ms;
  /*
   * Fair locks and the write side of read-write locks: a waiter keeps its
   * place in the masters' queues only while it shows it is alive, which
   * it does by attempting at least every third of this many ms (rlock
   * does that by itself while the waiter waits). A waiter whose process
   * died or was paused (SIGSTOP, a long GC pause) is therefore skipped
   * after at most waiter_alive_ms without an attempt, however long the
   * holder keeps the lock; a paused waiter that comes back keeps its
   * original place. A waiting writer holds new readers back for at most
   * this long after it stopped attempting. RLOCK_WAITER_ALIVE_AUTO (the
   * default): the larger of 5000 and 4 * master_timeout_ms; otherwise
   * at least 4 * master_timeout_ms (an attempt may take a master timeout
   * to land, and a live waiter must never look dead).
   */
  int64_t waiter_alive_ms;
  /*
   * Lifetimes of the lock family's keys, in ms, each 1 to 30 days. Every
   * key rlock writes has a TTL; these are the ones that do not follow a
   * lease. sem_limit_ttl_ms: how long a semaphore remembers its limit
   * (its permits) after its last acquisition, so that a client with
   * another limit is told (RLOCK_ECONFLICT) rather than obeyed; default a
   * day. latch_ttl_ms: how long a counting latch lives after its last
   * activity (set or count-down), so that an abandoned one goes; default
   * a day. latch_linger_ms: how long a latch that reached zero stays
   * visible as open, so that awaiters that look late still see it open;
   * default 10 minutes.
   */
  int64_t sem_limit_ttl_ms;
  int64_t latch_ttl_ms;
  int64_t latch_linger_ms;
} rlock_options;

#define RLOCK_WAITER_ALIVE_AUTO 0

#define RLOCK_QUARANTINE_AUTO (-1)

/* Fills opts with the defaults the fields' comments give, and no
 * masters. */
RLOCK_EXTERN void rlock_options_init(rlock_options *opts);

/* A static English description of err; never NULL. */
RLOCK_EXTERN const char *rlock_strerror(int err);

/*
 * Opens a client: validates the options, resolves the masters, loads the
 * TLS files, starts the loop thread (unless opts->loop is set) and begins
 * connecting. A single server whose host name does not resolve is not an
 * error here: it counts as a master that is down (its metrics' error says
 * so, and the log at RLOCK_LOG_WARN), and its name is resolved again, off
 * the loop, with the reconnect backoff until it does, so a majority of
 * the others serves meanwhile. A malformed address is refused. It does
 * not wait for the masters, but the client is usable at once: an
 * operation made while a master's first connection attempt is in
 * progress waits for that attempt (at most connect_timeout_ms, then the
 * master timeout) instead of failing. Once an attempt has failed, a master
 * that is down fails operations at once (they count it as not answering).
 * rlock_client_wait_ready waits for a majority. On success *out is the
 * client and 0 is returned; otherwise *out is NULL and rlock_open_error
 * says why.
 */
RLOCK_EXTERN int rlock_client_open(rlock_client **out,
                                   const rlock_options *opts);

/*
 * Why the last rlock_client_open made on the calling thread failed, in
 * words that name the option or master and what was wrong with it (for
 * example "masters[1] \"redis://h:99999\": port out of range"), copied into
 * buf, always NUL-terminated when size > 0. Returns its length; 0 when
 * that open succeeded or none was made. Like dlerror(), it is per thread.
 */
RLOCK_EXTERN size_t rlock_open_error(char *buf, size_t size);

/*
 * Closes a client. Requests not yet finished fail with RLOCK_ECLOSED
 * (blocked threads wake, async callbacks run), acquisitions in flight are
 * undone on every master (late grants included), renewals stop, and the
 * locks the client still holds are released (best effort: the masters get
 * at most master_timeout_ms to answer; a lock not released expires with its
 * lease). Then connections are closed, each after writing what it still
 * had queued that must not be lost (releases, undos of grants), within
 * master_timeout_ms; the loop thread, if rlock's own, is joined. Lock
 * handles stay valid for rlock_free() only; every other
 * call on them returns RLOCK_ECLOSED.
 *
 * With a caller's loop, call it on the loop thread; the caller must run
 * the loop afterwards (uv_run) until rlock's handles have closed.
 *
 * In a child of fork(), on a client the parent opened, it only lets go
 * of it: nothing is sent, released or closed, no thread is joined, and
 * the client's memory and the descriptors the child inherited are left as
 * they are (deliberately: they are the parent's; an exec or exit drops
 * them). The parent's client is unaffected.
 */
RLOCK_EXTERN void rlock_client_close(rlock_client *client);

/*
 * Blocks until a majority of masters has completed its connection
 * handshake (AUTH, SELECT, script loading), or timeout_ms pass
 * (RLOCK_WAIT_FOREVER: no limit). Returns 0 when a majority is ready;
 * RLOCK_EREDIS when masters refused the handshake (a wrong password, a
 * missing ACL permission, a database the master lacks: the server's text
 * is in rlock_client_last_error), at once if so many refused that no
 * majority can be ready; RLOCK_ENOQUORUM at the timeout otherwise (each
 * master's rlock_master_metrics.error says why it is not up);
 * RLOCK_ECLOSED if the client is closed; RLOCK_EDEADLK on the client's
 * loop thread; RLOCK_EINVAL for another negative timeout. Operations do
 * not need it (see rlock_client_open); it is for a program that wants to
 * learn at start whether its masters are usable.
 */
RLOCK_EXTERN int rlock_client_wait_ready(rlock_client *client,
                                         int64_t timeout_ms);

/*
 * The text of the last error reply a master sent this client, copied into
 * buf (always NUL-terminated when size > 0): the reply to a lock command
 * (OOM, READONLY, NOPERM...), the refusal of a connection's handshake
 * (WRONGPASS..., "ERR DB index is out of range"), a TLS failure ("TLS
 * handshake: certificate verify failed: ..."), or the reason a call was
 * refused with RLOCK_EINVAL for its lease or wait (a lease longer than
 * max_lease_ms, or too short to outlast its drift allowance: the text
 * gives the minimum). A later reason replaces it; a call that succeeds
 * clears a call's reason, but not a master's refusal of its connection,
 * which stays until replaced. The client is shared by threads: read it
 * right after the call that failed. In a child of fork() it says the
 * client was inherited. Returns its length, 0 if there was none.
 */
RLOCK_EXTERN size_t rlock_client_last_error(rlock_client *client, char *buf,
                                            size_t size);

/*
 * Gets a handle on the lock called name (1 to 512 bytes, no '{', '}' or
 * NUL). The handle holds no lock; it may be shared by threads, as a
 * Redisson RLock object is.
 */
RLOCK_EXTERN int rlock_get(rlock_client *client, const char *name,
                           rlock **out);

/*
 * The lock family. Each of these gets a handle that every call on a lock
 * handle accepts with the same meaning (lock, trylock, unlock, force
 * unlock, the queries, the async calls, extend, the lost-lock callback,
 * free); name as for rlock_get.
 *
 * rlock_get_fair: a fair lock. A reentrant lock whose waiters are served
 * first come, first served across clients and processes: the waiter that
 * asked first (by its client's wall clock when the call began) gets the
 * lock next, and an unlock wakes exactly that waiter. A waiter whose
 * process died or is paused is skipped once it has not attempted for
 * rlock_options.waiter_alive_ms (it attempts by itself every third of
 * that while it waits); a waiter that gives up (its wait ran out, it was
 * cancelled, its client closed) leaves every master's queue at once.
 * A single attempt (wait_ms 0) never queues: it gets the lock only if it
 * is free and nobody waits. A fair handle and a plain handle of one name
 * are the same lock (they exclude each other), but a plain acquisition
 * does not queue, and a plain unlock wakes no fair waiter: do not mix
 * them. docs/guarantees.md ("Fair lock") says what order holds with N > 1
 * masters.
 *
 * rlock_get_read, rlock_get_write: the two sides of one read-write lock
 * (the same name). Any number of owners may hold the read side at once;
 * the write side excludes readers and writers. Both are reentrant; the
 * write holder may also take the read side, and keeps it after releasing
 * the write side. A read holder that asks for the write side (without
 * holding it) gets RLOCK_EDEADLK at once instead of waiting forever.
 * Writers are not starved: while a writer waits, new readers wait behind
 * it (owners that already read may re-enter). Each read hold has its own
 * lease, renewed by the watchdog, and ends alone: a crashed reader's
 * share frees within its lease, the others keep theirs. Fencing: every
 * first acquisition of either side gets a token larger than that of
 * every acquisition of the lock that ended before it began, read or
 * write (concurrent readers with N > 1 masters may share one);
 * docs/guarantees.md ("Read-write lock") gives a storage layer's two
 * rules for using them. For a read handle, rlock_is_locked answers whether
 * any owner reads, rlock_remaining_lease the time until the last read
 * hold ends.
 */
RLOCK_EXTERN int rlock_get_fair(rlock_client *client, const char *name,
                                rlock **out);
RLOCK_EXTERN int rlock_get_read(rlock_client *client, const char *name,
                                rlock **out);
RLOCK_EXTERN int rlock_get_write(rlock_client *client, const char *name,
                                 rlock **out);

/* What the handle is: "lock", "fair", "read" or "write". */
RLOCK_EXTERN const char *rlock_kind(const rlock *lock);

/*
 * Frees a handle, not the lock: a lock held through it stays held. Async
 * operations still pending on the handle keep it alive until their
 * callbacks have run.
 */
RLOCK_EXTERN void rlock_free(rlock *lock);

/* The name the handle was got with. */
RLOCK_EXTERN const char *rlock_name(const rlock *lock);

/*
 * Blocking API. The owner is the calling thread; the lock is reentrant for
 * it: every successful lock or trylock must be matched by one unlock.
 *
 * rlock_lock waits as long as it takes. rlock_trylock waits at most wait_ms
 * (0: one attempt; RLOCK_WAIT_FOREVER: as rlock_lock) and returns
 * RLOCK_ETIMEDOUT if the lock stayed held by another, RLOCK_ENOQUORUM if a
 * majority of masters could not be reached. lease_ms > 0 is a fixed lease
 * after which the lock frees itself; RLOCK_WATCHDOG uses the watchdog
 * timeout as the lease. A fixed lease must outlast its drift allowance
 * (lease_ms * drift_factor + 2 ms: at least 3 ms with the default
 * drift_factor) and be at most max_lease_ms, else RLOCK_EINVAL with the
 * reason in rlock_client_last_error; and it must outlast the round trip
 * to a majority too, or every grant comes back without validity left
 * (RLOCK_ENOQUORUM).
 *
 * A re-entry (the thread holds the lock already) that fails leaves the
 * hold as it was: its count, its token and its lease; only what the
 * failed attempt itself was granted is taken back. If the attempt showed
 * that the hold itself is gone from a master that had it, the hold is
 * reported lost (the lost-lock callback runs; the next rlock_unlock says
 * RLOCK_ELOST).
 */
RLOCK_EXTERN int rlock_lock(rlock *lock, int64_t lease_ms);
RLOCK_EXTERN int rlock_trylock(rlock *lock, int64_t wait_ms,
                               int64_t lease_ms);

/*
 * Releases one hold of the calling thread. The last release deletes the
 * key and publishes an unlock message. Returns RLOCK_ENOTOWNER if the
 * thread holds no lock here (and leaves another's lock alone), RLOCK_ELOST
 * if it held it but the lock has since expired or been taken away.
 *
 * A master whose connection is down and reconnecting when the unlock is
 * made (it dropped its clients, a failover) is asked once the connection
 * is back, as long as the hold is valid: the call may take up to the
 * rest of the hold's validity, plus master_timeout_ms for the answer.
 * Only an unlock that was never written is sent later, so no release
 * applies twice. RLOCK_ENOQUORUM means that no majority of masters
 * confirmed the release, nor said that the caller was not the owner: the
 * others could not be asked before the hold's validity ended, or did not
 * answer within master_timeout_ms of being asked; RLOCK_EREDIS, that a
 * master answered with an error reply or refused the connection's
 * handshake.
 *
 * If a majority cannot be reached (RLOCK_ENOQUORUM, RLOCK_EREDIS), the
 * hold ends anyway and must not be retried: rlock sends a release to
 * every master, best effort, and forgets the hold; outer reentrant levels
 * are lost (a later rlock_unlock says RLOCK_ELOST), and the lock is free at
 * the latest when its lease runs out (it is no longer renewed). Until
 * then the same owner may take it again: that is a first acquisition,
 * with a new fencing token and a count of 1, whatever is left of the
 * old hold on a master.
 */
RLOCK_EXTERN int rlock_unlock(rlock *lock);

/* Deletes the lock whoever holds it. 0 whether or not it was held. */
RLOCK_EXTERN int rlock_force_unlock(rlock *lock);

/* 1 if a majority of masters has the lock held, 0 if not, or an error. */
RLOCK_EXTERN int rlock_is_locked(rlock *lock);

/* 1 if the calling thread holds the lock (on a majority), 0 if not. */
RLOCK_EXTERN int rlock_is_held_by_current_thread(rlock *lock);

/* The calling thread's reentry count: 0 if it does not hold the lock. */
RLOCK_EXTERN int rlock_hold_count(rlock *lock);

/*
 * Sets *ms to the time the lock stays held on a majority of masters: -2 if
 * it is not held, -1 if it is held with no expiry (a leak), else the
 * remaining lease in ms.
 */
RLOCK_EXTERN int rlock_remaining_lease(rlock *lock, int64_t *ms);

/*
 * Sets *token to the fencing token of the calling thread's hold, taken at
 * its first acquisition: larger than every earlier holder's token.
 * RLOCK_ENOTOWNER if the thread does not hold the lock.
 */
RLOCK_EXTERN int rlock_fencing_token(rlock *lock, uint64_t *token);

/*
 * Extends the calling thread's hold of a fixed-lease lock to lease_ms from
 * now: a quorum round that succeeds only if the thread still holds the
 * lock on a majority of masters and the new lease leaves validity. At most
 * rlock_options.max_extensions times per acquisition; past that,
 * RLOCK_ELIMIT. RLOCK_EINVAL for a lock taken with RLOCK_WATCHDOG (the
 * watchdog extends it), RLOCK_ENOTOWNER if the thread does not hold it,
 * RLOCK_ELOST if it held it but lost it (it is then released locally).
 */
RLOCK_EXTERN int rlock_extend(rlock *lock, int64_t lease_ms);

/*
 * Lost-lock notification. A lock taken with RLOCK_WATCHDOG is renewed every
 * watchdog_timeout_ms / 3 while held. When a renewal finds that the owner
 * no longer holds it (it expired, was force-unlocked, or a master lost it)
 * or cannot reach a majority of masters before the lock's validity ends,
 * the lock is lost: renewal stops, rlock_is_held_by_current_thread answers
 * 0, the owner's next rlock_unlock returns RLOCK_ELOST, and the callback
 * registered on the handle through which the hold was first acquired runs
 * on the loop thread, once per lost hold. owner is the async owner, or for
 * a blocking owner the thread's rlock_thread_id() (is_thread = 1).
 *
 * The callback is per handle; set it before acquiring through the handle
 * (cb NULL removes it), from any thread, as often as you like (the pair
 * it replaces is freed). A lock with a fixed lease is not renewed, so its
 * loss is only seen at rlock_unlock or rlock_extend. Returns 0,
 * RLOCK_EINVAL for a NULL lock, or RLOCK_ENOMEM (the callback set before
 * stays).
 */
typedef void (*rlock_lost_cb)(rlock *lock, uint64_t owner, int is_thread,
                              void *arg);
RLOCK_EXTERN int rlock_set_lost_cb(rlock *lock, rlock_lost_cb cb, void *arg);

/*
 * At risk: called on the loop thread when a held lock's renewals have
 * missed a majority and less than half of its validity is left (at_risk 1),
 * and again when a renewal reaches a majority in time (at_risk 0); the lost
 * callback still comes if it is lost. Works for every lock kind taken with
 * RLOCK_WATCHDOG (reentrant, fair, read, write).
 *
 * Per hold (lock and owner), edge-triggered: 1 once when the hold enters
 * the risk, then either 0 once when a renewal reaches a majority again or
 * the lost-lock callback (no 0 before it); never 0 without a 1 before it,
 * and nothing for a hold whose renewals all succeed. The validity is the
 * watchdog's lease (watchdog_timeout_ms) less the clock drift allowance,
 * counted from the start of the last renewal that held. When masters do
 * not answer at all (stopped, unreachable), a renewal is tried again no
 * later than the halfway point, so the 1 comes within about
 * master_timeout_ms of it; with too little validity to try again the hold
 * is lost, and a hold not yet at risk then gets the 1 just before the lost
 * callback. A hold found gone from the masters is lost at once, without
 * a 1. Use it to stop starting work that must finish under the lock, or to
 * checkpoint, before the lock may be lost.
 *
 * Set, replaced and removed like rlock_set_lost_cb (per handle, the
 * handle through which the hold was first acquired; any thread, as
 * often as you like; cb NULL removes it). Returns 0, RLOCK_EINVAL for a
 * NULL lock, or RLOCK_ENOMEM (the callback set before stays). Semaphore
 * permits have their own: rlock_sem_set_risk_cb.
 */
typedef void (*rlock_risk_cb)(rlock *lock, int at_risk, void *arg);
RLOCK_EXTERN int rlock_set_risk_cb(rlock *lock, rlock_risk_cb cb, void *arg);

/* The id rlock gives the calling thread as a lock owner: unique in the
 * process for the thread's lifetime, never reused. */
RLOCK_EXTERN uint64_t rlock_thread_id(void);

/*
 * Async API. The owner is a 64-bit id the caller chooses (one per logical
 * task: callbacks are not tied to threads), reentrant as above. These may
 * be called from any thread; the callback runs later, on the loop thread,
 * exactly once, unless the call itself returns an error (then it never
 * runs). status is what the blocking call would have returned. An owner may
 * have one rlock_lock_async of a lock in flight at a time: a second one,
 * started before the first's callback, completes with RLOCK_EINVAL.
 */
typedef void (*rlock_cb)(rlock *lock, int status, void *arg);

RLOCK_EXTERN int rlock_lock_async(rlock *lock, uint64_t owner, int64_t wait_ms,
                                  int64_t lease_ms, rlock_cb cb, void *arg);

/*
 * Releases one hold of owner, as rlock_unlock does for a thread. cb may be
 * NULL: fire and forget (the unlock still runs to its end on the loop
 * thread; its status is not reported).
 */
RLOCK_EXTERN int rlock_unlock_async(rlock *lock, uint64_t owner, rlock_cb cb,
                                    void *arg);

/*
 * The fencing token of an async owner's hold. Like the blocking queries,
 * it blocks (briefly, no Redis round trip) when called off the loop
 * thread; on the loop thread it answers at once.
 */
RLOCK_EXTERN int rlock_owner_fencing_token(rlock *lock, uint64_t owner,
                                           uint64_t *token);

/* rlock_extend for an async owner; the callback gets its status. */
RLOCK_EXTERN int rlock_extend_async(rlock *lock, uint64_t owner,
                                    int64_t lease_ms, rlock_cb cb, void *arg);

/* The reentry count of an async owner: 0 if it does not hold the lock. */
RLOCK_EXTERN int rlock_owner_hold_count(rlock *lock, uint64_t owner);

/*
 * Cancels owner's pending rlock_lock_async on lock (an owner has at most
 * one acquisition of a lock in flight): its callback runs with
 * RLOCK_ECANCELED, and it leaves its wait queue (the unlock channel is
 * unsubscribed after the last waiter). A grant the acquisition already
 * had is given back. Returns 0 if one was
 * cancelled, RLOCK_ENOTOWNER if owner has no acquisition pending on lock
 * (it may have just completed: its callback then has run or will run with
 * its own status), RLOCK_ECLOSED if the client is closed.
 *
 * Any thread: off the loop thread it blocks briefly (no Redis round trip)
 * and the cancelled callback has run when it returns; on the loop thread
 * it answers at once, and the cancelled callback runs before it returns.
 */
RLOCK_EXTERN int rlock_cancel_async(rlock *lock, uint64_t owner);

/*
 * Semaphores with leased permits.
 *
 * A semaphore called name allows at most permits (K) permits to be held
 * at once, across every client of its masters. An owner (the calling
 * thread, or an async owner id, as for locks) holds the permits it
 * acquired as a lease: a fixed one (lease_ms), or RLOCK_WATCHDOG's,
 * renewed every watchdog_timeout_ms / 3 while held, so that a holder that
 * crashes gives its permits back when its lease runs out. Acquisitions
 * add up: an owner holding 2 that acquires 1 more holds 3, and releases
 * them in any steps. A waiting acquisition sleeps until a release is
 * announced on the semaphore's channel (RLOCK_WAIT_PUBSUB), or until the
 * earliest other lease would run out, or its wait does.
 *
 * With N masters the permits are numbered slots 1..K, each held by an
 * owner when a majority of masters granted it that slot (two majorities
 * share a master, which never gives a slot to two owners): so at no
 * moment do more than K permits have holders, under the same conditions
 * as a lock's safety (docs/guarantees.md). Every client of one
 * semaphore must use the same K: the masters remember it (see
 * rlock_options.sem_limit_ttl_ms) and refuse another with
 * RLOCK_ECONFLICT. The handle may be shared by threads.
 */
typedef struct rlock_sem rlock_sem;

/*
 * Gets a handle on the semaphore called name (as a lock name) with
 * permits (1 to 100000) permits in all. It holds no permit.
 */
RLOCK_EXTERN int rlock_sem_get(rlock_client *client, const char *name,
                               int64_t permits, rlock_sem **out);

/*
 * Acquires n (1 to K) more permits for the calling thread, all or none,
 * waiting at most wait_ms (0: one attempt; RLOCK_WAIT_FOREVER: as long as
 * it takes), each held for lease_ms (or RLOCK_WATCHDOG). 0;
 * RLOCK_ETIMEDOUT if not enough were free for the whole wait;
 * RLOCK_ENOQUORUM if a majority could not be reached; RLOCK_ECONFLICT if
 * the semaphore has another limit than this handle's (nothing is
 * changed; rlock_client_last_error names the stored limit); RLOCK_EINVAL
 * for a bad n, wait or lease.
 */
RLOCK_EXTERN int rlock_sem_acquire(rlock_sem *sem, int64_t n, int64_t wait_ms,
                                   int64_t lease_ms);

/*
 * Gives back n of the calling thread's permits, the most recently
 * acquired first, and announces them to waiters. RLOCK_ENOTOWNER, with
 * nothing changed, if n is more than the thread holds (or it holds none);
 * RLOCK_ELOST if the permits had run out (expired or reset) before this
 * call; RLOCK_ENOQUORUM or RLOCK_EREDIS if a majority could not be
 * reached: those n permits are given up anyway (a release is sent again
 * to every master, best effort; they are free at the latest when their
 * lease runs out), and the thread's others stay held.
 */
RLOCK_EXTERN int rlock_sem_release(rlock_sem *sem, int64_t n);

/*
 * Sets *n to the permits free now, as a majority of masters sees them (at
 * least a majority sees at least *n free; leases that ran out count as
 * free). RLOCK_ECONFLICT if the semaphore has another limit.
 */
RLOCK_EXTERN int rlock_sem_available(rlock_sem *sem, int64_t *n);

/* Sets *n to the permits the calling thread holds through any handle of
 * this semaphore (0 if none). No round trip. */
RLOCK_EXTERN int rlock_sem_held(rlock_sem *sem, int64_t *n);

/*
 * Sets *token to the fencing token of the calling thread's permits, taken
 * at its first acquisition (while it held none): larger than every token
 * handed out before by this semaphore. With K = 1 it fences exactly as a
 * lock's; with K > 1 it orders acquisitions, not exclusive holders.
 * RLOCK_ENOTOWNER if the thread holds no permit.
 */
RLOCK_EXTERN int rlock_sem_fencing_token(rlock_sem *sem, uint64_t *token);

/*
 * Async variants, with an explicit owner, as for locks: the callback runs
 * once on the loop thread with what the blocking call would return,
 * unless the call itself returns an error. An owner may have one
 * acquisition of a semaphore in flight at a time (a second completes with
 * RLOCK_EINVAL). cb may be NULL for a release (fire and forget).
 */
typedef void (*rlock_sem_cb)(rlock_sem *sem, int status, void *arg);
RLOCK_EXTERN int rlock_sem_acquire_async(rlock_sem *sem, uint64_t owner,
                                         int64_t n, int64_t wait_ms,
                                         int64_t lease_ms, rlock_sem_cb cb,
                                         void *arg);
RLOCK_EXTERN int rlock_sem_release_async(rlock_sem *sem, uint64_t owner,
                                         int64_t n, rlock_sem_cb cb,
                                         void *arg);
/* Cancels owner's pending rlock_sem_acquire_async, as rlock_cancel_async
 * does for a lock: its callback runs with RLOCK_ECANCELED and whatever it
 * was granted is given back. 0, or RLOCK_ENOTOWNER if none is pending. */
RLOCK_EXTERN int rlock_sem_cancel_async(rlock_sem *sem, uint64_t owner);
/* The permits and the fencing token of an async owner, as
 * rlock_sem_held and rlock_sem_fencing_token. */
RLOCK_EXTERN int rlock_sem_owner_held(rlock_sem *sem, uint64_t owner,
                                      int64_t *n);
RLOCK_EXTERN int rlock_sem_owner_fencing_token(rlock_sem *sem, uint64_t owner,
                                               uint64_t *token);

/*
 * Lost permits, as rlock_set_lost_cb for locks: when a renewal finds that
 * a permit of a watchdog hold is no longer had by a majority (its lease
 * ran out on the masters, or the semaphore was reset), the whole hold is
 * lost: renewal stops, what is left of it is given back, the owner's next
 * rlock_sem_release says RLOCK_ELOST, and cb runs on the loop thread,
 * once, for the handle of the hold's first acquisition.
 */
typedef void (*rlock_sem_lost_cb)(rlock_sem *sem, uint64_t owner,
                                  int is_thread, void *arg);
RLOCK_EXTERN void rlock_sem_set_lost_cb(rlock_sem *sem, rlock_sem_lost_cb cb,
                                        void *arg);

/*
 * Permits at risk, as rlock_set_risk_cb for locks: cb(sem, 1, arg) on the
 * loop thread when a watchdog hold's renewal missed a majority with less
 * than half its validity left, cb(sem, 0, arg) when a renewal holds again;
 * once per change, never 0 without a 1 before it, and a loss is told by
 * the lost callback alone. For the handle of the hold's first
 * acquisition; cb NULL removes it.
 */
typedef void (*rlock_sem_risk_cb)(rlock_sem *sem, int at_risk, void *arg);
RLOCK_EXTERN void rlock_sem_set_risk_cb(rlock_sem *sem, rlock_sem_risk_cb cb,
                                        void *arg);

/* An operator's reset: deletes every permit and the remembered limit (to
 * change K). Holders find their permits lost. 0 whether or not it
 * existed. */
RLOCK_EXTERN int rlock_sem_reset(rlock_sem *sem);

/* The name the handle was got with. */
RLOCK_EXTERN const char *rlock_sem_name(const rlock_sem *sem);

/* Frees a handle, not the permits: permits held through it stay held.
 * Async requests pending on it keep it alive until their callbacks. */
RLOCK_EXTERN void rlock_sem_free(rlock_sem *sem);

/*
 * Count-down latches.
 *
 * A latch called name is set once to a count, counted down by anyone (any
 * thread or process), and awaited by many: awaiters return when it
 * reaches zero, woken by a message on its channel. Each count-down is
 * counted once per master even when a master is asked twice (it carries
 * an id), so that retries are safe. Keys never outlive their use: a
 * counting latch goes rlock_options.latch_ttl_ms after its last activity
 * (an abandoned one), an open one after latch_linger_ms.
 */
typedef struct rlock_latch rlock_latch;

/* Gets a handle on the latch called name (as a lock name). */
RLOCK_EXTERN int rlock_latch_get(rlock_client *client, const char *name,
                                 rlock_latch **out);

/*
 * Sets the latch to count (>= 1) unless it is counting: 1 when it was set
 * (it was not set, or had opened: a new round begins), 0 when it was
 * already counting (nothing changed), or an error (RLOCK_ENOQUORUM when
 * no majority agrees either way).
 */
RLOCK_EXTERN int rlock_latch_set(rlock_latch *latch, int64_t count);

/*
 * Counts down by one: 0 when a majority counted it (or the latch was
 * already open); RLOCK_ENOENT if the latch is not set on a majority;
 * RLOCK_ENOQUORUM if no majority answered after a few tries (the
 * count-down may have been counted by some masters).
 */
RLOCK_EXTERN int rlock_latch_count_down(rlock_latch *latch);

/* Sets *count to the latch's count as a majority sees it (the quorum-th
 * smallest): 0 when it is open, or not set. */
RLOCK_EXTERN int rlock_latch_count(rlock_latch *latch, int64_t *count);

/*
 * Waits until the latch opens (reaches zero on a majority), at most
 * wait_ms (0: one look; RLOCK_WAIT_FOREVER). 0 when it opened, or had
 * opened and was set again meanwhile; RLOCK_ETIMEDOUT at the end of the
 * wait (a latch not set yet is waited for: it may be set later);
 * RLOCK_ELOST if the latch went away without opening (deleted, or
 * expired after latch_ttl_ms without activity).
 */
RLOCK_EXTERN int rlock_latch_await(rlock_latch *latch, int64_t wait_ms);

typedef void (*rlock_latch_cb)(rlock_latch *latch, int status, void *arg);
/* rlock_latch_count_down for event-driven code; cb may be NULL. */
RLOCK_EXTERN int rlock_latch_count_down_async(rlock_latch *latch,
                                              rlock_latch_cb cb, void *arg);
/* rlock_latch_await with a callback; owner names the await for
 * rlock_latch_cancel_async. */
RLOCK_EXTERN int rlock_latch_await_async(rlock_latch *latch, uint64_t owner,
                                         int64_t wait_ms, rlock_latch_cb cb,
                                         void *arg);
/* Cancels owner's pending await (its callback gets RLOCK_ECANCELED). 0,
 * or RLOCK_ENOTOWNER if none is pending. */
RLOCK_EXTERN int rlock_latch_cancel_async(rlock_latch *latch, uint64_t owner);

/* Deletes the latch (an operator's reset): awaiters get RLOCK_ELOST. */
RLOCK_EXTERN int rlock_latch_delete(rlock_latch *latch);

/* The name the handle was got with. */
RLOCK_EXTERN const char *rlock_latch_name(const rlock_latch *latch);

/* Frees a handle. Async requests pending on it keep it alive until their
 * callbacks have run. */
RLOCK_EXTERN void rlock_latch_free(rlock_latch *latch);

/*
 * Several locks at once.
 *
 * rlock_lock_all takes every lock of locks[0..n) for the calling thread,
 * or none: on each master one script checks them all and takes them all,
 * so that nobody ever holds part of the set while waiting for the rest,
 * and the order the locks are listed in does not matter (two callers
 * taking {a, b} and {b, a} cannot deadlock). Each lock taken is an
 * ordinary hold, reentrant as rlock_lock's: a lock the thread already
 * holds is re-entered (its count shared with single acquisitions), and
 * each may be released by rlock_unlock or by rlock_unlock_all. The
 * handles must be of one client and got with rlock_get (a fair, read or
 * write handle is RLOCK_EINVAL, for both calls); a name listed twice is
 * taken once; at most 1024. Returns as rlock_trylock does; on any
 * failure no lock of the set was taken (grants made on some masters are
 * undone), and a lock of the set that the thread held before the call is
 * still held as before, with its count. While it waits, it sleeps until
 * the lock that was found held is released.
 */
RLOCK_EXTERN int rlock_lock_all(rlock *const *locks, size_t n,
                                int64_t wait_ms, int64_t lease_ms);

/*
 * Releases one hold of each lock of locks[0..n) (a name listed twice,
 * once). RLOCK_ENOTOWNER, with nothing changed, if the thread holds one of
 * them not at all. Otherwise each is released as rlock_unlock would
 * release it, in one round for all, and the first error of those (in the
 * order given) is returned: RLOCK_ELOST for a lock that had been lost,
 * RLOCK_ENOQUORUM or RLOCK_EREDIS as for rlock_unlock.
 */
RLOCK_EXTERN int rlock_unlock_all(rlock *const *locks, size_t n);

/* Async variants with an explicit owner. cb may be NULL for the unlock. */
typedef void (*rlock_all_cb)(int status, void *arg);
RLOCK_EXTERN int rlock_lock_all_async(rlock *const *locks, size_t n,
                                      uint64_t owner, int64_t wait_ms,
                                      int64_t lease_ms, rlock_all_cb cb,
                                      void *arg);
RLOCK_EXTERN int rlock_unlock_all_async(rlock *const *locks, size_t n,
                                        uint64_t owner, rlock_all_cb cb,
                                        void *arg);
/* Cancels owner's pending rlock_lock_all_async whose set includes lock
 * (its callback gets RLOCK_ECANCELED; nothing stays taken). 0, or
 * RLOCK_ENOTOWNER if none is pending. */
RLOCK_EXTERN int rlock_cancel_all_async(rlock *lock, uint64_t owner);

/*
 * Leader elections.
 *
 * An election called name has at most one leader at a time, under the
 * same conditions as a lock's mutual exclusion (docs/guarantees.md,
 * "Elections"): leadership is a hold of the fair lock of that name (see
 * rlock_get_fair; do not use that name as a lock too), taken with the
 * watchdog, so that it lasts until the leader resigns, frees its handle,
 * closes its client, or loses it (renewals fail; its lost callback says
 * so). Campaigners wait in the fair lock's queue: when a leader resigns
 * or dies, the campaigner that has waited longest leads next. Each
 * leadership has the lock's fencing token, larger than every earlier
 * leader's, and a value (up to 4096 bytes) that the leader chooses and
 * everyone can read or observe.
 */
typedef struct rlock_election rlock_election;

/* Gets a handle on the election called name (as a lock name). A handle
 * campaigns or leads once at a time and may observe; it may be shared by
 * threads. 0, RLOCK_EINVAL (NULL or a bad name), or RLOCK_ENOMEM. */
RLOCK_EXTERN int rlock_election_get(rlock_client *client, const char *name,
                                    rlock_election **out);

/* The name the handle was got with. */
RLOCK_EXTERN const char *rlock_election_name(const rlock_election *e);

/*
 * Blocks until this caller leads (0), or wait_ms runs out
 * (RLOCK_ETIMEDOUT; 0: one attempt; RLOCK_WAIT_FOREVER). value (NULL for
 * "") is what followers see, at most 4096 bytes (else RLOCK_EINVAL).
 * Leadership is a watchdog lease: it lasts until rlock_resign,
 * rlock_election_free, the client's close, or loss (the callback of
 * rlock_election_set_lost_cb). The leader is the handle, not the thread:
 * any thread may proclaim or resign. The call leads once a majority of
 * masters granted the lock and stores the leader's record; if the record
 * cannot be written (RLOCK_ENOQUORUM, RLOCK_ELOST) the lock is given
 * back. A campaign that gives up (timeout, rlock_campaign_cancel, the
 * client's close) leaves nothing in Redis. RLOCK_EINVAL when the handle
 * already campaigns or leads; RLOCK_EDEADLK on the client's loop thread.
 */
RLOCK_EXTERN int rlock_campaign(rlock_election *e, const char *value,
                                int64_t wait_ms);

/*
 * rlock_campaign for event-driven code: cb(e, status, arg) runs once on
 * the loop thread with what rlock_campaign would return, unless this
 * call returns an error. owner is the leadership's async owner (as for
 * rlock_lock_async); choose it below 2^63 (rlock_campaign uses owners
 * from 2^63 up).
 */
RLOCK_EXTERN int rlock_campaign_async(rlock_election *e, const char *value,
                                      uint64_t owner, int64_t wait_ms,
                                      void (*cb)(rlock_election *, int status,
                                                 void *),
                                      void *arg);

/* Ends the handle's campaign: it completes with RLOCK_ECANCELED and
 * leaves the queue; a lock it had already won is given back. 0, or
 * RLOCK_ENOTOWNER if the handle does not campaign. */
RLOCK_EXTERN int rlock_campaign_cancel(rlock_election *e);

/*
 * The leader only: sets a new value (NULL for ""), at most 4096 bytes,
 * on a majority of masters, and tells the observers. 0; RLOCK_ENOTOWNER
 * when the handle does not lead (nothing is written); RLOCK_ELOST when
 * the masters say it no longer does; RLOCK_ENOQUORUM; RLOCK_EDEADLK on
 * the loop thread.
 */
RLOCK_EXTERN int rlock_proclaim(rlock_election *e, const char *value);

/*
 * The leader only: gives the leadership up (the lock's unlock, which wakes
 * the longest waiting campaigner) and tells the observers. 0;
 * RLOCK_ENOTOWNER when the handle does not lead; otherwise as
 * rlock_unlock (the leadership ends whatever it returns). On the loop
 * thread it starts the resign and returns 0 at once.
 */
RLOCK_EXTERN int rlock_resign(rlock_election *e);

/* The handle's own leadership token: 0, or RLOCK_ENOTOWNER if it does not
 * lead. No round trip. */
RLOCK_EXTERN int rlock_election_token(rlock_election *e, uint64_t *token);

/*
 * The current leader: its value (copied into value[0..cap),
 * NUL-terminated, cut to fit; value may be NULL with cap 0) and its
 * fencing token (token may be NULL). With N masters the leader is the
 * (token, value) stored on a majority, the highest such token if there
 * are several. RLOCK_ENOENT when a majority stores no leader;
 * RLOCK_ENOQUORUM when neither holds (a change is under way, or too few
 * masters answered); RLOCK_EDEADLK on the loop thread.
 */
RLOCK_EXTERN int rlock_leader(rlock_election *e, char *value, size_t cap,
                              uint64_t *token);

/*
 * Observes the election: cb(e, value, token, arg) runs on the client's
 * loop thread once with the current state (at once if the client already
 * observes this election, else after one read) and then on every change
 * of leader or value, as rlock_leader defines them; value is NULL when
 * there is no leader (token is then the last leader's, 0 if none was
 * seen). Changes come through pub/sub: within a round trip of a proclaim
 * or a resign; a leader that died is seen when its lease runs out on a
 * majority. After a reconnect the state is read again (and reported if
 * it changed meanwhile). Tokens never go back: a leader older than one
 * reported is never reported. One observer per handle: a new cb
 * replaces the old one; cb NULL stops it. When it returns, no callback of
 * the observer it replaced or stopped runs any more (unless called from
 * that callback). 0, RLOCK_ENOMEM, RLOCK_ECLOSED.
 */
RLOCK_EXTERN int rlock_observe(rlock_election *e,
                               void (*cb)(rlock_election *, const char *value,
                                          uint64_t token, void *),
                               void *arg);

/*
 * The leader's loss, as rlock_set_lost_cb for locks: cb(e, arg) on the
 * loop thread when the leadership's renewals show it lost (it expired, a
 * majority no longer has it); the handle then no longer leads. cb NULL
 * removes it. 0 or RLOCK_EINVAL.
 */
RLOCK_EXTERN int rlock_election_set_lost_cb(rlock_election *e,
                                            void (*cb)(rlock_election *,
                                                       void *),
                                            void *arg);

/*
 * The leader at risk, as rlock_set_risk_cb for locks: cb(e, 1, arg) on
 * the loop thread when the leadership's renewals missed a majority with
 * less than half its validity left, cb(e, 0, arg) when a renewal holds
 * again; a loss is told by the lost callback alone. cb NULL removes it.
 * 0 or RLOCK_EINVAL.
 */
RLOCK_EXTERN int rlock_election_set_risk_cb(rlock_election *e,
                                            void (*cb)(rlock_election *,
                                                       int at_risk, void *),
                                            void *arg);

/*
 * For rlock status: the leader as rlock_leader reads it (0 or
 * RLOCK_ENOENT), its remaining lease on a majority in *lease_ms (-1 when
 * unknown; may be NULL), and in *waiters the campaigners waiting, one
 * line each ("owner ticket", queue order), as a master of the majority
 * has them: a string to free(), or NULL.
 */
RLOCK_EXTERN int rlock_election_status(rlock_election *e, char *value,
                                       size_t cap, uint64_t *token,
                                       int64_t *lease_ms, char **waiters);

/*
 * Frees the handle: a leadership it holds is resigned (off the loop
 * thread, the resign is done when this returns), a campaign cancelled
 * (its callback gets RLOCK_ECANCELED), its observer stopped (no callback
 * of it runs after this returns, when called off the loop thread).
 */
RLOCK_EXTERN void rlock_election_free(rlock_election *e);

/*
 * Metrics, cheap enough to stay on: counters kept with relaxed atomics and
 * read without stopping anything. A snapshot may be taken from any thread.
 */
#define RLOCK_HIST_BUCKETS 12
#define RLOCK_METRICS_MASTERS 64
#define RLOCK_KINDS 4 /* lock, fair, read, write */

/* A histogram of durations: buckets[i] counts the observations of at most
 * le_ms[i] ms (cumulative, as Prometheus has it); the last bound is
 * infinite (le_ms < 0). */
typedef struct rlock_histogram {
  double le_ms[RLOCK_HIST_BUCKETS];
  uint64_t buckets[RLOCK_HIST_BUCKETS];
  uint64_t count;
  double sum_ms;
} rlock_histogram;

typedef struct rlock_master_metrics {
  char address[272];   /* host:port or the socket path; no password */
  int up;              /* the command connection completed its handshake
                          and is not stalled: 0 from the moment a command
                          passes the master timeout without a reply until
                          a reply comes */
  uint64_t timeouts;   /* commands that passed the master timeout */
  uint64_t errors;     /* error replies (OOM, READONLY...) and refused
                          handshakes (WRONGPASS...) */
  uint64_t reconnects; /* connections after the first */
  uint64_t restarts;   /* restarts noticed (run_id changed) */
  char error[160];     /* why the connection is not up: the master's last
                          connection, TLS or handshake error; "" while it
                          is up */
  uint64_t unacked;    /* grants, renewals and fencing write-backs that
                          did not count for want of replica
                          acknowledgement (replica_acks) */
  uint64_t failovers;  /* Sentinel masters: failovers followed (the
                          master the sentinels name moved, and rlock
                          moved with it) */
} rlock_master_metrics;

typedef struct rlock_metrics {
  uint64_t acquisitions;         /* successful lock/trylock, async too */
  uint64_t failed_timedout;      /* acquisitions ended by the wait */
  uint64_t failed_noquorum;
  uint64_t failed_redis;
  uint64_t failed_closed;
  uint64_t failed_canceled;
  uint64_t failed_other;         /* invalid, out of memory */
  uint64_t releases;             /* last unlocks that released a lock */
  uint64_t renewals;             /* watchdog renewals that held */
  uint64_t renewal_failures;     /* renewals that missed a majority */
  uint64_t locks_lost;
  int64_t locks_held;            /* (key, owner) holds right now */
  int64_t waiters;               /* acquisitions waiting right now */
  rlock_histogram wait;          /* request to acquisition */
  rlock_histogram hold;          /* first acquisition to release or loss */
  size_t nmasters;
  rlock_master_metrics masters[RLOCK_METRICS_MASTERS];
  uint64_t grants_unacked;       /* the masters' unacked, summed */
  uint64_t failovers;            /* the masters' failovers, summed */
  /* acquisitions by the kind of handle, in the order of rlock_kind()'s
   * names: lock, fair, read, write. */
  uint64_t acquisitions_by_kind[RLOCK_KINDS];
  /* Semaphores, latches and several locks at once. */
  uint64_t sem_acquisitions;     /* successful rlock_sem_acquire, async too */
  uint64_t sem_acquire_failures; /* semaphore acquisitions that failed */
  uint64_t sem_releases;         /* rlock_sem_release calls that released */
  uint64_t sem_permits_lost;     /* permits found lost (lease ran out, reset) */
  int64_t sem_permits_held;      /* permits this client's owners hold now */
  int64_t sem_waiters;           /* semaphore acquisitions waiting now */
  uint64_t latch_count_downs;    /* count-downs a majority applied */
  uint64_t latch_opened;         /* awaits that returned with the latch open */
  int64_t latch_waiters;         /* awaits waiting now */
  uint64_t lock_all_acquisitions; /* successful rlock_lock_all, async too */
  uint64_t locks_at_risk;        /* times a held lock or a semaphore's
                                    watchdog hold went at risk (the
                                    at-risk callbacks' 1s, counted whether
                                    or not a callback is set) */
  /* Elections. */
  uint64_t elections_won;        /* campaigns that made their caller the
                                    leader */
  uint64_t elections_lost;       /* leaderships found lost (the election's
                                    lost callback) */
  uint64_t election_at_risk;     /* at-risk periods of leaderships (the
                                    election's at-risk callbacks' 1s) */
  uint64_t election_leader_changes; /* changes of leader (not of value)
                                    that this client's observers saw,
                                    counted once per election and client */
  int64_t election_campaigners;  /* campaigns waiting now */
  rlock_histogram election_wait; /* from campaign to leadership */
} rlock_metrics;

/* Fills *m. 0, or RLOCK_EINVAL. */
RLOCK_EXTERN int rlock_metrics_snapshot(rlock_client *client,
                                        rlock_metrics *m);

/*
 * Writes the metrics in the Prometheus text exposition format (version
 * 0.0.4) to buf, NUL-terminated, like snprintf: returns the length the
 * whole text needs (excluding the NUL), so a return >= size means it was
 * cut; negative on error. Names: rlock_acquisitions_total,
 * rlock_acquisitions_by_kind_total{kind},
 * rlock_acquire_failures_total{reason}, rlock_releases_total,
 * rlock_renewals_total, rlock_renewal_failures_total,
 * rlock_locks_lost_total, rlock_locks_at_risk_total, rlock_locks_held,
 * rlock_waiters,
 * rlock_wait_seconds and rlock_hold_seconds (histograms), and per master
 * rlock_master_up, rlock_master_timeouts_total, rlock_master_errors_total,
 * rlock_master_reconnects_total, rlock_master_restarts_total,
 * rlock_master_grants_unacked_total, rlock_master_failovers_total,
 * labelled master="<index>",address="<host:port>"; their sums
 * rlock_grants_unacked_total and rlock_failovers_total; and for the lock
 * family rlock_sem_acquisitions_total, rlock_sem_acquire_failures_total,
 * rlock_sem_releases_total, rlock_sem_permits_lost_total,
 * rlock_sem_permits_held, rlock_sem_waiters, rlock_latch_count_downs_total,
 * rlock_latch_opened_total, rlock_latch_waiters and
 * rlock_lock_all_acquisitions_total; for elections
 * rlock_elections_won_total, rlock_elections_lost_total,
 * rlock_election_at_risk_total, rlock_election_leader_changes_total,
 * rlock_election_campaigners and rlock_election_wait_seconds (a
 * histogram).
 */
RLOCK_EXTERN int rlock_metrics_prometheus(rlock_client *client, char *buf,
                                          size_t size);

#ifdef __cplusplus
}
#endif

#endif /* RLOCK_H */
