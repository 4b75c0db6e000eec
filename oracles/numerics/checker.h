// The inner-product model d = sum_k a_k b_k + c of oracles/numerics/model.py in integer
// arithmetic, for checking tensor-core results at the GPU's own speed (and on the host, where
// tests compare it with the Python model, which stays the reference). One datapath at a time,
// parameterised at run time by the flat array of oracles/numerics/checker.py `parameters`
// (a profile's Datapath, the formats and, for block-scaled kinds, the scale format and block).
// Only integer operations compute the result: decoding, exact products, alignment with truncation
// toward zero, wide sums, rounding, specials.
//
// Operands are decoded once into terms (`ck_term_of`: one 32-bit word each) before any inner
// product reads them: an element of A is read by every column of B and the other way round, so
// decoding per product costs a tile's width in decodes. `ck_dot` computes one inner product from
// terms (a structured-sparse A selects B's terms through `columns`; scaled kinds add the scale
// factors' terms), in two passes over each fused group: the largest alignment exponent, then the
// truncated sum. Infinities and NaNs cost a third pass only in the rows that hold them.
// Compiles as C++ for the host (g++) and for the device (NVRTC, CK_HD = __host__ __device__).
#ifndef NUMERIC_CHECKER_H
#define NUMERIC_CHECKER_H

#ifndef CK_HD
#define CK_HD
#endif

typedef long long ck_i64;
typedef unsigned long long ck_u64;
typedef unsigned int ck_u32;

#define CK_MAX_K 128              // the most products per inner product (a sparse kind::mxf4's stored 64, K = 96)
#define CK_ZERO_EXP (-(1 << 20))  // conformance.core.formats.ZERO_EXP: the exponent of a zero
#define CK_ZERO 0                 // classes as conformance.core.formats
#define CK_FINITE 1
#define CK_INF 2
#define CK_NAN 3
#define CK_IEEE 0                 // specials as conformance.core.formats.FloatFormat.specials
#define CK_FN 1
#define CK_NO_SPECIALS 2
#define CK_E8M0 3

struct ck_format {
  int exp_bits, frac_bits, bias, field_shift, specials, code_bits, is_signed, emin, emax;
  ck_i64 max_mant, canonical_nan;
};

struct ck_params {
  int is_float, k, a_signed, b_signed, saturate, block;  // block: products per scale factor (0: unscaled)
  ck_format a, b, acc, scale;
  // Datapath (oracles/numerics/profiles.py), resolved: group_precision is a number of bits.
  int k_step, split_ways, split_stride, align_frac_bits, has_floor, align_floor, group_precision;
  int group_rne, c_first_group, final_rne, subnormal_inputs, subnormal_outputs, zero_positive, block_group;
  int a_floor, b_floor;  // the exponents subnormal A and B operands are normalised down to (ck_widened)
};

#define CK_HEAD_VALUES 6
#define CK_FORMAT_VALUES 11
#define CK_DATAPATH_VALUES 14
#define CK_PARAMETER_COUNT (CK_HEAD_VALUES + 4 * CK_FORMAT_VALUES + CK_DATAPATH_VALUES + 2)

CK_HD inline ck_format ck_format_from(const ck_i64* s) {
  ck_format f;
  f.exp_bits = (int)s[0]; f.frac_bits = (int)s[1]; f.bias = (int)s[2]; f.field_shift = (int)s[3];
  f.specials = (int)s[4]; f.code_bits = (int)s[5]; f.is_signed = (int)s[6]; f.emin = (int)s[7]; f.emax = (int)s[8];
  f.max_mant = s[9]; f.canonical_nan = s[10];
  return f;
}

// Parameters from the flat array of oracles/numerics/checker.py `parameters`.
CK_HD inline ck_params ck_from_array(const ck_i64* p) {
  ck_params q;
  q.is_float = (int)p[0]; q.k = (int)p[1]; q.a_signed = (int)p[2]; q.b_signed = (int)p[3]; q.saturate = (int)p[4];
  q.block = (int)p[5];
  const ck_i64* f = p + CK_HEAD_VALUES;
  q.a = ck_format_from(f);
  q.b = ck_format_from(f + CK_FORMAT_VALUES);
  q.acc = ck_format_from(f + 2 * CK_FORMAT_VALUES);
  q.scale = ck_format_from(f + 3 * CK_FORMAT_VALUES);
  const ck_i64* d = f + 4 * CK_FORMAT_VALUES;
  q.k_step = (int)d[0]; q.split_ways = (int)d[1]; q.split_stride = (int)d[2]; q.align_frac_bits = (int)d[3];
  q.has_floor = (int)d[4]; q.align_floor = (int)d[5]; q.group_precision = (int)d[6]; q.group_rne = (int)d[7];
  q.c_first_group = (int)d[8]; q.final_rne = (int)d[9]; q.subnormal_inputs = (int)d[10];
  q.subnormal_outputs = (int)d[11]; q.zero_positive = (int)d[12]; q.block_group = (int)d[13];
  q.a_floor = (int)d[14]; q.b_floor = (int)d[15];
  return q;
}

struct ck_value {  // (-1)**sign * mant * 2**(aexp - frac); aexp = CK_ZERO_EXP when mant = 0
  int sign, aexp, frac, cls;
  ck_i64 mant;
};

CK_HD inline int ck_clamp(int x, int lo, int hi) { return x < lo ? lo : (x > hi ? hi : x); }

CK_HD inline int ck_bit_length(ck_u64 x) {
#ifdef __CUDA_ARCH__
  return 64 - __clzll((long long)x);
#else
  return x ? 64 - __builtin_clzll(x) : 0;
#endif
}

// conformance.core.formats.decode (and _flush_subnormals without subnormal inputs).
CK_HD inline ck_value ck_decode(const ck_format* f, ck_u32 bits, int subnormals) {
  ck_u64 code = ((ck_u64)bits >> f->field_shift) & ((1ull << f->code_bits) - 1);
  ck_u64 frac = code & ((1ull << f->frac_bits) - 1);
  int efield = (int)((code >> f->frac_bits) & ((1ull << f->exp_bits) - 1));
  int top = (1 << f->exp_bits) - 1;
  ck_value v;
  v.sign = f->is_signed ? (int)((code >> (f->frac_bits + f->exp_bits)) & 1) : 0;
  v.frac = f->frac_bits;
  if (f->specials == CK_E8M0) {  // 2**(efield - bias), no zero; 0xFF is NaN
    v.cls = efield == top ? CK_NAN : CK_FINITE;
    v.mant = v.cls == CK_FINITE;
    v.aexp = v.cls == CK_FINITE ? efield - f->bias : CK_ZERO_EXP;
    return v;
  }
  v.mant = (ck_i64)(efield ? (frac | (1ull << f->frac_bits)) : frac);
  v.aexp = efield ? efield - f->bias : f->emin;
  v.cls = v.mant ? CK_FINITE : CK_ZERO;
  if (f->specials == CK_IEEE && efield == top) v.cls = frac ? CK_NAN : CK_INF;
  if (f->specials == CK_FN && efield == top && frac == (1ull << f->frac_bits) - 1) v.cls = CK_NAN;
  if (v.cls == CK_FINITE && !subnormals && efield == 0) v.cls = CK_ZERO;
  if (v.cls != CK_FINITE) {
    v.mant = 0;
    v.aexp = CK_ZERO_EXP;
  }
  return v;
}

// The operand as a format whose smallest normal exponent is `floor` holds it: a profile's
// widened_inputs (sm_90a warp-level fp8, unpacked to f16 before the HMMA), where a subnormal of
// the narrow format is normal. The value is unchanged; its products align lower.
CK_HD inline ck_value ck_widened(ck_value v, int floor) {
  if (v.cls != CK_FINITE) return v;
  while (v.mant < (1ll << v.frac) && v.aexp > floor) {
    v.mant <<= 1;
    v.aexp--;
  }
  return v;
}

// --- terms: decoded operands, one word each ---------------------------------------------------
// A float term: significand in bits 0-11 (below 2**12: parameters() holds every operand and scale
// format to 11 fraction bits), class in bits 12-13 (so bit 13 marks Inf and NaN), sign in bit 14,
// alignment exponent in bits 16-31 (two's complement; CK_TERM_NO_EXP unless finite, so that a
// product with a zero, Inf or NaN operand lies below every finite one, CK_NO_PRODUCT_EXP and
// under). An integer term: the value.
typedef ck_u32 ck_term;
#define CK_SPECIAL_BIT (1u << 13)
#define CK_TERM_NO_EXP (-16384)
#define CK_NO_PRODUCT_EXP (-8192)  // finite products' exponents lie far above: formats' exponents are within +-400
#define CK_A 0  // which operand a code is of (ck_term_of)
#define CK_B 1
#define CK_SCALE 2

CK_HD inline int ck_term_mant(ck_term t) { return (int)(t & 0xFFFu); }
CK_HD inline int ck_term_cls(ck_term t) { return (int)((t >> 12) & 3u); }
CK_HD inline int ck_term_sign(ck_term t) { return (int)((t >> 14) & 1u); }
CK_HD inline int ck_term_aexp(ck_term t) { return (int)t >> 16; }

CK_HD inline ck_term ck_pack(ck_value v) {
  ck_u32 aexp = (ck_u32)(v.cls == CK_FINITE ? v.aexp : CK_TERM_NO_EXP);
  return (ck_u32)v.mant | ((ck_u32)v.cls << 12) | ((ck_u32)v.sign << 14) | (aexp << 16);
}

// The term of a raw code of A, B or a scale factor (`which`).
CK_HD inline ck_term ck_term_of(const ck_params* P, int which, ck_u32 code) {
  if (!P->is_float) {
    int is_signed = which == CK_A ? P->a_signed : P->b_signed;
    return (ck_u32)(is_signed ? (int)(signed char)(code & 0xFF) : (int)(code & 0xFF));
  }
  if (which == CK_SCALE) return ck_pack(ck_decode(&P->scale, code, 1));  // the model flushes no scale
  const ck_format* f = which == CK_A ? &P->a : &P->b;
  return ck_pack(ck_widened(ck_decode(f, code, P->subnormal_inputs), which == CK_A ? P->a_floor : P->b_floor));
}

// One inner product's operands as terms: a[k], b[columns ? columns[k] : k] for k < P->k, and with
// a block-scaled kind, a_scale[s] and b_scale[s] for the block s = k / P->block.
struct ck_operands {
  const ck_term *a, *b, *a_scale, *b_scale;
  const unsigned char* columns;
};

CK_HD inline ck_term ck_b_at(const ck_operands* o, int k) { return o->b[o->columns ? o->columns[k] : k]; }

// mant * 2**s truncated toward zero (fixedpoint._shift: shifts clipped to 62 left, 63 right).
CK_HD inline ck_i64 ck_shift(ck_i64 mant, int s) {
  return s >= 0 ? (mant << (s > 62 ? 62 : s)) : (mant >> (-s > 63 ? 63 : -s));
}

// --- addends: what a fused group sums ---------------------------------------------------------
// (-1)**sign * mant * 2**lsb, aligned at aexp; `present` addends take part in the alignment
// (fixedpoint.fused_sum's `present`; by default the nonzero ones).
struct ck_addend {
  int sign, aexp, lsb, present;
  ck_i64 mant;
};

// Product k, exact (model._generic_dot), times its block's scale factors in a block-scaled kind;
// the terms it reads are or-ed into *seen (whose bit 13 then says whether an Inf or NaN was among them).
CK_HD inline ck_addend ck_product(const ck_params* P, const ck_operands* o, int k, ck_u32* seen) {
  ck_term x = o->a[k], y = ck_b_at(o, k);
  *seen |= x | y;
  ck_addend d;
  d.sign = ck_term_sign(x) ^ ck_term_sign(y);
  ck_u32 mant = (ck_u32)ck_term_mant(x) * (ck_u32)ck_term_mant(y);  // 24 bits at most
  d.aexp = ck_term_aexp(x) + ck_term_aexp(y);
  int frac = P->a.frac_bits + P->b.frac_bits;
  if (P->block) {
    ck_term u = o->a_scale[k / P->block], v = o->b_scale[k / P->block];
    *seen |= u | v;
    d.sign ^= ck_term_sign(u) ^ ck_term_sign(v);
    mant *= (ck_u32)ck_term_mant(u) * (ck_u32)ck_term_mant(v);  // scale formats: 4 bits each at most
    d.aexp += ck_term_aexp(u) + ck_term_aexp(v);
    frac += 2 * P->scale.frac_bits;
  }
  d.mant = (ck_i64)mant;
  d.lsb = d.aexp - frac;
  d.present = d.mant != 0;
  return d;
}

// Sub-sum i of a block_group datapath (model._block_sums): the exact sum of products
// [i G, (i + 1) G), times its block's scale factors and aligned at their exponent alone; present
// when one of its products is nonzero and the factors are, even if the products cancel. As
// ck_product, the terms it reads are or-ed into *seen.
CK_HD inline ck_addend ck_block_sum(const ck_params* P, const ck_operands* o, int i, ck_u32* seen) {
  const int first = i * P->block_group, last = first + P->block_group;
  const int frac = P->a.frac_bits + P->b.frac_bits;
  int lowest = 0, any = 0;
  for (int k = first; k < last; k++) {
    ck_term x = o->a[k], y = ck_b_at(o, k);
    *seen |= x | y;
    int lsb = ck_term_aexp(x) + ck_term_aexp(y) - frac;
    if (ck_term_mant(x) && ck_term_mant(y) && (!any || lsb < lowest)) {
      lowest = lsb;
      any = 1;
    }
  }
  ck_i64 S = 0;
  for (int k = first; k < last; k++) {
    ck_term x = o->a[k], y = ck_b_at(o, k);
    if (!ck_term_mant(x) || !ck_term_mant(y)) continue;
    ck_i64 v = ((ck_i64)ck_term_mant(x) * ck_term_mant(y)) << (ck_term_aexp(x) + ck_term_aexp(y) - frac - lowest);
    S += ck_term_sign(x) ^ ck_term_sign(y) ? -v : v;
  }
  ck_term u = o->a_scale[first / P->block], v = o->b_scale[first / P->block];
  *seen |= u | v;
  ck_i64 scale_mant = (ck_i64)ck_term_mant(u) * ck_term_mant(v);
  ck_addend d;
  d.mant = (S < 0 ? -S : S) * scale_mant;
  d.sign = (S < 0) ^ ck_term_sign(u) ^ ck_term_sign(v);
  d.present = any && scale_mant != 0;
  d.aexp = ck_term_aexp(u) + ck_term_aexp(v);
  d.lsb = lowest + d.aexp - 2 * P->scale.frac_bits;
  return d;
}

// Addend i: a product, or a block_group's sub-sum.
CK_HD inline ck_addend ck_addend_at(const ck_params* P, const ck_operands* o, int i, ck_u32* seen) {
  return P->block_group ? ck_block_sum(P, o, i, seen) : ck_product(P, o, i, seen);
}

// --- specials ---------------------------------------------------------------------------------

// model._input_specials: NaN when an input or a scale factor is NaN, Inf x 0 occurs or infinities
// of both signs meet (returns 1); else *inf_sign, the sign of an infinite result (-1: none).
CK_HD inline int ck_specials(const ck_params* P, const ck_operands* o, const ck_value* c, int* inf_sign) {
  int nan = c->cls == CK_NAN, pos = c->cls == CK_INF && !c->sign, neg = c->cls == CK_INF && c->sign;
  for (int k = 0; k < P->k; k++) {
    ck_term x = o->a[k], y = ck_b_at(o, k);
    int cx = ck_term_cls(x), cy = ck_term_cls(y);
    int pnan = cx == CK_NAN || cy == CK_NAN || (cx == CK_INF && cy == CK_ZERO) || (cx == CK_ZERO && cy == CK_INF);
    if (P->block) pnan |= ck_term_cls(o->a_scale[k / P->block]) == CK_NAN || ck_term_cls(o->b_scale[k / P->block]) == CK_NAN;
    int inf = !pnan && (cx == CK_INF || cy == CK_INF), sign = ck_term_sign(x) ^ ck_term_sign(y);
    nan |= pnan;
    pos |= inf && !sign;
    neg |= inf && sign;
  }
  *inf_sign = pos ? 0 : (neg ? 1 : -1);
  return nan || (pos && neg);
}

// The sign of the infinite products among `entering` and product k (model._generic_dot's
// inf_entering): 0 once any is positive, else 1 once any is negative, else -1.
CK_HD inline int ck_entering(int entering, const ck_operands* o, int k) {
  ck_term x = o->a[k], y = ck_b_at(o, k);
  if (ck_term_cls(x) != CK_INF && ck_term_cls(y) != CK_INF) return entering;
  int sign = ck_term_sign(x) ^ ck_term_sign(y);
  return sign == 0 ? 0 : (entering < 0 ? 1 : entering);
}

struct ck_rounded {
  int sign, aexp, overflow;
  ck_i64 q;
};

// fixedpoint.round_scaled: S * 2**t rounded to `precision` bits in [emin, emax].
CK_HD inline ck_rounded ck_round(ck_i64 S, int t, int precision, int emin, int emax, ck_i64 max_mant, int rne) {
  ck_rounded r;
  r.sign = S < 0;
  ck_i64 a = S < 0 ? -S : S;
  int e = t + ck_bit_length((ck_u64)a) - 1;
  if (e < emin) e = emin;
  int sh = e - (precision - 1) - t;
  int pos = ck_clamp(sh, 0, 63);
  ck_i64 kept = a >> pos;
  ck_i64 q = kept << ck_clamp(-sh, 0, 62);
  ck_i64 rem = a - (kept << pos);
  ck_i64 half = 1ll << ck_clamp(sh - 1, 0, 62);
  int above = sh > 0 && rem > half;
  int tie = sh > 0 && rem == half;
  if (rne) q += above || (tie && (q & 1));
  int carry = (int)(q >> precision);
  q >>= carry;
  e += carry;
  r.overflow = a != 0 && (e > emax || (e == emax && q > max_mant));
  r.q = r.overflow ? max_mant : q;
  r.aexp = r.overflow ? emax : e;
  return r;
}

CK_HD inline ck_u32 ck_inf_code(const ck_format* f, int sign) {
  ck_u64 code = ((ck_u64)((1 << f->exp_bits) - 1) << f->frac_bits) | ((ck_u64)sign << (f->exp_bits + f->frac_bits));
  return (ck_u32)(code << f->field_shift);
}

struct ck_chain {  // the model's _chain state for one row
  ck_value run;
  int inf_state, inf_seen, nan_late;
  ck_i64 last_S;
};

// An infinite input of sign `sign` (-1: none) entering a stage (model._chain's `enter`).
CK_HD inline void ck_enter(ck_chain* s, int sign) {
  if (sign < 0) return;
  int overflow_sign = s->inf_state < 0 ? 1 : 0;
  if (s->inf_state != 0 && !s->inf_seen && sign != overflow_sign) s->nan_late = 1;
  s->inf_seen = 1;
}

// A rounding's result becomes the running value; an overflow goes to infinity (_note_overflow).
CK_HD inline void ck_take(ck_chain* s, ck_rounded r, int frac) {
  if (r.overflow && s->inf_state == 0 && !s->inf_seen) s->inf_state = r.sign ? -1 : 1;
  s->run.sign = r.sign;
  s->run.mant = r.q;
  s->run.aexp = r.q ? r.aexp : CK_ZERO_EXP;
  s->run.frac = frac;
}

// model._add_two: x + y aligned to the larger exponent with `frac_bits` bits and a sticky bit.
CK_HD inline ck_i64 ck_add_two(const ck_value* x, const ck_value* y, int frac_bits, int* t_out) {
  int emax = x->aexp > y->aexp ? x->aexp : y->aexp;
  int t = emax - frac_bits;
  ck_i64 S = 0;
  const ck_value* terms[2] = {x, y};
  for (int i = 0; i < 2; i++) {
    const ck_value* v = terms[i];
    int s = v->aexp - v->frac - t;
    int r = ck_clamp(-s, 0, 63);
    ck_i64 w = (v->mant << ck_clamp(s, 0, 62)) >> r;
    ck_u64 mask = r >= 63 ? 0x7FFFFFFFFFFFFFFFull : (1ull << r) - 1;
    w |= ((ck_u64)v->mant & mask) != 0;
    S += v->sign ? -w : w;
  }
  *t_out = t;
  return S;
}

// f(i) for each addend i of fused group g in the step starting at `step` (model._group_indices:
// groups take turns in runs of split_stride), below `count` (a last step may be short).
template <class F>
CK_HD inline void ck_each_in_group(const ck_params* P, int step, int k_step, int g, int count, F f) {
  const int stride = P->split_stride, period = P->split_ways * stride;
  const int end = step + k_step < count ? step + k_step : count;
  if (P->split_ways == 1) {  // one group per step: its addends in a row, several reads in flight
#pragma unroll 2
    for (int i = step; i < end; i++) f(i);
    return;
  }
  for (int run = step + g * stride; run < end; run += period)
    for (int i = run; i < run + stride && i < end; i++) f(i);
}

// One fused group (fixedpoint.fused_sum): its addends and the running value when `run`, truncated
// toward zero onto the grid 2**t, t = max(emax - align_frac_bits, align_floor). Pass one finds
// emax and ors the terms it reads into *seen; where they hold an infinity and products are summed
// one by one, *entering is the sign of the infinite products entering (-1: none); pass two sums.
CK_HD inline ck_i64 ck_group_sum(const ck_params* P, const ck_operands* o, int step, int k_step, int g, int count,
                                 const ck_value* run, ck_u32* seen, int* entering, int* t_out) {
  int emax = 0, any = 0;
  ck_u32 read = 0;
  if (!P->block && !P->block_group) {  // unscaled products: exponents alone say which is largest
    int top = 2 * CK_TERM_NO_EXP;
    ck_each_in_group(P, step, k_step, g, count, [&](int i) {
      ck_term x = o->a[i], y = ck_b_at(o, i);
      read |= x | y;
      int e = ck_term_aexp(x) + ck_term_aexp(y);
      top = e > top ? e : top;
    });
    any = top > CK_NO_PRODUCT_EXP;
    emax = any ? top : 0;
  } else {
    ck_each_in_group(P, step, k_step, g, count, [&](int i) {
      ck_addend d = ck_addend_at(P, o, i, &read);
      if (d.present && (!any || d.aexp > emax)) {
        emax = d.aexp;
        any = 1;
      }
    });
  }
  *seen |= read;
  *entering = -1;
  if ((read & CK_SPECIAL_BIT) && !P->block_group)
    ck_each_in_group(P, step, k_step, g, count, [&](int i) { *entering = ck_entering(*entering, o, i); });
  if (run && run->mant && (!any || run->aexp > emax)) {
    emax = run->aexp;
    any = 1;
  }
  int t = emax - P->align_frac_bits;
  if (P->has_floor && t < P->align_floor) t = P->align_floor;
  ck_i64 S = 0;
  ck_each_in_group(P, step, k_step, g, count, [&](int i) {
    ck_addend d = ck_addend_at(P, o, i, &read);
    ck_i64 v = ck_shift(d.mant, d.lsb - t);
    S += d.sign ? -v : v;
  });
  if (run) {
    ck_i64 v = ck_shift(run->mant, run->aexp - run->frac - t);
    S += run->sign ? -v : v;
  }
  *t_out = t;
  return S;
}

// Whether every addend is -0 (model's zero_sign, for an exactly zero result outside zero_positive).
CK_HD inline int ck_all_negative_zero(const ck_params* P, const ck_operands* o, int count) {
  ck_u32 read = 0;
  int all = 1;
  ck_each_in_group(P, 0, count, 0, count, [&](int i) {
    ck_addend d = ck_addend_at(P, o, i, &read);
    all &= d.mant == 0 && d.sign == 1;
  });
  return all;
}

// The datapath's result for one row: the operands' terms `o` and c, a raw code. Rows that hold an
// Inf or NaN (bit 13 of a term, or c's class) settle them at the end (ck_specials): the sums
// before then cannot fail, and no finite row pays for the check.
CK_HD inline ck_u32 ck_float_dot(const ck_params* P, const ck_operands* o, ck_u32 c) {
  ck_value cv = ck_decode(&P->acc, c, P->subnormal_inputs);
  ck_u32 seen = cv.cls >= CK_INF ? CK_SPECIAL_BIT : 0u;
  // infinities entering each stage matter only to products summed one by one (model: inf_entering)
  const int c_inf = !P->block_group && cv.cls == CK_INF ? cv.sign : -1;

  const int per_addend = P->block_group ? P->block_group : 1;
  const int count = P->k / per_addend, k_step = P->k_step / per_addend;
  const int p_g = P->group_precision;
  const ck_i64 max_g = p_g < P->acc.frac_bits + 1 ? (1ll << p_g) - 1 : P->acc.max_mant;
  ck_chain s;
  s.run = cv;
  s.inf_state = s.inf_seen = s.nan_late = 0;
  s.last_S = 0;
  for (int step = 0; step < count; step += k_step) {
    ck_value incoming = s.run;
    int chained = P->c_first_group;  // the first group starts from c, or from nothing
    for (int g = 0; g < P->split_ways; g++) {
      if (step == 0 && g == 0 && P->c_first_group) ck_enter(&s, c_inf);
      int t, entering;
      ck_i64 S = ck_group_sum(P, o, step, k_step, g, count, chained ? &s.run : 0, &seen, &entering, &t);
      ck_enter(&s, entering);  // before the rounding is taken, as in the model (no sum depends on it)
      ck_take(&s, ck_round(S, t, p_g, P->acc.emin, P->acc.emax, max_g, P->group_rne), p_g - 1);
      s.last_S = S;
      chained = 1;
    }
    if (!P->c_first_group) {
      if (step == 0) ck_enter(&s, c_inf);
      int t;
      ck_i64 S = ck_add_two(&s.run, &incoming, P->acc.frac_bits + 4, &t);
      ck_take(&s, ck_round(S, t, P->acc.frac_bits + 1, P->acc.emin, P->acc.emax, P->acc.max_mant, P->final_rne),
              P->acc.frac_bits);
      s.last_S = S;
    }
  }
  int inf_sign = -1;
  if ((seen & CK_SPECIAL_BIT) && ck_specials(P, o, &cv, &inf_sign)) return (ck_u32)P->acc.canonical_nan;
  if (s.nan_late) return (ck_u32)P->acc.canonical_nan;
  if (inf_sign >= 0) return ck_inf_code(&P->acc, inf_sign);
  if (s.inf_state) return ck_inf_code(&P->acc, s.inf_state < 0);

  int widen = P->acc.frac_bits - s.run.frac;
  ck_i64 q = widen >= 0 ? s.run.mant << widen : s.run.mant >> -widen;
  int aexp = s.run.mant ? s.run.aexp : P->acc.emin;
  int sign = s.run.sign;
  ck_i64 hidden = 1ll << P->acc.frac_bits;
  if (!P->subnormal_outputs && q < hidden) q = 0;
  if (P->zero_positive) {
    if (q == 0) sign = 0;
  } else if (s.last_S == 0 && q == 0) {
    sign = cv.mant == 0 && cv.sign == 1 && ck_all_negative_zero(P, o, count);
  }
  ck_u64 efield = q >= hidden ? (ck_u64)(aexp + P->acc.bias) : 0;
  ck_u64 frac = (ck_u64)(q >= hidden ? q - hidden : q);
  ck_u64 code = ((ck_u64)sign << (P->acc.exp_bits + P->acc.frac_bits)) | (efield << P->acc.frac_bits) | frac;
  return (ck_u32)(code << P->acc.field_shift);
}

// model._int_dot: the exact integer sum, saturated or wrapped to s32.
CK_HD inline ck_u32 ck_int_dot(const ck_params* P, const ck_operands* o, ck_u32 c) {
  ck_i64 total = (ck_i64)(int)c;
  for (int k = 0; k < P->k; k++) total += (ck_i64)(int)o->a[k] * (int)ck_b_at(o, k);
  if (P->saturate) {
    if (total > 2147483647ll) total = 2147483647ll;
    if (total < -2147483648ll) total = -2147483648ll;
  }
  return (ck_u32)(ck_u64)total;
}

CK_HD inline ck_u32 ck_dot(const ck_params* P, const ck_operands* o, ck_u32 c) {
  return P->is_float ? ck_float_dot(P, o, c) : ck_int_dot(P, o, c);
}

#endif
