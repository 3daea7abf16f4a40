"""The passes on the captured float graph, before quantization: fused ops decomposed into ops with int8 kernels
(:mod:`.decompose`), inference identities removed and BatchNorm folded (:mod:`.cleanup`, :mod:`.fold_bn`).

``mcuforge.compile``, the QAT preparation and the Inspector's fp32 reference run them between capture and
quantization; ``mcuforge.lower`` then lowers the quantized graph.
"""

from .cleanup import prepare_float_graph
from .decompose import decompose
from .fold_bn import fold_batch_norm

__all__ = ["decompose", "fold_batch_norm", "prepare_float_graph"]
