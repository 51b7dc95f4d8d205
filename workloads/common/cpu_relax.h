/* A spinning thread's pause: lets the other hyperthread run and saves power
 * while a word it waits on changes (x86 pause, AArch64 yield). */
#ifndef WORKLOADS_CPU_RELAX_H
#define WORKLOADS_CPU_RELAX_H

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
