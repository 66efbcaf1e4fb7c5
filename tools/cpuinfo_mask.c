/* Hide instruction-set extensions from the cpuinfo library, for CPUs without CPUID faulting.
 *
 * Loaded with LD_PRELOAD by tools/cpuid_mask.py (issue 14) when /proc/cpuinfo lacks "cpuid_fault", so that
 * tools/cpuid_mask.c cannot trap CPUID. XNNPACK (ExecuTorch's CPU backend) and ExecuTorch's optimised kernels
 * pick their kernels from cpuinfo's `cpuinfo_isa` flags, which they read after calling cpuinfo_initialize()
 * through the dynamic linker. This library defines cpuinfo_initialize(): it calls the copy that the calling
 * library would have used (its own dependency tree's), then clears the flags that LWX_CPUID_HIDE names:
 *   avx512  AVX-512 (all subsets), AVX-VNNI, AVX10 and AMX: an AVX2/FMA CPU (AMD Zen 2/3, Intel Haswell);
 *   amx     AMX, AVX-VNNI and AVX512-FP16: an AVX-512 VNNI CPU (Intel Ice Lake server, AMD Zen 4).
 * numpy and OpenBLAS are masked by their own environment variables (set by the wrapper); onnxruntime's MLAS
 * executes CPUID itself and cannot be masked this way.
 *
 * `struct cpuinfo_x86_isa` comes from the cpuinfo.h that PyTorch installs. Before clearing anything, the flags
 * are checked against the compiler's own CPUID view (__builtin_cpu_supports); a library built from another
 * cpuinfo layout stops the process with a message instead of being masked wrongly.
 */
#define _GNU_SOURCE
#include <cpuinfo.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef bool (*initialize_fn)(void);
/* Per call site (return address): the cpuinfo its library links to. XNNPACK calls cpuinfo_initialize()
 * on every operator run, so lookups must be cheap: entries are written under the lock and published by
 * the release store of table_size; readers scan without it. */
struct resolved { const void *call_site; initialize_fn initialize; struct cpuinfo_x86_isa *isa; };

static struct resolved table[64];
static int table_size;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static void check_layout(const struct cpuinfo_x86_isa *isa);

static void fail(const char *what, const char *library) {
    fprintf(stderr, "cpuinfo_mask: %s (%s); cannot hide CPU features from it\n", what, library);
    abort();
}

static const struct resolved *lookup(const void *call_site) {
    int size = __atomic_load_n(&table_size, __ATOMIC_ACQUIRE);
    for (int i = 0; i < size; i++)
        if (table[i].call_site == call_site)
            return &table[i];
    return NULL;
}

/* The cpuinfo that the library containing `call_site` links to: its initialize function and its flags. */
static struct resolved resolve(const void *call_site) {
    const struct resolved *hit = lookup(call_site);
    if (hit)
        return *hit;
    Dl_info info;
    if (!dladdr(call_site, &info) || !info.dli_fname)
        fail("cpuinfo_initialize called from unknown code", "?");
    void *handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    struct resolved found = {call_site, NULL, NULL};
    if (handle) {
        found.initialize = (initialize_fn)dlsym(handle, "cpuinfo_initialize");
        found.isa = (struct cpuinfo_x86_isa *)dlsym(handle, "cpuinfo_isa");
    }
    if (!found.initialize || found.initialize == cpuinfo_initialize || !found.isa)
        fail("no cpuinfo library found for the caller", info.dli_fname);
    pthread_mutex_lock(&table_lock);
    bool seen = false; /* flags already checked (and maybe masked) for another call site */
    for (int i = 0; i < table_size; i++)
        seen = seen || table[i].isa == found.isa;
    if (!seen && found.initialize())
        check_layout(found.isa);
    if (!lookup(call_site) && table_size < (int)(sizeof table / sizeof table[0])) {
        table[table_size] = found;
        __atomic_store_n(&table_size, table_size + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&table_lock);
    return found;
}

/* The flags as cpuinfo set them must agree with the compiler's CPUID view, or the struct layout differs. */
static void check_layout(const struct cpuinfo_x86_isa *isa) {
    __builtin_cpu_init();
    struct { const char *name; bool cpuinfo, cpu; } flags[] = {
        {"avx2", isa->avx2, __builtin_cpu_supports("avx2")},
        {"fma", isa->fma3, __builtin_cpu_supports("fma")},
        {"avx512f", isa->avx512f, __builtin_cpu_supports("avx512f")},
        {"avx512bw", isa->avx512bw, __builtin_cpu_supports("avx512bw")},
        {"avx512vl", isa->avx512vl, __builtin_cpu_supports("avx512vl")},
        {"avx512vnni", isa->avx512vnni, __builtin_cpu_supports("avx512vnni")},
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        if (flags[i].cpuinfo != flags[i].cpu) {
            char what[160];
            snprintf(what, sizeof what, "cpuinfo says %s=%d, CPUID says %d: its struct layout is not cpuinfo.h's",
                     flags[i].name, flags[i].cpuinfo, flags[i].cpu);
            fail(what, "cpuinfo_isa");
        }
    }
}

/* avx512: every AVX-512 subset, then what both levels hide (AMX, AVX-VNNI, AVX512-FP16). */
static void hide(struct cpuinfo_x86_isa *isa, const char *level) {
    if (strcmp(level, "avx512") == 0) {
        isa->avx512f = isa->avx512pf = isa->avx512er = isa->avx512cd = isa->avx512dq = false;
        isa->avx512bw = isa->avx512vl = isa->avx512ifma = isa->avx512vbmi = isa->avx512vbmi2 = false;
        isa->avx512bitalg = isa->avx512vpopcntdq = isa->avx512vnni = isa->avx512bf16 = false;
        isa->avx512vp2intersect = isa->avx512_4vnniw = isa->avx512_4fmaps = false;
        isa->avx10_1 = isa->avx10_2 = false;
    }
    isa->amx_bf16 = isa->amx_tile = isa->amx_int8 = isa->amx_fp16 = false;
    isa->avxvnni = isa->avx512fp16 = false;
    isa->avx_vnni_int8 = isa->avx_vnni_int16 = isa->avx_ne_convert = false;
}

/* At process start, before any library runs (or captures stderr): refuse a level this file does not know. */
__attribute__((constructor)) static void check_level(void) {
    const char *level = getenv("LWX_CPUID_HIDE");
    if (level && strcmp(level, "avx512") != 0 && strcmp(level, "amx") != 0) {
        fputs("cpuinfo_mask: LWX_CPUID_HIDE must be avx512 or amx\n", stderr);
        exit(3);
    }
}

bool cpuinfo_initialize(void) {
    struct resolved cpuinfo = resolve(__builtin_return_address(0));
    bool ok = cpuinfo.initialize();
    const char *level = getenv("LWX_CPUID_HIDE");
    if (ok && level) {
        bool had_avx512f = cpuinfo.isa->avx512f, had_amx = cpuinfo.isa->amx_int8;
        hide(cpuinfo.isa, level);
        if (had_avx512f != cpuinfo.isa->avx512f || had_amx != cpuinfo.isa->amx_int8) {
            Dl_info info; /* once per copy of the flags: say where the mask took effect */
            dladdr((void *)cpuinfo.initialize, &info);
            fprintf(stderr, "cpuinfo_mask: %s hidden from the cpuinfo in %s (now avx2=%d avx512f=%d "
                    "avx512vnni=%d amx_int8=%d)\n", level, info.dli_fname ? info.dli_fname : "?",
                    cpuinfo.isa->avx2, cpuinfo.isa->avx512f, cpuinfo.isa->avx512vnni, cpuinfo.isa->amx_int8);
        }
    }
    return ok;
}
