"""The Thumb instruction classifier: an ELF's disassembly (arm-none-eabi-objdump), each instruction
sorted into the classes the timing tables cost, with the registers the pipelining rules look at.

The classes are deliberately coarse (one per row of the Technical Reference Manuals' timing tables):
a timing table (:mod:`.v7m`, :mod:`.m7`, :mod:`.v8m`, :mod:`.v6m`) maps each class to cycles.
"""

from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..firmware import toolchain

# objdump's -m for each core: the ELF attributes do not always select MVE, and without it Helium
# instructions decode as coprocessor ones.
ARCH = {"cortex-m0plus": "armv6s-m", "cortex-m3": "armv7", "cortex-m4": "armv7e-m", "cortex-m7": "armv7e-m",
        "cortex-m33": "armv8-m.main", "cortex-m55": "armv8.1-m.main"}

CONDITIONS = ("eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le", "al")
REGISTER_ALIASES = {"sb": "r9", "sl": "r10", "fp": "r11", "ip": "r12", "sp": "r13", "lr": "r14", "pc": "r15"}
_REG = re.compile(r"\b(r1[0-5]|r[0-9]|sb|sl|fp|ip|sp|lr|pc)\b")
_LINE = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f]{4}(?: [0-9a-f]{4})?)\s*\t([a-z0-9.]+)\s*(.*)$")

# Mnemonic (without condition, flag-setting "s" or .w/.n width) -> class.
_SCALAR: dict[str, str] = {}


def _add(cls: str, names: str) -> None:
    for name in names.split():
        _SCALAR[name] = cls


_add("alu", "add adc sub sbc rsb and orr eor bic orn mvn mov movw movt neg lsl lsr asr ror rrx adr addw subw "
            "sxtb sxth uxtb uxth sxtab sxtah uxtab uxtah bfi bfc sbfx ubfx clz rbit rev rev16 revsh "
            "sel ssat usat ssat16 usat16 sxtb16 uxtb16 sxtab16 uxtab16 pkhbt pkhtb "
            "sadd16 ssub16 sadd8 ssub8 uadd16 usub16 uadd8 usub8 qadd qsub qdadd qdsub qadd16 qsub16 qadd8 "
            "qsub8 shadd16 shsub16 shadd8 uqadd16 uqsub16 uqadd8 uqsub8 uhadd16 uhadd8 sasx ssax qasx qsax "
            "usad8 usada8 csel csinc csinv csneg cset csetm cinc cinv cneg "
            "asrl lsll lsrl sqrshr uqrshl sqshl uqshl srshr urshr sqrshrl uqrshll sqshll uqshll srshrl urshrl")
_add("cmp", "cmp cmn tst teq")
_add("mul", "mul smulbb smulbt smultb smultt smulwb smulwt smuad smuadx smusd smusdx smmul smmulr")
_add("mla", "mla mls smlabb smlabt smlatb smlatt smlawb smlawt smlad smladx smlsd smlsdx smmla smmlar smmls "
            "smmlsr")
_add("mull", "smull umull")
_add("mlal", "smlal umlal umaal smlalbb smlalbt smlaltb smlaltt smlald smlaldx smlsld smlsldx")
_add("div", "sdiv udiv")
_add("load", "ldr ldrb ldrh ldrsb ldrsh ldrex ldrexb ldrexh ldrt ldrbt ldrht ldrsbt ldrsht lda ldab ldah ldaex")
_add("load_d", "ldrd ldaexd ldrexd")
_add("store", "str strb strh strex strexb strexh strt strbt strht stl stlb stlh stlex")
_add("store_d", "strd strexd")
_add("ldm", "ldm ldmia ldmfd ldmdb ldmea pop")
_add("stm", "stm stmia stmea stmdb stmfd push")
_add("branch", "b")
_add("call", "bl")
_add("bx", "bx blx bxns blxns")
_add("cbz", "cbz cbnz")
_add("tb", "tbb tbh")
_add("it", "it itt ite ittt itte itet itee itttt ittte ittet ittee itett itete iteet iteee")
_add("nop", "nop yield sev wfe wfi")
_add("barrier", "dmb dsb isb")
_add("system", "mrs msr cpsie cpsid svc bkpt udf sg tt ttt tta ttat clrex pld pli")
_add("loop_start", "dls wls dlstp wlstp")
_add("loop_end", "le letp lctp")
_add("fp_alu", "vadd vsub vmul vnmul vneg vabs vcvt vcvtr vcvta vcvtn vcvtp vcvtm vcmp vcmpe vmov vmrs vmsr vsel "
               "vseleq vselge vselgt vselvs vmaxnm vminnm vrinta vrintn vrintp vrintm vrintr vrintx vrintz vcvtb "
               "vcvtt vins vmovx")
_add("fp_mac", "vmla vmls vnmla vnmls vfma vfms vfnma vfnms")
_add("fp_div", "vdiv vsqrt")
_add("fp_load", "vldr")
_add("fp_store", "vstr")
_add("fp_ldm", "vldm vldmia vldmdb vpop")
_add("fp_stm", "vstm vstmia vstmdb vpush")

# Helium (MVE) mnemonics that exist only as vector instructions; others (vadd, vmul, vmov...) are
# vector ones exactly when they name a Q register.
_MVE_LOAD = set("vldrb vldrh vldrw vldrd vld20 vld21 vld40 vld41 vld42 vld43".split())
_MVE_STORE = set("vstrb vstrh vstrw vstrd vst20 vst21 vst40 vst41 vst42 vst43".split())
_MVE_MAC = set("vmla vmlas vmladav vmladava vmladavx vmladavax vmlsdav vmlsdava vmlaldav vmlaldava vmlalva "
               "vmlava vmlav vmlalv vrmlaldavh vrmlaldavha vmul vmullb vmullt vqdmulh vqrdmulh vqdmullb "
               "vqdmullt vqdmladh vqrdmladh vqdmlah vqrdmlah vqrdmlash vfma vfms vfmas vmulh vrmulh".split())
_MVE_ONLY = set("vpst vpt vpsel vctp vaddv vaddva vaddlv vaddlva vmaxv vminv vmaxav vminav vidup vddup viwdup "
                "vdwdup vshlc vqmovnb vqmovnt vqmovunb vqmovunt vmovnb vmovnt vmovlb vmovlt vrshr vshrn vrshrn "
                "vqshrn vqrshrn vqshrun vqrshrun vsli vsri vhadd vhsub vrhadd vabav vbrsr vcadd vhcadd vcmul "
                "vqabs vqneg vclz vcls vrev16 vrev32 vrev64 vbic vorn vmvn vqadd vqsub vrshl vqrshl vqshl "
                "vadc vadci vsbc vsbci vmax vmin vmaxa vmina vabd vdup vand vorr veor vshl vshr".split())
_QREG = re.compile(r"\bq[0-7]\b")


@dataclass(frozen=True)
class Insn:
    """One decoded instruction: its class and what the pipelining rules need."""

    address: int
    size: int  # bytes (2 or 4)
    mnemonic: str  # as objdump prints it
    operands: str
    cls: str  # one of the classes above, "mve_load"/"mve_store"/"mve_mac"/"mve_alu", or "unknown"
    writes: tuple[str, ...] = ()  # registers written (r0..r15)
    address_regs: tuple[str, ...] = ()  # a load's or store's address registers
    count: int = 1  # registers moved by LDM/STM/PUSH/POP/VLDM/VSTM (doubles count twice)
    writes_pc: bool = False  # a branch by a load or data processing (POP {pc}, LDR pc, MOV pc)
    register_offset: bool = False  # a load/store addressed by base + register
    conditional: bool = False  # a branch with a condition (B<cond>, CBZ)
    reads: tuple[str, ...] = field(default=(), repr=False)  # core registers read (for the M7's dependencies)


def _reg(name: str) -> str:
    return REGISTER_ALIASES.get(name, name)


def _base_and_class(mnemonic: str, operands: str) -> tuple[str, str, bool]:
    """(base mnemonic, class, conditional) of an objdump mnemonic such as ``ldr.w``, ``bne.n``,
    ``addeq``, ``movs``, ``vldrb.s8``."""
    parts = mnemonic.split(".")
    name = parts[0]
    vector = bool(_QREG.search(operands))
    candidates = [(name, False)]
    if name.endswith("s") and len(name) > 2:
        candidates.append((name[:-1], False))
    for cond in CONDITIONS:
        if name.endswith(cond) and len(name) > len(cond):
            stem = name[: -len(cond)]
            candidates.append((stem, True))
            if stem.endswith("s") and len(stem) > 2:
                candidates.append((stem[:-1], True))
    if name.startswith(("vpst", "vpt")):
        return name, "vpt", False
    if name[-1:] in ("t", "e") and (name[:-1] in _MVE_LOAD or name[:-1] in _MVE_STORE or vector):
        candidates.append((name[:-1], True))  # an MVE instruction in a VPT block: vldrbt, vaddte...
    for stem, cond in candidates:
        if stem in _MVE_LOAD or (stem == "vldr" and vector):
            return stem, "mve_load", cond
        if stem in _MVE_STORE or (stem == "vstr" and vector):
            return stem, "mve_store", cond
        if vector or stem in _MVE_ONLY:
            if stem in _MVE_MAC:
                return stem, "mve_mac", cond
            if stem in _MVE_ONLY or stem in _SCALAR:
                return stem, "mve_alu", cond
        if stem in _SCALAR:
            return stem, _SCALAR[stem], cond
    return name, "unknown", False


def _split_operands(operands: str) -> tuple[str, str]:
    """(operands before the comment, the bracketed address part or '')."""
    text = operands.split("@", 1)[0].split(";", 1)[0].strip()
    m = re.search(r"\[([^\]]*)\]", text)
    return text, (m.group(1) if m else "")


def decode(address: int, size: int, mnemonic: str, operands: str) -> Insn:
    """Classify one instruction as objdump prints it."""
    base, cls, conditional = _base_and_class(mnemonic, operands)
    text, bracket = _split_operands(operands)
    regs = [_reg(r) for r in _REG.findall(text.split("[", 1)[0])]
    writes: tuple[str, ...] = ()
    address_regs: tuple[str, ...] = ()
    count = 1
    writes_pc = False
    register_offset = False
    if cls in ("alu", "mul", "mla", "div"):
        writes = tuple(regs[:1])
        writes_pc = writes == ("r15",)
    elif cls in ("mull", "mlal"):
        writes = tuple(regs[:2])
    elif cls in ("load", "load_d", "store", "store_d", "fp_load", "fp_store", "mve_load", "mve_store"):
        address_regs = tuple(_reg(r) for r in _REG.findall(bracket))
        register_offset = len(address_regs) > 1
        if cls in ("load", "load_d"):
            writes = tuple(regs[: 2 if cls == "load_d" else 1])
            writes_pc = "r15" in writes
        if bracket == "" and cls in ("load", "fp_load"):  # ldr r0, [pc, #n] prints as "ldr r0, [pc, #n]"
            address_regs = ("r15",)
    elif cls in ("ldm", "stm", "fp_ldm", "fp_stm"):
        inside = re.search(r"\{([^}]*)\}", text)
        listed = inside.group(1) if inside else ""
        count = 0
        for item in listed.split(","):
            item = item.strip()
            if "-" in item:  # a range: r4-r7, s16-s31, d8-d15
                lo, hi = item.split("-")
                n = int(re.sub(r"\D", "", hi)) - int(re.sub(r"\D", "", lo)) + 1
                count += n * (2 if lo.strip().startswith("d") else 1)
            elif item:
                count += 2 if item.startswith("d") else 1
        count = max(count, 1)
        if cls == "ldm":
            writes = tuple(_reg(r) for r in _REG.findall(listed))
            writes_pc = "r15" in writes
    elif cls == "cmp":
        writes = ()
    if cls in ("store", "store_d", "stm", "cmp", "fp_store", "mve_store", "bx", "cbz", "tb"):
        reads = tuple(_reg(x) for x in _REG.findall(text))
    else:  # the first operand is the destination; the rest (and any address) is read
        reads = tuple(dict.fromkeys([*regs[1:], *address_regs]))
    if base in ("cbz", "cbnz"):
        conditional = True
    return Insn(address, size, mnemonic, operands, cls, writes, address_regs, count, writes_pc, register_offset,
                conditional, reads)


def parse_objdump(text: str) -> dict[int, Insn]:
    """Every instruction of ``objdump -d`` output, by address."""
    found: dict[int, Insn] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        address = int(m.group(1), 16)
        size = 4 if " " in m.group(2) else 2
        found[address] = decode(address, size, m.group(3), m.group(4))
    return found


@functools.lru_cache(maxsize=16)
def _disassemble(path: str, mtime_ns: int, arch: str) -> dict[int, Insn]:
    del mtime_ns  # part of the cache key only
    out = subprocess.run([toolchain.require("arm-none-eabi-objdump"), "-d", "-m", arch, path],
                         capture_output=True, text=True, check=True)
    return parse_objdump(out.stdout)


def disassemble(elf: str | Path, target: str) -> dict[int, Insn]:
    """The ELF's code, decoded for ``target``'s architecture (cached per file version)."""
    path = Path(elf)
    return _disassemble(str(path), path.stat().st_mtime_ns, ARCH[target])


def symbol_address(elf: str | Path, name: str) -> int | None:
    """The address of function ``name`` in the ELF (Thumb bit cleared), or None."""
    return symbols(elf).get(name)


@functools.lru_cache(maxsize=16)
def _symbols(path: str, mtime_ns: int) -> dict[str, int]:
    del mtime_ns
    out = subprocess.run([toolchain.require("arm-none-eabi-nm"), path], capture_output=True, text=True, check=True)
    table = {}
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "Tt":
            table[parts[2]] = int(parts[0], 16) & ~1
    return table


def symbols(elf: str | Path) -> dict[str, int]:
    """Function symbols of the ELF: name -> address."""
    path = Path(elf)
    return _symbols(str(path), path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _functions(path: str, mtime_ns: int) -> tuple[tuple[int, int, str], ...]:
    del mtime_ns
    out = subprocess.run([toolchain.require("arm-none-eabi-nm"), "-S", "--defined-only", path], capture_output=True,
                         text=True, check=True)
    found = []
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "Tt":
            start = int(parts[0], 16) & ~1
            found.append((start, start + int(parts[1], 16), parts[3]))
    return tuple(sorted(found))


def function_at(elf: str | Path, address: int) -> str:
    """The name of the ELF function that holds ``address`` ("?" outside every sized function)."""
    import bisect

    path = Path(elf)
    table = _functions(str(path), path.stat().st_mtime_ns)
    i = bisect.bisect_right(table, (address, float("inf"), "")) - 1
    return table[i][2] if i >= 0 and table[i][0] <= address < table[i][1] else "?"
