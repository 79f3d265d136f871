/*
 * The reply objects rlock's reader builds: hiredis's redisReply, made
 * with malloc instead of calloc.
 *
 * Why: glibc 2.36 (Debian 12) serves malloc of a small size from the
 * calling thread's cache, but calloc always takes the arena's slow path
 * (util.h, rl_zalloc). hiredis's default functions calloc every reply
 * object and array: with five masters, about 37 callocs per lock+unlock
 * pair. With these and rl_zalloc for rlock's own per-call objects,
 * callgrind counted 85.3M instructions in the client for
 * `bench_latency 1000 1` with five masters, against 96.5M before. The
 * objects are laid out and linked exactly as hiredis's own, so
 * freeReplyObject frees them and every reader of a reply is unchanged.
 */
#ifndef RL_REPLY_H
#define RL_REPLY_H

#include <hiredis/hiredis.h>

/* A reader that builds its replies with these functions; NULL when out
 * of memory. Free it with redisReaderFree. */
redisReader *rl_reply_reader_new(void);

#endif
