"""CUDA kernels of the GPU numerics checker (`numerics measure --checker gpu`), compiled by NVRTC
to a cubin (CPU only, so a machine without a GPU can build and test them).

`pack_operands` draws operand codes on the device (the operand stream, `ns_code`) straight into
the register words or shared-memory images the tensor-core kernels of
`device.inner_product_kernels` read: a table says, for each byte of a tile's words, which
element's byte goes there. `check_tiles` redraws each tile's A, B and C into shared memory, runs
the integer checker (`ck_dot`) on every element of D, compares it with the tensor core's result
bit for bit, counts checked elements and mismatches (atomics), records the first mismatches
(tile, element, silicon, checker) and keeps checker and silicon values of the sample tiles.
`reference_products` computes D = A B + C of a batch of matrix products from their operand codes
(A [P, M, K], B [P, N, K_B], C [P, M, N] in one buffer; a structured-sparse A's rows select their
B elements by `columns` [P, M, K], bytes after them) with the checker, straight into the words the campaign's tensor-core kernel
stores (a table gives each word's elements), so that a campaign compares words with words.
The operand stream and the checker are C headers of other floors (`generators/numeric_stream.h`,
`oracles/numerics/checker.h`): the caller passes their text to `source`."""

from __future__ import annotations

RECORD_WORDS = 5  # a mismatch record: tile low word, tile high word, element m * N + n, silicon, checker

KERNELS = r"""
extern "C" __global__ void pack_operands(const ns_u64* stream, ns_u64 tile0, unsigned tiles, const int* table,
                                         unsigned words_per_tile, unsigned* out) {
  ns_params p = ns_from_array(stream);
  ns_u64 total = (ns_u64)tiles * words_per_tile;
  for (ns_u64 i = blockIdx.x * (ns_u64)blockDim.x + threadIdx.x; i < total; i += (ns_u64)gridDim.x * blockDim.x) {
    ns_u64 t = i / words_per_tile;
    unsigned w = (unsigned)(i % words_per_tile), word = 0, code = 0;
    int last = -1;
    for (int byte = 0; byte < 4; byte++) {
      int e = table[w * 4 + byte];  // op << 24 | row << 16 | col << 8 | byte of the element, or -1
      if (e < 0) continue;
      if ((e >> 8) != last) {
        code = ns_code(&p, (e >> 24) & 3, tile0 + t, (e >> 16) & 0xFF, (e >> 8) & 0xFF);
        last = e >> 8;
      }
      word |= ((code >> (8 * (e & 3))) & 0xFFu) << (8 * byte);
    }
    out[i] = word;
  }
}

extern "C" __global__ void check_tiles(const long long* checker, const ns_u64* stream, ns_u64 tile0, unsigned tiles,
                                       unsigned rows, unsigned cols, const unsigned* d, unsigned d_tile_words,
                                       const unsigned* d_offset, unsigned acc_bytes, unsigned sample_tiles,
                                       unsigned* sample_checker, unsigned* sample_silicon, ns_u64* counters,
                                       unsigned* records, unsigned max_records) {
  extern __shared__ unsigned tile_codes[];
  ck_params P = ck_from_array(checker);
  ns_params G = ns_from_array(stream);
  const unsigned K = P.k;
  unsigned* A = tile_codes;
  unsigned* B = A + rows * K;
  unsigned* C = B + cols * K;
  ns_u64 checked = 0;
  for (unsigned t = blockIdx.x; t < tiles; t += gridDim.x) {
    ns_u64 g = tile0 + t;
    for (unsigned i = threadIdx.x; i < rows * K; i += blockDim.x) A[i] = ns_code(&G, NS_OP_A, g, i / K, i % K);
    for (unsigned i = threadIdx.x; i < cols * K; i += blockDim.x) B[i] = ns_code(&G, NS_OP_B, g, i / K, i % K);
    for (unsigned i = threadIdx.x; i < rows * cols; i += blockDim.x) C[i] = ns_code(&G, NS_OP_C, g, i / cols, i % cols);
    __syncthreads();
    for (unsigned e = threadIdx.x; e < rows * cols; e += blockDim.x) {
      unsigned m = e / cols, n = e % cols;
      unsigned want = ck_dot(&P, A + m * K, B + n * K, C[e]);
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

extern "C" __global__ void reference_products(const long long* checker, unsigned products, unsigned rows, unsigned cols,
                                              const unsigned* operands, unsigned b_k, ns_u64 b_at, ns_u64 c_at,
                                              ns_u64 columns_at, unsigned sparse, const int* word_elements,
                                              unsigned words, unsigned per_word, unsigned bits, unsigned* out) {
  // A, B, C and the columns (bytes) in one buffer, at word offsets 0, b_at, c_at and columns_at
  const unsigned *a = operands, *b = operands + b_at, *c = operands + c_at;
  const unsigned char* columns = (const unsigned char*)(operands + columns_at);
  ck_params P = ck_from_array(checker);
  const unsigned K = P.k;
  const unsigned mask = bits == 32 ? 0xFFFFFFFFu : (1u << bits) - 1;
  const ns_u64 total = (ns_u64)products * words;
  unsigned selected[CK_MAX_K];
  for (ns_u64 i = blockIdx.x * (ns_u64)blockDim.x + threadIdx.x; i < total; i += (ns_u64)gridDim.x * blockDim.x) {
    ns_u64 p = i / words;
    unsigned w = (unsigned)(i % words), word = 0;
    for (unsigned j = 0; j < per_word; j++) {
      int e = word_elements[w * per_word + j];  // the element m * cols + n the word holds at bit j * bits
      if (e < 0) continue;
      unsigned m = (unsigned)e / cols, n = (unsigned)e % cols;
      ns_u64 row = p * rows + m;
      const unsigned* b_row = b + (p * cols + n) * b_k;
      if (sparse) {  // row m multiplies its stored A elements by the B elements its metadata selects
        for (unsigned k = 0; k < K; k++) selected[k] = b_row[columns[row * K + k]];
        b_row = selected;
      }
      unsigned code = ck_dot(&P, a + row * K, b_row, c[row * cols + n]);
      word |= (code & mask) << (j * bits);
    }
    out[i] = word;
  }
}
"""


def source(stream_header: str, checker_header: str) -> str:
    """The whole CUDA translation unit: both headers (as device and host code), then the kernels."""
    return ("#define NS_HD __host__ __device__\n#define CK_HD __host__ __device__\n"
            f"{stream_header}\n{checker_header}\n{KERNELS}")


#: Definitions that make `source` a host C++ program (g++): every kernel launched as one block of
#: one thread, whose strided loops then cover the whole grid's work and whose barriers are no-ops.
#: Tests call the kernels through it, on the CPU, exactly as written for the GPU.
HOST_STAND_IN = r"""
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
unsigned tile_codes[64 * 32 * 2 + 64 * 64];  // the largest tile: wgmma m64n64k32
"""


def host_library(cuda_source: str, directory: str):
    """`cuda_source` compiled for this CPU through `HOST_STAND_IN` (g++) and loaded with ctypes;
    RuntimeError with the compiler's message when g++ is missing or fails."""
    import ctypes
    import shutil
    import subprocess
    from pathlib import Path

    gxx = shutil.which("g++")
    if gxx is None:
        raise RuntimeError("g++ not found: the CPU build of the checker kernels needs a C++ compiler")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    (out / "kernels.cpp").write_text(HOST_STAND_IN + cuda_source)
    done = subprocess.run([gxx, "-O2", "-shared", "-fPIC", "-std=c++17", str(out / "kernels.cpp"), "-o",
                           str(out / "kernels.so")], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"g++ failed on the checker kernels: {done.stderr.strip()}")
    return ctypes.CDLL(str(out / "kernels.so"))


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
