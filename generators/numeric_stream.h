// Counter-based operand codes for the GPU numerics checker: every code is a pure function of
// (seed, combination, operand, tile, row, column), so a GPU kernel and numpy
// (generators/numeric_stream.py, its vectorised twin) draw the same tiles without exchanging them.
// Compiles as C++ for the host (g++) and for the device (NVRTC, with NS_HD defined as
// __host__ __device__ first). The hash is the splitmix64 finaliser (Steele, Lea, Flood, "Fast
// splittable pseudorandom number generators", OOPSLA 2014); the value families follow
// generators/numeric_vectors.py.
#ifndef NUMERIC_STREAM_H
#define NUMERIC_STREAM_H

#ifndef NS_HD
#define NS_HD
#endif

typedef unsigned long long ns_u64;
typedef unsigned int ns_u32;

#define NS_OP_A 0
#define NS_OP_B 1
#define NS_OP_C 2

// Row families of float A and B rows; the 4 top bits of the row key pick a slot, the slot's
// nibble in NS_FLOAT_ROWS the family (so the weights are the nibble counts).
#define NS_UNIFORM 0    // every bit pattern, NaN/Inf/subnormals included (1 of 16)
#define NS_FINITE 1     // every finite bit pattern (1)
#define NS_CLUSTER 2    // exponents within 2 of a row centre, random signs: products cancel (5)
#define NS_CANCEL 3     // pairs (2j, 2j+1) equal in B, opposite in A: products cancel exactly (3)
#define NS_SUBNORMAL 4  // exponent field 0 (three in four) or 1 (1)
#define NS_HUGE 5       // the two largest finite exponents (1)
#define NS_SPARSE 6     // zeros of both signs, one cluster value in eight (1)
#define NS_SPECIAL 7    // cluster values, one NaN or Inf in 64 (1)
#define NS_LOW 8        // a cluster near 2**(-19/32 bias): products of two such rows fall in the
                        // accumulator's subnormal range, where align_floor matters (2)
#define NS_FLOAT_ROWS 0x8876543332222210ull
// c of a float accumulator, per element: zero (3), tiny (2), near 1 (5), dominant (2),
// every bit pattern (3), NaN or Inf (1).
#define NS_FLOAT_C 0x5444332222211000ull
// c of s32, per element: zero (2), small (5), near INT32_MAX (3), near INT32_MIN (3), any (3).
#define NS_INT_C 0x4443332221111100ull
// s8/u8 rows: every bit pattern (8), extremes 0x7F 0x80 0xFF 0x01 (4), -4..4 (4).
#define NS_INT_ROWS 0x2222111100000000ull

struct ns_format {
  int is_float, exp_bits, frac_bits, bias, field_shift, fn;  // fn: no Inf, NaN = S.1111.111
};

struct ns_params {
  ns_u64 seed, combination;
  ns_format in, acc;
};

// Parameters from the flat array of generators/numeric_stream.py `parameters` (14 values).
NS_HD inline ns_params ns_from_array(const ns_u64* p) {
  ns_params q;
  q.seed = p[0];
  q.combination = p[1];
  ns_format* f[2] = {&q.in, &q.acc};
  for (int i = 0; i < 2; i++) {
    const ns_u64* s = p + 2 + 6 * i;
    f[i]->is_float = (int)s[0];
    f[i]->exp_bits = (int)s[1];
    f[i]->frac_bits = (int)s[2];
    f[i]->bias = (int)s[3];
    f[i]->field_shift = (int)s[4];
    f[i]->fn = (int)s[5];
  }
  return q;
}

NS_HD inline ns_u64 ns_mix(ns_u64 z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

NS_HD inline ns_u64 ns_row_key(const ns_params* p, int op, ns_u64 tile, int row) {
  ns_u64 stream = ns_mix(ns_mix(p->seed) ^ ((p->combination << 8) | (ns_u64)op));
  return ns_mix(stream ^ ((tile << 8) | (ns_u64)row));
}

NS_HD inline ns_u64 ns_element_hash(ns_u64 row_key, int col) { return ns_mix(row_key + (ns_u64)col + 1); }

NS_HD inline int ns_top(const ns_format* f) { return (1 << f->exp_bits) - 1; }
NS_HD inline int ns_max_exp(const ns_format* f) { return f->fn ? ns_top(f) : ns_top(f) - 1; }
NS_HD inline int ns_clamp(int x, int lo, int hi) { return x < lo ? lo : (x > hi ? hi : x); }

// The code of (sign, exponent field, fraction field); a container wider than the format (tf32)
// gets random low bits, which the format ignores.
NS_HD inline ns_u32 ns_pack(const ns_format* f, ns_u64 h, int e, ns_u64 frac) {
  ns_u64 sign = h & 1;
  ns_u64 code = (sign << (f->exp_bits + f->frac_bits)) | ((ns_u64)e << f->frac_bits) | frac;
  ns_u64 low = (h >> 40) & ((1ull << f->field_shift) - 1);
  return (ns_u32)((code << f->field_shift) | low);
}

NS_HD inline ns_u64 ns_frac(const ns_format* f, ns_u64 h) { return (h >> 1) & ((1ull << f->frac_bits) - 1); }
NS_HD inline ns_u64 ns_select(ns_u64 h) { return (h >> 32) & 0xFFFFFF; }

// A finite code: Inf/NaN exponent fields step down one, the fn NaN pattern loses its last bit.
NS_HD inline ns_u32 ns_finite(const ns_format* f, ns_u64 h, int e, ns_u64 frac) {
  ns_u64 full = (1ull << f->frac_bits) - 1;
  if (!f->fn && e == ns_top(f)) e -= 1;
  if (f->fn && e == ns_top(f) && frac == full) frac -= 1;
  return ns_pack(f, h, e, frac);
}

NS_HD inline ns_u32 ns_cluster(const ns_format* f, ns_u64 row_key, ns_u64 h, int low) {
  ns_u64 r = row_key >> 8;
  int maxe = ns_max_exp(f);
  int centre = (r & 1) ? ns_clamp(f->bias + (int)((r >> 1) % 9) - 4, 1, maxe) : 1 + (int)((r >> 1) % (ns_u64)maxe);
  if (low) centre = ns_clamp(f->bias * 13 / 32, 1, maxe) + (int)((r >> 1) % (ns_u64)(f->bias / 16 + 1));
  int e = ns_clamp(centre + (int)(ns_select(h) & 3) - 1, 1, maxe);
  return ns_finite(f, h, e, ns_frac(f, h));
}

NS_HD inline ns_u32 ns_special(const ns_format* f, ns_u64 h) {
  ns_u64 full = (1ull << f->frac_bits) - 1;
  if (f->fn) return ns_pack(f, h, ns_top(f), full);
  return ns_pack(f, h, ns_top(f), ((ns_select(h) >> 4) & 1) ? 0 : (ns_frac(f, h) | 1));
}

NS_HD inline ns_u32 ns_float_element(const ns_format* f, int family, ns_u64 row_key, ns_u64 h) {
  ns_u64 s = ns_select(h);
  int e_any = (int)((h >> 24) & (ns_u64)ns_top(f));
  switch (family) {
    case NS_UNIFORM: return ns_pack(f, h, e_any, ns_frac(f, h));
    case NS_FINITE: return ns_finite(f, h, e_any, ns_frac(f, h));
    case NS_SUBNORMAL: return ns_pack(f, h, (s & 3) ? 0 : 1, ns_frac(f, h));
    case NS_HUGE: return ns_finite(f, h, ns_max_exp(f) - (int)(s & 1), ns_frac(f, h));
    case NS_SPARSE: return (s & 7) ? ns_pack(f, h, 0, 0) : ns_cluster(f, row_key, h, 0);
    case NS_SPECIAL: return (s & 63) ? ns_cluster(f, row_key, h, 0) : ns_special(f, h);
    case NS_LOW: return ns_cluster(f, row_key, h, 1);
    default: return ns_cluster(f, row_key, h, 0);  // NS_CLUSTER, NS_CANCEL
  }
}

NS_HD inline ns_u32 ns_c_element(const ns_format* f, ns_u64 h) {
  ns_u64 s = ns_select(h);
  if (!f->is_float) {
    switch ((NS_INT_C >> (4 * (h >> 60))) & 15) {
      case 0: return 0;
      case 1: return (ns_u32)((int)(s & 0xFFFF) - 32768);
      case 2: return 0x7FFFFFFFu - (ns_u32)(s & 0xFFFFF);
      case 3: return 0x80000000u + (ns_u32)(s & 0xFFFFF);
      default: return (ns_u32)(h >> 16);
    }
  }
  int maxe = ns_max_exp(f);
  switch ((NS_FLOAT_C >> (4 * (h >> 60))) & 15) {
    case 0: return ns_pack(f, h, 0, 0);
    case 1: return ns_pack(f, h, (int)(s & 1), ns_frac(f, h));
    case 2: return ns_pack(f, h, ns_clamp(f->bias + (int)(s % 41) - 20, 1, maxe), ns_frac(f, h));
    case 3: return ns_pack(f, h, ns_clamp(maxe - (int)(s % 8), 1, maxe), ns_frac(f, h));
    case 4: return ns_pack(f, h, (int)((h >> 24) & (ns_u64)ns_top(f)), ns_frac(f, h));
    default: return ns_special(f, h);
  }
}

NS_HD inline ns_u32 ns_int_element(int family, ns_u64 h) {
  ns_u64 s = ns_select(h);
  if (family == 0) return (ns_u32)(h & 0xFF);
  if (family == 1) return (ns_u32)((0x01FF807Full >> (8 * (s & 3))) & 0xFF);
  return (ns_u32)((s % 9 + 252) & 0xFF);
}

// The raw code of one operand element: A[tile][row = m][col = k], B[tile][row = n][col = k]
// (B rows are N-major, as generators/numeric_stream.py lays them out), C[tile][row = m][col = n].
NS_HD inline ns_u32 ns_code(const ns_params* p, int op, ns_u64 tile, int row, int col) {
  ns_u64 key = ns_row_key(p, op, tile, row);
  if (op == NS_OP_C) return ns_c_element(&p->acc, ns_element_hash(key, col));
  const ns_format* f = &p->in;
  if (!f->is_float) return ns_int_element((int)((NS_INT_ROWS >> (4 * (key >> 60))) & 15), ns_element_hash(key, col));
  int family = (int)((NS_FLOAT_ROWS >> (4 * (key >> 60))) & 15);
  if (family != NS_CANCEL) return ns_float_element(f, family, key, ns_element_hash(key, col));
  ns_u32 code = ns_cluster(f, key, ns_element_hash(key, col & ~1), 0);
  if (op == NS_OP_A && (col & 1)) code ^= 1u << (f->exp_bits + f->frac_bits + f->field_shift);
  return code;
}

#endif
