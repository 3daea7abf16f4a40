/* The CMSIS-NN comparison firmware: runs every case of a stream on one boot of a QEMU board.
 *
 *   cases.bin (host -> board, over semihosting)   ->   results.bin (board -> host)
 *
 * cases.bin, little-endian: u32 magic MFC_CASES_MAGIC, u32 version, u32 case count, u32 0; then per case,
 * at a 16-byte aligned offset: u32 function (index into the generated dispatch table), u32 ints, u32 inputs,
 * u32 output bytes, u32 bytes of each input, the ints (int32), then each input at a 16-byte aligned
 * offset. results.bin: u32 magic MFC_RESULTS_MAGIC, u32 version, u32 case count, u32 scratch bytes; then
 * per case as it finishes: i32 status, i32 scratch needed (MFCMP_ERR_SCRATCH), u64 instructions of the
 * call (SysTick under QEMU -icount, as the mcuforge firmware counts mf_invoke), then the output bytes.
 * A case that faults leaves the file short: the host names the first case without a record.
 *
 * Scratch (ctx.buf) is one static buffer of MFC_SCRATCH_BYTES (in the board's RAM, beside the stack);
 * the case stream and the output are read into the board's heap region.
 */
#include <string.h>

#include "mf_timer.h"
#include "mfcmp.h"
#include "semihost.h"

#define MFC_CASES_MAGIC 0x5343464Du   /* "MFCS" */
#define MFC_RESULTS_MAGIC 0x5252464Du /* "MFRR" */
#define MFC_VERSION 1u
#ifndef MFC_SCRATCH_BYTES
#define MFC_SCRATCH_BYTES (256u * 1024u)
#endif
#define MFC_MAX_INPUTS 16u

/* The exit statuses (csrc/firmware/firmware.h's FW_EXIT_*): 0 every case ran (each has its status). */
enum { MFC_EXIT_OK = 0, MFC_EXIT_FAILED = 1 };

extern const mfcmp_fn mfc_table[];
extern const uint32_t mfc_table_size;
extern uint8_t _sheap[], _eheap[]; /* the linker script's HEAP region */

static uint8_t scratch[MFC_SCRATCH_BYTES] __attribute__((aligned(16)));

static uint32_t word(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t aligned16(uint32_t n) { return (n + 15u) & ~15u; }

static int fail(const char *message) {
    sh_puts("mcuforge cmsis-nn harness: ");
    sh_puts(message);
    sh_puts("\n");
    return MFC_EXIT_FAILED;
}

static int run(void) {
    uint8_t *heap = _sheap, *heap_end = _eheap;
    int32_t fd = sh_open("cases.bin", "rb");
    if (fd < 0) return fail("cannot open cases.bin");
    int32_t length = sh_flen(fd);
    if (length < 16 || (uint32_t)length > (uint32_t)(heap_end - heap)) return fail("cases.bin is empty or too big");
    if (sh_read(fd, heap, (size_t)length) != 0) return fail("cannot read cases.bin");
    sh_close(fd);
    const uint8_t *stream = heap, *end = heap + length;
    uint8_t *free_heap = heap + aligned16((uint32_t)length);
    if (word(stream) != MFC_CASES_MAGIC || word(stream + 4) != MFC_VERSION) return fail("cases.bin: bad header");
    uint32_t count = word(stream + 8);

    int32_t out = sh_open("results.bin", "wb");
    if (out < 0) return fail("cannot open results.bin");
    uint32_t header[4] = {MFC_RESULTS_MAGIC, MFC_VERSION, count, MFC_SCRATCH_BYTES};
    if (sh_write(out, header, sizeof header) != 0) return fail("cannot write results.bin");

    const uint8_t *p = stream + 16;
    for (uint32_t i = 0; i < count; i++) {
        if (p + 16 > end) return fail("cases.bin: truncated");
        uint32_t function = word(p), n_ints = word(p + 4), n_inputs = word(p + 8), out_bytes = word(p + 12);
        if (function >= mfc_table_size) return fail("cases.bin: unknown function (a stale dispatch table?)");
        if (n_inputs > MFC_MAX_INPUTS) return fail("cases.bin: too many inputs");
        const uint8_t *sizes = p + 16;
        const int32_t *ints = (const int32_t *)(const void *)(sizes + 4u * n_inputs);
        const uint8_t *data = stream + aligned16((uint32_t)((const uint8_t *)(ints + n_ints) - stream));
        const void *inputs[MFC_MAX_INPUTS];
        for (uint32_t k = 0; k < n_inputs; k++) {
            inputs[k] = data;
            data += aligned16(word(sizes + 4u * k));
        }
        if (data > end) return fail("cases.bin: truncated inputs");
        p = data;

        uint8_t *output = free_heap;
        if (out_bytes > (uint32_t)(heap_end - output)) return fail("an output does not fit the heap");
        memset(output, 0x5A, out_bytes);
        mfc_scratch_needed = 0;
        uint64_t t0 = mf_icount_now();
        int32_t status = mfc_table[function](ints, inputs, output, scratch, (int32_t)MFC_SCRATCH_BYTES);
        uint64_t t1 = mf_icount_now();
        int32_t record[4] = {status, mfc_scratch_needed, (int32_t)(uint32_t)(t1 - t0),
                             (int32_t)(uint32_t)((t1 - t0) >> 32)};
        if (sh_write(out, record, sizeof record) != 0 || (out_bytes > 0 && sh_write(out, output, out_bytes) != 0))
            return fail("cannot write results.bin");
    }
    sh_close(out);
    return MFC_EXIT_OK;
}

int main(void) {
    mf_systick_start();
    return run();
}
