"""The runtime's dispatch tables stay cheap to search (csrc/runtime/registry.c).

mf_kernel_find binary-searches kernels/kernel_list.h, so the list is in increasing kind id;
mf_aten_find compares the character after "aten." first, so every aten name has one. Both fall
back to a plain scan: these tests keep the fast path, not correctness, from rotting.
"""

import re

from mcuforge import cruntime
from mcuforge.ir import OP_KINDS

CSRC = cruntime.CSRC


def test_kernel_list_is_in_kind_id_order():
    names = re.findall(r"^MF_KERNEL\((\w+)\)", (CSRC / "kernels" / "kernel_list.h").read_text(), re.M)
    ids = [OP_KINDS[name]["id"] for name in names]
    assert ids == sorted(ids) and len(set(ids)) == len(ids), list(zip(names, ids, strict=True))


def test_aten_names_have_the_aten_prefix():
    assert all(name.startswith("aten.") and len(name) > len("aten.") for name in cruntime.c_aten_ops())
