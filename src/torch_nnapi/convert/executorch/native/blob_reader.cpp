// The strict reader of the NNAPI delegate blob (blob_reader.h, docs/executorch_blob.md).
// Every read is bounded by what is left of its section; every count is checked against the
// bytes left before anything is allocated from it; every index is checked against what it
// indexes. A failure stops at the first problem with one line naming it.
#include "blob_reader.h"

#include <cstring>
#include <limits>

namespace torch_nnapi {
namespace blob {
namespace {

constexpr char kMagic[8] = {'T', 'N', 'N', 'A', 'P', 'I', 'E', 'T'};
constexpr uint32_t kMaxModels = 4096;
constexpr uint32_t kMaxDevices = 64;
constexpr uint32_t kMaxString = 4096;
constexpr uint64_t kMaxElements = uint64_t(1) << 40;

constexpr uint32_t tag(const char (&name)[5]) {
  return uint32_t(uint8_t(name[0])) | uint32_t(uint8_t(name[1])) << 8 |
         uint32_t(uint8_t(name[2])) << 16 | uint32_t(uint8_t(name[3])) << 24;
}

// A bounded little-endian cursor over one section. The first failure is kept; later reads
// after a failure return zeros and change nothing.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, std::string where, std::string* error)
      : data_(data), size_(size), where_(std::move(where)), error_(error) {}

  bool ok() const { return ok_; }
  size_t left() const { return size_ - pos_; }
  size_t pos() const { return pos_; }
  const uint8_t* at() const { return data_ + pos_; }
  void set_where(std::string where) { where_ = std::move(where); }

  bool fail(const std::string& message) {
    if (ok_) {
      *error_ = where_ + ": " + message;
      ok_ = false;
    }
    return false;
  }

  bool bytes(void* out, size_t n, const char* what) {
    if (!ok_) return false;
    if (n > left())
      return fail(std::string("truncated reading ") + what + " (" + std::to_string(n) +
                  " bytes at offset " + std::to_string(pos_) + ", " + std::to_string(left()) +
                  " left)");
    if (n) std::memcpy(out, data_ + pos_, n);
    pos_ += n;
    return true;
  }
  bool skip(size_t n, const char* what) {
    if (!ok_) return false;
    if (n > left())
      return fail(std::string("truncated skipping ") + what + " (" + std::to_string(n) +
                  " bytes, " + std::to_string(left()) + " left)");
    pos_ += n;
    return true;
  }

  // Fixed-width little-endian values (the reader builds them byte by byte, so it is
  // correct on a big-endian host too).
  uint64_t unsigned_le(size_t n, const char* what) {
    uint8_t b[8] = {};
    if (!bytes(b, n, what)) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v |= uint64_t(b[i]) << (8 * i);
    return v;
  }
  uint8_t u8(const char* what) { return uint8_t(unsigned_le(1, what)); }
  uint32_t u32(const char* what) { return uint32_t(unsigned_le(4, what)); }
  int32_t i32(const char* what) { return int32_t(u32(what)); }
  uint64_t u64(const char* what) { return unsigned_le(8, what); }
  int64_t i64(const char* what) { return int64_t(u64(what)); }
  float f32(const char* what) {
    uint32_t bits = u32(what);
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }

  // A count whose items (each at least item_size bytes) must fit in what is left.
  uint32_t count(const char* what, size_t item_size, uint32_t limit) {
    uint32_t n = u32(what);
    if (!ok_) return 0;
    if (n > limit || uint64_t(n) * item_size > left()) {
      fail(std::string(what) + " count " + std::to_string(n) + " does not fit the " +
           std::to_string(left()) + " bytes left");
      return 0;
    }
    return n;
  }
  void u32s(std::vector<uint32_t>* out, const char* what, uint32_t limit) {
    uint32_t n = count(what, 4, limit);
    out->resize(n);
    for (uint32_t i = 0; i < n && ok_; i++) (*out)[i] = u32(what);
  }
  void string(std::string* out, const char* what) {
    uint32_t n = count(what, 1, kMaxString);
    if (!ok_) return;
    out->assign(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
  }
  bool done() {
    if (ok_ && pos_ != size_)
      return fail(std::to_string(size_ - pos_) + " bytes left over at the end");
    return ok_;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  std::string where_;
  std::string* error_;
  bool ok_ = true;
};

struct Section {
  const uint8_t* data;
  size_t size;
  size_t offset;  // from the start of the blob
};

bool read_options(Cursor& c, Options* o) {
  o->preference = c.i32("preference");
  o->priority = c.i32("priority");
  o->compile_timeout_ns = c.u64("compile timeout");
  o->execute_timeout_ns = c.u64("execution timeout");
  o->loop_timeout_ns = c.u64("loop timeout");
  o->flags = c.u32("flags");
  o->feature_level = c.u32("feature level");
  c.string(&o->cache_dir, "cache directory");
  uint32_t devices = c.count("device", 4, kMaxDevices);
  o->devices.resize(devices);
  for (uint32_t i = 0; i < devices && c.ok(); i++) {
    c.string(&o->devices[i], "device name");
    if (c.ok() && o->devices[i].empty()) return c.fail("an empty device name");
  }
  if (c.ok() && (o->preference < 0 || o->preference > 2))
    return c.fail("preference " + std::to_string(o->preference) + " is not 0, 1 or 2");
  if (c.ok() && o->priority != 0 && o->priority != 90 && o->priority != 100 &&
      o->priority != 110)
    return c.fail("priority " + std::to_string(o->priority) + " is not 0, 90, 100 or 110");
  if (c.ok() && (o->flags & ~uint32_t(kRelax | kCaching | kBurst)))
    return c.fail("unknown flags " + std::to_string(o->flags));
  return c.done();
}

// Elements of a fully specified shape, or 0 with `error` set (a 0 dimension or overflow).
uint64_t elements_of(const std::vector<uint32_t>& dims) {
  uint64_t n = 1;
  for (uint32_t d : dims) {
    if (d == 0) return 0;
    n *= d;
    if (n > kMaxElements) return 0;
  }
  return n;
}

bool read_operand(Cursor& c, Operand* o, uint32_t model, uint32_t model_count,
                  const Section& data) {
  o->type = c.i32("operand type");
  if (c.ok() && (o->type < 0 || o->type > kModelOperand))
    return c.fail("unknown operand type " + std::to_string(o->type));
  c.u32s(&o->dimensions, "dimension", kMaxRank);
  o->scale = c.f32("scale");
  o->zero_point = c.i32("zero point");
  uint8_t kind = c.u8("value kind");
  if (!c.ok()) return false;
  if (kind > uint8_t(ValueKind::kModel))
    return c.fail("unknown value kind " + std::to_string(kind));
  o->kind = ValueKind(kind);
  bool scalar = o->type == kFloat32 || o->type == kInt32 || o->type == kUint32 ||
                o->type == kBoolScalar || o->type == kFloat16;
  if (scalar && !o->dimensions.empty()) return c.fail("a scalar with dimensions");
  if ((o->type == kModelOperand) != (o->kind == ValueKind::kModel))
    return c.fail("a MODEL operand refers to a model, and only a MODEL operand does");
  if (o->kind == ValueKind::kInline || o->kind == ValueKind::kNamed) {
    if (o->kind == ValueKind::kInline) {
      uint64_t offset = c.u64("value offset");
      o->length = c.u64("value length");
      if (!c.ok()) return false;
      if (offset > data.size || o->length > data.size - offset)
        return c.fail("value [" + std::to_string(offset) + ", +" + std::to_string(o->length) +
                      ") lies outside the " + std::to_string(data.size) +
                      "-byte data section");
      o->offset = data.offset + offset;
    } else {
      c.string(&o->key, "named data key");
      o->length = c.u64("named value length");
      if (c.ok() && o->key.empty()) return c.fail("an empty named data key");
    }
    uint64_t count = scalar ? 1 : elements_of(o->dimensions);
    if (c.ok() && (count == 0 || count * element_size(o->type) != o->length))
      return c.fail("a constant of " + std::to_string(o->length) +
                    " bytes does not fit its type " + std::to_string(o->type) + " and shape");
  } else if (o->kind == ValueKind::kModel) {
    o->model = c.u32("referenced model");
    if (c.ok() && (o->model <= model || o->model >= model_count))
      return c.fail("refers to model " + std::to_string(o->model) +
                    " (a model refers to later models, of " + std::to_string(model_count) +
                    ")");
  }
  uint8_t per_channel = c.u8("per-channel flag");
  if (c.ok() && per_channel > 1) return c.fail("per-channel flag is not 0 or 1");
  if (c.ok() && bool(per_channel) != (o->type == kTensorQuant8SymmPerChannel))
    return c.fail("per-channel parameters belong to TENSOR_QUANT8_SYMM_PER_CHANNEL only");
  o->per_channel = per_channel == 1;
  if (o->per_channel) {
    o->channel_dim = c.u32("channel dimension");
    uint32_t n = c.count("channel scale", 4, std::numeric_limits<uint32_t>::max());
    if (c.ok() && (o->channel_dim >= o->dimensions.size() ||
                   n != o->dimensions[o->channel_dim]))
      return c.fail(std::to_string(n) + " channel scales do not fit dimension " +
                    std::to_string(o->channel_dim));
    o->channel_scales.resize(n);
    for (uint32_t i = 0; i < n && c.ok(); i++) o->channel_scales[i] = c.f32("channel scale");
  }
  return c.ok();
}

bool check_indices(Cursor& c, const std::vector<uint32_t>& indices, size_t operands,
                   const char* what) {
  for (uint32_t i : indices)
    if (i >= operands)
      return c.fail(std::string(what) + " refers to operand " + std::to_string(i) + " of " +
                    std::to_string(operands));
  return true;
}

bool read_model(Cursor& c, Model* m, uint32_t index, uint32_t model_count,
                const Section& data) {
  // the smallest operand: type, rank, scale, zero point, kind, per-channel flag
  uint32_t operands = c.count("operand", 18, std::numeric_limits<uint32_t>::max());
  m->operands.resize(operands);
  for (uint32_t i = 0; i < operands && c.ok(); i++) {
    c.set_where("model " + std::to_string(index) + " operand " + std::to_string(i));
    read_operand(c, &m->operands[i], index, model_count, data);
  }
  c.set_where("model " + std::to_string(index));
  uint32_t operations = c.count("operation", 12, std::numeric_limits<uint32_t>::max());
  m->operations.resize(operations);
  for (uint32_t k = 0; k < operations && c.ok(); k++) {
    Operation& op = m->operations[k];
    op.type = c.i32("operation type");
    c.u32s(&op.inputs, "operation input", std::numeric_limits<uint32_t>::max());
    c.u32s(&op.outputs, "operation output", std::numeric_limits<uint32_t>::max());
    if (c.ok() && op.type < 0) return c.fail("operation " + std::to_string(k) + " type < 0");
    check_indices(c, op.inputs, operands, "an operation input");
    check_indices(c, op.outputs, operands, "an operation output");
  }
  c.u32s(&m->inputs, "model input", std::numeric_limits<uint32_t>::max());
  c.u32s(&m->outputs, "model output", std::numeric_limits<uint32_t>::max());
  check_indices(c, m->inputs, operands, "a model input");
  check_indices(c, m->outputs, operands, "a model output");
  uint8_t relax = c.u8("relax flag");
  if (c.ok() && relax > 1) return c.fail("relax flag is not 0 or 1");
  m->relax = relax == 1;
  return c.done();
}

bool read_tensors(Cursor& c, std::vector<Tensor>* out, const Model& main, bool inputs) {
  const char* what = inputs ? "input" : "output";
  const std::vector<uint32_t>& nnapi = inputs ? main.inputs : main.outputs;
  uint32_t n = c.count(what, 13, std::numeric_limits<uint32_t>::max());
  out->resize(n);
  std::vector<uint8_t> covered(nnapi.size(), 0);
  for (uint32_t k = 0; k < n && c.ok(); k++) {
    c.set_where(std::string(what) + " " + std::to_string(k));
    Tensor& t = (*out)[k];
    t.nnapi_index = c.u32("index");
    t.dtype = c.i32("dtype");
    uint32_t rank = c.count("dimension", 12, kMaxRank);
    t.shape.resize(rank);
    t.layout.resize(rank);
    for (uint32_t d = 0; d < rank; d++) t.shape[d] = c.i64("shape");
    for (uint32_t d = 0; d < rank; d++) t.layout[d] = c.u32("layout");
    uint8_t conversion = c.u8("conversion");
    if (!c.ok()) return false;
    if (t.nnapi_index >= nnapi.size())
      return c.fail("index " + std::to_string(t.nnapi_index) + " is not one of the model's " +
                    std::to_string(nnapi.size()) + " " + what + "s");
    if (scalar_size(t.dtype) == 0) return c.fail("unknown dtype " + std::to_string(t.dtype));
    std::vector<uint8_t> seen(rank, 0);
    uint64_t elements = 1;
    for (uint32_t d = 0; d < rank; d++) {
      if (t.layout[d] >= rank || seen[t.layout[d]]++)
        return c.fail("layout is not a permutation");
      if (t.shape[d] <= 0 || uint64_t(t.shape[d]) > kMaxElements)
        return c.fail("dimension " + std::to_string(d) + " is " + std::to_string(t.shape[d]));
      elements *= uint64_t(t.shape[d]);
      if (elements > kMaxElements) return c.fail("too many elements");
    }
    t.elements = size_t(elements);
    const Operand& operand = main.operands[nnapi[t.nnapi_index]];
    if (elements_of(operand.dimensions) != elements)
      return c.fail("its " + std::to_string(elements) +
                    " elements do not fit the NNAPI operand's dimensions");
    Conversion expected;
    if (!conversion_for(t.dtype, operand.type, &expected) || uint8_t(expected) != conversion)
      return c.fail("conversion " + std::to_string(conversion) + " does not pair dtype " +
                    std::to_string(t.dtype) + " with operand type " +
                    std::to_string(operand.type));
    t.conversion = expected;
    covered[t.nnapi_index]++;
  }
  c.set_where(std::string(what) + "s");
  for (size_t i = 0; i < covered.size() && c.ok(); i++)
    if (covered[i] == 0 || (inputs && covered[i] > 1))
      return c.fail("the model's " + std::string(what) + " " + std::to_string(i) + " is fed " +
                    std::to_string(covered[i]) + " times");
  return c.done();
}

bool read_shapes(Cursor& c, Blob* b) {
  uint32_t n = c.count("bound", 16, 64);
  b->bounds.resize(n);
  for (uint32_t k = 0; k < n && c.ok(); k++) {
    c.set_where("SHAP bound " + std::to_string(k));
    DimBound& bound = b->bounds[k];
    bound.input = c.u32("input");
    bound.dim = c.u32("dimension");
    bound.min = c.u32("minimum");
    bound.max = c.u32("maximum");
    if (!c.ok()) return false;
    const std::vector<int64_t>* shape =
        bound.input < b->inputs.size() ? &b->inputs[bound.input].shape : nullptr;
    bool duplicate = false;
    for (uint32_t j = 0; j < k; j++)
      duplicate |= b->bounds[j].input == bound.input && b->bounds[j].dim == bound.dim;
    if (!shape || bound.dim >= shape->size() || bound.min < 1 ||
        int64_t(bound.min) > (*shape)[bound.dim] || (*shape)[bound.dim] > int64_t(bound.max) ||
        bound.max > uint32_t(std::numeric_limits<int32_t>::max()) || duplicate)
      return c.fail("input " + std::to_string(bound.input) + " dimension " +
                    std::to_string(bound.dim) + " bounds [" + std::to_string(bound.min) +
                    ", " + std::to_string(bound.max) + "] do not fit the recorded shape");
  }
  if (n && b->models.size() > 1) return c.fail("open input dimensions with called models");
  uint32_t patches = c.count("patch", 13, 1 << 16);
  b->patches.resize(patches);
  const Model& main = b->models[0];
  for (uint32_t k = 0; k < patches && c.ok(); k++) {
    c.set_where("SHAP patch " + std::to_string(k));
    SizePatch& p = b->patches[k];
    uint8_t target = c.u8("target");
    p.index = c.u32("index");
    p.element = c.u32("element");
    uint32_t words = c.count("program", 4, kMaxProgramWords);
    p.program.resize(words);
    for (uint32_t w = 0; w < words && c.ok(); w++) p.program[w] = c.i32("program");
    if (!c.ok()) return false;
    bool fits = false;
    if (target == uint8_t(PatchTarget::kOutput)) {
      fits = p.index < b->outputs.size() && p.element < b->outputs[p.index].shape.size();
    } else if (p.index < main.operands.size()) {
      const Operand& o = main.operands[p.index];
      fits = target == uint8_t(PatchTarget::kDimension)
                 ? p.element < o.dimensions.size()
                 : target == uint8_t(PatchTarget::kValue) &&
                       (o.type == kInt32 || o.type == kTensorInt32) &&
                       o.kind == ValueKind::kInline && p.element < o.length / 4;
    }
    if (!fits)
      return c.fail("target " + std::to_string(target) + " index " + std::to_string(p.index) +
                    " element " + std::to_string(p.element) + " does not exist");
    p.target = PatchTarget(target);
    std::string problem = program_problem(p.program, b->bounds);
    if (!problem.empty()) return c.fail("its program " + problem);
  }
  return c.done();
}

}  // namespace

size_t element_size(int32_t t) {
  switch (t) {
    case kFloat32: case kInt32: case kUint32: case kTensorFloat32: case kTensorInt32:
      return 4;
    case kTensorQuant16Symm: case kTensorFloat16: case kFloat16: case kTensorQuant16Asymm:
      return 2;
    case kTensorQuant8Asymm: case kBoolScalar: case kTensorBool8:
    case kTensorQuant8SymmPerChannel: case kTensorQuant8Symm: case kTensorQuant8AsymmSigned:
      return 1;
    default:
      return 0;
  }
}

size_t scalar_size(int32_t s) {
  switch (s) {
    case kByte: case kChar: case kBool: return 1;
    case kShort: case kHalf: return 2;
    case kInt: case kFloat: return 4;
    case kLong: case kDouble: return 8;
    default: return 0;
  }
}

bool conversion_for(int32_t s, int32_t t, Conversion* out) {
  Conversion c;
  if ((s == kFloat && t == kTensorFloat32) || (s == kHalf && t == kTensorFloat16) ||
      (s == kInt && t == kTensorInt32) || (s == kBool && t == kTensorBool8) ||
      (s == kByte && t == kTensorQuant8Asymm) || (s == kChar && t == kTensorQuant8AsymmSigned))
    c = Conversion::kCopy;
  else if (s == kLong && t == kTensorInt32)
    c = Conversion::kInt64Int32;
  else if (s == kBool && t == kTensorInt32)
    c = Conversion::kBoolInt32;
  else if (s == kFloat && (t == kTensorQuant8Asymm || t == kTensorQuant8AsymmSigned))
    c = Conversion::kQuantize;
  else
    return false;
  *out = c;
  return true;
}

uint32_t crc32(const uint8_t* data, size_t size) {
  static uint32_t table[256];
  static bool ready = [] {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    return true;
  }();
  (void)ready;
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; i++) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

bool parse(const uint8_t* data, size_t size, Blob* out, std::string* error) {
  Cursor header(data, size < kHeaderSize ? size : kHeaderSize, "header", error);
  if (size < kHeaderSize)
    return header.fail("truncated: " + std::to_string(size) + " bytes, the header alone is " +
                       std::to_string(kHeaderSize));
  if (std::memcmp(data, kMagic, sizeof kMagic) != 0)
    return header.fail("bad magic: not an NNAPI delegate blob");
  header.skip(sizeof kMagic, "magic");
  uint32_t version = header.u32("version");
  uint32_t header_size = header.u32("header size");
  uint64_t total = header.u64("total size");
  uint32_t crc = header.u32("CRC-32");
  uint32_t reserved = header.u32("reserved");
  header.bytes(out->token, kTokenSize, "cache token");
  if (version < kOldestVersion || version > kVersion)
    return header.fail("version " + std::to_string(version) + "; this runtime reads versions " +
                       std::to_string(kOldestVersion) + " to " + std::to_string(kVersion) +
                       (version > kVersion ? " (update it)" : ""));
  if (header_size != kHeaderSize || reserved != 0)
    return header.fail("header size " + std::to_string(header_size) + " or reserved word " +
                       std::to_string(reserved) + " is wrong");
  if (total != size)
    return header.fail("the blob says it has " + std::to_string(total) + " bytes, it has " +
                       std::to_string(size) + (total > size ? " (truncated)" : ""));
  if (crc32(data + 32, size - 32) != crc)
    return header.fail("CRC-32 mismatch: the blob is corrupted");

  Cursor body(data + kHeaderSize, size - kHeaderSize, "body", error);
  uint32_t model_count = body.count("model", 12, kMaxModels);
  if (body.ok() && model_count == 0) return body.fail("no model");
  std::vector<Section> sections;
  std::vector<uint32_t> expected = {tag("OPTS")};
  for (uint32_t i = 0; i < model_count; i++) expected.push_back(tag("MODL"));
  expected.push_back(tag("INPT"));
  expected.push_back(tag("OUTP"));
  expected.push_back(tag("DATA"));
  if (version >= 2) expected.push_back(tag("SHAP"));
  for (size_t i = 0; i < expected.size() && body.ok(); i++) {
    uint32_t got = body.u32("section tag");
    if (body.ok() && got != expected[i])
      return body.fail("section " + std::to_string(i) + " has tag " + std::to_string(got) +
                       ", expected " + std::to_string(expected[i]));
    uint64_t length = body.u64("section length");
    if (body.ok() && length > body.left())
      return body.fail("section " + std::to_string(i) + " of " + std::to_string(length) +
                       " bytes is truncated (" + std::to_string(body.left()) + " left)");
    if (!body.ok()) return false;
    sections.push_back({body.at(), size_t(length), kHeaderSize + body.pos()});
    body.skip(size_t(length), "section");
  }
  if (!body.done()) return false;

  const size_t after = 1 + model_count;  // INPT, OUTP, DATA, then SHAP from version 2
  const Section& data_section = sections[after + 2];
  Cursor options(sections[0].data, sections[0].size, "options", error);
  if (!read_options(options, &out->options)) return false;
  out->models.resize(model_count);
  for (uint32_t i = 0; i < model_count; i++) {
    const Section& s = sections[1 + i];
    Cursor c(s.data, s.size, "model " + std::to_string(i), error);
    if (!read_model(c, &out->models[i], i, model_count, data_section)) return false;
  }
  const Section& in = sections[after];
  const Section& outs = sections[after + 1];
  Cursor ci(in.data, in.size, "inputs", error);
  if (!read_tensors(ci, &out->inputs, out->models[0], true)) return false;
  Cursor co(outs.data, outs.size, "outputs", error);
  if (!read_tensors(co, &out->outputs, out->models[0], false)) return false;
  out->bounds.clear();
  out->patches.clear();
  if (version < 2) return true;
  const Section& shapes = sections[after + 3];
  Cursor cs(shapes.data, shapes.size, "SHAP", error);
  return read_shapes(cs, out);
}

}  // namespace blob
}  // namespace torch_nnapi
