// The TMEM fragments of an MMA configuration as CUTLASS's collectives make them, one function each, so
// that a probe can ask the compiler whether CUTLASS builds a fragment (decltype of the call instantiates
// it, static assertions included) before mma.cpp prints it.
#pragma once

#include <type_traits>

#include <cute/atom/mma_traits_sm100.hpp>
#include <cutlass/detail/sm100_blockscaled_layout.hpp>

namespace peers {

using namespace cute;

template <class Traits>
constexpr int rows_per_cta() { return int(size<1, 0>(typename Traits::CLayout{})); }
template <class Traits>
constexpr int n_of() { return int(size<1, 1>(typename Traits::CLayout{})); }
template <class Traits>
constexpr int k_of() { return int(size<2>(typename Traits::Shape_MNK{})); }

// D (FrgTypeC) of one CTA: (rows per CTA, N).
template <class Traits>
auto fragment_d() {
  return Traits::FrgTypeC::make(make_shape(make_shape(Int<rows_per_cta<Traits>()>{}, Int<n_of<Traits>()>{}), _1{}, _1{}));
}

// A in TMEM (FrgTypeA of a TS atom): (rows per CTA, K).
template <class Traits>
auto fragment_a() {
  return Traits::FrgTypeA::make(make_shape(make_shape(Int<rows_per_cta<Traits>()>{}, Int<k_of<Traits>()>{}), _1{}, _1{}));
}

// Sparsity metadata (FrgTypeE): (rows per CTA, K), one share of a metadata nibble per A element.
template <class Traits>
auto fragment_e() {
  return Traits::FrgTypeE::make(make_shape(make_shape(Int<rows_per_cta<Traits>()>{}, Int<k_of<Traits>()>{}), _1{}, _1{}));
}

// The M and N of an SM103 atom's MMA_ScaleFactor (the SM100_MMA_MXF4_SS whose scale-factor tiles it uses).
template <class T> struct scale_tile;
template <class A, class B, class C, class SF, int M, int N, int VS, UMMA::Major AM, UMMA::Major BM, UMMA::ScaleIn AN, UMMA::ScaleIn BN>
struct scale_tile<SM100_MMA_MXF4_SS<A, B, C, SF, M, N, VS, AM, BM, AN, BN>> {
  static constexpr int m = M, n = N;
};

// Scale factors of A (Sfa) or B: K = 96 as cutlass/gemm/collective/sm103_blockscaled_mma_warpspecialized.hpp
// indexes them (a CTA tile of 8 MMAs keeps ((MMA_MN/128,(32,4)),(VS,1)), 1, 384/VS), MMA_MN from the traits'
// MMA_ScaleFactor, and MMA j reads from factor 3j, or 6j), else the TMEM tensor the sm100 collectives make
// from the shared-memory atom of cutlass/detail/sm100_blockscaled_layout.hpp for a tile holding one
// 4-factor block along K.
template <class Traits, int VS, bool K96, bool Sfa>
auto fragment_sf() {
  using Frg = std::conditional_t<Sfa, typename Traits::FrgTypeSFA, typename Traits::FrgTypeSFB>;
  constexpr int M = int(size<0>(typename Traits::Shape_MNK{}));
  constexpr int N = int(size<1>(typename Traits::Shape_MNK{}));
  if constexpr (K96) {
    using Tile = scale_tile<typename Traits::MMA_ScaleFactor>;
    constexpr int mn_blocks = (Sfa ? Tile::m : Tile::n) / 128;
    return make_tensor<Frg>(make_shape(make_shape(prepend(Int<mn_blocks>{}, make_shape(_32{}, _4{})), make_shape(Int<VS>{}, _1{})),
                                       _1{}, Int<8 * 96 / 2 / VS>{}));
  } else {
    using Config = cutlass::detail::Sm1xxBlockScaledConfig<VS>;
    using TiledMma = decltype(make_tiled_mma(Traits{}));
    using Tile = Shape<Int<M>, Int<N>, Int<4 * VS>>;
    using Atom = std::conditional_t<Sfa, decltype(Config::deduce_smem_layoutSFA(TiledMma{}, Tile{})),
                                    decltype(Config::deduce_smem_layoutSFB(TiledMma{}, Tile{}))>;
    // Fewer than 128 rows per CTA give the collectives' layout no 128-row block: a shape of size 0,
    // which CuTe would divide by. CUTLASS has no scale-factor tile for such an MMA.
    static_assert(decltype(size(Atom{}))::value > 0, "no scale-factor tile: fewer than 128 rows per CTA");
    return make_tensor<Frg>(take<0, 3>(shape(Atom{})));
  }
}

}  // namespace peers
