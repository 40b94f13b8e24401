// The emulator's interpreter of inline PTX: the blocks the compiler writes where LLVM has no
// intrinsic (wgmma.mma_async; wgmma.wait_group, which takes the accumulators as operands so
// that no use of them moves above it, and where their values land). host_compiler turns each asm call into a call here
// with its text, its constraints and its operands as 64-bit words. A text is parsed once per
// host thread; one the emulator does not know stops the kernel with the text in the message.
#include <charconv>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "runtime/emu/cta.h"
#include "runtime/emu/runtime_symbols.h"
#include "runtime/emu/wgmma.h"

namespace tilejit::emu {
namespace {

struct InlinePtx {
  enum class Kind { mma_async, wait_group } kind = Kind::wait_group;
  WgmmaShape shape;
  std::vector<int> d;          // operand numbers of D's registers, in order
  int desc_a = -1, desc_b = -1;
  std::vector<int> a_words;    // A's four fragment words, when A is in registers
  int scale_d_operand = -1;    // the operand a `setp.ne.b32 p, $i, 0` turns into scale-d
  bool scale_d = true;         // when scale-d is an immediate
  int64_t pending = 0;         // wait_group's N
  std::vector<int> tied_input; // per output: the input that gives its value on entry, or -1
};

[[noreturn]] void unknown(std::string_view text, const std::string& why) {
  throw KernelFault{fmt::format("the emulator cannot run this inline PTX ({}):\n{}", why, text)};
}

// The integer `token` spells in full, or nullopt.
std::optional<int> integer(std::string_view token) {
  int value = 0;
  auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (error != std::errc() || end != token.data() + token.size()) return std::nullopt;
  return value;
}

int operand_number(std::string_view text, const std::string& token) {
  std::optional<int> n = token.size() >= 2 && token[0] == '$' ? integer(token.substr(1)) : std::nullopt;
  if (!n || *n < 0) unknown(text, fmt::format("'{}' is not an operand", token));
  return *n;
}

Encoding encoding(std::string_view text, const std::string& name) {
  static const std::unordered_map<std::string, Encoding> names = {{"f16", Encoding::f16},   {"bf16", Encoding::bf16},
                                                                  {"e4m3", Encoding::e4m3}, {"e5m2", Encoding::e5m2},
                                                                  {"s8", Encoding::s8}};
  auto it = names.find(name);
  if (it == names.end()) unknown(text, fmt::format("operand type .{} is not emulated", name));
  return it->second;
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> items;
  std::string item;
  for (char ch : list + ",") {
    if (ch == ',') {
      if (!item.empty()) items.push_back(item);
      item.clear();
    } else if (!std::isspace(static_cast<unsigned char>(ch))) {
      item += ch;
    }
  }
  return items;
}

// wgmma.mma_async's operands after its name: "{d...}, a, b-desc, scale-d, immediates...;", a
// being a descriptor or "{a0, a1, a2, a3}" (kept without its braces). Scanned by hand: std::regex matches by recursion,
// one level per character, and a 128-register D overflows the small stack a fiber runs on.
struct MmaOperands {
  std::string d, a, b, scale_d;
  bool a_in_registers = false;
  std::vector<std::string> immediates;
};

MmaOperands scan_mma_operands(std::string_view text, std::string_view rest) {
  auto skip_space = [&] {
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest[0]))) rest.remove_prefix(1);
  };
  auto expect = [&](char c, const std::string& what) {
    skip_space();
    if (rest.empty() || rest[0] != c) unknown(text, fmt::format("expected '{}' {}", c, what));
    rest.remove_prefix(1);
  };
  auto braced = [&](const char* what) {  // "{...}", without the braces
    expect('{', fmt::format("before {}", what));
    size_t close = rest.find('}');
    if (close == std::string_view::npos) unknown(text, fmt::format("{} have no closing brace", what));
    std::string inside(rest.substr(0, close));
    rest.remove_prefix(close + 1);
    return inside;
  };
  auto token = [&](const char* what) {  // up to the next comma, semicolon or space
    skip_space();
    size_t end = rest.find_first_of(",; \t\n");
    std::string word(rest.substr(0, end == std::string_view::npos ? rest.size() : end));
    if (word.empty()) unknown(text, fmt::format("{} is missing", what));
    rest.remove_prefix(word.size());
    return word;
  };
  MmaOperands o;
  o.d = braced("D's registers");
  expect(',', "after D");
  skip_space();
  o.a_in_registers = !rest.empty() && rest[0] == '{';
  o.a = o.a_in_registers ? braced("A's registers") : token("A's descriptor");
  expect(',', "after A");
  o.b = token("B's descriptor");
  expect(',', "after B");
  o.scale_d = token("scale-d");
  for (skip_space(); !rest.empty() && rest[0] == ','; skip_space()) {
    rest.remove_prefix(1);
    o.immediates.push_back(token("an immediate operand"));
  }
  expect(';', "at the end of wgmma.mma_async");
  return o;
}

// `m`: the instruction name's captures (n, k, accumulator type, A's and B's types); `operands`
// the text after the name.
void parse_mma(std::string_view text, const std::smatch& m, std::string_view operands, InlinePtx& p) {
  p.kind = InlinePtx::Kind::mma_async;
  WgmmaShape& s = p.shape;
  s.n = std::stoi(m[1]);
  s.k = std::stoi(m[2]);
  s.integer = m[3] == "s32";
  s.a = encoding(text, m[4]);
  s.b = encoding(text, m[5]);
  int bits = element_bits(s.a);
  // N is a multiple of 8 up to 256; integer products come in fewer widths (8 to 32, then
  // multiples of 16).
  bool width = s.n >= 8 && s.n <= 256 && s.n % 8 == 0 && (!s.integer || s.n <= 32 || s.n % 16 == 0);
  if (s.k != 256 / bits || element_bits(s.b) != bits || (s.integer != (s.a == Encoding::s8)) || !width)
    unknown(text, "shape and types do not form a wgmma.mma_async instruction");
  MmaOperands o = scan_mma_operands(text, operands);
  for (const std::string& r : split(o.d)) p.d.push_back(operand_number(text, r));
  if (static_cast<int>(p.d.size()) != s.n / 2) unknown(text, fmt::format("D has {} registers, not {}", p.d.size(), s.n / 2));
  s.a_in_registers = o.a_in_registers;
  if (s.a_in_registers) {
    for (const std::string& r : split(o.a)) p.a_words.push_back(operand_number(text, r));
    if (p.a_words.size() != 4) unknown(text, fmt::format("A has {} registers, not 4", p.a_words.size()));
  } else {
    p.desc_a = operand_number(text, o.a);
  }
  p.desc_b = operand_number(text, o.b);
  const std::string& scale_d = o.scale_d;
  if (scale_d == "0" || scale_d == "1") {
    p.scale_d = scale_d == "1";
  } else {
    std::smatch setp;
    std::string all(text);
    std::regex define("setp\\.ne\\.b32\\s+" + scale_d + "\\s*,\\s*(\\$\\d+)\\s*,\\s*0\\s*;");
    if (!std::regex_search(all, setp, define)) unknown(text, "scale-d is not set by setp.ne.b32 from an operand");
    p.scale_d_operand = operand_number(text, setp[1]);
  }
  // imm-scale-a and imm-scale-b (not for integers), then for 16-bit types imm-trans-a (not
  // in the register form) and imm-trans-b.
  const std::vector<std::string>& imm = o.immediates;
  size_t transposes = bits == 16 ? (s.a_in_registers ? 1 : 2) : 0;
  size_t expected = s.integer ? 0 : 2 + transposes;
  if (imm.size() != expected) unknown(text, fmt::format("{} immediate operands after scale-d, not {}", imm.size(), expected));
  auto immediate = [&](size_t i, int a, int b) {
    std::optional<int> v = integer(imm[i]);
    if (!v || (*v != a && *v != b)) unknown(text, fmt::format("immediate {} must be {} or {}", imm[i], a, b));
    return *v;
  };
  if (expected >= 2) s.scale_a = immediate(0, 1, -1), s.scale_b = immediate(1, 1, -1);
  if (transposes == 2) s.a_mn_major = immediate(2, 0, 1) == 1;
  if (transposes >= 1) s.b_mn_major = immediate(expected - 1, 0, 1) == 1;
}

void parse_constraints(std::string_view text, const std::string& constraints, int n_out, InlinePtx& p) {
  std::vector<std::string> items = split(constraints);
  p.tied_input.assign(static_cast<size_t>(n_out), -1);
  int outputs = 0;
  for (const std::string& c : items) {
    if (c[0] == '=') {
      ++outputs;
    } else if (std::isdigit(static_cast<unsigned char>(c[0]))) {
      int tied = std::stoi(c);
      if (tied >= n_out) unknown(text, fmt::format("constraint '{}' ties to no output", c));
      p.tied_input[static_cast<size_t>(tied)] = static_cast<int>(&c - &items[0]) - outputs;
    }
  }
  if (outputs != n_out) unknown(text, fmt::format("{} output constraints for {} outputs", outputs, n_out));
}

InlinePtx parse(std::string_view text, const char* constraints, int n_out) {
  static const std::regex mma("wgmma\\.mma_async\\.sync\\.aligned\\.m64n(\\d+)k(\\d+)\\.(f32|s32)\\.(\\w+)\\.(\\w+)");
  static const std::regex wait("wgmma\\.wait_group\\.sync\\.aligned\\s+(\\d+)\\s*;");
  std::string all(text);
  InlinePtx p;
  std::smatch m;
  if (std::regex_search(all, m, mma)) {
    parse_mma(text, m, std::string_view(all).substr(static_cast<size_t>(m.position(0) + m.length(0))), p);
  } else if (std::regex_search(all, m, wait)) {
    p.pending = std::stoll(m[1]);
  } else {
    unknown(text, "not an instruction the emulator knows");
  }
  parse_constraints(text, constraints, n_out, p);
  return p;
}

const InlinePtx& parsed(const char* text, const char* constraints, int n_out) {
  thread_local std::unordered_map<std::string, InlinePtx> cache;
  std::string key = std::string(text) + '\n' + constraints;
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, parse(text, constraints, n_out)).first;
  return it->second;
}

void run_inline_ptx(const char* text, const char* constraints, const uint64_t* in, int32_t n_in, uint64_t* out,
                    int32_t n_out) {
  const InlinePtx& p = parsed(text, constraints, n_out);
  // Operand $i: an output's value on entry comes from the input tied to it.
  auto value = [&](int i) -> uint64_t {
    int input = i < n_out ? p.tied_input[static_cast<size_t>(i)] : i - n_out;
    if (input < 0 || input >= n_in) unknown(text, fmt::format("operand ${} has no value on entry", i));
    return in[input];
  };
  if (p.kind == InlinePtx::Kind::wait_group) {
    wgmma_wait_group(p.pending);
    // Accumulators are 32-bit registers: the placeholder is the word's low half.
    for (int i = 0; i < n_out; ++i) {
      uint64_t word = value(i);
      uint32_t landed = wgmma_landed(static_cast<uint32_t>(word));
      out[i] = landed == static_cast<uint32_t>(word) ? word : landed;
    }
    return;
  }
  bool scale_d = p.scale_d_operand >= 0 ? value(p.scale_d_operand) != 0 : p.scale_d;
  std::vector<uint32_t> c(p.d.size()), d(p.d.size());
  for (size_t i = 0; i < p.d.size(); ++i) c[i] = scale_d ? static_cast<uint32_t>(value(p.d[i])) : 0;
  WgmmaA a;
  uint32_t a_words[4] = {};
  if (p.shape.a_in_registers) {
    for (size_t i = 0; i < 4; ++i) a_words[i] = static_cast<uint32_t>(value(p.a_words[i]));
    a.words = a_words;
  } else {
    a.descriptor = value(p.desc_a);
  }
  wgmma_mma_async(p.shape, a, value(p.desc_b), scale_d, c.data(), d.data());
  for (size_t i = 0; i < p.d.size(); ++i) {
    if (p.d[i] >= n_out) unknown(text, fmt::format("D register ${} is not an output", p.d[i]));
    out[p.d[i]] = d[i];
  }
}

void interpret(const char* text, const char* constraints, const uint64_t* in, int32_t n_in, uint64_t* out, int32_t n_out) {
  unwinding_faults([&] { run_inline_ptx(text, constraints, in, n_in, out, n_out); });
}

}  // namespace

void add_inline_ptx_symbols(codegen::HostSymbols& out) {
  out.emplace_back(codegen::kHostInlinePtx, reinterpret_cast<void*>(interpret));
}

}  // namespace tilejit::emu
