/*
 * The Redis Cluster hash slot of a key. rlock routes every command of a
 * lock to the node that serves the slot of the lock's keys, and all keys
 * of one lock share a hash tag ("<prefix>{<name>}", "...:fence", the
 * channel "...:ch"), so one slot per lock. This is the Redis Cluster
 * specification's rule ("Key distribution model"): CRC16-XMODEM of the
 * hash tag, or of the whole key when it has none, mod 16384.
 */
#ifndef RL_SLOT_H
#define RL_SLOT_H

#include <stddef.h>
#include <stdint.h>

#define RL_SLOTS 16384

/* CRC16-CCITT in its XMODEM form: polynomial 0x1021, initial value 0, no
 * reflection, no final xor. "123456789" gives 0x31C3. */
uint16_t rl_crc16(const void *buf, size_t len);

/*
 * The part of a key that is hashed: the bytes between the first '{' and
 * the first '}' after it, if that span is not empty; otherwise the whole
 * key. So "a{b}{c}" hashes "b", "{}{b}" and "{b" hash whole, and "}{b}"
 * hashes "b". Sets *taglen and returns a pointer into key.
 */
const char *rl_slot_tag(const void *key, size_t len, size_t *taglen);

/* The slot, 0..16383, of a key of len bytes (any bytes, NUL included). */
int rl_slot_of(const void *key, size_t len);

/* The same for a NUL-terminated key. */
int rl_slot_of_str(const char *key);

#endif
