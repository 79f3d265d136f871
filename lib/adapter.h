/*
 * rlock's own libuv adapter for hiredis async contexts. The adapter shipped
 * with hiredis 0.14.1 returns early when libuv reports a poll error, so a
 * refused connection is never reported (no connect callback, pending
 * commands never called back). This one hands every poll event, errors
 * included, to hiredis, which then finds the socket error itself and runs
 * the connect or disconnect path.
 */
#ifndef RL_ADAPTER_H
#define RL_ADAPTER_H

#include <hiredis/async.h>
#include <uv.h>

/*
 * Attaches ac to loop. With guard_sigpipe set, writes run with SIGPIPE
 * blocked in the calling thread and a SIGPIPE they raise is consumed, so a
 * dead peer cannot kill a process that did not ignore SIGPIPE (used on a
 * caller's loop; rlock's own loop thread blocks SIGPIPE for good).
 * Returns 0 or a negative libuv error.
 */
int rl_adapter_attach(redisAsyncContext *ac, uv_loop_t *loop,
                      int guard_sigpipe);

/*
 * Writes what hiredis has buffered for ac now, instead of at the next
 * writable event of the loop (one poll round later), honouring the
 * SIGPIPE guard. For a context this adapter is attached to.
 */
void rl_adapter_flush(redisAsyncContext *ac);

#endif
