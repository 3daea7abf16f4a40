/* Arm semihosting (the "bkpt 0xab" convention of M-profile): r0 = operation, r1 = argument. */
#include "semihost.h"

#include <string.h>

enum {
    SYS_OPEN = 0x01, SYS_CLOSE = 0x02, SYS_WRITE0 = 0x04, SYS_WRITE = 0x05, SYS_READ = 0x06,
    SYS_FLEN = 0x0C, SYS_EXIT_EXTENDED = 0x20,
};
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u

static int32_t semihost_call(uint32_t op, const void *arg) {
    register uint32_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return (int32_t)r0;
}

int32_t sh_open(const char *name, const char *mode) {
    /* The ISO C fopen mode index: "rb" = 1, "wb" = 5. */
    uint32_t args[3] = {(uint32_t)name, strcmp(mode, "wb") == 0 ? 5u : 1u, (uint32_t)strlen(name)};
    return semihost_call(SYS_OPEN, args);
}

int32_t sh_close(int32_t handle) {
    uint32_t args[1] = {(uint32_t)handle};
    return semihost_call(SYS_CLOSE, args);
}

int32_t sh_read(int32_t handle, void *buf, size_t n) {
    uint32_t args[3] = {(uint32_t)handle, (uint32_t)buf, (uint32_t)n};
    return semihost_call(SYS_READ, args); /* bytes NOT read */
}

int32_t sh_write(int32_t handle, const void *buf, size_t n) {
    uint32_t args[3] = {(uint32_t)handle, (uint32_t)buf, (uint32_t)n};
    return semihost_call(SYS_WRITE, args); /* bytes NOT written */
}

int32_t sh_flen(int32_t handle) {
    uint32_t args[1] = {(uint32_t)handle};
    return semihost_call(SYS_FLEN, args);
}

void sh_puts(const char *text) { semihost_call(SYS_WRITE0, text); }

void sh_exit(int32_t code) {
    /* SYS_EXIT_EXTENDED carries an exit status on 32-bit Arm (QEMU exits with it). */
    uint32_t args[2] = {ADP_STOPPED_APPLICATION_EXIT, (uint32_t)code};
    semihost_call(SYS_EXIT_EXTENDED, args);
    for (;;) {}
}
