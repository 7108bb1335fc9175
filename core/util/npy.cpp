// NumPy .npy reading and writing (see include/hpf/npy.hpp).
#include "hpf/npy.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace hpf {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct NpyType {
  const char* code;  // descr without the byte-order character
  DType dtype;       // what libhpf holds it as
  size_t size;       // bytes per element in the file
};
constexpr NpyType kTypes[] = {{"f4", DType::F32, 4}, {"f2", DType::F16, 2}, {"f8", DType::F32, 8},
                              {"i1", DType::I8, 1},  {"u1", DType::U8, 1},  {"i2", DType::I16, 2},  {"i4", DType::I32, 4},
                              {"i8", DType::I64, 8}, {"b1", DType::BOOL, 1}};

// The value of `key` in the header's Python dict literal, up to the next top-level ',' or '}'.
std::string dict_value(const std::string& header, const std::string& key) {
  const size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) return "";
  size_t p = header.find(':', k);
  if (p == std::string::npos) return "";
  ++p;
  int depth = 0;
  size_t e = p;
  for (; e < header.size(); ++e) {
    const char c = header[e];
    if (c == '(') ++depth;
    else if (c == ')') --depth;
    else if ((c == ',' || c == '}') && depth == 0) break;
  }
  std::string v = header.substr(p, e - p);
  v.erase(0, v.find_first_not_of(" \t"));
  v.erase(v.find_last_not_of(" \t") + 1);
  return v;
}

bool host_little_endian() {
  const uint16_t one = 1;
  uint8_t b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

}  // namespace

Expected<Tensor> parse_npy(std::span<const std::byte> bytes, const std::string& name) {
  auto bad = [&](const std::string& why) { return Status::invalid("npy file '" + name + "': " + why); };
  if (bytes.size() < kMagicLen + 4 || std::memcmp(bytes.data(), kMagic, kMagicLen) != 0)
    return bad("not a NumPy .npy file (bad magic)");
  const auto* u = reinterpret_cast<const uint8_t*>(bytes.data());
  const int major = u[6];
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = u[8] | (size_t{u[9]} << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad("truncated header");
    header_len = u[8] | (size_t{u[9]} << 8) | (size_t{u[10]} << 16) | (size_t{u[11]} << 24);
    offset = 12;
  } else {
    return bad("format version " + std::to_string(major) + " is not supported (1, 2 and 3 are)");
  }
  if (bytes.size() < offset + header_len) return bad("truncated header");
  const std::string header(reinterpret_cast<const char*>(bytes.data()) + offset, header_len);
  const size_t data_at = offset + header_len;

  std::string descr = dict_value(header, "descr");
  if (descr.size() < 4 || (descr.front() != '\'' && descr.front() != '"')) return bad("no 'descr' in the header");
  descr = descr.substr(1, descr.size() - 2);
  const char order = descr[0];
  const std::string code = descr.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') return bad("unknown byte order in '" + descr + "'");
  const NpyType* type = nullptr;
  for (const NpyType& t : kTypes)
    if (code == t.code) type = &t;
  if (!type)
    return Status::unsupported("npy file '" + name + "': element type '" + descr +
                               "' is not supported (f4, f2, f8, i1, u1, i2, i4, i8, b1 are)");
  if (dict_value(header, "fortran_order") != "False")
    return Status::unsupported("npy file '" + name + "': Fortran-order arrays are not supported; save a C-order copy");
  const std::string shape_text = dict_value(header, "shape");
  if (shape_text.size() < 2 || shape_text.front() != '(' || shape_text.back() != ')')
    return bad("no 'shape' in the header");
  std::vector<int64_t> shape;
  for (size_t p = 1; p + 1 < shape_text.size();) {
    while (p + 1 < shape_text.size() && (shape_text[p] == ' ' || shape_text[p] == ',')) ++p;
    if (p + 1 >= shape_text.size()) break;
    char* end = nullptr;
    const long long d = std::strtoll(shape_text.c_str() + p, &end, 10);
    if (end == shape_text.c_str() + p || d < 0) return bad("bad shape '" + shape_text + "'");
    shape.push_back(d);
    p = static_cast<size_t>(end - shape_text.c_str());
  }
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d != 0 && n > (int64_t{1} << 40) / d) return bad("shape " + shape_text + " is too large");
    n *= d;
  }
  const size_t want = static_cast<size_t>(n) * type->size;
  if (bytes.size() - data_at < want)
    return bad("truncated data: shape " + shape_text + " of " + descr + " needs " + std::to_string(want) +
               " bytes, the file has " + std::to_string(bytes.size() - data_at));
  std::vector<std::byte> data(bytes.begin() + static_cast<std::ptrdiff_t>(data_at),
                              bytes.begin() + static_cast<std::ptrdiff_t>(data_at + want));
  const bool swap = type->size > 1 && (order == '>') == host_little_endian();
  if (swap)
    for (size_t k = 0; k < data.size(); k += type->size) std::reverse(data.begin() + k, data.begin() + k + type->size);
  if (std::string(type->code) == "b1")
    for (std::byte& b : data) b = b != std::byte{0} ? std::byte{1} : std::byte{0};
  if (std::string(type->code) == "f8") {
    std::vector<float> f(static_cast<size_t>(n));
    for (size_t k = 0; k < f.size(); ++k) {
      double d;
      std::memcpy(&d, data.data() + k * 8, 8);
      f[k] = static_cast<float>(d);
    }
    return Tensor::from_f32(shape, f);
  }
  return Tensor::from_bytes(type->dtype, shape, std::move(data));
}

Expected<Tensor> load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found("npy file '" + path + "' cannot be opened");
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::io_error("npy file '" + path + "': read error");
  return parse_npy(std::as_bytes(std::span<const char>(raw)), path);
}

std::vector<std::byte> encode_npy(const Tensor& t) {
  Tensor data;
  std::string descr;
  switch (t.dtype()) {
    case DType::F32: data = t, descr = "<f4"; break;
    case DType::F16: data = t, descr = "<f2"; break;
    case DType::I8: data = t, descr = "|i1"; break;
    case DType::U8: data = t, descr = "|u1"; break;
    case DType::I16: data = t, descr = "<i2"; break;
    case DType::I32: data = t, descr = "<i4"; break;
    case DType::I64: data = t, descr = "<i8"; break;
    case DType::BOOL: data = t, descr = "|b1"; break;
    case DType::I4: data = t.cast(DType::I8), descr = "|i1"; break;
    default: data = t.cast(DType::F32), descr = "<f4"; break;  // TF32, BF16, FP8: exact in FP32
  }
  std::string shape = "(";
  for (int64_t d : t.shape()) shape += std::to_string(d) + ", ";
  if (t.rank() > 1) shape.resize(shape.size() - 2);
  else if (t.rank() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic (6) + version (2) + length (2) + header + '\n', padded with spaces to 64 bytes.
  const size_t unpadded = kMagicLen + 4 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::vector<std::byte> out;
  out.reserve(kMagicLen + 4 + header.size() + data.nbytes());
  for (size_t k = 0; k < kMagicLen; ++k) out.push_back(static_cast<std::byte>(kMagic[k]));
  out.push_back(std::byte{1});
  out.push_back(std::byte{0});
  out.push_back(static_cast<std::byte>(header.size() & 0xff));
  out.push_back(static_cast<std::byte>(header.size() >> 8));
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  // Tensors hold little-endian bytes on every host libhpf builds for.
  out.insert(out.end(), data.bytes().begin(), data.bytes().end());
  return out;
}

Status save_npy(const std::string& path, const Tensor& t) {
  const std::vector<std::byte> bytes = encode_npy(t);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::io_error("cannot write '" + tmp + "'");
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) return Status::io_error("error writing '" + tmp + "'");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::io_error("cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
  return {};
}

}  // namespace hpf
