/*
 * pdcbb_crc32c.h - CRC-32C (Castagnoli), the checksum of drained data (docs/DRAIN-FORMAT.md).
 *
 * Polynomial 0x1EDC6F41 (reflected 0x82F63B78), initial value 0xFFFFFFFF, final XOR 0xFFFFFFFF:
 * the CRC of iSCSI, ext4 and Btrfs; pdcbb_crc32c(0, "123456789", 9) == 0xE3069283. Uses the
 * SSE4.2 crc32 instruction when the CPU has it (three streams at once for long buffers), else
 * slicing-by-8 tables. Thread-safe.
 *
 * The register arithmetic below lets a checksum be moved without the bytes: a CRC is affine in
 * its input, so for inputs X, Y of equal length crc(X) ^ crc(Y) == raw(0, X ^ Y), and bytes
 * appended as zeros are a multiplication (pdcbb_crc32c_shift). The node-local block checksums
 * (pdcbb_csum.h) are kept up to date this way.
 */
#ifndef PDCBB_CRC32C_H
#define PDCBB_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extend crc (0 to start) with len bytes of buf: crc32c(crc32c(0, a), b) == crc32c(0, a b). */
uint32_t pdcbb_crc32c(uint32_t crc, const void *buf, size_t len);
/* The bare register: state extended with buf, no initial or final inversion. pdcbb_crc32c(c, b,
 * n) == ~pdcbb_crc32c_raw(~c, b, n); raw(0, zeros) == 0. */
uint32_t pdcbb_crc32c_raw(uint32_t state, const void *buf, size_t len);
/* The bare register state extended with n zero bytes, in O(log n) steps, without the bytes. */
uint32_t pdcbb_crc32c_shift(uint32_t state, uint64_t n);
/* crc32c(a b) from crc32c(a), crc32c(b) and the length of b. */
uint32_t pdcbb_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

#endif
