/*
 * The hash slot of a key in Redis Cluster, computed here rather than asked
 * of a server, so that a test can place keys on purpose (all on one node,
 * one per primary, several slots of one node) and so that the library's
 * own routing can be checked against an independent implementation. It is
 * a pure function; test_topology_selftest checks it against CLUSTER
 * KEYSLOT for many keys, hash tags included.
 */
#ifndef RT_KEYSLOT_H
#define RT_KEYSLOT_H

#include <stddef.h>
#include <stdint.h>

#define RT_CLUSTER_SLOTS 16384

/* CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0, no reflection),
 * the checksum Redis Cluster uses; "123456789" gives 0x31C3. */
uint16_t rt_crc16(const void *buf, size_t len);

/* The slot of a key: CRC16 mod 16384 of its hash tag, the bytes between
 * the first '{' and the first '}' after it, when there are any; otherwise
 * of the whole key (so "{}x" hashes whole, and "a{b}{c}" hashes "b"). */
int rt_key_slot(const void *key, size_t len);

/* The same for a NUL-terminated key. */
int rt_key_slot_str(const char *key);

#endif /* RT_KEYSLOT_H */
