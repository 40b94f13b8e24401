// Emulation of sm_90a's warpgroup MMA: wgmma.mma_async with B in shared memory, named by a
// matrix descriptor, A there too or in registers, and its fences and groups, as the PTX ISA
// defines them:
//   - a descriptor holds the matrix's start address, leading and stride byte offsets (>> 4,
//     14 bits each) and a swizzle mode (bits 62-63: 1 = 128-byte, 2 = 64-byte, 3 = 32-byte,
//     0 = none); element (mn, k) of a K-major or MN-major matrix sits where the canonical
//     layout of that mode puts it, and the swizzle XORs address bits [4, 4+b) with
//     [7, 7+b) of the absolute shared address (b = 3, 2, 1);
//   - A from registers: each thread hands in four words, warp w of the warpgroup holding
//     rows 16w..16w+15 in the mma.m16n8kK A fragment (runtime/emu/mma_fragments.h);
//   - each thread of the warpgroup gets its accumulator fragment: warp w holds rows
//     16w..16w+15; register i of lane l is row 16w + l/4 + 8*((i/2)%2), column
//     8*(i/4) + 2*(l%4) + i%2. Positions are written here from the ISA, not from the
//     compiler's layouts (codegen/wgmma_layout.h), so a layout bug shows up as wrong numbers;
//   - the operands are read through the async proxy: shared memory written by st.shared or
//     cp.async must have been fenced by its writer (fence.proxy.async) before the read;
//   - wgmma.mma_async needs a wgmma.fence first. The emulator cannot see register accesses,
//     so it asks for one before the first wgmma.mma_async after each wgmma.wait_group,
//     which is what the compiler emits (stricter than PTX when accumulators stay untouched);
//   - the product is computed at the issue from the shared memory of that moment; what each
//     thread read is fingerprinted, and wgmma.wait_group checks that the shared memory under
//     every completing wgmma is unchanged: a kernel that overwrites an operand before the
//     wait is reported;
//   - the results land at the wait: until then D's registers hold placeholders (quiet NaNs
//     numbered in their payload), so a kernel that reads an accumulator before its
//     wgmma.wait_group computes with NaN. A wait that takes the register as an operand
//     delivers its value once the group is complete; a later wgmma.mma_async accumulating
//     into the register (allowed without a wait) takes the value held back for it.
// Numerics as for mma.sync (runtime/emu/mma_ops.cpp): exact products, the sum's f32 result
// as tensor_core_result gives it (fp8's narrow accumulator modelled); s32 wraps.
#include "runtime/emu/wgmma.h"

#include <bit>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "runtime/emu/cta.h"
#include "runtime/emu/mma_fragments.h"
#include "runtime/emu/runtime_symbols.h"
#include "runtime/emu/tensor_core_numerics.h"
#include "runtime/emu/warp_sync.h"

namespace tilejit::emu {
namespace {

struct SharedMatrix {
  uint32_t start = 0, leading = 0, stride = 0;
  int swizzle_bytes = 0;  // 0: none
};

SharedMatrix decode_descriptor(uint64_t d, const char* which) {
  // Bits 14-15, 30-31, 46-48 and 52-61 hold nothing on sm_90a.
  constexpr uint64_t kReserved = uint64_t{3} << 14 | uint64_t{3} << 30 | uint64_t{7} << 46 | uint64_t{0x3ff} << 52;
  if (d & kReserved) throw KernelFault{fmt::format("wgmma.mma_async: matrix descriptor {} {:#018x} sets reserved bits", which, d)};
  if ((d >> 49) & 7)
    throw KernelFault{fmt::format("wgmma.mma_async: matrix descriptor {} {:#018x} has a base offset; the emulator supports "
                             "matrices whose swizzle pattern starts on its repeat boundary only (base offset 0)",
                             which, d)};
  static constexpr int kSwizzle[] = {0, 128, 64, 32};
  return {static_cast<uint32_t>(d & 0x3fff) << 4, static_cast<uint32_t>((d >> 16) & 0x3fff) << 4,
          static_cast<uint32_t>((d >> 32) & 0x3fff) << 4, kSwizzle[d >> 62]};
}

// The shared-window address of element (mn, k) of a matrix in its canonical layout.
uint32_t element_address(const SharedMatrix& m, bool mn_major, uint32_t mn, uint32_t k, uint32_t bytes) {
  uint32_t a;
  if (m.swizzle_bytes == 0) {
    uint32_t per_chunk = 16 / bytes;
    a = mn_major ? m.start + (mn % per_chunk) * bytes + (mn / per_chunk) * m.stride + (k % 8) * 16 + (k / 8) * m.leading
                 : m.start + (mn / 8) * m.stride + (mn % 8) * 16 + (k * bytes / 16) * m.leading + (k * bytes) % 16;
    return a;
  }
  uint32_t span = static_cast<uint32_t>(m.swizzle_bytes), per_span = span / bytes;
  a = mn_major ? m.start + (mn % per_span) * bytes + (mn / per_span) * m.leading + (k % 8) * span + (k / 8) * m.stride
               : m.start + (mn / 8) * m.stride + (mn % 8) * span + k * bytes;
  uint32_t bits_mask = span / 16 - 1;
  return a ^ (((a >> 7) & bits_mask) << 4);
}

// Reads operand elements for one thread, checking each and fingerprinting what it read.
class OperandReader {
 public:
  OperandReader(bool check_proxy) : cta_(*current().cta), check_proxy_(check_proxy) {}

  uint32_t read(const SharedMatrix& m, bool mn_major, uint32_t mn, uint32_t k, int bits, const char* which) {
    uint32_t bytes = static_cast<uint32_t>(bits / 8);
    uint32_t a = element_address(m, mn_major, mn, k, bytes);
    if (a + bytes > static_cast<uint64_t>(cta_.launch->shared_bytes))
      throw KernelFault{fmt::format("wgmma.mma_async reads {} element ({}, {}) at shared address {:#x}, outside the CTA's {} "
                               "bytes of shared memory", which, mn, k, a, cta_.launch->shared_bytes)};
    if (a % bytes) throw KernelFault{fmt::format("wgmma.mma_async: {} element at misaligned shared address {:#x}", which, a)};
    if (check_proxy_) {
      if (int writer = unfenced_generic_writer(cta_, a / 4); writer >= 0)
        throw KernelFault{fmt::format("wgmma.mma_async reads {} at shared address {:#x}, which thread {} wrote through the "
                                 "generic proxy without a fence.proxy.async since",
                                 which, a, writer)};
    }
    uint32_t v = 0;
    std::memcpy(&v, cta_.shared + a, bytes);
    hash_ = (hash_ ^ (a * 0x9e3779b97f4a7c15ull) ^ v) * 0x100000001b3ull;
    return v;
  }
  uint64_t hash() const { return hash_; }

 private:
  Cta& cta_;
  bool check_proxy_;
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

// The bits of the calling thread's two rows of A (row lane/4 of its warp's 16, then the row
// 8 below, K elements each) from the four fragment words each lane of the warp hands in.
std::vector<uint32_t> rows_from_registers(const WgmmaShape& s, const uint32_t* words) {
  WarpExchange& w = warp_exchange("wgmma.mma_async", 0xffffffffu);
  int lane = current().thread->tid % 32;
  std::memcpy(w.words_in[lane], words, 4 * sizeof(uint32_t));
  const int bits = element_bits(s.a), count = 4 * 32 / bits;
  warp_rendezvous(w, [&](WarpExchange& x) {
    for (int l = 0; l < 32; ++l)
      for (int i = 0; i < count; ++i) {
        Position p = a_position(s.k, l, i);
        x.a_rows[p.row][p.col] = fragment_element(x.words_in[l], bits, i);
      }
  });
  std::vector<uint32_t> rows;
  for (int half = 0; half < 2; ++half) rows.insert(rows.end(), w.a_rows[lane / 4 + 8 * half], w.a_rows[lane / 4 + 8 * half] + s.k);
  return rows;
}

// The thread's accumulator registers of D, or only the fingerprint of what they read from
// shared memory when `d` is null. `a_rows`: the thread's rows of A when A is in registers.
uint64_t multiply(const WgmmaShape& s, uint64_t desc_a, const std::vector<uint32_t>& a_rows, uint64_t desc_b,
                  bool scale_d, const uint32_t* c, uint32_t* d, bool check_proxy) {
  SharedMatrix mb = decode_descriptor(desc_b, "B");
  int t = current().thread->tid % 128, warp = t / 32, lane = t % 32;
  int bits_a = element_bits(s.a), bits_b = element_bits(s.b);
  OperandReader reader(check_proxy);
  // The thread's two rows of A and n/4 columns of B, K elements each.
  std::vector<double> a(static_cast<size_t>(2 * s.k)), b(static_cast<size_t>(s.n / 4 * s.k));
  if (s.a_in_registers) {
    for (size_t i = 0; d && i < a.size(); ++i) a[i] = s.scale_a * decode(s.a, a_rows[i]);
  } else {
    SharedMatrix ma = decode_descriptor(desc_a, "A");
    for (int half = 0; half < 2; ++half)
      for (int k = 0; k < s.k; ++k) {
        auto row = static_cast<uint32_t>(16 * warp + lane / 4 + 8 * half);
        a[static_cast<size_t>(half * s.k + k)] =
            s.scale_a * decode(s.a, reader.read(ma, s.a_mn_major, row, static_cast<uint32_t>(k), bits_a, "A"));
      }
  }
  for (int j = 0; j < s.n / 4; ++j)
    for (int k = 0; k < s.k; ++k) {
      auto col = static_cast<uint32_t>(8 * (j / 2) + 2 * (lane % 4) + j % 2);
      b[static_cast<size_t>(j * s.k + k)] =
          s.scale_b * decode(s.b, reader.read(mb, s.b_mn_major, col, static_cast<uint32_t>(k), bits_b, "B"));
    }
  if (!d) return reader.hash();
  for (int i = 0; i < s.n / 2; ++i) {
    const double* ar = &a[static_cast<size_t>(((i >> 1) & 1) * s.k)];
    const double* bc = &b[static_cast<size_t>(((i >> 2) * 2 + (i & 1)) * s.k)];
    if (s.integer) {
      int64_t sum = scale_d ? static_cast<int32_t>(c[i]) : 0;
      for (int k = 0; k < s.k; ++k) sum += static_cast<int64_t>(ar[k]) * static_cast<int64_t>(bc[k]);
      d[i] = static_cast<uint32_t>(sum);
    } else {
      double acc = scale_d ? std::bit_cast<float>(c[i]) : 0.0;
      d[i] = std::bit_cast<uint32_t>(tensor_core_result(s.a, acc, s.k, [&](int k) { return ar[k] * bc[k]; }));
    }
  }
  return reader.hash();
}

void fence() { current().thread->wgmma_fenced = true; }

void commit_group() {
  Thread& t = *current().thread;
  t.committed_mmas.push_back(std::move(t.open_mmas));
  t.open_mmas.clear();
  ++t.mma_groups_committed;
}

// A quiet NaN with a payload that tells this thread's placeholders apart (never 0, so the
// host's default NaN is not one of them).
uint32_t placeholder(Thread& t) {
  constexpr uint32_t kPayloads = (uint32_t{1} << 22) - 1;
  return 0x7fc00000u | (t.next_placeholder++ % kPayloads + 1);
}

void fence_proxy_async_shared() {
  Cta& cta = *current().cta;
  current().thread->proxy_fenced_at = ++cta.proxy_clock;
}

}  // namespace

void wgmma_mma_async(const WgmmaShape& shape, const WgmmaA& a, uint64_t desc_b, bool scale_d, const uint32_t* c,
                     uint32_t* d) {
  Thread& t = *current().thread;
  if (!t.wgmma_fenced)
    throw KernelFault{"wgmma.mma_async without a wgmma.fence before it (since the start or the last wgmma.wait_group)"};
  std::vector<uint32_t> a_rows;
  if (shape.a_in_registers) a_rows = rows_from_registers(shape, a.words);
  int registers = shape.n / 2;
  std::vector<uint32_t> accumulated(c, c + registers);
  for (uint32_t& word : accumulated) {
    auto held = t.pending_results.find(word);
    if (held == t.pending_results.end()) continue;
    // Only a wgmma of the same shape may take a running one's accumulator without a wait.
    const WgmmaShape& running = *held->second.shape;
    if (running.n != shape.n || running.k != shape.k || running.integer != shape.integer)
      throw KernelFault{fmt::format("wgmma.mma_async m64n{}k{} accumulates into the registers of a running m64n{}k{}: "
                                    "only one of the same shape may, without a wgmma.wait_group first",
                                    shape.n, shape.k, running.n, running.k)};
    word = held->second.value;
    t.pending_results.erase(held);
  }
  std::vector<uint32_t> result(static_cast<size_t>(registers));
  uint64_t hash =
      multiply(shape, a.descriptor, a_rows, desc_b, scale_d, accumulated.data(), result.data(), /*check_proxy=*/true);
  t.open_mmas.push_back({a.descriptor, desc_b, &shape, hash});
  for (int i = 0; i < registers; ++i) {
    d[i] = placeholder(t);
    t.pending_results[d[i]] = {result[static_cast<size_t>(i)], t.mma_groups_committed, &shape};
  }
}

void wgmma_wait_group(int64_t pending) {
  Thread& t = *current().thread;
  while (t.committed_mmas.size() > static_cast<size_t>(std::max<int64_t>(pending, 0))) {
    for (const AsyncMma& m : t.committed_mmas.front())
      if (multiply(*m.shape, m.desc_a, {}, m.desc_b, false, nullptr, nullptr, /*check_proxy=*/false) != m.operand_hash)
        throw KernelFault{"shared memory read by a wgmma.mma_async changed before the wgmma.wait_group that completes it"};
    t.committed_mmas.pop_front();
    ++t.mma_groups_completed;
  }
  t.wgmma_fenced = false;
}

uint32_t wgmma_landed(uint32_t word) {
  Thread& t = *current().thread;
  auto held = t.pending_results.find(word);
  if (held == t.pending_results.end() || held->second.group >= t.mma_groups_completed) return word;
  uint32_t value = held->second.value;
  t.pending_results.erase(held);
  return value;
}

namespace {
void wait_group_from_kernel(int64_t pending) {
  unwinding_faults([&] { wgmma_wait_group(pending); });
}
}  // namespace

void add_wgmma_symbols(codegen::HostSymbols& out) {
  auto add = [&](const char* nvvm, void* fn) { out.emplace_back(codegen::host_intrinsic_name(nvvm), fn); };
  add("llvm.nvvm.wgmma.fence.sync.aligned", reinterpret_cast<void*>(fence));
  add("llvm.nvvm.wgmma.commit_group.sync.aligned", reinterpret_cast<void*>(commit_group));
  add("llvm.nvvm.wgmma.wait_group.sync.aligned", reinterpret_cast<void*>(wait_group_from_kernel));
  add("llvm.nvvm.fence.proxy.async.shared_cta", reinterpret_cast<void*>(fence_proxy_async_shared));
}

}  // namespace tilejit::emu
