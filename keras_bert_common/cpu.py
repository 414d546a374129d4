"""What the CPU can do, read from /proc/cpuinfo: whether bfloat16 runs natively (training with
--mixed_precision=mixed_bfloat16, serving an export in bfloat16) or is emulated, slower than float32."""

CPUINFO = "/proc/cpuinfo"


def cpu_flags(cpuinfo_path=None):
    """The CPU's feature flags (x86 `flags`, Arm `Features`) from /proc/cpuinfo, as a set; None
    where it cannot say (no /proc/cpuinfo)."""
    try:
        with open(cpuinfo_path or CPUINFO, encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.startswith(("flags", "Features")):
                    return set(line.partition(":")[2].split())
    except OSError:
        pass
    return None


def cpu_has_bfloat16_instructions(cpuinfo_path=None):
    """Whether the CPU has bfloat16 dot-product instructions (x86 AVX512_BF16 or AMX-BF16, Arm
    BF16), read from /proc/cpuinfo's flags; None where it cannot say (no /proc/cpuinfo)."""
    flags = cpu_flags(cpuinfo_path)
    return None if flags is None else bool({"avx512_bf16", "amx_bf16", "bf16"} & flags)
