// Fuzz target for the blob reader. Built with -fsanitize=fuzzer it is a libFuzzer target;
// built without (TNN_FUZZ_MAIN), a driver: `fuzz_blob FILE...` parses each file and prints
// "ok" or the reader's error, one line per file (the Python tests run it in a subprocess,
// so a crash is a failed test, not a dead pytest).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "blob_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  torch_nnapi::blob::Blob blob;
  std::string error;
  torch_nnapi::blob::parse(data, size, &blob, &error);
  return 0;
}

#ifdef TNN_FUZZ_MAIN
int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    std::ifstream file(argv[i], std::ios::binary);
    if (!file) {
      std::printf("%s: cannot read\n", argv[i]);
      return 2;
    }
    // an exact-size heap copy: a read past its end is an ASan error, not a silent success
    std::vector<char> bytes((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());
    std::vector<uint8_t> exact(bytes.begin(), bytes.end());
    torch_nnapi::blob::Blob blob;
    std::string error;
    bool ok = torch_nnapi::blob::parse(exact.data(), exact.size(), &blob, &error);
    std::printf("%s\n", ok ? "ok" : error.c_str());
  }
  return 0;
}
#endif
