/* numpy broadcasting of two tensors (right-aligned dims, 1 stretches): an index walker. */
#ifndef MF_BROADCAST_H
#define MF_BROADCAST_H

#include "mf_kernel_util.h"

typedef struct {
    uint32_t rank, numel;
    uint32_t shape[MF_MAX_RANK];
    uint32_t stride_a[MF_MAX_RANK], stride_b[MF_MAX_RANK]; /* 0 along a stretched dim */
    uint32_t idx[MF_MAX_RANK];
    uint32_t ia, ib; /* element indices of a and b for the current output element */
} mf_bcast;

/* 0 if the shapes do not broadcast. Starts at output element 0. */
int mf_bcast_init(mf_bcast *it, const mf_tensor *a, const mf_tensor *b);
/* Advance to the next output element (row-major order). */
void mf_bcast_step(mf_bcast *it);

/* A batched matrix multiply's shapes (batch_matmul_s8, batch_matmul_s16): lhs (..., M, K) [adj_x:
 * (..., K, M)], rhs (..., K, N) [adj_y: (..., N, K)], the batch dims broadcast like numpy; `batch`
 * walks the matrices (ia / ib index lhs / rhs matrices). */
typedef struct {
    uint32_t m, k, n;
    mf_bcast batch;
} mf_bmm_geometry;

/* 0 if the inner dimensions differ or the batch dims do not broadcast (both ranks >= 2). */
int mf_bmm_geometry_init(mf_bmm_geometry *g, const mf_tensor *l, const mf_tensor *r, int adj_x, int adj_y);

/* The output holds batch x M x N values. */
static inline int mf_bmm_output_ok(const mf_bmm_geometry *g, const mf_tensor *o) {
    const uint64_t mn = (uint64_t)g->m * g->n; /* < 2^64; with mn < 2^32 the product below cannot wrap */
    return mn <= 0xFFFFFFFFull && (uint64_t)g->batch.numel * mn == o->numel;
}

#endif /* MF_BROADCAST_H */
