/* Argument access for the fp32 fallback ops (aten schemas: positional args, then kwargs). */
#ifndef MF_FP32_UTIL_H
#define MF_FP32_UTIL_H

#include "../broadcast.h"

/* Argument `pos` of the aten schema: args[pos] if present, else kwargs[name]; 0 if neither (or
 * it is NONE). */
int mf_fp32_arg(mf_value args, mf_value kwargs, uint32_t pos, const char *name, mf_value *out);
/* A TENSOR argument as a tensor view; 0 if the value is not a TENSOR. */
int mf_fp32_tensor(const mf_call *c, mf_value v, mf_tensor *t);
/* A number argument (INT, INT64, FLOAT, BOOL) as float; 0 if it is not a number. */
int mf_fp32_number(mf_value v, float *out);
/* Dimension d of a rank-r tensor, negative counting from the end; 0 if out of range. */
int mf_fp32_dim(int64_t d, uint32_t rank, uint32_t *out);
/* The op has `n_out` float32 outputs and input tensor t is float32. */
int mf_fp32_outputs_f32(const mf_call *c, uint32_t n_out);

#endif /* MF_FP32_UTIL_H */
