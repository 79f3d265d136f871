/*
 * The fast path of a blocking call (fast.c): a caller that finds the
 * client's loop asleep starts its request itself, and may finish it on
 * its own thread.
 */
#ifndef RL_FAST_H
#define RL_FAST_H

#include "client.h"

/*
 * Any thread but the loop's, for a blocking request not yet posted:
 * starts it on the calling thread under the loop lock when that is free
 * and the request is one that can run there, and when it may, waits for
 * its replies on that thread and finishes it there too (its own round),
 * sleeping in poll(2) at once. 0 when it did not start it (post it
 * instead); else rl_client_fast_leave's flags (client.h): RL_FAST_STARTED,
 * with RL_FAST_OWN when it waited for the replies itself (finished or
 * not: the caller must not spin after it), and RL_FAST_TIMERS when the
 * caller must rl_client_wake the loop before it waits for long.
 */
int rl_fast_start(rl_client *c, rl_req *req);

#endif
