/*
 * pdcbb_crc32c.h - CRC-32C (Castagnoli), the checksum of drained data (docs/DRAIN-FORMAT.md).
 *
 * Polynomial 0x1EDC6F41 (reflected 0x82F63B78), initial value 0xFFFFFFFF, final XOR 0xFFFFFFFF:
 * the CRC of iSCSI, ext4 and Btrfs; pdcbb_crc32c(0, "123456789", 9) == 0xE3069283. Uses the
 * SSE4.2 crc32 instruction when the CPU has it, else slicing-by-8 tables. Thread-safe.
 */
#ifndef PDCBB_CRC32C_H
#define PDCBB_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extend crc (0 to start) with len bytes of buf: crc32c(crc32c(0, a), b) == crc32c(0, a b). */
uint32_t pdcbb_crc32c(uint32_t crc, const void *buf, size_t len);

#endif
