/* numpy broadcasting walker shared by the elementwise kernels, the batch matmuls and the fp32 binary ops. */
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

/* The batch dims of t as a tensor of its own (its matrices as elements). */
static void batch_view(const mf_tensor *t, mf_tensor *view) {
    memset(view, 0, sizeof *view);
    view->rank = (uint8_t)(t->rank - 2);
    for (uint32_t k = 0; k + 2 < t->rank; k++) view->shape[k] = t->shape[k];
}

int mf_bmm_geometry_init(mf_bmm_geometry *g, const mf_tensor *l, const mf_tensor *r, int adj_x, int adj_y) {
    mf_tensor lb, rb;
    const uint32_t l0 = l->shape[l->rank - 2], l1 = l->shape[l->rank - 1];
    const uint32_t r0 = r->shape[r->rank - 2], r1 = r->shape[r->rank - 1];
    g->m = adj_x ? l1 : l0;
    g->k = adj_x ? l0 : l1;
    g->n = adj_y ? r0 : r1;
    if ((adj_y ? r1 : r0) != g->k) return 0;
    batch_view(l, &lb);
    batch_view(r, &rb);
    return mf_bcast_init(&g->batch, &lb, &rb);
}
