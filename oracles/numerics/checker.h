// The inner-product model d = sum_k a_k b_k + c of oracles/numerics/model.py in integer
// arithmetic, for checking tensor-core results at the GPU's own speed (and on the host, where
// tests compare it with the Python model, which stays the reference). One datapath at a time,
// parameterised at run time by the flat array of oracles/numerics/checker.py `parameters`
// (a profile's Datapath and the formats). Only integer operations compute the result: decoding,
// exact products, alignment with truncation toward zero, wide sums, rounding, specials.
// Compiles as C++ for the host (g++) and for the device (NVRTC, CK_HD = __host__ __device__).
#ifndef NUMERIC_CHECKER_H
#define NUMERIC_CHECKER_H

#ifndef CK_HD
#define CK_HD
#endif

typedef long long ck_i64;
typedef unsigned long long ck_u64;
typedef unsigned int ck_u32;

#define CK_MAX_K 32
#define CK_ZERO_EXP (-(1 << 20))  // conformance.core.formats.ZERO_EXP: the exponent of a zero
#define CK_ZERO 0                 // classes as conformance.core.formats
#define CK_FINITE 1
#define CK_INF 2
#define CK_NAN 3

struct ck_format {
  int exp_bits, frac_bits, bias, field_shift, fn, code_bits;  // fn: no Inf, NaN = S.1111.111
  int emin, emax;
  ck_i64 max_mant, canonical_nan;
};

struct ck_params {
  int is_float, k, a_signed, b_signed, saturate;
  ck_format a, b, acc;
  // Datapath (oracles/numerics/profiles.py), resolved: group_precision is a number of bits.
  int k_step, split_ways, split_stride, align_frac_bits, has_floor, align_floor, group_precision;
  int group_rne, c_first_group, final_rne, subnormal_inputs, subnormal_outputs, zero_positive;
  int a_floor, b_floor;  // the exponents subnormal A and B operands are normalised down to (ck_widened)
};

#define CK_FORMAT_VALUES 10
#define CK_PARAMETER_COUNT (5 + 3 * CK_FORMAT_VALUES + 13 + 2)

CK_HD inline ck_format ck_format_from(const ck_i64* s) {
  ck_format f;
  f.exp_bits = (int)s[0]; f.frac_bits = (int)s[1]; f.bias = (int)s[2]; f.field_shift = (int)s[3];
  f.fn = (int)s[4]; f.code_bits = (int)s[5]; f.emin = (int)s[6]; f.emax = (int)s[7];
  f.max_mant = s[8]; f.canonical_nan = s[9];
  return f;
}

// Parameters from the flat array of oracles/numerics/checker.py `parameters`.
CK_HD inline ck_params ck_from_array(const ck_i64* p) {
  ck_params q;
  q.is_float = (int)p[0]; q.k = (int)p[1]; q.a_signed = (int)p[2]; q.b_signed = (int)p[3]; q.saturate = (int)p[4];
  q.a = ck_format_from(p + 5);
  q.b = ck_format_from(p + 5 + CK_FORMAT_VALUES);
  q.acc = ck_format_from(p + 5 + 2 * CK_FORMAT_VALUES);
  const ck_i64* d = p + 5 + 3 * CK_FORMAT_VALUES;
  q.k_step = (int)d[0]; q.split_ways = (int)d[1]; q.split_stride = (int)d[2]; q.align_frac_bits = (int)d[3];
  q.has_floor = (int)d[4]; q.align_floor = (int)d[5]; q.group_precision = (int)d[6]; q.group_rne = (int)d[7];
  q.c_first_group = (int)d[8]; q.final_rne = (int)d[9]; q.subnormal_inputs = (int)d[10];
  q.subnormal_outputs = (int)d[11]; q.zero_positive = (int)d[12];
  q.a_floor = (int)d[13]; q.b_floor = (int)d[14];
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
  v.sign = (int)((code >> (f->frac_bits + f->exp_bits)) & 1);
  v.frac = f->frac_bits;
  v.mant = (ck_i64)(efield ? (frac | (1ull << f->frac_bits)) : frac);
  v.aexp = efield ? efield - f->bias : f->emin;
  v.cls = v.mant ? CK_FINITE : CK_ZERO;
  if (!f->fn && efield == top) v.cls = frac ? CK_NAN : CK_INF;
  if (f->fn && efield == top && frac == (1ull << f->frac_bits) - 1) v.cls = CK_NAN;
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

// mant * 2**s truncated toward zero (fixedpoint._shift: shifts clipped to 62 left, 63 right).
CK_HD inline ck_i64 ck_shift(ck_i64 mant, int s) {
  return s >= 0 ? (mant << (s > 62 ? 62 : s)) : (mant >> (-s > 63 ? 63 : -s));
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

// fixedpoint.fused_sum of the products in `cols` (indices, count n) and optionally the running
// value: truncated toward zero onto the grid 2**t, t = max(emax - align_frac_bits, align_floor).
CK_HD inline ck_i64 ck_group_sum(const ck_params* P, const int* psign, const ck_i64* pmant, const int* paexp,
                                 int pfrac, const int* cols, int n, const ck_value* run, int* t_out) {
  int emax = 0, any = 0;
  for (int i = 0; i < n; i++) {
    int k = cols[i];
    if (pmant[k] && (!any || paexp[k] > emax)) { emax = paexp[k]; any = 1; }
  }
  if (run && run->mant && (!any || run->aexp > emax)) { emax = run->aexp; any = 1; }
  int t = emax - P->align_frac_bits;
  if (P->has_floor && t < P->align_floor) t = P->align_floor;
  ck_i64 S = 0;
  for (int i = 0; i < n; i++) {
    int k = cols[i];
    ck_i64 v = ck_shift(pmant[k], paexp[k] - pfrac - t);
    S += psign[k] ? -v : v;
  }
  if (run) {
    ck_i64 v = ck_shift(run->mant, run->aexp - run->frac - t);
    S += run->sign ? -v : v;
  }
  *t_out = t;
  return S;
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

// The datapath's result for one row: a[k], b[k] raw codes (k < P->k), c a raw code.
CK_HD inline ck_u32 ck_float_dot(const ck_params* P, const ck_u32* a, const ck_u32* b, ck_u32 c) {
  int psign[CK_MAX_K];
  ck_i64 pmant[CK_MAX_K];
  int paexp[CK_MAX_K], pinf[CK_MAX_K];  // pinf: sign of an infinite product, -1 if finite
  int nan_row = 0, pos = 0, neg = 0, all_neg_zero = 1;
  for (int k = 0; k < P->k; k++) {
    ck_value x = ck_widened(ck_decode(&P->a, a[k], P->subnormal_inputs), P->a_floor);
    ck_value y = ck_widened(ck_decode(&P->b, b[k], P->subnormal_inputs), P->b_floor);
    psign[k] = x.sign ^ y.sign;
    pmant[k] = x.mant * y.mant;
    paexp[k] = x.aexp + y.aexp;
    int pnan = x.cls == CK_NAN || y.cls == CK_NAN || (x.cls == CK_INF && y.cls == CK_ZERO) ||
               (x.cls == CK_ZERO && y.cls == CK_INF);
    int inf = !pnan && (x.cls == CK_INF || y.cls == CK_INF);
    nan_row |= pnan;
    pinf[k] = inf ? psign[k] : -1;
    pos |= inf && !psign[k];
    neg |= inf && psign[k];
    all_neg_zero &= pmant[k] == 0 && psign[k] == 1;
  }
  ck_value cv = ck_decode(&P->acc, c, P->subnormal_inputs);
  nan_row |= cv.cls == CK_NAN;
  int c_inf = cv.cls == CK_INF ? cv.sign : -1;
  pos |= c_inf == 0;
  neg |= c_inf == 1;
  nan_row |= pos && neg;
  int inf_sign = pos ? 0 : (neg ? 1 : -1);
  if (nan_row) return (ck_u32)P->acc.canonical_nan;

  const int pfrac = P->a.frac_bits + P->b.frac_bits;
  const int p_g = P->group_precision;
  const ck_i64 max_g = p_g < P->acc.frac_bits + 1 ? (1ll << p_g) - 1 : P->acc.max_mant;
  ck_chain s;
  s.run = cv;
  s.inf_state = s.inf_seen = s.nan_late = 0;
  s.last_S = 0;
  const int per_group = P->k_step / P->split_ways;
  for (int step = 0; step < P->k; step += P->k_step) {
    ck_value incoming = s.run;
    int chained = P->c_first_group;  // the first group starts from c, or from nothing
    for (int g = 0; g < P->split_ways; g++) {
      int cols[CK_MAX_K], n = 0, entering = -1;
      for (int j = 0; j < P->k_step; j++) {
        int k = step + j;
        if ((j / P->split_stride) % P->split_ways != g || k >= P->k) continue;  // past K: zero products
        cols[n++] = k;
        if (pinf[k] == 0) entering = 0;
        else if (pinf[k] == 1 && entering < 0) entering = 1;
      }
      if (step == 0 && g == 0 && P->c_first_group) ck_enter(&s, c_inf);
      ck_enter(&s, entering);
      int t;
      ck_i64 S = ck_group_sum(P, psign, pmant, paexp, pfrac, cols, n, chained ? &s.run : 0, &t);
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
    sign = all_neg_zero && cv.mant == 0 && cv.sign == 1;
  }
  ck_u64 efield = q >= hidden ? (ck_u64)(aexp + P->acc.bias) : 0;
  ck_u64 frac = (ck_u64)(q >= hidden ? q - hidden : q);
  ck_u64 code = ((ck_u64)sign << (P->acc.exp_bits + P->acc.frac_bits)) | (efield << P->acc.frac_bits) | frac;
  return (ck_u32)(code << P->acc.field_shift);
}

// model._int_dot: the exact integer sum, saturated or wrapped to s32.
CK_HD inline ck_u32 ck_int_dot(const ck_params* P, const ck_u32* a, const ck_u32* b, ck_u32 c) {
  ck_i64 total = (ck_i64)(int)c;
  for (int k = 0; k < P->k; k++) {
    ck_i64 x = P->a_signed ? (ck_i64)(signed char)(a[k] & 0xFF) : (ck_i64)(a[k] & 0xFF);
    ck_i64 y = P->b_signed ? (ck_i64)(signed char)(b[k] & 0xFF) : (ck_i64)(b[k] & 0xFF);
    total += x * y;
  }
  if (P->saturate) {
    if (total > 2147483647ll) total = 2147483647ll;
    if (total < -2147483648ll) total = -2147483648ll;
  }
  return (ck_u32)(ck_u64)total;
}

CK_HD inline ck_u32 ck_dot(const ck_params* P, const ck_u32* a, const ck_u32* b, ck_u32 c) {
  return P->is_float ? ck_float_dot(P, a, b, c) : ck_int_dot(P, a, b, c);
}

#endif
