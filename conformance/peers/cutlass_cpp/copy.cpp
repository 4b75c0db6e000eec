// The tcgen05.ld / st / cp atoms of cute/atom/copy_traits_sm100.hpp: for each Copy_Traits of
// peers_configs.hpp, the TMEM bit each register bit (ld/st) or each copied bit (cp) maps to.
//
// A Copy_Traits maps (thread, value bit) to a logical bit (SrcLayout, DstLayout) and a logical bit to a
// TMEM bit address (ValID: lane * TMEM::DP_b + bit along the lane). For tcgen05.ld the registers are the
// destination (DstLayout), for tcgen05.st the source (SrcLayout); tcgen05.cp's destination is TMEM.
#include "peers.hpp"

#include <cute/atom/copy_traits_sm100.hpp>

using namespace cute;

namespace {

// ,"bits":[ValID(Registers(t, 16 j))...] for every thread t and half register j (thread fastest).
template <class Traits, bool Load>
void registers(char const* id) {
  using Registers = std::conditional_t<Load, typename Traits::DstLayout, typename Traits::SrcLayout>;
  typename Traits::ValID valid;
  Registers regs;
  int const threads = int(size<0>(regs));
  int const bits = int(size<1>(regs));
  peers::open("ldst", id);
  peers::field("threads", threads);
  peers::field("bits_per_thread", bits);
  std::printf(",\"bits\":[");
  for (int j = 0; j < bits / 16; ++j)
    for (int t = 0; t < threads; ++t)
      std::printf(j || t ? ",%lld" : "%lld", (long long)valid(regs(t, 16 * j)));
  std::printf("]");
  peers::close();
}

// tcgen05.cp: how many bits each of the 128 TMEM lanes receives (ValID of every DstLayout value).
template <class Traits>
void cp(char const* id) {
  typename Traits::ValID valid;
  typename Traits::DstLayout dst;
  int lane_bits[128] = {};
  for (int v = 0; v < int(size<1>(dst)); ++v) ++lane_bits[int(valid(dst(0, v)) / TMEM::DP_b{})];
  peers::open("cp", id);
  peers::field("ctas", int(size<0>(dst)));
  std::printf(",\"lane_bits\":[");
  for (int lane = 0; lane < 128; ++lane) std::printf(lane ? ",%d" : "%d", lane_bits[lane]);
  std::printf("]");
  peers::close();
}

}  // namespace

// PEERS_LDST(id, is a load, atom); PEERS_CP(id, atom)
#define PEERS_LDST(ID, LOAD, ATOM) registers<Copy_Traits<ATOM>, LOAD>(ID);
#define PEERS_CP(ID, ATOM) cp<Copy_Traits<ATOM>>(ID);

int main() {
  std::printf("{\"area\":\"tmem\",\"id\":\"DP_b\",\"lane_stride\":%d}\n", int(TMEM::DP_b{}));
#include "peers_configs.hpp"
  return 0;
}
