/* upsample_nearest2d_s8: nearest-neighbour upsampling of an NHWC int8 tensor by whole factors,
 * out[n, y, x, :] = in[n, y / kh, x / kw, :] with kh = OH / H, kw = OW / W read from the shapes
 * (mcuforge.kernels.upsample). A byte copy: the output shares the input's quantization. */
#include "mf_kernel_util.h"

static mf_status check(const mf_call *c) {
    mf_tensor x, o;
    if (c->n_in != 1 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    if (!mf_is(&x, MF_INT8, 4) || !mf_is(&o, MF_INT8, 4)) return MF_ERR_SHAPE;
    if (x.shape[0] != o.shape[0] || x.shape[3] != o.shape[3]) return MF_ERR_SHAPE;
    for (uint32_t k = 1; k <= 2; k++) {
        if (x.shape[k] == 0u || o.shape[k] < x.shape[k] || o.shape[k] % x.shape[k]) return MF_ERR_SHAPE;
    }
    return MF_OK;
}

static mf_status run(const mf_call *c) {
    mf_tensor x, o;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    const uint32_t h = x.shape[1], w = x.shape[2], ch = x.shape[3], oh = o.shape[1], ow = o.shape[2];
    const uint32_t kh = oh / h, kw = ow / w;
    const size_t in_row = (size_t)w * ch, out_row = (size_t)ow * ch;
    const int8_t *src = (const int8_t *)x.data;
    int8_t *dst = (int8_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t y = 0; y < h; y++, src += in_row) {
            /* one widened output row, then its kh - 1 copies */
            int8_t *row = dst;
            for (uint32_t xx = 0; xx < w; xx++) {
                for (uint32_t r = 0; r < kw; r++, row += ch) memcpy(row, src + (size_t)xx * ch, ch);
            }
            for (uint32_t r = 1; r < kh; r++) memcpy(dst + r * out_row, dst, out_row);
            dst += kh * out_row;
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_upsample_nearest2d_s8 = {MF_KIND_HEAD_upsample_nearest2d_s8, check, run};
