/* numpy broadcasting walker shared by add_s8 and the fp32 binary ops. */
#include "broadcast.h"

int mf_bcast_init(mf_bcast *it, const mf_tensor *a, const mf_tensor *b) {
    memset(it, 0, sizeof *it);
    it->rank = a->rank > b->rank ? a->rank : b->rank;
    uint32_t sa = 1, sb = 1;
    uint64_t numel = 1;
    for (int k = (int)it->rank - 1; k >= 0; k--) {
        int ka = k - (int)(it->rank - a->rank), kb = k - (int)(it->rank - b->rank);
        uint32_t da = ka >= 0 ? a->shape[ka] : 1, db = kb >= 0 ? b->shape[kb] : 1;
        if (da != db && da != 1 && db != 1) return 0;
        uint32_t d = da == 1 ? db : da;
        it->shape[k] = d;
        it->stride_a[k] = da == 1 ? 0 : sa;
        it->stride_b[k] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
        numel *= d;
    }
    if (numel > 0xFFFFFFFFull) return 0;
    it->numel = (uint32_t)numel;
    return 1;
}

void mf_bcast_step(mf_bcast *it) {
    for (int k = (int)it->rank - 1; k >= 0; k--) {
        it->idx[k]++;
        it->ia += it->stride_a[k];
        it->ib += it->stride_b[k];
        if (it->idx[k] < it->shape[k]) return;
        it->ia -= it->stride_a[k] * it->idx[k];
        it->ib -= it->stride_b[k] * it->idx[k];
        it->idx[k] = 0;
    }
}
