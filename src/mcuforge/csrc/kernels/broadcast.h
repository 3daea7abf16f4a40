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

#endif /* MF_BROADCAST_H */
