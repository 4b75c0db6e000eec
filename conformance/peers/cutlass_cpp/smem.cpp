// Shared-memory descriptors as CUTLASS builds them for tcgen05.mma: the canonical layout atoms of
// cute/atom/mma_traits_sm100.hpp (UMMA::Layout_{K,MN}_{INTER,SW32,SW64,SW128}_Atom, and
// Layout_MN_SW128_32B_Atom) tiled to an MMA's operand over four k-blocks as the collectives do
// (UMMA::tile_to_mma_shape, TiledMma::make_fragment_A/B), the descriptor of every k-block, and the byte
// address of every element of each k-block (the swizzled shared-memory pointer CuTe computes).
#include "peers.hpp"

#include <cute/atom/mma_traits_sm100.hpp>

using namespace cute;

namespace {

// Stand-ins for shared memory, 1024-byte aligned like a swizzle pattern: on the host CuTe's
// cast_smem_ptr_to_uint gives 0, so descriptors start at 0 and offsets count from each operand's base.
alignas(1024) unsigned char smem_a[1 << 18];
alignas(1024) unsigned char smem_b[1 << 18];

template <class Tensor>
uint32_t offset_of(Tensor const& t, unsigned char const* base, int row, int k, int block) {
  return uint32_t(reinterpret_cast<unsigned char const*>(&t(make_coord(row, k), 0, block)) - base);
}

// ,"NAME":{"rows":R,"k":K,"blocks":4,"descriptors":[...],"offsets":[...]} for one operand: the
// descriptor of each k-block and the byte offset of element (row, k) of each, row fastest.
template <class Fragment, class Smem>
void operand(char const* name, Fragment const& descriptors, Smem const& s, unsigned char const* base) {
  int const rows = int(size<0, 0>(s));
  int const k = int(size<0, 1>(s));
  int const blocks = int(size<2>(s));
  std::printf(",\"%s\":{\"rows\":%d,\"k\":%d,\"blocks\":%d,\"descriptors\":[", name, rows, k, blocks);
  for (int b = 0; b < blocks; ++b) std::printf(b ? ",%llu" : "%llu", (unsigned long long)uint64_t(descriptors(0, 0, b)));
  std::printf("],\"offsets\":[");
  bool first = true;
  for (int b = 0; b < blocks; ++b)
    for (int j = 0; j < k; ++j)
      for (int r = 0; r < rows; ++r) {
        std::printf(first ? "%u" : ",%u", offset_of(s, base, r, j, b));
        first = false;
      }
  std::printf("]}");
}

// One MMA atom with operand layouts built from the atoms A and B over four k-blocks.
template <class MmaAtom, class AtomA, class AtomB>
void emit(char const* id) {
  auto mma = make_tiled_mma(MmaAtom{});
  using Shape = typename MMA_Traits<MmaAtom>::Shape_MNK;
  constexpr int M = int(size<0>(Shape{})), N = int(size<1>(Shape{})), K = int(size<2>(Shape{}));
  auto a_layout = UMMA::tile_to_mma_shape(AtomA{}, partition_shape_A(mma, make_shape(Int<M>{}, Int<4 * K>{})));
  auto b_layout = UMMA::tile_to_mma_shape(AtomB{}, partition_shape_B(mma, make_shape(Int<N>{}, Int<4 * K>{})));
  using T = typename MMA_Traits<MmaAtom>::ValTypeA;
  Tensor sA = make_tensor(make_smem_ptr(reinterpret_cast<T*>(smem_a)), a_layout);
  Tensor sB = make_tensor(make_smem_ptr(reinterpret_cast<T*>(smem_b)), b_layout);
  auto descriptors_a = mma.make_fragment_A(sA);  // on the host CuTe prints a line here: not a record
  auto descriptors_b = mma.make_fragment_B(sB);
  peers::open("smem", id);
  operand("a", descriptors_a, sA, smem_a);
  operand("b", descriptors_b, sB, smem_b);
  peers::close();
}

}  // namespace

// PEERS_SMEM(id, MMA atom, A layout atom, B layout atom)
#define PEERS_SMEM(ID, ...) emit<__VA_ARGS__>(ID);

int main() {
#include "peers_configs.hpp"
  return 0;
}
