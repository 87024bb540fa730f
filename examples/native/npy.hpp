// Reading and writing NumPy .npy files (format 1.0-3.0 read, 1.0 written), C-contiguous only.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

struct NpyArray {
    std::string dtype;  // eagle's names: float64, float32, int64, int32, uint32, uint64, bool
    std::vector<std::int64_t> shape;
    std::vector<unsigned char> data;
};

NpyArray read_npy(const std::string& path);  // throws std::runtime_error
void write_npy(const std::string& path, const NpyArray& array);
