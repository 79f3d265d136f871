/*
 * SHA-1, only to name Lua scripts for EVALSHA. Computing the digest
 * locally means a client never has to wait for SCRIPT LOAD before its
 * first command; a master that lacks a script answers NOSCRIPT and gets
 * the body once.
 */
#ifndef RL_SHA1_H
#define RL_SHA1_H

#include <stddef.h>

/* Writes the 40 lowercase hex digits of SHA-1(data) and a NUL to hex. */
void rl_sha1_hex(const void *data, size_t len, char hex[41]);

#endif
