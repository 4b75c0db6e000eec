// Shared helpers of the peer programs: each prints one JSON object per line on stdout.
//
// The programs print what CUTLASS's own constructors compute (instruction descriptors, shared-memory
// descriptors, TMEM fragments, copy atoms) so that conformance/peers/cutlass.py can compare it with the
// project's ISA facts. The configurations come from peers_configs.hpp, which the Python side writes
// (X-macros naming CUTLASS types), so every configuration is a CUTLASS type the compiler accepted.
#pragma once

#include <cstdint>
#include <cstdio>
#include <type_traits>

#include <cute/tensor.hpp>

namespace peers {

inline void open(char const* area, char const* id) { std::printf("{\"area\":\"%s\",\"id\":\"%s\"", area, id); }
inline void close() { std::printf("}\n"); }
inline void field(char const* name, uint64_t value) { std::printf(",\"%s\":%llu", name, (unsigned long long)value); }

inline void words(char const* name, uint64_t const* values, int count) {
  std::printf(",\"%s\":[", name);
  for (int i = 0; i < count; ++i) std::printf(i ? ",%llu" : "%llu", (unsigned long long)values[i]);
  std::printf("]");
}

// A TMEM tensor of rank >= 1 whose mode 0 is (X, Y): ,"NAME":{"shift":S,"x":X,"y":Y,"blocks":B,
// "addresses":[...]} with the raw TMEM address (tmem_ptr arithmetic: lane in bits 16-23, column in
// bits 0-15, the sub-word index of an element of 32 / 2^S bits rotated into the top S bits) of every
// (x, y = y_step * j) of every block b of mode 2 (1 when the tensor has no mode 2), x fastest, then j,
// then b.
template <class Tensor>
void tmem_tensor(char const* name, Tensor const& t, int y_step = 1) {
  using namespace cute;
  using Value = typename std::remove_cv_t<std::remove_reference_t<decltype(t.data())>>::value_type;
  auto atom = layout<0>(t.layout());
  int const xs = int(size<0>(atom));
  int const ys = int(size<1>(atom)) / y_step;
  int blocks = 1;
  if constexpr (decltype(rank(t.layout()))::value >= 3) blocks = int(size<2>(t.layout()));
  std::printf(",\"%s\":{\"shift\":%d,\"x\":%d,\"y\":%d,\"blocks\":%d,\"addresses\":[", name, int(tmem_ptr<Value>::OffsetShift), xs, ys,
              blocks);
  bool first = true;
  for (int b = 0; b < blocks; ++b) {
    for (int j = 0; j < ys; ++j) {
      for (int x = 0; x < xs; ++x) {
        uint32_t address;
        if constexpr (decltype(rank(t.layout()))::value >= 3) {
          address = (t.data() + t.layout()(make_coord(x, j * y_step), 0, b)).get();
        } else {
          address = (t.data() + atom(x, j * y_step)).get();
        }
        std::printf(first ? "%u" : ",%u", address);
        first = false;
      }
    }
  }
  std::printf("]}");
}

}  // namespace peers
