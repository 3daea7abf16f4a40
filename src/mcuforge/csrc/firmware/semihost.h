/* Arm semihosting calls used by the firmware: binary file I/O on the host and exit.
 * QEMU runs them on the host when started with -semihosting; file names are relative to
 * QEMU's working directory. */
#ifndef MCUFORGE_FW_SEMIHOST_H
#define MCUFORGE_FW_SEMIHOST_H

#include <stddef.h>
#include <stdint.h>

/* Returns a handle >= 0, or -1. mode: "rb" or "wb". */
int32_t sh_open(const char *name, const char *mode);
int32_t sh_close(int32_t handle);
/* Both return 0 when all n bytes were transferred. */
int32_t sh_read(int32_t handle, void *buf, size_t n);
int32_t sh_write(int32_t handle, const void *buf, size_t n);
/* File length in bytes, or -1. */
int32_t sh_flen(int32_t handle);
/* Text to the host's stdout (QEMU's stderr/stdout), for fault messages. */
void sh_puts(const char *text);
/* Ends the emulation; QEMU exits with `code`. */
void sh_exit(int32_t code) __attribute__((noreturn));

#endif
