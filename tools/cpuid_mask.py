"""Run a command as if this CPU lacked some of its SIMD extensions (issue 14: int8 speed on every x86 CPU).

    python tools/cpuid_mask.py --hide avx512 python tools/bench_app.py --out benchmarks/bench_app_avx2.json
    python tools/cpuid_mask.py --hide amx python tools/bench_app.py --out benchmarks/bench_app_vnni.json

int8 speed depends on which kernels the runtimes pick from CPUID: onnxruntime's MLAS, XNNPACK (through
cpuinfo), numpy and OpenBLAS each have an AMX, an AVX-512 VNNI and an AVX2 path. This wrapper compiles
``tools/cpuid_mask.c`` (once, with the system C compiler) and runs the command with it preloaded: Linux's
CPUID faulting lets it clear feature bits of every CPUID the process executes, so every library takes the
path of an older CPU:

- ``--hide avx512``: no AVX-512, VNNI or AMX; an AVX2/FMA CPU such as AMD EPYC Zen 2/3 or Intel Haswell;
- ``--hide amx``: no AMX, AVX-VNNI or AVX512-FP16; an AVX-512 VNNI CPU such as Intel Ice Lake or AMD Zen 4.

It also sets ``GLIBC_TUNABLES`` so that glibc's own string functions follow, and ``LWX_CPUID_MASK`` so that
benchmark files record the mask (``bench_app.cpu_info``). What it shows: which kernels such a CPU runs and
how they compare *on this core*, e.g. ONNX int8 against the teacher's fp32 BLAS, both on their AVX2 paths.
What it does not: how fast that CPU is (its cores, caches and clock are not this one's). Needs Linux on
x86-64 with the ``cpuid_fault`` CPU flag and a C compiler.

Without CPUID faulting (many VMs) it masks the libraries one by one instead (``--via libraries``, chosen
automatically): ``tools/cpuinfo_mask.c`` clears the flags in cpuinfo, from which XNNPACK (ExecuTorch) and
ExecuTorch's own kernels choose, and ``NPY_DISABLE_CPU_FEATURES`` / ``OPENBLAS_CORETYPE`` move numpy and
OpenBLAS (the teacher). onnxruntime executes CPUID itself and keeps its fastest path there, so benchmarks
refuse to time the ONNX backend under this method (the marker says so). Needs PyTorch's ``cpuinfo.h`` (the
``train`` extra) and a C compiler.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_suffix(".c")
CPUINFO_SOURCE = Path(__file__).with_name("cpuinfo_mask.c")
METHODS = ("cpuid", "libraries")
# What the libraries method hides from numpy (its dispatch targets, old and new names) and OpenBLAS, per level.
NUMPY_TARGETS = {"avx512": "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL "
                           "AVX512_SPR X86_V4",
                 "amx": "AVX512_SPR"}
OPENBLAS_CORE = {"avx512": "Haswell", "amx": "Cooperlake"}
NOT_ONNXRUNTIME = "onnxruntime not masked"

# Per level: the /proc/cpuinfo flags (as bench_app.FLAGS names them) it hides, and glibc's hwcaps to drop.
LEVELS = {
    "avx512": (("avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_int8", "amx_bf16"),
               "-AVX512F,-AVX512CD,-AVX512BW,-AVX512DQ,-AVX512VL,-AVX512ER,-AVX512PF,-AVX_VNNI"),
    "amx": (("avx_vnni", "amx_int8", "amx_bf16"), "-AVX_VNNI"),
}


def describe(level: str, method: str = "cpuid") -> str:
    """The ``LWX_CPUID_MASK`` marker for ``level``: what was hidden, and how."""
    hidden = " ".join(LEVELS[level][0])
    if method == "libraries":
        return (f"{level}: {hidden} hidden from numpy, OpenBLAS and cpuinfo (XNNPACK), not from CPUID; "
                f"{NOT_ONNXRUNTIME} (tools/cpuid_mask.py --hide {level} --via libraries)")
    return f"{level}: {hidden} hidden from CPUID (tools/cpuid_mask.py --hide {level})"


def masks_onnxruntime(mask: str) -> bool:
    """Whether the mask a ``LWX_CPUID_MASK`` marker describes reaches onnxruntime (only CPUID faulting does)."""
    return NOT_ONNXRUNTIME not in mask


def level_of(mask: str) -> str:
    """The level a ``LWX_CPUID_MASK`` marker names."""
    level = mask.split(":", 1)[0]
    if level not in LEVELS:
        raise SystemExit(f"LWX_CPUID_MASK={mask!r} names no known level ({', '.join(LEVELS)})")
    return level


def cpuid_fault_supported() -> bool:
    """True when /proc/cpuinfo lists ``cpuid_fault`` (the kernel can make CPUID trap)."""
    return has_flag("cpuid_fault")


def torch_include() -> Path:
    """PyTorch's header folder, which holds the ``cpuinfo.h`` that ``cpuinfo_mask.c`` needs."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    include = Path(spec.origin).parent / "include" if spec and spec.origin else None
    if include is None or not (include / "cpuinfo.h").exists():
        raise SystemExit("cpuid_mask: masking without CPUID faulting needs PyTorch's cpuinfo.h "
                         "(pip install -e '.[train]')")
    return include


def build(cache: Path | None = None, source_path: Path = SOURCE, include: Path | None = None) -> Path:
    """Compile a preload library into ``cache`` (default ``~/.cache/lwx-edge``), once per source version."""
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        raise SystemExit("cpuid_mask: no C compiler (install gcc, or set CC)")
    source = source_path.read_bytes() + (str(include).encode() if include else b"")  # headers: part of the build
    cache = cache or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "lwx-edge"
    target = cache / f"{source_path.stem}-{hashlib.sha256(source).hexdigest()[:12]}.so"
    if target.exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    flags = [f"-I{include}"] if include else []
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        built = Path(tmp) / target.name
        proc = subprocess.run([compiler, "-O2", "-fPIC", "-shared", *flags, "-o", str(built), str(source_path),
                               "-ldl", "-lpthread"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"cpuid_mask: compiling {source_path.name} failed:\n{proc.stderr}")
        os.replace(built, target)
    return target


def environment(library: Path, level: str, env: dict | None = None, method: str = "cpuid") -> dict:
    """``env`` (default: this process's) with the preload library, its level, glibc tunables and the marker;
    for the ``libraries`` method also numpy's and OpenBLAS's own switches."""
    env = dict(os.environ if env is None else env)
    env["LD_PRELOAD"] = " ".join(p for p in (str(library), env.get("LD_PRELOAD", "")) if p)
    env["LWX_CPUID_HIDE"] = level
    tunables = env.get("GLIBC_TUNABLES", "")
    env["GLIBC_TUNABLES"] = ":".join(p for p in (tunables, f"glibc.cpu.hwcaps={LEVELS[level][1]}") if p)
    if method == "libraries":
        env["NPY_DISABLE_CPU_FEATURES"] = NUMPY_TARGETS[level]
        if level == "avx512" or has_flag("amx_tile"):
            env["OPENBLAS_CORETYPE"] = OPENBLAS_CORE[level]
    env["LWX_CPUID_MASK"] = describe(level, method)
    return env


def has_flag(name: str) -> bool:
    """True when /proc/cpuinfo lists ``name`` among the CPU's flags."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and name in line.split() for line in f)
    except OSError:
        return False


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hide", choices=sorted(LEVELS), required=True,
                    help="avx512: an AVX2-only CPU; amx: an AVX-512 VNNI CPU without AMX")
    ap.add_argument("--via", choices=("auto", *METHODS), default="auto",
                    help="cpuid: CPUID faulting, every library (needs the cpuid_fault flag); libraries: numpy, "
                         "OpenBLAS and XNNPACK only; auto (default): cpuid where the CPU can, else libraries")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, with its arguments")
    args = ap.parse_args(argv)
    if not args.command:
        ap.error("give the command to run")
    method = args.via if args.via != "auto" else ("cpuid" if cpuid_fault_supported() else "libraries")
    if method == "cpuid" and not cpuid_fault_supported():
        raise SystemExit("cpuid_mask: this CPU or kernel cannot make CPUID fault (no 'cpuid_fault' flag in "
                         "/proc/cpuinfo), so other code paths cannot be forced here; --via libraries masks "
                         "numpy, OpenBLAS and XNNPACK without it")
    library = build() if method == "cpuid" else build(source_path=CPUINFO_SOURCE, include=torch_include())
    if method == "libraries":
        print(f"cpuid_mask: no CPUID faulting here; hiding {args.hide} from numpy, OpenBLAS and XNNPACK only "
              "(onnxruntime keeps its fastest path)", file=sys.stderr)
    env = environment(library, args.hide, method=method)
    os.execvpe(args.command[0], args.command, env)


if __name__ == "__main__":
    main(sys.argv[1:])
