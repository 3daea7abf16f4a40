/* The harness's shared state (mfcmp.h); linked into the host library and the board firmware. */
#include "mfcmp.h"

int32_t mfc_scratch_needed;
