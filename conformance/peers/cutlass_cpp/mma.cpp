// tcgen05.mma as CUTLASS builds it (cute/atom/mma_traits_sm100.hpp): for each MMA_Traits configuration
// of peers_configs.hpp, the instruction descriptor its traits construct and the runtime descriptor words
// the atom issues (sparsity selector, scale-factor IDs from the TMEM addresses' byte bits, the SM103
// K = 96 bit), and, where asked, the TMEM fragments of its operands: D (FrgTypeC), A in TMEM (FrgTypeA),
// the sparsity metadata (FrgTypeE) and the scale factors (FrgTypeSFA / FrgTypeSFB, in the shapes the
// block-scaled collectives give them).
#include "fragments.hpp"
#include "peers.hpp"

#include <type_traits>

using namespace cute;

namespace {

template <class Traits>
constexpr bool block_scaled = std::is_same_v<std::remove_cv_t<decltype(Traits{}.idesc_)>, UMMA::InstrDescriptorBlockScaled>;

// The descriptor words the atom issues: sparse atoms with selector 0-3 (make_runtime_instr_desc /
// _block_scaled with sparse_id2), block-scaled atoms with scale-factor IDs 0-3 (TMEM addresses with the
// byte index in bits 30-31), SM103 K = 96 atoms with k_size_ = 1 (their mma_unpack sets it).
template <class Traits, bool Sparse, bool K96>
void descriptors() {
  Traits traits;
  uint64_t out[64];
  int count = 0;
  if constexpr (block_scaled<Traits>) {
    UMMA::InstrDescriptorBlockScaled desc = traits.idesc_;
    if constexpr (K96) desc.k_size_ = 1;
    for (uint32_t selector = 0; selector < (Sparse ? 4u : 1u); ++selector)
      for (uint32_t sfa = 0; sfa < 4; ++sfa)
        for (uint32_t sfb = 0; sfb < 4; ++sfb)
          out[count++] = UMMA::make_runtime_instr_desc_block_scaled<Sparse>(desc, sfa << 30, sfb << 30, uint16_t(selector)) >> 32;
  } else {
    for (uint32_t selector = 0; selector < (Sparse ? 4u : 1u); ++selector)
      out[count++] = UMMA::make_runtime_instr_desc<Sparse>(traits.idesc_, uint16_t(selector)) >> 32;
  }
  peers::field("idesc", uint32_t(traits.idesc_));
  peers::words("runtime", out, count);
}

// The fragments FRAGMENTS asks for (FRAGMENT_D | FRAGMENT_A | FRAGMENT_E | FRAGMENT_SF).
enum { FRAGMENT_D = 1, FRAGMENT_A = 2, FRAGMENT_E = 4, FRAGMENT_SF = 8 };

template <class Traits, bool Sparse, int VS, bool K96, int Fragments>
void emit(char const* id) {
  peers::open("mma", id);
  descriptors<Traits, Sparse, K96>();
  if constexpr (Fragments & FRAGMENT_D) peers::tmem_tensor("d", peers::fragment_d<Traits>());
  if constexpr (Fragments & FRAGMENT_A) peers::tmem_tensor("a", peers::fragment_a<Traits>());
  if constexpr (Fragments & FRAGMENT_E) peers::tmem_tensor("e", peers::fragment_e<Traits>());
  if constexpr (Fragments & FRAGMENT_SF) {
    peers::tmem_tensor("sfa", peers::fragment_sf<Traits, VS, K96, true>(), VS);
    peers::tmem_tensor("sfb", peers::fragment_sf<Traits, VS, K96, false>(), VS);
  }
  peers::close();
}

}  // namespace

// PEERS_MMA(id, sparse, scale-vector size, K = 96, fragments, traits type)
#define PEERS_MMA(ID, SPARSE, VS, K96, FRAGMENTS, ...) emit<__VA_ARGS__, SPARSE, VS, K96, FRAGMENTS>(ID);

int main() {
#include "peers_configs.hpp"
  return 0;
}
