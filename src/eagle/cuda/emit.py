"""The CUDA emitter: a hawk program as CUDA C++ source, one thread per live sample.

The source defines three kernels, all ``extern "C"`` so their names survive compilation:

- ``eagle_step``: thread ``j`` takes sample ``i``, the ``j``-th entry of the launch's in-list
  (below), loads it once, takes up to ``control->nsteps`` steps in registers (the fused loop),
  leaving its loop as soon as the sample's flag is set, and writes the sample back. A sample
  still live after its steps is appended to the out-list: each warp counts its live lanes
  (``__ballot_sync``/``__popc``), the block adds them up with ``__syncthreads_count``, and one
  thread reserves the block's slots in the out-list with one ``atomicAdd`` on
  ``control->live``, which is also the launch's live count; each warp then writes its live
  samples in lane order from its first slot. The slowest sample's step count needs no atomic
  where a sample is still live (a live sample took every one of the launch's ``nsteps`` steps,
  which the decide kernel derives); a block with no live sample left reduces its threads'
  counts itself and folds them into ``control->taken`` with one ``atomicMax``. So a launch
  issues at most one same-address atomic per block, never one per warp.
- ``eagle_decide``: one thread that closes a launch: adds the launch's steps and launch to the
  run's totals, sizes the next launch (the schedule below) so ``max_steps`` is honoured
  exactly, makes this launch's out-list the next one's in-list, and, inside a graph's WHILE
  node, sets the node's condition to "live samples and steps left"; when ``control->progress``
  holds the device address of host-mapped memory (only for ``run(progress=True)``) it also
  writes the live count there for a progress bar;
- ``eagle_start``: one thread that opens a run recorded inside a larger graph (a composer):
  the first launch's ``nsteps``, fresh per-run counters and the identity in-list.

Compaction. Once most samples are done, the live ones are scattered: with one thread per
sample, a warp runs as long as its slowest lane, so a warp holding one live sample costs 32
lanes' steps. With 1% of the samples running 100 times longer than the rest, at random places,
about a quarter of the warps keep one, and the GPU executes about 15 lane-steps per useful
step (``tests/test_gpu_refill.py`` counts them; 1.08 with compaction). So each launch runs on
a list of the samples that were live after the previous one, packed into the first threads:
``control->lists`` is the device address of two lists of ``n`` sample indices;
``control->list_in`` says which half is the in-list (1 or 2; the other half is the out-list),
or 0 for the identity list (thread ``j`` takes sample ``j``), which the first launch of every
run uses, so ``reset()`` and a finished sample need nothing else (a sample already flagged
done is skipped); ``control->count`` is the in-list's length. The grid is fixed when the graph
is recorded (sized for ``n``), so blocks past the count return at once. With no lists
(``control->lists`` 0, as for ``LoadedVector``) every launch uses the identity. A sample is
still index ``i`` everywhere (its arrays, its Series rows, its random stream ``sample_id``),
so results do not depend on the order of the lists, which varies with the order the blocks
run in.

The launch schedule. With ``control->grow_until`` 0 every launch is ``steps_per_launch`` steps
(a size the user fixed). Otherwise the size doubles after a launch, up to ``grow_until``, while
the device is full (``live >= control->full``, the samples its SMs hold at once: the hardware's
block scheduler balances the work inside a launch) or nearly empty (``live <= control->spread``,
one block per SM: ending a launch early cannot spread so few samples further). In between,
where some SMs may hold several live blocks and others none, the size holds, so that each new
launch re-spreads the live blocks over the SMs. Launches cost a few microseconds each inside a
graph, so fewer, longer launches win wherever balance does not suffer; results never depend
on the sizes (a finished sample is frozen).

The arithmetic is the reference executor's: IEEE operations in the op's dtype, literals written
as hexadecimal floats (exact), Python's ``min``/``max``/``//``/``%`` semantics, and no FMA
contraction unless the plan allows it (``nvrtc.compile_source(fmad=...)``). Math functions call
CUDA's libdevice, which agrees with the C library only to a few ulp (``sqrt``, ``floor``,
``ceil``, ``fabs`` are exact).
"""

from __future__ import annotations

import math

from hawk.ir import AGGREGATES, DType, OpKind, Program, Role, Slot
from hawk.philox import (
    COS_SERIES,
    LN2_HI,
    LN2_LO,
    LOG_SERIES,
    M0,
    M1,
    PI_4,
    ROUNDS,
    SIN_SERIES,
    SQRT2,
    W0,
    W1,
    horner_text,
)

from ..codegen import ExpressionRenderer, block_fill_value, invariant_ops, stale_reads, walk
from .parameters import MAX_PARAMETER_BYTES, check_parameter_space, parameter_bytes

__all__ = ["emit_cuda", "slot_ctype", "CONTROL_FIELDS", "STEP_KERNEL", "DECIDE_KERNEL",
           "START_KERNEL", "BLOCK_SIZE", "MIN_BLOCKS_PER_SM",
           "LOCAL_BYTES_FOR_ONE_BLOCK", "MAX_PARAMETER_BYTES", "parameter_bytes",
           "check_parameter_space"]

STEP_KERNEL = "eagle_step"
DECIDE_KERNEL = "eagle_decide"
START_KERNEL = "eagle_start"
BLOCK_SIZE = 256
#: Blocks of the step kernel each SM must be able to hold (``__launch_bounds__``): ptxas keeps a
#: kernel within 65536 / (2 x 256) = 128 registers, spilling a few words if it must. On an H200
#: the DP5 kernels with saveat (134 and 146 registers, so one block per SM) ran 1.29x and 1.34x
#: faster at two, with the same results; kernels under 128 registers are not changed.
MIN_BLOCKS_PER_SM = 2
#: Local memory per thread (spills and stack, bytes) above which the backend asks for one block
#: per SM instead: a wide model spills too much at 128 registers. On an H200
#: (benchmarks/gpu_launch_bounds.py, 10^6 samples) 6-state Kepler DP5 (32 bytes at two blocks)
#: ran 1.34x faster at two blocks than at one, and a 12-state chain (528 bytes) 1.13x faster at
#: one. The limit lies between the two measured kernels; nothing narrows it further yet.
LOCAL_BYTES_FOR_ONE_BLOCK = 256

#: The control block in device memory, in order; every field is a 64-bit integer.
CONTROL_FIELDS = ("nsteps", "live", "taken", "steps", "launches", "max_steps",
                  "steps_per_launch", "last_live", "grow_until", "full", "spread", "progress",
                  "count", "lists", "list_in")

_C_TYPES = {DType.BOOL: "bool", DType.INT64: "long long", DType.FLOAT32: "float",
            DType.FLOAT64: "double", DType.INT32: "int", DType.UINT32: "unsigned int",
            DType.UINT64: "unsigned long long"}  # fmt: skip
_FLOAT32_NAMES = {"sqrt": "sqrtf", "exp": "expf", "log": "logf", "sin": "sinf", "cos": "cosf",
                  "tan": "tanf", "tanh": "tanhf", "fabs": "fabsf", "floor": "floorf",
                  "ceil": "ceilf", "atan2": "atan2f", "pow": "powf", "hypot": "hypotf",
                  "asin": "asinf", "acos": "acosf", "atan": "atanf", "erf": "erff",
                  "log10": "log10f", "log1p": "log1pf", "expm1": "expm1f", "cbrt": "cbrtf",
                  "sinh": "sinhf", "cosh": "coshf"}  # fmt: skip

# Python's semantics for // and % and abs, as NumPy computes them (npy_divmod for floats;
# integer division by zero gives 0).
_HELPERS = r"""
typedef unsigned long long eagle_u64;
typedef unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __cudart_builtin__ void CUDARTAPI cudaGraphSetConditional(
    cudaGraphConditionalHandle handle, unsigned int value);

struct EagleControl { long long @FIELDS@; };
#ifndef EAGLE_OBSERVE_STEPS  // a test harness's hook: (thread, steps its sample took) a launch
#define EAGLE_OBSERVE_STEPS(thread, taken)
#endif
// The sample thread j takes: the j-th entry of the launch's in-list (list_in 1 or 2: a half of
// the lists), or j itself (list_in 0, or no lists); -1 past the in-list's end.
__device__ __forceinline__ long long eagle_sample(const EagleControl* control, long long n,
                                                  long long j) {
    const long long* const lists = (const long long*)control->lists;
    const long long list_in = lists == 0 ? 0 : control->list_in;
    if (j >= (list_in == 0 ? n : control->count)) return -1;
    return list_in == 0 ? j : lists[(list_in - 1) * n + j];
}
// Write sample i at position ``slot`` of the out-list: the half list_in does not name (the
// first half after the identity); nothing without lists.
__device__ __forceinline__ void eagle_append(const EagleControl* control, long long n,
                                             long long slot, long long i) {
    long long* const lists = (long long*)control->lists;
    if (lists != 0) lists[(control->list_in == 1 ? n : 0) + slot] = i;
}

template <typename T> __device__ __forceinline__ T eagle_fmod(T a, T b);
template <> __device__ __forceinline__ double eagle_fmod(double a, double b) { return fmod(a, b); }
template <> __device__ __forceinline__ float eagle_fmod(float a, float b) { return fmodf(a, b); }

template <typename T> __device__ __forceinline__ T eagle_floor(T a);
template <> __device__ __forceinline__ double eagle_floor(double a) { return floor(a); }
template <> __device__ __forceinline__ float eagle_floor(float a) { return floorf(a); }

template <typename T> __device__ __forceinline__ T eagle_copysign(T a, T b);
template <> __device__ __forceinline__ double eagle_copysign(double a, double b) {
    return copysign(a, b); }
template <> __device__ __forceinline__ float eagle_copysign(float a, float b) {
    return copysignf(a, b); }

template <typename T> __device__ __forceinline__ T eagle_floordiv(T a, T b) {
    if (b == T(0)) return a / b;
    T mod = eagle_fmod(a, b);
    T div = (a - mod) / b;
    if (mod != T(0)) {
        if ((b < T(0)) != (mod < T(0))) div -= T(1);
    }
    T floordiv;
    if (div != T(0)) {
        floordiv = eagle_floor(div);
        if (div - floordiv > T(0.5)) floordiv += T(1);
    } else {
        floordiv = eagle_copysign(T(0), a / b);
    }
    return floordiv;
}
template <typename T> __device__ __forceinline__ T eagle_mod(T a, T b) {
    if (b == T(0)) return eagle_fmod(a, b);
    T mod = eagle_fmod(a, b);
    if (mod != T(0)) {
        if ((b < T(0)) != (mod < T(0))) mod += b;
    } else {
        mod = eagle_copysign(T(0), b);
    }
    return mod;
}
template <> __device__ __forceinline__ long long eagle_floordiv(long long a, long long b) {
    if (b == 0) return 0;
    if (b == -1) return (long long)(0ULL - (unsigned long long)a);  // MIN // -1 wraps to MIN
    long long q = a / b;
    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <> __device__ __forceinline__ long long eagle_mod(long long a, long long b) {
    if (b == 0) return 0;
    long long r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
__device__ __forceinline__ double eagle_abs(double a) { return fabs(a); }
__device__ __forceinline__ float eagle_abs(float a) { return fabsf(a); }
__device__ __forceinline__ long long eagle_abs(long long a) { return a < 0 ? -a : a; }
// A math function's NaN is the canonical quiet NaN (sign clear), as in the reference.
__device__ __forceinline__ double eagle_canonical_nan(double x) {
    return x == x ? x : __longlong_as_double(0x7ff8000000000000ULL); }
__device__ __forceinline__ float eagle_canonical_nan(float x) {
    return x == x ? x : (float)__longlong_as_double(0x7ff8000000000000ULL); }
""".replace("@FIELDS@", "; long long ".join(CONTROL_FIELDS))


def _hex(value: float) -> str:
    return f"({value.hex()})"


# The draws of ``hawk.philox``, operation for operation, emitted only for a program that reads
# counters (``Program.counters``). In the step ``seed``, ``sample_id`` and ``step_id`` are the
# run's seed, the thread's global sample index and the sample's step number.
_RANDOM_HELPERS = r"""
struct EaglePhilox { unsigned int w0, w1, w2, w3; };
__device__ __forceinline__ EaglePhilox eagle_philox(unsigned long long seed, long long sample,
                                                    long long step, unsigned int position) {
    const unsigned long long s = (unsigned long long)sample, t = (unsigned long long)step;
    unsigned int c0 = position, c1 = (unsigned int)t;
    unsigned int c2 = (unsigned int)(((t >> 32) & 0xFFFFull) | (((s >> 32) & 0xFFFFull) << 16));
    unsigned int c3 = (unsigned int)s;
    unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
#pragma unroll
    for (int r = 0; r < @ROUNDS@; ++r) {
        if (r) { k0 += @W0@u; k1 += @W1@u; }
        const unsigned long long p0 = (unsigned long long)@M0@u * c0;
        const unsigned long long p1 = (unsigned long long)@M1@u * c2;
        const unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0;
        const unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0; c1 = (unsigned int)p1; c2 = n2; c3 = (unsigned int)p0;
    }
    EaglePhilox out = {c0, c1, c2, c3};
    return out;
}
__device__ __forceinline__ long long eagle_integer53(unsigned int high, unsigned int low) {
    return (long long)((((unsigned long long)high) << 21) | (low >> 11));
}
__device__ __forceinline__ double eagle_draw_uniform64(unsigned long long seed, long long sample,
                                                       long long step, unsigned int position) {
    const EaglePhilox w = eagle_philox(seed, sample, step, position);
    return (double)eagle_integer53(w.w0, w.w1) * 0x1p-53;
}
__device__ __forceinline__ float eagle_draw_uniform32(unsigned long long seed, long long sample,
                                                      long long step, unsigned int position) {
    const EaglePhilox w = eagle_philox(seed, sample, step, position);
    return (float)(long long)(w.w0 >> 8) * 0x1p-24f;
}
// hawk.philox.log53 and cos53, operation for operation (+ - * / only: the reference's bits)
__device__ __forceinline__ double eagle_log53(long long k) {
    long long e = 0;
@LOG_SHIFTS@
    const long long top = e <= 52 ? (k << (52 - e)) : (k >> 1);
    double m = (double)top * 0x1p-52;
    const bool big = m > @SQRT2@;
    m = big ? m * 0.5 : m;
    e = e + (big ? 1 : 0) - 53;
    const double s = (m - 1.0) / (m + 1.0);
    const double z = s * s;
    const double log_m = (2.0 * s) + ((2.0 * s) * (z * @LOG_SERIES@));
    const double ef = (double)e;
    return (ef * @LN2_HI@) + ((ef * @LN2_LO@) + log_m);
}
__device__ __forceinline__ double eagle_cos53(long long k) {
    const long long octant = k >> 50;
    long long f = k & ((1LL << 50) - 1);
    const bool odd = (octant & 1) == 1;
    f = odd ? (1LL << 50) - f : f;
    const double x = ((double)f * 0x1p-50) * @PI_4@;
    const double w = x * x;
    const double sin_x = x + (x * (w * @SIN_SERIES@));
    const double cos_x = (1.0 - (0.5 * w)) + (w * (w * @COS_SERIES@));
    const double cos_phi = odd ? sin_x : cos_x;
    const double sin_phi = odd ? cos_x : sin_x;
    const long long quadrant = octant >> 1;
    return quadrant == 0 ? cos_phi : quadrant == 1 ? -sin_phi : quadrant == 2 ? -cos_phi
                                                                             : sin_phi;
}
__device__ __forceinline__ double eagle_draw_normal64(unsigned long long seed, long long sample,
                                                      long long step, unsigned int position) {
    const EaglePhilox w = eagle_philox(seed, sample, step, position);
    const double radius = sqrt(eagle_log53(eagle_integer53(w.w0, w.w1) + 1) * -2.0);
    return radius * eagle_cos53(eagle_integer53(w.w2, w.w3));
}
__device__ __forceinline__ double eagle_draw_exponential64(unsigned long long seed,
                                                           long long sample, long long step,
                                                           unsigned int position) {
    const EaglePhilox w = eagle_philox(seed, sample, step, position);
    return -eagle_log53(eagle_integer53(w.w0, w.w1) + 1);
}
__device__ __forceinline__ long long eagle_draw_randint(unsigned long long seed, long long sample,
                                                        long long step, unsigned int position,
                                                        long long lo, long long hi) {
    const EaglePhilox w = eagle_philox(seed, sample, step, position);
    unsigned long long span = (unsigned long long)hi - (unsigned long long)lo;
    span = hi > lo ? (span < 0x100000000ull ? span : 0x100000000ull) : 0ull;
    const unsigned long long offset =
        ((unsigned long long)w.w0 * span + (((unsigned long long)w.w1 * span) >> 32)) >> 32;
    return (long long)((unsigned long long)lo + offset);
}
""".replace("@ROUNDS@", str(ROUNDS)).replace("@W0@", hex(W0)).replace("@W1@", hex(W1)) \
    .replace("@M0@", hex(M0)).replace("@M1@", hex(M1)).replace("@SQRT2@", SQRT2.hex()) \
    .replace("@LN2_HI@", LN2_HI.hex()).replace("@LN2_LO@", LN2_LO.hex()) \
    .replace("@PI_4@", PI_4.hex()) \
    .replace("@LOG_SHIFTS@", "\n".join(f"    e = e + {n} * ((k >> (e + {n})) != 0 ? 1 : 0);"
                                       for n in (32, 16, 8, 4, 2, 1))) \
    .replace("@LOG_SERIES@", horner_text("z", LOG_SERIES, _hex)) \
    .replace("@SIN_SERIES@", horner_text("w", SIN_SERIES, _hex)) \
    .replace("@COS_SERIES@", horner_text("w", COS_SERIES, _hex))


# The 32-bit and unsigned integers' // % abs and every integer's shifts, emitted only for a
# program that uses them (NumPy's semantics: // and % by zero give 0, Python's floor for signed
# operands; a shift count outside [0, bits) gives 0, or -1 for >> of a negative number).
_INTEGER_HELPERS = r"""
template <> __device__ __forceinline__ int eagle_floordiv(int a, int b) {
    if (b == 0) return 0;
    if (b == -1) return (int)(0u - (unsigned int)a);  // MIN // -1 wraps to MIN
    int q = a / b;
    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <> __device__ __forceinline__ int eagle_mod(int a, int b) {
    if (b == 0) return 0;
    int r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <> __device__ __forceinline__ unsigned int eagle_floordiv(unsigned int a,
                                                                   unsigned int b) {
    return b == 0u ? 0u : a / b; }
template <> __device__ __forceinline__ unsigned int eagle_mod(unsigned int a, unsigned int b) {
    return b == 0u ? 0u : a % b; }
template <> __device__ __forceinline__ unsigned long long eagle_floordiv(unsigned long long a,
                                                                         unsigned long long b) {
    return b == 0ull ? 0ull : a / b; }
template <> __device__ __forceinline__ unsigned long long eagle_mod(unsigned long long a,
                                                                    unsigned long long b) {
    return b == 0ull ? 0ull : a % b; }
__device__ __forceinline__ int eagle_abs(int a) { return a < 0 ? (int)(0u - (unsigned int)a) : a; }
__device__ __forceinline__ unsigned int eagle_abs(unsigned int a) { return a; }
__device__ __forceinline__ unsigned long long eagle_abs(unsigned long long a) { return a; }
#define EAGLE_SHIFTS(T, U, BITS) \
__device__ __forceinline__ T eagle_shl(T a, T b) { \
    return (b >= (T)0 && b < (T)BITS) ? (T)((U)a << b) : (T)0; } \
__device__ __forceinline__ T eagle_shr(T a, T b) { \
    return (b >= (T)0 && b < (T)BITS) ? (T)(a >> b) : (a < (T)0 ? (T)-1 : (T)0); }
EAGLE_SHIFTS(int, unsigned int, 32)
EAGLE_SHIFTS(long long, unsigned long long, 64)
EAGLE_SHIFTS(unsigned int, unsigned int, 32)
EAGLE_SHIFTS(unsigned long long, unsigned long long, 64)
"""
_NEW_INTEGERS = {DType.INT32, DType.UINT32, DType.UINT64}


# The IR's whole-matrix ops (hawk.ir.AGGREGATES) as loops over the thread's own memory: each
# is hawk.linalg's lu_factor or lu_substitute step for step, so a block holds the reference's
# elements (FMA contraction aside, as for every op).
_BLOCK_HELPERS = r"""
template <typename T>
__device__ void eagle_lu_factor(T* m, unsigned char* s, int n) {
    for (int k = 0; k < n; ++k) {
        for (int i = k + 1; i < n; ++i) {
            const bool swap = fabs(m[i * n + k]) > fabs(m[k * n + k]);
            s[k * n + i] = swap;
            if (swap) {
                for (int j = k; j < n; ++j) {
                    const T top = m[k * n + j];
                    m[k * n + j] = m[i * n + j];
                    m[i * n + j] = top;
                }
            }
        }
        if (k + 1 < n) {
            const T pivot = m[k * n + k];
            const bool zero_pivot = pivot == (T)0;
            for (int r = k + 1; r < n; ++r) {
                const T quotient = m[r * n + k] / pivot;
                const T factor = zero_pivot ? (T)0 : quotient;
                if (factor != (T)0)  // a zero factor's row is left as it is (hawk.linalg)
                    for (int c = k + 1; c < n; ++c)
                        m[r * n + c] = m[r * n + c] - factor * m[k * n + c];
                m[r * n + k] = factor;
            }
        }
    }
}

template <typename T>
__device__ void eagle_lu_solve(const T* m, const unsigned char* s, T* x, int n,
                                            int columns) {
    for (int k = 0; k < n; ++k) {
        for (int i = k + 1; i < n; ++i) {
            if (s[k * n + i]) {
                for (int j = 0; j < columns; ++j) {
                    const T top = x[k * columns + j];
                    x[k * columns + j] = x[i * columns + j];
                    x[i * columns + j] = top;
                }
            }
        }
        for (int r = k + 1; r < n; ++r) {
            const T factor = m[r * n + k];
            if (factor != (T)0)
                for (int c = 0; c < columns; ++c)
                    x[r * columns + c] = x[r * columns + c] - factor * x[k * columns + c];
        }
    }
    for (int i = n - 1; i >= 0; --i) {
        for (int c = 0; c < columns; ++c) {
            T value = x[i * columns + c];
            for (int j = i + 1; j < n; ++j)
                if (m[i * n + j] != (T)0) value = value - m[i * n + j] * x[j * columns + c];
            x[i * columns + c] = value / m[i * n + i];
        }
    }
}
"""


def _declared(a, names: list) -> list[str]:
    """The C lines of one of ``walk``'s assignments: a constant of the op's type, or for a
    whole-matrix op its block (a local array), filled and handed to its loop."""
    op, name, ctype = a.op, a.name, _C_TYPES[a.op.dtype]
    if op.kind not in AGGREGATES:
        return [f"const {ctype} {name} = {a.expression};"]
    elements = [names[i] for i in (op.args[1:] if op.kind is OpKind.LU_SOLVE else op.args)]
    lines = [f"{ctype} {name}[{len(elements)}];"]
    if op.kind is OpKind.LU:
        lines.append(f"unsigned char {name}_swaps[{len(elements)}];")
    common = block_fill_value(elements)
    if common is not None:  # a sparse matrix's zero: one loop, then the others
        lines.append(f"for (int q = 0; q < {len(elements)}; ++q) {name}[q] = {common};")
    lines += [f"{name}[{k}] = {value};" for k, value in enumerate(elements) if value != common]
    if op.kind is OpKind.LU:
        lines.append(f"eagle_lu_factor({name}, {name}_swaps, {op.attr});")
    else:
        factors = names[op.args[0]]
        lines.append(f"eagle_lu_solve({factors}, {factors}_swaps, {name}, {op.attr[0]}, "
                     f"{op.attr[1]});")
    return lines


def _uses_integer_helpers(program: Program) -> bool:
    return any(op.kind in (OpKind.LSHIFT, OpKind.RSHIFT) or op.dtype in _NEW_INTEGERS
               for op in program.ops)


class CudaRenderer(ExpressionRenderer):
    formats = {
        **ExpressionRenderer.formats,
        OpKind.MIN: "({1} < {0} ? {1} : {0})", OpKind.MAX: "({1} > {0} ? {1} : {0})",
        OpKind.SELECT: "({0} ? {1} : {2})",
        OpKind.FLOORDIV: "eagle_floordiv({0}, {1})", OpKind.MOD: "eagle_mod({0}, {1})",
        OpKind.ABS: "eagle_abs({0})",
        OpKind.AND: "({0} && {1})", OpKind.OR: "({0} || {1})", OpKind.NOT: "(!{0})",
        OpKind.BITAND: "({0} & {1})", OpKind.BITOR: "({0} | {1})", OpKind.BITXOR: "({0} ^ {1})",
        OpKind.INVERT: "(~{0})", OpKind.LSHIFT: "eagle_shl({0}, {1})",
        OpKind.RSHIFT: "eagle_shr({0}, {1})",
    }  # fmt: skip

    def literal(self, value, dtype: DType) -> str:
        if dtype is DType.BOOL:
            return "true" if value else "false"
        if dtype is DType.INT64:
            value = int(value)
            return "(-9223372036854775807LL - 1)" if value == -(2**63) else f"{value}LL"
        if dtype is DType.INT32:
            return f"((int)({int(value)}LL))"
        if dtype.is_unsigned:
            return f"(({_C_TYPES[dtype]}){int(value)}ull)"
        value = float(value)
        if math.isnan(value) or math.isinf(value):
            bits = {"nan": 0x7FF8000000000000, "inf": 0x7FF0000000000000,
                    "-inf": 0xFFF0000000000000}[self.float_text(value)]
            text = f"__longlong_as_double({bits:#x}ULL)"
        else:
            text = value.hex()
        return f"(float){text}" if dtype is DType.FLOAT32 else f"({text})"

    def cast(self, arg: str, dtype: DType) -> str:
        return f"(({_C_TYPES[dtype]}){arg})"

    def call(self, name: str, args: list[str], dtype: DType) -> str:
        function = _FLOAT32_NAMES[name] if dtype is DType.FLOAT32 else name
        return f"eagle_canonical_nan({function}({', '.join(args)}))"

    def render(self, op, args: list[str]) -> str:
        if op.kind is OpKind.SAMPLE_INDEX:
            return "sample_id"
        if op.kind is OpKind.STEP_INDEX:
            return "step_id"
        if op.kind is OpKind.TABLE_READ:  # element args[0] (in range) of p_NAME, the table
            return f"p_{op.attr}[{args[0]}]"
        if op.kind is OpKind.PART:  # element attr of the block args[0]
            return f"{args[0]}[{op.attr}]"
        if op.kind in AGGREGATES:  # declared by _declared, from the names of its elements
            return ""
        if op.kind is OpKind.DRAW:
            distribution, position = op.attr
            counters = f"seed, sample_id, step_id, {position}u"
            if distribution == "randint":
                return f"eagle_draw_randint({counters}, {args[0]}, {args[1]})"
            bits = 32 if distribution == "uniform" and op.dtype is DType.FLOAT32 else 64
            value = f"eagle_draw_{distribution}{bits}({counters})"  # float32: rounded
            return f"((float){value})" if op.dtype is DType.FLOAT32 and bits == 64 else value
        return super().render(op, args)


def slot_ctype(slot: Slot) -> str:
    """The C type of a kernel argument: a value for a ``Param``, a Series' row count and
    row stride or a Table's size, a pointer for an array (``const`` for a read-only input or
    a table's data)."""
    ctype = _C_TYPES[slot.dtype]
    if slot.is_uniform:
        return ctype
    qualifier = "const " if slot.param.role in (Role.SCALAR, Role.TABLE) else ""
    return f"{qualifier}{ctype}* __restrict__"


def _step_body(program: Program) -> list[str]:
    slots = {slot.key: slot for slot in program.slots}
    state = sorted({(s.param, s.component) for s in program.stores}, key=str)
    reads = sorted({op.attr for op in program.ops if op.kind is OpKind.LOAD} | set(state),
                   key=str)
    lines = []
    local = {}
    for key in reads:
        slot = slots[key]
        if slot.is_uniform:
            local[key] = slot.name
            continue
        local[key] = "s" + slot.name[1:]
        lines.append(f"{_C_TYPES[slot.param.dtype]} {local[key]} = {slot.name}[i];")
    if program.counters:  # the sample's stream (hawk.philox): its index, its first step
        lines += ["const long long sample_id = first_sample + i;",
                  "const long long first_step = control->steps;"]
    # What does not change from step to step (dt * omega * omega) is computed once.
    invariant = invariant_ops(program)
    hoisted, names = walk(program, CudaRenderer(), local.__getitem__, only=invariant)
    lines += [f"const {_C_TYPES[a.op.dtype]} {a.name} = {a.expression};" for a in hoisted]
    lines += ["bool done = false;", "while (taken < nsteps) {"]
    if program.counters:  # a live sample has taken every step of the launch so far
        lines.append("    const long long step_id = first_step + taken;")
    assignments, names = walk(program, CudaRenderer(), local.__getitem__,
                              known={i: names[i] for i in invariant})
    lines += [f"    {line}" for a in assignments for line in _declared(a, names)]
    # Series rows before the stores, which replace the loaded state values a row or value may
    # be: sample i's element of row r is p[r * row_stride + i] (the sample axis contiguous).
    for r in program.row_stores:
        array = slots[(r.param, r.component)].name
        rows, stride = (slots[(r.param, field)].name for field in ("rows", "row_stride"))
        row = names[r.row]
        guard = "" if r.guard is None else f"{names[r.guard]} && "
        lines.append(f"    if ({guard}{row} >= 0 && {row} < {rows}) "
                     f"{array}[{row} * {stride} + i] = {names[r.value]};")
    outputs = {(s.param, s.component) for s in program.stores
               if program.param(s.param).role is Role.OUT}
    stale = stale_reads(program, names, local.__getitem__)  # start-of-step values replaced
    lines += [f"    const {_C_TYPES[dtype]} {copy} = {value};"
              for value, (copy, dtype) in stale.items()]
    for store in program.stores:
        key = (store.param, store.component)
        value = names[store.value]
        value = stale[value][0] if value in stale else value
        if key in outputs and program.accumulate:
            value = f"{local[key]} + {value}"
        lines.append(f"    {local[key]} = {value};")
    lines.append("    ++taken;")
    if program.terminated is not None:
        lines += [f"    done = {names[program.terminated]};", "    if (done) break;"]
    lines.append("}")
    # The write-back (and the append) name the sample as eagle_sample(control, n, j) again, not
    # as i: ptxas may then load the index again rather than hold it across the steps (a loaded
    # index cannot be recomputed). Holding it cost the card's oscillator 40 registers instead
    # of 32 (sm_90, NVRTC 13.5), a quarter of its occupancy.
    lines.append("const long long at = eagle_sample(control, n, j);  // i")
    lines += [f"{slots[key].name}[at] = {local[key]};" for key in state]
    lines += ["flags[at] = done;", "live = !done;"]
    return lines


def emit_cuda(program: Program, min_blocks: int = MIN_BLOCKS_PER_SM) -> str:
    """CUDA C++ source defining ``eagle_step`` and ``eagle_decide`` for ``program``, the step
    kernel bounded so that ``min_blocks`` blocks fit on one SM; ``CompileFailed`` for a
    kernel whose parameters exceed ``MAX_PARAMETER_BYTES``."""
    check_parameter_space(program)
    counters = ["unsigned long long seed", "long long first_sample"] if program.counters else []
    arguments = ",\n    ".join(["long long n", "EagleControl* __restrict__ control",
                                "bool* __restrict__ flags",
                                *[f"{slot_ctype(slot)} {slot.name}" for slot in program.slots],
                                *counters])
    body = "\n        ".join(_step_body(program))
    return f"""\
// Generated by eagle from hawk kernel {program.name!r}. Do not edit.
{_HELPERS}{_RANDOM_HELPERS if program.counters else ""}\
{_INTEGER_HELPERS if _uses_integer_helpers(program) else ""}\
{_BLOCK_HELPERS if any(op.kind in AGGREGATES for op in program.ops) else ""}
extern "C" __global__ void __launch_bounds__({BLOCK_SIZE}, {min_blocks}) {STEP_KERNEL}(
    {arguments})
{{
    const long long nsteps = control->nsteps;
    if (nsteps <= 0) return;  // the run is over (the same for every thread of the grid)
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (eagle_sample(control, n, j - threadIdx.x) < 0) return;  // the block is past the list
    const long long i = eagle_sample(control, n, j);
    int live = 0;
    long long taken = 0;
    if (i >= 0 && !flags[i]) {{
        {body}
        EAGLE_OBSERVE_STEPS(j, taken);
    }}
    __shared__ long long warp_slot[{BLOCK_SIZE} / 32];  // a warp's live lanes, then its first slot
    const unsigned int lanes = __ballot_sync(0xffffffffu, live);
    if ((threadIdx.x & 31) == 0) warp_slot[threadIdx.x >> 5] = __popc(lanes);
    const int block_live = __syncthreads_count(live);  // the same value in every thread
    if (block_live > 0) {{
        // The block's live samples go to the out-list in thread order: one atomic reserves
        // their slots (and counts them for eagle_decide), each warp takes the next run of them.
        if (threadIdx.x == 0) {{
            long long slot = (long long)atomicAdd((eagle_u64*)&control->live,
                                                  (eagle_u64)block_live);
            for (unsigned int w = 0; w < (blockDim.x + 31) / 32; ++w) {{
                const long long lanes_of_w = warp_slot[w];
                warp_slot[w] = slot;
                slot += lanes_of_w;
            }}
        }}
        __syncthreads();
        if (live) {{
            const unsigned int below = lanes & ((1u << (threadIdx.x & 31)) - 1u);
            eagle_append(control, n, warp_slot[threadIdx.x >> 5] + __popc(below),
                         eagle_sample(control, n, j));
        }}
    }} else {{
        // A live sample took all nsteps steps (eagle_decide derives the slowest count), so only
        // a block with no live sample left reduces its threads' counts, with one atomicMax.
        __shared__ long long most[{BLOCK_SIZE} / 32];
        for (int offset = 16; offset > 0; offset >>= 1) {{
            const long long other = __shfl_down_sync(0xffffffffu, taken, offset);
            taken = other > taken ? other : taken;
        }}
        if ((threadIdx.x & 31) == 0) most[threadIdx.x >> 5] = taken;
        __syncthreads();
        if (threadIdx.x == 0) {{
            for (unsigned int w = 1; w < (blockDim.x + 31) / 32; ++w) {{
                taken = most[w] > taken ? most[w] : taken;
            }}
            if (taken > 0) atomicMax((eagle_u64*)&control->taken, (eagle_u64)taken);
        }}
    }}
}}

extern "C" __global__ void {START_KERNEL}(EagleControl* __restrict__ control)
{{
    // Opens a run inside a graph: the first launch's size, fresh per-run counters.
    const long long left = control->max_steps - control->steps;
    control->nsteps = left <= 0 ? 0 : (left < control->steps_per_launch
                                       ? left : control->steps_per_launch);
    control->live = 0;
    control->taken = 0;
    control->launches = 0;
    control->list_in = 0;  // the first launch takes every sample (one already done is skipped)
}}

extern "C" __global__ void {DECIDE_KERNEL}(EagleControl* __restrict__ control,
                                        cudaGraphConditionalHandle handle, int set_condition)
{{
    if (control->nsteps <= 0) {{  // the run was over before this launch
        if (set_condition) cudaGraphSetConditional(handle, 0u);
        return;
    }}
    const long long live = control->live;
    control->steps += live > 0 ? control->nsteps : control->taken;
    control->launches += 1;
    control->last_live = live;
    long long size = control->steps_per_launch;
    if (control->grow_until > size && (live >= control->full || live <= control->spread)) {{
        size = 2 * size < control->grow_until ? 2 * size : control->grow_until;
        control->steps_per_launch = size;
    }}
    const long long left = control->max_steps - control->steps;
    const bool again = live > 0 && left > 0;
    control->nsteps = again ? (left < size ? left : size) : 0;
    control->count = live;  // the next launch takes the samples this one left live
    control->list_in = control->list_in == 1 ? 2 : 1;  // its out-list is the next in-list
    control->live = 0;
    control->taken = 0;
    if (control->progress != 0) {{  // host-mapped memory a host thread polls (progress=True)
        volatile long long* progress = (volatile long long*)control->progress;
        progress[0] = control->last_live;
        progress[1] = control->steps;
    }}
    if (set_condition) cudaGraphSetConditional(handle, again ? 1u : 0u);
}}
"""
