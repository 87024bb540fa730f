#pragma once
#include <cstddef>
#include <string>
namespace eagle::cuda::detail {
// SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256(const void* data, std::size_t size);
}
