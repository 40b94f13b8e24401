// Reads and checks the cross-check case files (format in crosscheck_data.h).
#include "tests/ops/crosscheck_data.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace tilejit::crosscheck {
namespace {

using nlohmann::json;

// Where a check failed: "<file> case '<name>'", then the array if any.
struct Context {
  std::string where;
  [[noreturn]] void fail(const std::string& what) const { throw Error(fmt::format("crosscheck {}: {}", where, what)); }
};

// object[key], which must be a string, an array or an object (`type`).
const json& member(const json& object, const char* key, json::value_t type, const Context& ctx) {
  auto it = object.find(key);
  if (it == object.end()) ctx.fail(fmt::format("has no \"{}\"", key));
  if (it->type() != type)
    ctx.fail(fmt::format("\"{}\" is {}, expected {}", key, it->type_name(), json(type).type_name()));
  return *it;
}

double number_member(const json& object, const char* key, const Context& ctx) {
  auto it = object.find(key);
  if (it == object.end()) ctx.fail(fmt::format("has no \"{}\"", key));
  if (!it->is_number()) ctx.fail(fmt::format("\"{}\" is {}, expected a number", key, it->type_name()));
  return it->get<double>();
}

double value_of(const json& v, DType dtype, size_t index, const Context& ctx) {
  double d;
  if (v.is_number()) {
    d = v.get<double>();
  } else if (v.is_string() && (v == "inf" || v == "-inf" || v == "nan")) {
    d = v == "nan" ? std::numeric_limits<double>::quiet_NaN()
                   : (v == "inf" ? 1.0 : -1.0) * std::numeric_limits<double>::infinity();
  } else {
    ctx.fail(fmt::format("value [{}] is {}, expected a number or \"inf\", \"-inf\", \"nan\"", index, v.dump()));
  }
  if (is_integer(dtype)) {
    if (!std::isfinite(d) || d != std::trunc(d))
      ctx.fail(fmt::format("value [{}] = {} is not an integer, as {} needs", index, v.dump(), dtype_name(dtype)));
    if (dtype == DType::i1 && d != 0 && d != 1) ctx.fail(fmt::format("value [{}] = {} is not 0 or 1 (i1)", index, d));
  }
  if (dtype == DType::f32) d = static_cast<double>(static_cast<float>(d));  // the written digits name an f32
  return d;
}

Array read_array(const json& j, bool is_output, const Context& ctx) {
  if (!j.is_object()) ctx.fail(fmt::format("is {}, expected an object with dtype, shape, values", j.type_name()));
  Array a;
  const std::string& dtype = member(j, "dtype", json::value_t::string, ctx).get_ref<const std::string&>();
  try {
    a.dtype = parse_dtype(dtype);
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  int64_t count = 1;
  for (const json& d : member(j, "shape", json::value_t::array, ctx)) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      ctx.fail(fmt::format("shape {} is not a list of sizes", j["shape"].dump()));
    a.shape.push_back(d.get<int64_t>());
    count *= a.shape.back();
  }
  const json& values = member(j, "values", json::value_t::array, ctx);
  if (static_cast<int64_t>(values.size()) != count)
    ctx.fail(fmt::format("shape [{}] has {} elements but there are {} values", fmt::join(a.shape, ", "), count,
                         values.size()));
  a.values.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) a.values.push_back(value_of(values[i], a.dtype, i, ctx));
  auto tolerance = j.find("tolerance");
  if (is_output) {
    if (tolerance == j.end()) ctx.fail("has no \"tolerance\" (every output needs one)");
    Context tctx{ctx.where + " tolerance"};
    if (!tolerance->is_object()) tctx.fail("is not an object with rtol and atol");
    a.tolerance = {number_member(*tolerance, "rtol", tctx), number_member(*tolerance, "atol", tctx)};
    if (!(a.tolerance.rtol >= 0 && a.tolerance.atol >= 0 && std::isfinite(a.tolerance.rtol) &&
          std::isfinite(a.tolerance.atol)))
      tctx.fail(fmt::format("rtol {} and atol {} must be finite and >= 0", a.tolerance.rtol, a.tolerance.atol));
  } else if (tolerance != j.end()) {
    ctx.fail("is an input but has a tolerance");
  }
  return a;
}

std::map<std::string, Array> read_arrays(const json& c, bool outputs, const Context& ctx) {
  std::map<std::string, Array> arrays;
  for (const auto& [name, j] : member(c, outputs ? "outputs" : "inputs", json::value_t::object, ctx).items()) {
    Context at{fmt::format("{} {} '{}'", ctx.where, outputs ? "output" : "input", name)};
    arrays.emplace(name, read_array(j, outputs, at));
  }
  return arrays;
}

}  // namespace

int64_t Array::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string Case::describe() const { return fmt::format("{} case '{}' ({})", file_, name_, op_); }

bool Case::has_option(const std::string& name) const { return options_.contains(name); }

const nlohmann::json& Case::option_json(const std::string& name) const {
  auto it = options_.find(name);
  if (it == options_.end()) throw Error(fmt::format("crosscheck {}: has no option '{}'", describe(), name));
  return *it;
}

void Case::bad_option(const std::string& name, const std::string& why) const {
  throw Error(fmt::format("crosscheck {}: option '{}' = {} has the wrong type ({})", describe(), name,
                          options_[name].dump(), why));
}

const Array& Case::input(const std::string& name) const {
  auto it = inputs_.find(name);
  if (it == inputs_.end()) throw Error(fmt::format("crosscheck {}: has no input '{}'", describe(), name));
  return it->second;
}

const Array& Case::output(const std::string& name) const {
  auto it = outputs_.find(name);
  if (it == outputs_.end()) throw Error(fmt::format("crosscheck {}: has no output '{}'", describe(), name));
  return it->second;
}

CaseFile CaseFile::load(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw Error(
        fmt::format("crosscheck data file '{}' cannot be read: {} (scripts/crosscheck/make_crosscheck.py "
                    "writes it)",
                    path, std::strerror(errno)));
  std::stringstream text;
  text << in.rdbuf();
  CaseFile file;
  file.path_ = path;
  const std::string base = std::filesystem::path(path).filename().string();
  json root;
  try {
    root = json::parse(text.str());
  } catch (const json::parse_error& e) {
    throw Error(fmt::format("crosscheck data file '{}' is not valid JSON: {}", path, e.what()));
  }
  Context top{base};
  if (!root.is_object()) top.fail("the file is not a JSON object");
  file.family_ = member(root, "family", json::value_t::string, top).get<std::string>();
  const json& versions = member(root, "versions", json::value_t::object, top);
  file.jax_version_ = member(versions, "jax", json::value_t::string, Context{base + " versions"}).get<std::string>();
  const json& cases = member(root, "cases", json::value_t::array, top);
  std::set<std::string> names;
  for (size_t i = 0; i < cases.size(); ++i) {
    const json& c = cases[i];
    Context at{fmt::format("{} case #{}", base, i)};
    if (!c.is_object()) at.fail("is not a JSON object");
    Case k;
    k.file_ = base;
    k.name_ = member(c, "name", json::value_t::string, at).get<std::string>();
    Context ctx{fmt::format("{} case '{}'", base, k.name_)};
    if (!names.insert(k.name_).second) ctx.fail("the name is used twice");
    k.op_ = member(c, "op", json::value_t::string, ctx).get<std::string>();
    if (c.contains("note")) k.note_ = member(c, "note", json::value_t::string, ctx).get<std::string>();
    k.options_ = member(c, "options", json::value_t::object, ctx);
    k.inputs_ = read_arrays(c, false, ctx);
    k.outputs_ = read_arrays(c, true, ctx);
    if (k.outputs_.empty()) ctx.fail("has no outputs");
    file.cases_.push_back(std::move(k));
  }
  return file;
}

const Case& CaseFile::find(const std::string& name) const {
  for (const Case& c : cases_)
    if (c.name() == name) return c;
  throw Error(fmt::format("crosscheck {}: no case named '{}'", path_, name));
}

std::vector<const Case*> CaseFile::of_op(const std::string& op) const {
  std::vector<const Case*> found;
  for (const Case& c : cases_)
    if (c.op() == op) found.push_back(&c);
  return found;
}

std::string data_directory() { return TILEJIT_CROSSCHECK_DIR; }

CaseFile load_family(std::string_view family) {
  return CaseFile::load((std::filesystem::path(data_directory()) / (std::string(family) + ".json")).string());
}

}  // namespace tilejit::crosscheck
