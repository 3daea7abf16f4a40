/* A QEMU TCG plugin (plugin API version 1, QEMU 7.2) that counts, per translation block (TB):
 * how many times it ran and how many times control then left it for a block that does not start at
 * its fall-through address (a taken branch, or an exception entry); and, per pair of blocks, how many
 * times the second ran right after the first fell through to it (the timing model costs a block that
 * QEMU cut without a branch, e.g. at a 1 KB page end, as the continuation of the sequence before it).
 * Counts are kept per segment: a
 * new segment starts each time a TB that begins at one of the "mark" addresses runs (a firmware
 * function called at op boundaries), so the host can attribute executed instructions to ops.
 *
 * Arguments: out=FILE (required), marks=0xADDR[:0xADDR...] (up to 16; the Thumb bit is ignored).
 * Output (text, one record a line):
 *   B <id> <pc> <n> <addr>:<hex bytes> ...   a block's instructions (once per distinct pc + length)
 *   S <seg> <mark pc>                         segment <seg> starts (segment 0 starts at boot, pc 0)
 *   C <id> <executions> <taken exits>         counts of block <id> in the current segment
 *   F <from id> <to id> <entries>             block <to> ran <entries> times right after <from> fell
 *                                             through to it (in the current segment; after its C)
 *   E <segments>                              the end: the file is complete
 *
 * Debian ships no plugin header: the few declarations used are those of QEMU v7.2.0's
 * include/qemu/qemu-plugin.h (API version 1), written out here. */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t {
    const char *target_name;
    struct {
        int min;
        int cur;
    } version;
    bool system_emulation;
    union {
        struct {
            int smp_vcpus;
            int max_vcpus;
        } system;
    };
} qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_outs(const char *string);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define MAX_MARKS 16
#define HASH_BITS 16
#define HASH_SIZE (1u << HASH_BITS)

typedef struct block block;

/* A fall-through entry into a block from one predecessor (a block's few are a short list). */
typedef struct edge {
    const block *from;
    uint64_t count; /* in the current segment */
    struct edge *next;
} edge;

struct block {
    uint64_t pc, end; /* end: the fall-through address, past the last instruction */
    uint32_t n, id;
    uint64_t runs, taken; /* in the current segment */
    bool dirty, mark;
    edge *falls; /* predecessors that fell through to it */
    struct block *next_hash, *next_dirty;
};

static FILE *out;
static uint64_t marks[MAX_MARKS];
static int mark_count;
static block *table[HASH_SIZE];
static uint32_t block_count;
static block *dirty;
static block *previous;
static uint64_t segment;

static uint32_t hash(uint64_t pc, uint32_t n) {
    return (uint32_t)(((pc >> 1) * 0x9E3779B1u) ^ (n * 0x85EBCA77u)) & (HASH_SIZE - 1);
}

static void touch(block *b) {
    if (!b->dirty) {
        b->dirty = true;
        b->next_dirty = dirty;
        dirty = b;
    }
}

/* Writes the current segment's counts and clears them. */
static void flush(void) {
    for (block *b = dirty; b != NULL; b = b->next_dirty) {
        fprintf(out, "C %" PRIu32 " %" PRIu64 " %" PRIu64 "\n", b->id, b->runs, b->taken);
        for (edge *e = b->falls; e != NULL; e = e->next) {
            if (e->count == 0) continue;
            fprintf(out, "F %" PRIu32 " %" PRIu32 " %" PRIu64 "\n", e->from->id, b->id, e->count);
            e->count = 0;
        }
        b->runs = b->taken = 0;
        b->dirty = false;
    }
    dirty = NULL;
}

/* One more entry of b by falling through from prev (move-to-front: a loop's edge stays first). */
static void count_fall(const block *prev, block *b) {
    edge **link = &b->falls;
    while (*link != NULL && (*link)->from != prev) link = &(*link)->next;
    edge *e = *link;
    if (e == NULL) {
        e = calloc(1, sizeof *e);
        if (e == NULL) abort();
        e->from = prev;
    } else {
        *link = e->next;
    }
    e->next = b->falls;
    b->falls = e;
    e->count++;
}

static void on_exec(unsigned int vcpu, void *userdata) {
    (void)vcpu;
    block *b = userdata;
    /* The block that ran before this one left by a taken branch unless this one is its fall-through. */
    const bool fell = previous != NULL && previous->end == b->pc;
    if (previous != NULL && !fell) {
        previous->taken++;
        touch(previous);
    }
    if (b->mark) {
        flush();
        segment++;
        fprintf(out, "S %" PRIu64 " 0x%" PRIx64 "\n", segment, b->pc);
    }
    if (fell) count_fall(previous, b); /* after a mark's flush: counted with b's run, in b's segment */
    b->runs++;
    touch(b);
    previous = b;
}

static bool is_mark(uint64_t pc) {
    for (int i = 0; i < mark_count; i++)
        if (marks[i] == pc) return true;
    return false;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    const uint64_t pc = qemu_plugin_tb_vaddr(tb);
    const uint32_t n = (uint32_t)qemu_plugin_tb_n_insns(tb);
    const uint32_t h = hash(pc, n);
    block *b = table[h];
    while (b != NULL && !(b->pc == pc && b->n == n)) b = b->next_hash;
    if (b == NULL) { /* a block seen for the first time (a retranslation of the same code reuses it) */
        b = calloc(1, sizeof *b);
        if (b == NULL) abort();
        b->pc = pc;
        b->n = n;
        b->id = block_count++;
        b->mark = is_mark(pc);
        b->next_hash = table[h];
        table[h] = b;
        fprintf(out, "B %" PRIu32 " 0x%" PRIx64 " %" PRIu32, b->id, pc, n);
        uint64_t end = pc;
        for (uint32_t i = 0; i < n; i++) {
            const struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
            const uint8_t *bytes = qemu_plugin_insn_data(insn);
            size_t size = qemu_plugin_insn_size(insn);
            /* QEMU may report more bytes than the instruction (what translation read ahead, at a
             * page end): a Thumb instruction is 32-bit exactly when its first halfword's top five
             * bits are 0b11101, 0b11110 or 0b11111. */
            if (size >= 2) {
                const unsigned first = (unsigned)bytes[0] | ((unsigned)bytes[1] << 8);
                const size_t thumb = (first >> 11) >= 0x1du ? 4u : 2u;
                if (thumb < size) size = thumb;
            }
            const uint64_t at = qemu_plugin_insn_vaddr(insn);
            fprintf(out, " %" PRIx64 ":", at);
            for (size_t k = 0; k < size; k++) fprintf(out, "%02x", bytes[k]);
            end = at + size;
        }
        fputc('\n', out);
        b->end = end;
    }
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_exec, QEMU_PLUGIN_CB_NO_REGS, b);
}

static void on_exit(qemu_plugin_id_t id, void *userdata) {
    (void)id, (void)userdata;
    flush();
    fprintf(out, "E %" PRIu64 "\n", segment + 1);
    fclose(out);
    out = NULL;
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                                               int argc, char **argv) {
    (void)info;
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) {
            path = argv[i] + 4;
        } else if (strncmp(argv[i], "marks=", 6) == 0) {
            char *p = argv[i] + 6;
            while (*p != '\0' && mark_count < MAX_MARKS) {
                marks[mark_count++] = strtoull(p, &p, 0) & ~(uint64_t)1;
                if (*p == ':') p++;
                else if (*p != '\0') break;
            }
            if (*p != '\0') {
                fprintf(stderr, "tbcount: bad marks= list (at most %d addresses, ':' between)\n", MAX_MARKS);
                return 1;
            }
        } else {
            fprintf(stderr, "tbcount: unknown argument %s\n", argv[i]);
            return 1;
        }
    }
    if (path == NULL || (out = fopen(path, "w")) == NULL) {
        fprintf(stderr, "tbcount: give out=FILE (a writable path)\n");
        return 1;
    }
    setvbuf(out, NULL, _IOFBF, 1 << 20);
    fprintf(out, "S 0 0x0\n");
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_exit, NULL);
    return 0;
}
