// The packing kernel of the collectives (a DSL kernel, here in the emulator): swapping the two
// leading axes of (a, b, m) must move every element's bits exactly, whatever unit (8, 4 or 1
// bytes) the row length and the buffers' alignment allow.
#include "ops/collectives/chunk_transpose.h"

#include "tests/ops/collectives_test_util.h"

namespace tjcoll {
namespace {

TEST(ChunkTranspose, SwapsTheLeadingAxesBitForBit) {
  TJ_SEEDED_RNG(rng);
  struct Case {
    int64_t a, b, m;
    int64_t offset;  // elements into the buffers, to misalign them
  };
  const Case cases[] = {{3, 4, 8, 0},  {4, 3, 5, 0},   {2, 8, 1, 0}, {5, 2, 6, 1},
                        {1, 1, 33, 0}, {16, 17, 3, 3}, {7, 1, 2, 0}};
  for (DType dtype : kCollectiveDTypes)
    for (const Case& c : cases) {
      SCOPED_TRACE(fmt::format("{} ({}, {}, {}) at element {}", name_of(dtype), c.a, c.b, c.m, c.offset));
      const int64_t n = c.a * c.b * c.m;
      Host src = random_full_range(DType::i32, static_cast<size_t>(n + c.offset), rng);
      Host bits(dtype, static_cast<size_t>(n + c.offset));
      std::memcpy(bits.bytes.data(), src.bytes.data(), bits.bytes.size());  // any bit pattern, NaNs included
      Tensor in = upload(bits);
      Tensor out = poisoned(dtype, {n + c.offset});
      ops::swap_leading_axes(in.view({n}, c.offset).data(), out.view({n}, c.offset).data(), c.a, c.b, c.m, dtype,
                             Device::emu().default_stream());
      Host got = download(out);
      size_t wrong = 0;
      for (int64_t ai = 0; ai < c.a; ++ai)
        for (int64_t bi = 0; bi < c.b; ++bi)
          for (int64_t i = 0; i < c.m; ++i) {
            auto from = static_cast<size_t>(c.offset + (ai * c.b + bi) * c.m + i);
            auto to = static_cast<size_t>(c.offset + (bi * c.a + ai) * c.m + i);
            wrong += got.raw(to) != bits.raw(from);
          }
      EXPECT_EQ(wrong, 0u);
      std::vector<size_t> before(static_cast<size_t>(c.offset));
      std::iota(before.begin(), before.end(), size_t{0});
      expect_untouched("the elements before dst", got, before);
    }
}

}  // namespace
}  // namespace tjcoll
