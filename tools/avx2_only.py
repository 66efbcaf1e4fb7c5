"""Run a command as if this CPU had AVX2 and FMA but no AVX-512, VNNI or AMX (issue 14).

    python tools/avx2_only.py python tools/bench_app.py --out benchmarks/bench_app_avx2.json

int8 speed depends on which kernels the runtimes pick from CPUID: onnxruntime's MLAS, XNNPACK (through
cpuinfo), numpy and OpenBLAS all have an AVX2 path for CPUs without AVX-512 VNNI, such as the AMD EPYCs of the
Zen 2/3 generations. This wrapper compiles ``tools/avx2_only.c`` (once, with the system C compiler) and runs the
command with it preloaded: Linux's CPUID faulting lets it clear the AVX-512, VNNI and AMX bits of every CPUID
the process executes, so every library takes the code path it would take on such a CPU. It also sets
``GLIBC_TUNABLES`` so that glibc's own string functions follow, and ``LWX_CPUID_MASK`` so that benchmark files
record the mask (``bench_app.cpu_info``).

What it shows: which kernels an AVX2-only CPU runs and how they compare *on this core*, e.g. ONNX int8 against
the teacher's fp32 BLAS, both on their AVX2 paths. What it does not: how fast an EPYC is (its cores, caches and
clock are not this one's). Needs Linux on x86-64 with the ``cpuid_fault`` CPU flag and a C compiler.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_suffix(".c")
MASK = "avx2: AVX-512, VNNI and AMX hidden from CPUID (tools/avx2_only.py)"
HIDDEN = ("avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_int8", "amx_bf16")
GLIBC_HIDE = "-AVX512F,-AVX512CD,-AVX512BW,-AVX512DQ,-AVX512VL,-AVX512ER,-AVX512PF,-AVX_VNNI"


def cpuid_fault_supported() -> bool:
    """True when /proc/cpuinfo lists ``cpuid_fault`` (the kernel can make CPUID trap)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and "cpuid_fault" in line.split() for line in f)
    except OSError:
        return False


def build(cache: Path | None = None) -> Path:
    """Compile the preload library into ``cache`` (default ``~/.cache/lwx-edge``), once per source version."""
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        raise SystemExit("avx2_only: no C compiler (install gcc, or set CC)")
    source = SOURCE.read_bytes()
    cache = cache or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "lwx-edge"
    target = cache / f"avx2_only-{hashlib.sha256(source).hexdigest()[:12]}.so"
    if target.exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        built = Path(tmp) / target.name
        proc = subprocess.run([compiler, "-O2", "-fPIC", "-shared", "-o", str(built), str(SOURCE), "-ldl"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"avx2_only: compiling {SOURCE.name} failed:\n{proc.stderr}")
        os.replace(built, target)
    return target


def environment(library: Path, env: dict | None = None) -> dict:
    """``env`` (default: this process's) with the preload library, glibc tunables and the mask marker set."""
    env = dict(os.environ if env is None else env)
    env["LD_PRELOAD"] = " ".join(p for p in (str(library), env.get("LD_PRELOAD", "")) if p)
    tunables = env.get("GLIBC_TUNABLES", "")
    env["GLIBC_TUNABLES"] = ":".join(p for p in (tunables, f"glibc.cpu.hwcaps={GLIBC_HIDE}") if p)
    env["LWX_CPUID_MASK"] = MASK
    return env


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        raise SystemExit(0 if argv else 2)
    if not cpuid_fault_supported():
        raise SystemExit("avx2_only: this CPU or kernel cannot make CPUID fault (no 'cpuid_fault' flag in "
                         "/proc/cpuinfo), so the AVX2 paths cannot be forced here")
    env = environment(build())
    os.execvpe(argv[0], argv, env)


if __name__ == "__main__":
    main(sys.argv[1:])
