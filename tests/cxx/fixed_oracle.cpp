// Test oracle for hwapprox/fixed.py: the ap_fixed/ap_ufixed of the ap_types
// headers bundled with hls4ml, compiled with g++ (no vendor tools).
//
// The formats under test are template parameters, listed by the test in a
// generated, data-only include "fixed_oracle_formats.inc" made of lines
//   FX_QUANT(W, I, S, Q, O)                  double -> ap_[u]fixed<W,I,Q,O>
//   FX_CAST(W1, I1, S1, W2, I2, S2, Q2, O2)  ap_[u]fixed<W1,I1> -> <W2,I2,Q2,O2>
//   FX_BINOP(W1, I1, S1, W2, I2, S2)         a + b, a - b, a * b
//   FX_SHIFT(W, I, S, Q, O)                  x << n, x >> n (int n, same type)
// Each kind gets a table of function instances indexed by line order.
//
// Usage: fixed_oracle JOBS OUT. JOBS holds records (little-endian)
//   int32 op, int32 index, int64 n, payload
// with op 0 = quantize (payload: n float64), 1 = cast (n int64 raw codes of
// the source format), 2/3/4 = add/sub/mul (n int64 raw codes of a, then n of
// b), 5/6 = shift left/right (n int64 raw codes, then n int64 shift amounts).
// OUT receives per record, for ops 2..4 first the result type
// (int32 width, int32 iwidth, int32 signed, int32 0), then n int64 raw codes
// (the result's bit pattern, sign-extended when the type is signed).
// Exit status 0 on success, 2 on a malformed job file.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "ap_fixed.h"

namespace {

template <int W, int I, bool S, ap_q_mode Q = AP_TRN, ap_o_mode O = AP_WRAP>
using fx_t = typename std::conditional<S, ap_fixed<W, I, Q, O>, ap_ufixed<W, I, Q, O>>::type;

// Signedness of an ap_fixed_base instance (not a static member of the type).
template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
constexpr bool is_signed_fx(const ap_fixed_base<W, I, S, Q, O, N>*) {
  return S;
}

// The W-bit pattern of x as int64, sign-extended for signed types.
template <typename T>
int64_t raw_of(const T& x) {
  constexpr int kW = T::width;
  static_assert(kW <= 64, "raw codes are read as int64");
  uint64_t bits = x.range(kW - 1, 0).to_uint64();
  if (is_signed_fx(static_cast<const T*>(nullptr)) && kW < 64) {
    const uint64_t sign = uint64_t{1} << (kW - 1);
    bits = (bits ^ sign) - sign;
  }
  return static_cast<int64_t>(bits);
}

// Build a value of type T from its raw code (the low W bits of r).
template <typename T>
T from_raw(int64_t r) {
  T x;
  x.setBits(static_cast<ap_ulong>(r));
  return x;
}

struct ResultType {
  int32_t width, iwidth, is_signed, pad;
};

template <typename T>
ResultType result_type() {
  return ResultType{T::width, T::iwidth, is_signed_fx(static_cast<const T*>(nullptr)), 0};
}

template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O>
void quantize(const std::vector<double>& in, std::vector<int64_t>& out) {
  for (size_t k = 0; k < in.size(); ++k) {
    fx_t<W, I, S, Q, O> x(in[k]);
    out[k] = raw_of(x);
  }
}

template <int W1, int I1, bool S1, int W2, int I2, bool S2, ap_q_mode Q2, ap_o_mode O2>
void cast(const std::vector<int64_t>& in, std::vector<int64_t>& out) {
  for (size_t k = 0; k < in.size(); ++k) {
    fx_t<W2, I2, S2, Q2, O2> y = from_raw<fx_t<W1, I1, S1>>(in[k]);
    out[k] = raw_of(y);
  }
}

template <int W1, int I1, bool S1, int W2, int I2, bool S2>
ResultType binop(int op, const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                 std::vector<int64_t>& out) {
  using A = fx_t<W1, I1, S1>;
  using B = fx_t<W2, I2, S2>;
  const size_t n = a.size();
  if (op == 2) {
    for (size_t k = 0; k < n; ++k) out[k] = raw_of(from_raw<A>(a[k]) + from_raw<B>(b[k]));
    return result_type<decltype(A() + B())>();
  }
  if (op == 3) {
    for (size_t k = 0; k < n; ++k) out[k] = raw_of(from_raw<A>(a[k]) - from_raw<B>(b[k]));
    return result_type<decltype(A() - B())>();
  }
  for (size_t k = 0; k < n; ++k) out[k] = raw_of(from_raw<A>(a[k]) * from_raw<B>(b[k]));
  return result_type<decltype(A() * B())>();
}

template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O>
void shift(int op, const std::vector<int64_t>& x, const std::vector<int64_t>& sh,
           std::vector<int64_t>& out) {
  using T = fx_t<W, I, S, Q, O>;
  for (size_t k = 0; k < x.size(); ++k) {
    const T v = from_raw<T>(x[k]);
    const int n = static_cast<int>(sh[k]);
    out[k] = op == 5 ? raw_of(v << n) : raw_of(v >> n);
  }
}

using QuantFn = void (*)(const std::vector<double>&, std::vector<int64_t>&);
using CastFn = void (*)(const std::vector<int64_t>&, std::vector<int64_t>&);
using BinFn = ResultType (*)(int, const std::vector<int64_t>&, const std::vector<int64_t>&,
                             std::vector<int64_t>&);
using ShiftFn = void (*)(int, const std::vector<int64_t>&, const std::vector<int64_t>&,
                         std::vector<int64_t>&);

#define FX_QUANT(W, I, S, Q, O) &quantize<W, I, S, Q, O>,
#define FX_CAST(W1, I1, S1, W2, I2, S2, Q2, O2)
#define FX_BINOP(W1, I1, S1, W2, I2, S2)
#define FX_SHIFT(W, I, S, Q, O)
const QuantFn kQuant[] = {
#include "fixed_oracle_formats.inc"
    nullptr};
#undef FX_QUANT
#undef FX_CAST
#undef FX_BINOP
#undef FX_SHIFT

#define FX_QUANT(W, I, S, Q, O)
#define FX_CAST(W1, I1, S1, W2, I2, S2, Q2, O2) &cast<W1, I1, S1, W2, I2, S2, Q2, O2>,
#define FX_BINOP(W1, I1, S1, W2, I2, S2)
#define FX_SHIFT(W, I, S, Q, O)
const CastFn kCast[] = {
#include "fixed_oracle_formats.inc"
    nullptr};
#undef FX_QUANT
#undef FX_CAST
#undef FX_BINOP
#undef FX_SHIFT

#define FX_QUANT(W, I, S, Q, O)
#define FX_CAST(W1, I1, S1, W2, I2, S2, Q2, O2)
#define FX_BINOP(W1, I1, S1, W2, I2, S2) &binop<W1, I1, S1, W2, I2, S2>,
#define FX_SHIFT(W, I, S, Q, O)
const BinFn kBinop[] = {
#include "fixed_oracle_formats.inc"
    nullptr};
#undef FX_QUANT
#undef FX_CAST
#undef FX_BINOP
#undef FX_SHIFT

#define FX_QUANT(W, I, S, Q, O)
#define FX_CAST(W1, I1, S1, W2, I2, S2, Q2, O2)
#define FX_BINOP(W1, I1, S1, W2, I2, S2)
#define FX_SHIFT(W, I, S, Q, O) &shift<W, I, S, Q, O>,
const ShiftFn kShift[] = {
#include "fixed_oracle_formats.inc"
    nullptr};
#undef FX_QUANT
#undef FX_CAST
#undef FX_BINOP
#undef FX_SHIFT

constexpr size_t kNumQuant = sizeof(kQuant) / sizeof(kQuant[0]) - 1;
constexpr size_t kNumCast = sizeof(kCast) / sizeof(kCast[0]) - 1;
constexpr size_t kNumBinop = sizeof(kBinop) / sizeof(kBinop[0]) - 1;
constexpr size_t kNumShift = sizeof(kShift) / sizeof(kShift[0]) - 1;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fixed_oracle: %s\n", what);
  std::exit(2);
}

template <typename T>
void read_exact(std::FILE* f, T* dst, size_t n) {
  if (n && std::fread(dst, sizeof(T), n, f) != n) fail("truncated job file");
}

template <typename T>
void write_all(std::FILE* f, const T* src, size_t n) {
  if (n && std::fwrite(src, sizeof(T), n, f) != n) fail("cannot write the output file");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) fail("usage: fixed_oracle JOBS OUT");
  std::FILE* in = std::fopen(argv[1], "rb");
  std::FILE* out = std::fopen(argv[2], "wb");
  if (in == nullptr || out == nullptr) fail("cannot open the job or output file");
  for (;;) {
    int32_t head[2];
    const size_t got = std::fread(head, sizeof(int32_t), 2, in);
    if (got == 0) break;
    if (got != 2) fail("truncated job header");
    int64_t n = 0;
    read_exact(in, &n, 1);
    if (n < 0) fail("negative job length");
    const int op = head[0];
    const size_t idx = static_cast<size_t>(head[1]);
    std::vector<int64_t> res(static_cast<size_t>(n));
    if (op == 0) {
      if (idx >= kNumQuant) fail("quantize index out of range");
      std::vector<double> x(static_cast<size_t>(n));
      read_exact(in, x.data(), x.size());
      kQuant[idx](x, res);
    } else if (op == 1) {
      if (idx >= kNumCast) fail("cast index out of range");
      std::vector<int64_t> x(static_cast<size_t>(n));
      read_exact(in, x.data(), x.size());
      kCast[idx](x, res);
    } else if (op >= 2 && op <= 4) {
      if (idx >= kNumBinop) fail("binop index out of range");
      std::vector<int64_t> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
      read_exact(in, a.data(), a.size());
      read_exact(in, b.data(), b.size());
      const ResultType t = kBinop[idx](op, a, b, res);
      write_all(out, &t, 1);
    } else if (op == 5 || op == 6) {
      if (idx >= kNumShift) fail("shift index out of range");
      std::vector<int64_t> x(static_cast<size_t>(n)), sh(static_cast<size_t>(n));
      read_exact(in, x.data(), x.size());
      read_exact(in, sh.data(), sh.size());
      kShift[idx](op, x, sh, res);
    } else {
      fail("unknown op");
    }
    write_all(out, res.data(), res.size());
  }
  std::fclose(in);
  if (std::fclose(out) != 0) fail("cannot close the output file");
  return 0;
}
