/* Hide instruction-set extensions from a process, so that its libraries take the code paths of an older CPU.
 *
 * Loaded with LD_PRELOAD by tools/cpuid_mask.py (issue 14). Linux can make the CPUID instruction fault (CPUID
 * faulting, arch_prctl(ARCH_SET_CPUID, 0); /proc/cpuinfo flag "cpuid_fault"). This library turns faulting on
 * before main() and answers each faulting CPUID itself: it runs the real instruction with faulting briefly off
 * and clears feature bits before returning. LWX_CPUID_HIDE picks which:
 *   avx512  AVX-512 (all subsets), AVX-VNNI, AVX512-BF16/FP16 and AMX: an AVX2/FMA CPU (AMD Zen 2/3, Haswell);
 *   amx     AMX, AVX-VNNI and AVX512-FP16: an AVX-512 VNNI CPU (Intel Ice Lake server, AMD Zen 4).
 * Every library that dispatches on CPUID (onnxruntime's MLAS, XNNPACK through cpuinfo, numpy, OpenBLAS) then
 * takes that CPU's path. The faulting setting is per thread and inherited by new threads and forked children;
 * exec'd children get it again through LD_PRELOAD.
 *
 * The program's own SIGSEGV handlers (Python's faulthandler, for one) still work: sigaction() and signal()
 * for SIGSEGV are recorded here and called for every fault that is not a CPUID.
 *
 * What it cannot hide: glibc picks its string functions from CPUID before this library loads (the wrapper
 * sets GLIBC_TUNABLES for that), and timings stay those of the real core: this shows which kernels such a CPU
 * runs and how they compare here, not how fast such a CPU is.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef ARCH_GET_CPUID
#define ARCH_GET_CPUID 0x1011
#define ARCH_SET_CPUID 0x1012
#endif

#define BIT(n) (1u << (n))

/* Bits of CPUID.(EAX=7,ECX=0).EBX, ECX, EDX and CPUID.(EAX=7,ECX=1).EAX to clear, per level. */
struct mask { uint32_t ebx, ecx, edx, s1_eax; };
static const struct mask hide_avx512 = {
    /* EBX: AVX512F, DQ, IFMA, PF, ER, CD, BW, VL */
    BIT(16) | BIT(17) | BIT(21) | BIT(26) | BIT(27) | BIT(28) | BIT(30) | BIT(31),
    /* ECX: AVX512_VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ */
    BIT(1) | BIT(6) | BIT(11) | BIT(12) | BIT(14),
    /* EDX: AVX512_4VNNIW, 4FMAPS, VP2INTERSECT, AMX-BF16, AVX512_FP16, AMX-TILE, AMX-INT8 */
    BIT(2) | BIT(3) | BIT(8) | BIT(22) | BIT(23) | BIT(24) | BIT(25),
    /* subleaf 1 EAX: AVX-VNNI, AVX512_BF16, AMX-FP16, AVX-IFMA */
    BIT(4) | BIT(5) | BIT(21) | BIT(23),
};
static const struct mask hide_amx = {
    0, 0,
    /* EDX: AMX-BF16, AVX512_FP16, AMX-TILE, AMX-INT8 */
    BIT(22) | BIT(23) | BIT(24) | BIT(25),
    /* subleaf 1 EAX: AVX-VNNI, AMX-FP16 */
    BIT(4) | BIT(21),
};
static const struct mask *hidden;

static struct sigaction program_action; /* what the program asked for SIGSEGV */
static int active;

static long set_faulting(int on) { return syscall(SYS_arch_prctl, ARCH_SET_CPUID, on ? 0 : 1); }

static void hide(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    if (leaf == 7 && sub == 0) {
        r[1] &= ~hidden->ebx;
        r[2] &= ~hidden->ecx;
        r[3] &= ~hidden->edx;
    } else if (leaf == 7 && sub == 1) {
        r[0] &= ~hidden->s1_eax;
    }
}

static int (*real_sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    if (!real_sigaction_fn) real_sigaction_fn = dlsym(RTLD_NEXT, "sigaction");
    return real_sigaction_fn(sig, act, old);
}

static void on_segv(int sig, siginfo_t *info, void *context) {
    ucontext_t *uc = context;
    greg_t *regs = uc->uc_mcontext.gregs;
    const unsigned char *ip = (const unsigned char *)regs[REG_RIP];
    if (info->si_code == SI_KERNEL && ip[0] == 0x0f && ip[1] == 0xa2) { /* CPUID */
        uint32_t r[4], leaf = (uint32_t)regs[REG_RAX], sub = (uint32_t)regs[REG_RCX];
        int saved = errno;
        set_faulting(0);
        __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
        set_faulting(1);
        errno = saved;
        hide(leaf, sub, r);
        regs[REG_RAX] = r[0];
        regs[REG_RBX] = r[1];
        regs[REG_RCX] = r[2];
        regs[REG_RDX] = r[3];
        regs[REG_RIP] += 2;
        return;
    }
    /* A real fault: the program's handler, or the default action when the instruction runs again. */
    if (program_action.sa_flags & SA_SIGINFO) {
        if (program_action.sa_sigaction) {
            program_action.sa_sigaction(sig, info, context);
            return;
        }
    } else if (program_action.sa_handler != SIG_DFL && program_action.sa_handler != SIG_IGN) {
        program_action.sa_handler(sig);
        return;
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    real_sigaction(SIGSEGV, &dfl, NULL);
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    if (sig != SIGSEGV || !active) return real_sigaction(sig, act, old);
    if (old) *old = program_action;
    if (act) program_action = *act;
    return 0;
}

sighandler_t signal(int sig, sighandler_t handler) {
    static sighandler_t (*real_signal)(int, sighandler_t);
    if (sig != SIGSEGV || !active) {
        if (!real_signal) real_signal = (sighandler_t(*)(int, sighandler_t))dlsym(RTLD_NEXT, "signal");
        return real_signal(sig, handler);
    }
    sighandler_t previous = (program_action.sa_flags & SA_SIGINFO) ? SIG_DFL : program_action.sa_handler;
    memset(&program_action, 0, sizeof program_action);
    program_action.sa_handler = handler;
    return previous;
}

__attribute__((constructor)) static void start(void) {
    static const char no_fault[] = "cpuid_mask: this kernel or CPU cannot make CPUID fault "
                                   "(arch_prctl ARCH_SET_CPUID; /proc/cpuinfo has no cpuid_fault)\n";
    static const char bad_level[] = "cpuid_mask: LWX_CPUID_HIDE must be avx512 or amx\n";
    const char *level = getenv("LWX_CPUID_HIDE");
    if (level && strcmp(level, "avx512") == 0) {
        hidden = &hide_avx512;
    } else if (level && strcmp(level, "amx") == 0) {
        hidden = &hide_amx;
    } else {
        if (write(2, bad_level, sizeof bad_level - 1) < 0) _exit(3);
        _exit(3);
    }
    program_action.sa_handler = SIG_DFL;
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_sigaction = on_segv;
    act.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&act.sa_mask);
    if (real_sigaction(SIGSEGV, &act, NULL) != 0 || set_faulting(1) != 0) {
        if (write(2, no_fault, sizeof no_fault - 1) < 0) _exit(3);
        _exit(3);
    }
    active = 1;
}
