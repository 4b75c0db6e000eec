"""CUDA kernels of the GPU numerics checker (`numerics measure --checker gpu`), compiled by NVRTC
to a cubin (CPU only, so a machine without a GPU can build and test them).

`pack_operands` draws operand codes on the device (the operand stream, `ns_code`) straight into
the register words or shared-memory images the tensor-core kernels of
`tcgen05_conformance.device.inner_product_kernels` read: a table says, for each byte of a tile's words, which
element's byte goes there (`so_table_word`, which `stream_words` shares). `check_tiles` redraws each tile's A, B and C into shared memory, runs
the integer checker (`ck_dot`) on every element of D, compares it with the tensor core's result
bit for bit, counts checked elements and mismatches (atomics), records the first mismatches
(tile, element, silicon, checker) and keeps checker and silicon values of the sample tiles.
`decode_operands` turns the operand codes of a batch of matrix products (A [P, M, K], B [P, N,
K_B], C [P, M, N] in one buffer; a structured-sparse A's rows select their B elements by `columns`
[P, M, K], bytes after them; a block-scaled kind's scale factors after those) into the checker's
terms in place, each once; `reference_products` then computes D = A B + C with the checker, one
block per program, straight into the words the campaign's tensor-core kernel stores (a table
gives each word's elements), so that a campaign compares words with words.
The stream data sets' kernels draw a whole program's data on the device, each byte a pure function
of (seed, tile, row, column) that `tcgen05_conformance.generators.stream_operands` (their numpy twin) redraws on the
host: `stream_words` the register or shared-memory words of a program from its word table (operand
bytes by `so_code`, exact-table or `ns_code` codes; filler bytes; zero bytes), `stream_metadata`
the structured-sparse metadata word of each thread (legal nibbles; unselected threads' words
random), `stream_columns` the logical column of each stored A element that metadata selects,
`stream_operand` one operand's codes [P, rows, cols] (redrawn, or read back from the programs'
images through an address map; each program's imm-scale or scale-d applied), and `sample_rows`
the sampled programs' rows of three arrays gathered for one copy back. `reference_products` also
counts, per program, the words in which the tensor core's differ from the checker's.
The operand stream and the checker are C headers of other floors (`generators/numeric_stream.h`,
`oracles/numerics/checker.h`): the caller passes their text to `source`."""

from __future__ import annotations

import re

from tcgen05_conformance.device.kernel_jobs import JobKernel, parameters

THREADS = 256  # per block of the element-wise kernels (drawing, the campaign's checker)
#: Blocks per SM the checker's registers must leave room for: `reference_products` is latency-bound,
#: so more resident warps beat registers kept from spilling (reports/campaign-checker-speed/).
CHECKER_BLOCKS_PER_SM = 4
RECORD_WORDS = 5  # a mismatch record: tile low word, tile high word, element m * N + n, silicon, checker

KERNELS = r"""
#define JOB_KERNEL __device__ inline  // launched over a table of jobs: tcgen05_conformance.device.kernel_jobs
// Stream data sets (the numpy twin: generators/stream_operands.py). so_code draws element (row, col)
// of operand op (0 A, 1 B, 2 C) of a tile: ns_code, or with `exact` a code of the operand's table
// (A's, B's and C's concatenated in exact_codes, their lengths in exact_lengths) picked by the
// element's hash. B draws from params_b, A and C from params_a.
#define SO_OP_FILLER 3
#define SO_OP_METADATA 4
#define SO_OP_UNSELECTED 5

__device__ inline unsigned so_code(const ns_params* a, const ns_params* b, unsigned exact, const unsigned* exact_codes,
                                   const unsigned* exact_lengths, int op, ns_u64 tile, int row, int col) {
  const ns_params* p = op == NS_OP_B ? b : a;
  if (!exact) return ns_code(p, op, tile, row, col);
  unsigned start = 0;
  for (int o = 0; o < op; o++) start += exact_lengths[o];
  return exact_codes[start + ns_element_hash(ns_row_key(p, op, tile, row), col) % exact_lengths[op]];
}

// Word i of a per-tile stream of its own (filler bytes, unselected threads' metadata words).
__device__ inline unsigned so_stream_word(const ns_params* a, int op, ns_u64 tile, ns_u64 i) {
  return (unsigned)ns_mix(ns_row_key(a, op, tile, 0) + i);
}

// Metadata nibble g of row m: one of the legal nibbles (0b0100, 0b1110 for field_bits 2; the six
// 2:4 index pairs for field_bits 1), packed four bits each into one constant.
__device__ inline unsigned so_nibble(const ns_params* a, ns_u64 tile, int row, int g, unsigned field_bits) {
  ns_u64 h = ns_element_hash(ns_row_key(a, SO_OP_METADATA, tile, row), g);
  return field_bits == 2 ? (unsigned)((0xE4u >> (4 * (h % 2))) & 15) : (unsigned)((0xED9C84u >> (4 * (h % 6))) & 15);
}

// Word w of a table-driven image: byte `byte` of it from table row `row` (op << 24 | row << 16 |
// col << 8 | byte of the element, or -1: a zero byte; a filler entry's "code" is the filler word
// of (tile, w)), each element drawn once for its consecutive bytes.
__device__ inline unsigned so_table_word(const ns_params* a, const ns_params* b, unsigned exact, const unsigned* exact_codes,
                                         const unsigned* exact_lengths, ns_u64 tile, unsigned w, const int* row) {
  unsigned word = 0, code = 0;
  int last = -1;
  for (int byte = 0; byte < 4; byte++) {
    int e = row[byte];
    if (e < 0) continue;
    int op = (e >> 24) & 3;
    if ((e >> 8) != last) {
      code = op == SO_OP_FILLER ? so_stream_word(a, SO_OP_FILLER, tile, w)
                                : so_code(a, b, exact, exact_codes, exact_lengths, op, tile, (e >> 16) & 0xFF, (e >> 8) & 0xFF);
      last = e >> 8;
    }
    int from = op == SO_OP_FILLER ? byte : (e & 3);
    word |= ((code >> (8 * from)) & 0xFFu) << (8 * byte);
  }
  return word;
}

// The checker's parameters, read once per block into shared memory (each thread reading the whole
// array costs more than the few products it then computes).
__device__ inline const ck_params& ck_shared_parameters(const long long* checker) {
  static __shared__ ck_params P;  // static: one per block on the GPU, one in all on the CPU build
  __syncthreads();  // no thread still reads a previous job's
  if (threadIdx.x == 0) P = ck_from_array(checker);
  __syncthreads();
  return P;
}

// The numerics checker's kernels: B draws from stream_b (its own format where the inputs are mixed),
// A and C from stream_a.
extern "C" __global__ void pack_operands(const ns_u64* stream_a, const ns_u64* stream_b, ns_u64 tile0, unsigned tiles,
                                         const int* table, unsigned words_per_tile, unsigned* out) {
  ns_params a = ns_from_array(stream_a), b = ns_from_array(stream_b);
  ns_u64 total = (ns_u64)tiles * words_per_tile;
  for (ns_u64 i = blockIdx.x * (ns_u64)blockDim.x + threadIdx.x; i < total; i += (ns_u64)gridDim.x * blockDim.x) {
    unsigned w = (unsigned)(i % words_per_tile);
    out[i] = so_table_word(&a, &b, 0, nullptr, nullptr, tile0 + i / words_per_tile, w, table + w * 4);
  }
}

extern "C" __global__ void check_tiles(const long long* checker, const ns_u64* stream_a, const ns_u64* stream_b,
                                       ns_u64 tile0, unsigned tiles,
                                       unsigned rows, unsigned cols, const unsigned* d, unsigned d_tile_words,
                                       const unsigned* d_offset, unsigned acc_bytes, unsigned sample_tiles,
                                       unsigned* sample_checker, unsigned* sample_silicon, ns_u64* counters,
                                       unsigned* records, unsigned max_records) {
  extern __shared__ unsigned tile_codes[];
  ck_params P = ck_from_array(checker);
  ns_params G = ns_from_array(stream_a), GB = ns_from_array(stream_b);
  const unsigned K = P.k;
  unsigned* A = tile_codes;
  unsigned* B = A + rows * K;
  unsigned* C = B + cols * K;
  ns_u64 checked = 0;
  for (unsigned t = blockIdx.x; t < tiles; t += gridDim.x) {
    ns_u64 g = tile0 + t;
    for (unsigned i = threadIdx.x; i < rows * K; i += blockDim.x) A[i] = ck_term_of(&P, CK_A, ns_code(&G, NS_OP_A, g, i / K, i % K));
    for (unsigned i = threadIdx.x; i < cols * K; i += blockDim.x) B[i] = ck_term_of(&P, CK_B, ns_code(&GB, NS_OP_B, g, i / K, i % K));
    for (unsigned i = threadIdx.x; i < rows * cols; i += blockDim.x) C[i] = ns_code(&G, NS_OP_C, g, i / cols, i % cols);
    __syncthreads();
    for (unsigned e = threadIdx.x; e < rows * cols; e += blockDim.x) {
      unsigned m = e / cols, n = e % cols;
      ck_operands o = {A + m * K, B + n * K, nullptr, nullptr, nullptr};
      unsigned want = ck_dot(&P, &o, C[e]);
      unsigned off = d_offset[e];
      unsigned word = d[(ns_u64)t * d_tile_words + off / 4];
      unsigned got = acc_bytes == 4 ? word : (word >> (8 * (off % 4))) & 0xFFFFu;
      if (got != want) {
        ns_u64 slot = atomicAdd(&counters[1], 1ull);
        if (slot < max_records) {
          unsigned* r = records + slot * 5;
          r[0] = (unsigned)g; r[1] = (unsigned)(g >> 32); r[2] = e; r[3] = got; r[4] = want;
        }
      }
      if (g < sample_tiles) {
        sample_checker[g * rows * cols + e] = want;
        sample_silicon[g * rows * cols + e] = got;
      }
      checked++;
    }
    __syncthreads();
  }
  atomicAdd(&counters[0], checked);
}

JOB_KERNEL void decode_operands(const long long* checker, unsigned* operands, ns_u64 a_words, ns_u64 b_at,
                                ns_u64 b_words, ns_u64 scales_at, ns_u64 scale_words) {
  // the codes of A, B and a block-scaled kind's scale factors (A's then B's) in the operand buffer
  // of `reference_products`, turned into the checker's terms in place (ck_term_of): each is read
  // by a whole row or column of D, and decoded once here
  const ck_params& P = ck_shared_parameters(checker);
  const ns_u64 total = a_words + b_words + scale_words;
  for (ns_u64 i = blockIdx.x * (ns_u64)blockDim.x + threadIdx.x; i < total; i += (ns_u64)gridDim.x * blockDim.x) {
    if (i < a_words) operands[i] = ck_term_of(&P, CK_A, operands[i]);
    else if (i < a_words + b_words) operands[b_at + i - a_words] = ck_term_of(&P, CK_B, operands[b_at + i - a_words]);
    else operands[scales_at + i - a_words - b_words] = ck_term_of(&P, CK_SCALE, operands[scales_at + i - a_words - b_words]);
  }
}

JOB_KERNEL void reference_products(const long long* checker, unsigned products, unsigned rows, unsigned cols,
                                   const unsigned* operands, unsigned b_k, ns_u64 b_at, ns_u64 c_at,
                                   ns_u64 columns_at, unsigned sparse, ns_u64 scales_at, const int* word_elements,
                                   unsigned words, unsigned per_word, unsigned bits, unsigned* out,
                                   const unsigned* observed, unsigned* differing) {
  // A and B as terms (`decode_operands`), C as codes, the columns (bytes) and the scale factors'
  // terms (A's [P, M, F], then B's [P, N, F]; none when scales_at is 0) in one buffer, at word
  // offsets 0, b_at, c_at, columns_at and scales_at; with `observed` (the tensor core's words,
  // else null), each program's count of words that differ from the checker's is added to
  // differing[program]
  const unsigned *a = operands, *b = operands + b_at, *c = operands + c_at;
  const unsigned char* columns = (const unsigned char*)(operands + columns_at);
  const ck_params& P = ck_shared_parameters(checker);
  const unsigned K = P.k, factors = P.block ? K / P.block : 0;
  const unsigned* a_scales = operands + scales_at;
  const unsigned* b_scales = a_scales + (ns_u64)products * rows * factors;
  const unsigned mask = bits == 32 ? 0xFFFFFFFFu : (1u << bits) - 1;
  // a block per program: its threads read one program's terms (no division finds the program)
  for (unsigned p = blockIdx.x; p < products; p += gridDim.x) {
    for (unsigned w = threadIdx.x; w < words; w += blockDim.x) {
      unsigned word = 0;
      for (unsigned j = 0; j < per_word; j++) {
        int e = word_elements[w * per_word + j];  // the element m * cols + n the word holds at bit j * bits
        if (e < 0) continue;
        unsigned m = (unsigned)e / cols, n = (unsigned)e % cols;
        ns_u64 row = (ns_u64)p * rows + m, column = (ns_u64)p * cols + n;
        // a sparse row m multiplies its stored A elements by the B elements its metadata selects
        ck_operands o = {a + row * K, b + column * b_k, a_scales + row * factors, b_scales + column * factors,
                         sparse ? columns + row * K : nullptr};
        unsigned code = ck_dot(&P, &o, c[row * cols + n]);
        word |= (code & mask) << (j * bits);
      }
      ns_u64 i = (ns_u64)p * words + w;
      out[i] = word;
      if (observed != nullptr && observed[i] != word) atomicAdd(&differing[p], 1u);
    }
  }
}
JOB_KERNEL void stream_words(const ns_u64* params_a, const ns_u64* params_b, unsigned exact,
                                        const unsigned* exact_codes, const unsigned* exact_lengths, unsigned programs,
                                        const ns_u64* tiles, const unsigned* table_at, const int* tables, unsigned words,
                                        unsigned* out) {
  ns_params a = ns_from_array(params_a), b = ns_from_array(params_b);
  ns_u64 total = (ns_u64)programs * words;
  for (ns_u64 i = blockIdx.x * (ns_u64)blockDim.x + threadIdx.x; i < total; i += (ns_u64)gridDim.x * blockDim.x) {
    ns_u64 p = i / words;
    unsigned w = (unsigned)(i % words);
    // this program's table (its own, at row table_at[p]), word w
    out[i] = so_table_word(&a, &b, exact, exact_codes, exact_lengths, tiles[p], w, tables + ((ns_u64)table_at[p] + w) * 4);
  }
}

JOB_KERNEL void stream_metadata(const ns_u64* params_a, unsigned programs, const ns_u64* tiles, unsigned threads,
                                           const int* cells, unsigned values, const unsigned char* selected,
                                           unsigned field_bits, unsigned k_logical, unsigned* out, unsigned program_stride,
                                           unsigned thread_stride, unsigned offset) {
  ns_params a = ns_from_array(params_a);
  const unsigned per_nibble = 4 / field_bits, mask = (1u << field_bits) - 1, spacing = 32 / values;
  ns_u64 total = (ns_u64)programs * threads;
  for (ns_u64 i = blockIdx.x * (ns_u64)blockDim.x + threadIdx.x; i < total; i += (ns_u64)gridDim.x * blockDim.x) {
    ns_u64 p = i / threads, tile = tiles[p];
    unsigned t = (unsigned)(i % threads), word = 0;
    if (!selected[t]) {
      word = so_stream_word(&a, SO_OP_UNSELECTED, tile, t);
    } else {
      for (unsigned v = 0; v < values; v++) {  // cell: logical metadata element row * k_logical + col
        unsigned cell = (unsigned)cells[t * values + v], col = cell % k_logical;
        unsigned nibble = so_nibble(&a, tile, (int)(cell / k_logical), (int)(col / per_nibble), field_bits);
        word |= ((nibble >> (field_bits * (col % per_nibble))) & mask) << (v * spacing);
      }
    }
    out[p * program_stride + (ns_u64)t * thread_stride + offset] = word;
  }
}

JOB_KERNEL void stream_columns(const ns_u64* params_a, unsigned programs, const ns_u64* tiles, unsigned rows,
                                          unsigned k_stored, unsigned field_bits, unsigned char* out) {
  ns_params a = ns_from_array(params_a);
  ns_u64 total = (ns_u64)programs * rows * k_stored;
  for (ns_u64 i = blockIdx.x * (ns_u64)blockDim.x + threadIdx.x; i < total; i += (ns_u64)gridDim.x * blockDim.x) {
    ns_u64 p = i / ((ns_u64)rows * k_stored);
    unsigned m = (unsigned)(i / k_stored % rows), j = (unsigned)(i % k_stored);
    // tf32: which half of pair j; 2:4: index j % 2 of the nibble of group j / 2
    out[i] = field_bits == 2 ? (unsigned char)(2 * j + ((so_nibble(&a, tiles[p], m, j, 2) & 3) >> 1))
                             : (unsigned char)(4 * (j / 2) + ((so_nibble(&a, tiles[p], m, j / 2, 1) >> (2 * (j % 2))) & 3));
  }
}

JOB_KERNEL void stream_operand(const ns_u64* params_a, const ns_u64* params_b, unsigned exact,
                                          const unsigned* exact_codes, const unsigned* exact_lengths, unsigned op,
                                          unsigned programs, const ns_u64* tiles, unsigned rows, unsigned cols,
                                          const unsigned char* images, ns_u64 image_bytes, const unsigned* address_at,
                                          const unsigned* addresses, unsigned element_bytes, const unsigned* masks,
                                          unsigned keep, unsigned* out) {
  // with `masks` (else null), each program's codes xor its mask (imm-scale -1: sign bits flipped),
  // or with `keep`, and its mask (scale-d)
  ns_params a = ns_from_array(params_a), b = ns_from_array(params_b);
  ns_u64 total = (ns_u64)programs * rows * cols;
  for (ns_u64 i = blockIdx.x * (ns_u64)blockDim.x + threadIdx.x; i < total; i += (ns_u64)gridDim.x * blockDim.x) {
    ns_u64 p = i / ((ns_u64)rows * cols);
    unsigned e = (unsigned)(i % ((ns_u64)rows * cols)), value = 0;
    if (images != nullptr) {  // the element as the program's image holds it, little-endian
      const unsigned char* at = images + p * image_bytes + addresses[(ns_u64)address_at[p] + e];
      for (unsigned k = 0; k < element_bytes; k++) value |= (unsigned)at[k] << (8 * k);
    } else {
      value = so_code(&a, &b, exact, exact_codes, exact_lengths, (int)op, tiles[p], (int)(e / cols), (int)(e % cols));
    }
    if (masks != nullptr) value = keep ? (value & masks[p]) : (value ^ masks[p]);
    out[i] = value;
  }
}

JOB_KERNEL void sample_rows(const unsigned* rows, unsigned count, const unsigned* first, unsigned first_words,
                                       const unsigned* second, unsigned second_words, const unsigned* third,
                                       unsigned third_words, unsigned* out) {
  // rows `rows` of three arrays [*, first_words], [*, second_words], [*, third_words], the first's
  // rows, then the second's, then the third's: a sample read back in one copy
  const unsigned row_words = first_words + second_words + third_words;
  ns_u64 total = (ns_u64)count * row_words;
  for (ns_u64 i = blockIdx.x * (ns_u64)blockDim.x + threadIdx.x; i < total; i += (ns_u64)gridDim.x * blockDim.x) {
    ns_u64 at = i;
    const unsigned* source = first;
    unsigned words = first_words;
    if (at >= (ns_u64)count * first_words) {
      at -= (ns_u64)count * first_words;
      source = second, words = second_words;
      if (at >= (ns_u64)count * second_words) at -= (ns_u64)count * second_words, source = third, words = third_words;
    }
    out[i] = source[(ns_u64)rows[at / words] * words + at % words];
  }
}
"""


def _job_kernels() -> dict[str, JobKernel]:
    """The JOB_KERNEL functions of KERNELS, by name, their parameters read from their definitions."""
    found = re.findall(r"JOB_KERNEL void (\w+)\(([^)]*)\)", KERNELS)
    bounds = {"reference_products": (THREADS, CHECKER_BLOCKS_PER_SM)}
    return {name: JobKernel(name, parameters(signature), bounds.get(name)) for name, signature in found}


JOB_KERNELS = _job_kernels()


def source(stream_header: str, checker_header: str) -> str:
    """The whole CUDA translation unit: both headers (as device and host code), the kernels, and the
    kernel that runs each JOB_KERNEL over a table of jobs (`tcgen05_conformance.device.kernel_jobs`)."""
    jobs = "".join(kernel.source() for kernel in JOB_KERNELS.values())
    return ("#define NS_HD __host__ __device__\n#define CK_HD __host__ __device__\n"
            f"{stream_header}\n{checker_header}\n{KERNELS}\n{jobs}")


#: Definitions that make `source` a host C++ program (g++): every kernel launched as one block of
#: one thread, whose strided loops then cover the whole grid's work and whose barriers are no-ops.
#: Tests call the kernels through it, on the CPU, exactly as written for the GPU.
HOST_STAND_IN = r"""
#define __launch_bounds__(threads, blocks)
#define __global__
#define __shared__
#define __host__
#define __device__
struct stand_in_dim3 { unsigned x, y, z; };
static const stand_in_dim3 threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0}, blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
static inline void __syncthreads() {}
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  unsigned long long old = *p;
  *p += v;
  return old;
}
static inline unsigned atomicAdd(unsigned* p, unsigned v) {
  unsigned old = *p;
  *p += v;
  return old;
}
unsigned tile_codes[64 * 32 * 2 + 64 * 64];  // the largest tile: wgmma m64n64k32
"""


def host_library(cuda_source: str, directory: str):
    """`cuda_source` compiled for this CPU through `HOST_STAND_IN` (g++) and loaded with ctypes;
    RuntimeError with the compiler's message when g++ is missing or fails."""
    from tcgen05_conformance.core.host_build import shared_library

    return shared_library(HOST_STAND_IN + cuda_source, directory, "kernels", "the CPU build of the checker kernels")


def nvrtc_version() -> str:
    """NVRTC's version, e.g. "13.0"."""
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise NvrtcError(f"NVRTC error {err.name}")
    return f"{major}.{minor}"


class NvrtcError(RuntimeError):
    """NVRTC is missing or refused the source; the message carries its log."""


def compile_cubin(cuda_source: str, arch: str = "sm_90a") -> bytes:
    """The cubin of a CUDA C++ source for `arch`, by NVRTC (cuda.bindings; the library from the
    nvidia-cuda-nvrtc wheel or a CUDA installation)."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise NvrtcError(f"NVRTC is not available (cuda-bindings): {e}") from None

    def ok(result):
        err, *rest = result
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise NvrtcError(f"NVRTC error {err.name}")
        return rest[0] if len(rest) == 1 else rest

    try:
        program = ok(nvrtc.nvrtcCreateProgram(cuda_source.encode(), b"numerics_check.cu", 0, [], []))
    except RuntimeError as e:  # the library itself could not be loaded
        raise NvrtcError(f"NVRTC is not available: {e}") from None
    options = [f"--gpu-architecture={arch}".encode(), b"-std=c++17"]
    err, = nvrtc.nvrtcCompileProgram(program, len(options), options)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        size = ok(nvrtc.nvrtcGetProgramLogSize(program))
        log = b" " * size
        ok(nvrtc.nvrtcGetProgramLog(program, log))
        raise NvrtcError(f"NVRTC failed: {log.decode(errors='replace').strip()}")
    size = ok(nvrtc.nvrtcGetCUBINSize(program))
    cubin = b" " * size
    ok(nvrtc.nvrtcGetCUBIN(program, cubin))
    return cubin
