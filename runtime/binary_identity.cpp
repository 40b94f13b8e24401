#include "runtime/binary_identity.h"

#include <link.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include <fmt/format.h>

namespace tilejit {
namespace {

// What dl_iterate_phdr's callback copies out about the object holding the address. The
// callback runs under the loader's lock, so it only reads memory; everything else happens
// after the iteration.
struct FoundObject {
  uintptr_t address = 0;
  bool found = false;
  uintptr_t base = 0;
  std::string build_id;  // hex, empty without a GNU build-id note
};

std::string hex(const unsigned char* bytes, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += fmt::format("{:02x}", bytes[i]);
  return out;
}

// The NT_GNU_BUILD_ID note in one PT_NOTE segment, as hex; empty if it holds none.
std::string find_build_id(const char* begin, size_t size, size_t align) {
  auto aligned = [align](size_t n) { return (n + align - 1) / align * align; };
  size_t offset = 0;
  while (offset + sizeof(ElfW(Nhdr)) <= size) {
    ElfW(Nhdr) note;
    std::memcpy(&note, begin + offset, sizeof note);
    size_t name_at = offset + sizeof note;
    size_t desc_at = name_at + aligned(note.n_namesz);
    if (desc_at + note.n_descsz > size) break;
    if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(begin + name_at, "GNU", 4) == 0)
      return hex(reinterpret_cast<const unsigned char*>(begin + desc_at), note.n_descsz);
    offset = desc_at + aligned(note.n_descsz);
  }
  return {};
}

int find_object(dl_phdr_info* info, size_t, void* data) {
  auto* found = static_cast<FoundObject*>(data);
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum && !contains; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    contains = ph.p_type == PT_LOAD && found->address >= start && found->address < start + ph.p_memsz;
  }
  if (!contains) return 0;
  found->found = true;
  found->base = info->dlpi_addr;
  for (int i = 0; i < info->dlpi_phnum && found->build_id.empty(); ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    // Notes are padded to 4 bytes, or to 8 in a segment aligned to 8.
    if (ph.p_type == PT_NOTE)
      found->build_id = find_build_id(reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr), ph.p_memsz,
                                      ph.p_align == 8 ? 8 : 4);
  }
  return 1;
}

// The object containing `address`; nullopt when there is none, or when it has no build-id:
// nothing else names its contents (a path, size and time can name a file replaced since it
// was loaded), so its kernels are found by their traced IR alone.
std::optional<FoundObject> locate(const void* address) {
  if (!address) return std::nullopt;
  FoundObject object;
  object.address = reinterpret_cast<uintptr_t>(address);
  dl_iterate_phdr(find_object, &object);
  if (!object.found || object.build_id.empty()) return std::nullopt;
  return object;
}

}  // namespace

std::string binary_identity(const void* address) {
  auto object = locate(address);
  return object ? "build-id:" + object->build_id : std::string();
}

std::string code_identity(const void* address) {
  auto object = locate(address);
  if (!object) return {};
  return fmt::format("build-id:{}+{:#x}", object->build_id, object->address - object->base);
}

}  // namespace tilejit
