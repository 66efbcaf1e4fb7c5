"""tools/cpuid_mask.py: a command run under it sees an older CPU, and crashes still report as crashes."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import bench_app  # noqa: E402
import cpuid_mask  # noqa: E402

needs_fault = pytest.mark.skipif(not cpuid_mask.cpuid_fault_supported() or cpuid_mask.shutil.which("cc") is None,
                                 reason="needs Linux CPUID faulting (cpuid_fault) and a C compiler")


def masked(code: str, level: str = "avx512") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools/cpuid_mask.py"), "--hide", level, sys.executable, "-c", code],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


@needs_fault
def test_libraries_see_avx2_without_avx512():
    code = ("from numpy._core._multiarray_umath import __cpu_features__ as f; import threadpoolctl, numpy;"
            "print(f['AVX2'], f['FMA3'], f['AVX512F'], f['AVX512VNNI'], f['AVX512_SPR']);"
            "print([d.get('architecture') for d in threadpoolctl.threadpool_info() if d['internal_api'] == 'openblas'])")
    proc = masked(code)
    assert proc.returncode == 0, proc.stderr
    features, blas = proc.stdout.splitlines()
    assert features == "True True False False False"
    assert blas in ("['Haswell']", "['Zen']", "[]")  # OpenBLAS picks its AVX2 kernels


@needs_fault
def test_hiding_amx_leaves_avx512_vnni():
    from numpy._core._multiarray_umath import __cpu_features__ as seen

    if not seen.get("AVX512_SPR"):
        pytest.skip("this CPU has no AMX/AVX512-FP16 to hide")
    proc = masked("from numpy._core._multiarray_umath import __cpu_features__ as f;"
                  "print(f['AVX512F'], f['AVX512VNNI'], f['AVX512_SPR'])", level="amx")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True", "False"]


@needs_fault
def test_the_library_refuses_an_unknown_level():
    env = cpuid_mask.environment(cpuid_mask.build(), "avx512")
    env["LWX_CPUID_HIDE"] = "sse"
    proc = subprocess.run([sys.executable, "-c", "print('ran')"], env=env, capture_output=True, text=True)
    assert proc.returncode == 3 and proc.stdout == ""
    assert "LWX_CPUID_HIDE must be avx512 or amx" in proc.stderr


@needs_fault
def test_benchmark_files_record_the_mask():
    proc = masked("import sys; sys.path.insert(0, 'tools'); import bench_app; m = bench_app.cpu_info();"
                  "print(m['simd']); print(m.get('cpuid_mask')); print(bench_app.command_line('tools/x.py'))")
    assert proc.returncode == 0, proc.stderr
    simd, mask, command = proc.stdout.splitlines()
    assert set(ast.literal_eval(simd)) <= {"avx2", "fma"}
    assert mask.startswith("avx512: avx512f avx512_vnni avx_vnni")
    assert command.startswith("python tools/cpuid_mask.py --hide avx512 python tools/x.py")


@needs_fault
def test_a_real_crash_still_reaches_the_programs_handler():
    proc = masked("import faulthandler, ctypes; faulthandler.enable(); ctypes.string_at(0)")
    assert proc.returncode != 0
    assert "Segmentation fault" in proc.stderr and "string_at" in proc.stderr


def test_without_cpuid_faulting_it_says_so(monkeypatch):
    monkeypatch.setattr(cpuid_mask, "cpuid_fault_supported", lambda: False)
    with pytest.raises(SystemExit, match="cannot make CPUID fault.*--via libraries"):
        cpuid_mask.main(["--hide", "avx512", "--via", "cpuid", "true"])


def test_without_cpuid_faulting_it_masks_the_libraries(monkeypatch, tmp_path):
    """auto falls back to the libraries method: cpuinfo preload, numpy and OpenBLAS switches, the marker."""
    ran = {}
    monkeypatch.setattr(cpuid_mask, "cpuid_fault_supported", lambda: False)
    monkeypatch.setattr(cpuid_mask, "build", lambda **kw: ran.setdefault("source", kw["source_path"]) and tmp_path / "m.so")
    monkeypatch.setattr(cpuid_mask, "torch_include", lambda: tmp_path)
    monkeypatch.setattr(cpuid_mask.os, "execvpe", lambda f, argv, env: ran.update(argv=argv, env=env))
    cpuid_mask.main(["--hide", "avx512", "echo", "hi"])
    env = ran["env"]
    assert ran["source"].name == "cpuinfo_mask.c" and ran["argv"] == ["echo", "hi"]
    assert env["LD_PRELOAD"].split()[0] == str(tmp_path / "m.so") and env["LWX_CPUID_HIDE"] == "avx512"
    assert "X86_V4" in env["NPY_DISABLE_CPU_FEATURES"] and env["OPENBLAS_CORETYPE"] == "Haswell"
    assert not cpuid_mask.masks_onnxruntime(env["LWX_CPUID_MASK"])
    assert cpuid_mask.masks_onnxruntime(cpuid_mask.describe("avx512"))


def _has_executorch() -> bool:
    try:
        import executorch  # noqa: F401
        return (cpuid_mask.torch_include() / "cpuinfo.h").exists()
    except (ImportError, SystemExit):
        return False


needs_executorch_avx512 = pytest.mark.skipif(
    not _has_executorch() or cpuid_mask.shutil.which("cc") is None or not cpuid_mask.has_flag("avx512f"),
    reason="needs ExecuTorch, PyTorch's cpuinfo.h, a C compiler and an AVX-512 CPU")
EMBED_WITH_EXECUTORCH = "from lwx_edge import Encoder; Encoder.load(None, backend='executorch').embed(['a test'])"


@needs_executorch_avx512
def test_the_cpuinfo_preload_refuses_an_unknown_level(default_pte):
    library = cpuid_mask.build(source_path=cpuid_mask.CPUINFO_SOURCE, include=cpuid_mask.torch_include())
    env = cpuid_mask.environment(library, "avx512", method="libraries")
    env["LWX_CPUID_HIDE"] = "sse"
    proc = subprocess.run([sys.executable, "-c", EMBED_WITH_EXECUTORCH + "; print('ran')"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3 and "ran" not in proc.stdout
    assert "cpuinfo_mask: LWX_CPUID_HIDE must be avx512 or amx" in proc.stderr


@needs_executorch_avx512
def test_the_libraries_method_reaches_xnnpack_numpy_and_openblas(default_pte):
    code = ("from lwx_edge import Encoder; import threadpoolctl;"
            "from numpy._core._multiarray_umath import __cpu_features__ as f;"
            "v = Encoder.load(None, backend='executorch', threads=1).embed(['a small test']);"
            "print(v.shape, f['X86_V4'], f['AVX2']);"
            "print([d.get('architecture') for d in threadpoolctl.threadpool_info() if d['internal_api'] == 'openblas'])")
    proc = subprocess.run([sys.executable, str(ROOT / "tools/cpuid_mask.py"), "--hide", "avx512", "--via", "libraries",
                           sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    shape_features, blas = proc.stdout.splitlines()[-2:]
    assert shape_features == "(1, 512) False True" and blas in ("['Haswell']", "[]")
    # the preload says where it cleared the flags: XNNPACK's cpuinfo, now without AVX-512
    assert "cpuinfo_mask: avx512 hidden from the cpuinfo in" in proc.stderr
    assert "now avx2=1 avx512f=0 avx512vnni=0 amx_int8=0" in proc.stderr


def test_a_benchmark_refuses_to_time_onnxruntime_under_a_mask_that_misses_it(monkeypatch):
    from numpy._core import _multiarray_umath as umath

    monkeypatch.setenv("LWX_CPUID_MASK", cpuid_mask.describe("avx512", "libraries"))
    # as numpy reports under NPY_DISABLE_CPU_FEATURES: hardware flags kept, AVX-512 dispatch targets off
    monkeypatch.setattr(umath, "__cpu_features__", {**umath.__cpu_features__, "X86_V4": False, "AVX512_SKX": False})
    with pytest.raises(SystemExit, match="does not reach onnxruntime"):
        bench_app.cpu_info()
    assert bench_app.cpu_info(times_onnx=False)["cpuid_mask"].endswith("--via libraries)")


def test_a_mask_marker_without_the_mask_is_refused(monkeypatch):
    monkeypatch.setenv("LWX_CPUID_MASK", cpuid_mask.describe("avx512"))
    from numpy._core._multiarray_umath import __cpu_features__ as seen

    if not seen.get("X86_V4"):
        pytest.skip("this CPU has no AVX-512 to hide")
    with pytest.raises(SystemExit, match="still sees what it hides"):
        bench_app.cpu_info()


def test_simd_text_names_the_hidden_flags():
    machine = {"simd": ["avx2", "fma"], "simd_hardware": ["avx2", "fma", "avx512f", "amx_int8"],
               "cpuid_mask": cpuid_mask.describe("avx512")}
    assert bench_app.simd_text(machine) == ("avx2 fma (the CPU also has avx512f amx_int8, hidden from CPUID by "
                                            "tools/cpuid_mask.py)")
    assert bench_app.simd_text({"simd": ["avx2", "fma"]}) == "avx2 fma"


def test_app_texts_travel_as_a_file_in_order_and_a_short_file_is_refused(tmp_path):
    """A machine without the apt lists (the GPU machine) reads the app workload from a file written here."""
    f = tmp_path / "texts.txt"
    f.write_text("Un éditeur de texte\nA text editor\nEin Texteditor\n", encoding="utf-8")
    assert bench_app.app_texts(2, path=f) == ["Un éditeur de texte", "A text editor"]
    with pytest.raises(SystemExit, match="needs 5 non-empty lines"):
        bench_app.app_texts(5, path=f)
    f.write_text("one\n\nthree\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="needs 3 non-empty lines"):
        bench_app.app_texts(3, path=f)


def test_bench_files_record_the_runtime_versions():
    """An ExecuTorch or onnxruntime other than the pinned one changes the kernels: the files say which ran."""
    from importlib.metadata import version

    found = bench_app.runtime_versions(("numpy", "no-such-package-lwx"))
    assert found == {"numpy": version("numpy")}


@pytest.mark.parametrize("values, message", [("16", "two or more overheads"), ("16,x", "numbers separated by commas"),
                                             ("16,-1", "two or more overheads >= 0")])
def test_bench_overhead_refuses_bad_values_before_loading_anything(values, message):
    done = subprocess.run([sys.executable, str(ROOT / "tools/bench_overhead.py"), "onnx", "--values", values],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and message in done.stderr, done.stderr[-500:]
