#include "npy.hpp"

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace {
const char* kDescr[][2] = {{"<f8", "float64"}, {"<f4", "float32"}, {"<i8", "int64"}, {"<i4", "int32"},
                           {"<u4", "uint32"}, {"<u8", "uint64"}, {"|b1", "bool"}};

std::size_t itemsize(const std::string& dtype) {
    if (dtype == "bool") return 1;
    return dtype.find("32") != std::string::npos ? 4 : 8;
}

std::string field(const std::string& header, const std::string& key) {
    const std::size_t at = header.find("'" + key + "'");
    if (at == std::string::npos) throw std::runtime_error("no '" + key + "' in the .npy header");
    std::size_t start = header.find(':', at) + 1;
    while (header[start] == ' ') ++start;
    std::size_t end = start;
    if (header[start] == '(') end = header.find(')', start) + 1;
    else if (header[start] == '\'') end = header.find('\'', start + 1) + 1;
    else end = header.find_first_of(",}", start);
    return header.substr(start, end - start);
}
}  // namespace

NpyArray read_npy(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string bytes = buffer.str();
    if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw std::runtime_error(path + " is not a .npy file");
    const int major = static_cast<unsigned char>(bytes[6]);
    std::size_t header_len = 0, offset = 0;
    if (major == 1) {
        header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
        offset = 10;
    } else {
        for (int k = 0; k < 4; ++k) header_len |= std::size_t(static_cast<unsigned char>(bytes[8 + k])) << (8 * k);
        offset = 12;
    }
    const std::string header = bytes.substr(offset, header_len);
    NpyArray a;
    const std::string descr = field(header, "descr");
    for (auto& d : kDescr)
        if (descr == std::string("'") + d[0] + "'") a.dtype = d[1];
    if (a.dtype.empty()) throw std::runtime_error(path + ": unsupported dtype " + descr);
    const std::string shape = field(header, "shape");
    std::size_t count = 1;
    for (std::size_t k = 1; k < shape.size();) {
        const std::size_t end = shape.find_first_of(",)", k);
        const std::string item = shape.substr(k, end - k);
        if (item.find_first_not_of(" ") != std::string::npos) {
            a.shape.push_back(std::stoll(item));
            count *= a.shape.back();
        }
        k = end + 1;
    }
    if (field(header, "fortran_order") != "False" && a.shape.size() > 1)
        throw std::runtime_error(path + " is Fortran-ordered; save it C-contiguous");
    const std::size_t bytes_needed = count * itemsize(a.dtype);
    if (bytes.size() < offset + header_len + bytes_needed) throw std::runtime_error(path + " is truncated");
    a.data.assign(bytes.begin() + offset + header_len, bytes.begin() + offset + header_len + bytes_needed);
    return a;
}

void write_npy(const std::string& path, const NpyArray& a) {
    std::string descr;
    for (auto& d : kDescr)
        if (a.dtype == d[1]) descr = d[0];
    std::string shape = "(";
    for (std::size_t k = 0; k < a.shape.size(); ++k) shape += std::to_string(a.shape[k]) + (a.shape.size() == 1 || k + 1 < a.shape.size() ? ", " : "");
    if (a.shape.size() == 1) shape.resize(shape.size() - 1);  // "(5,)"
    shape += ")";
    std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    const std::size_t total = 10 + header.size() + 1;
    header += std::string((64 - total % 64) % 64, ' ') + "\n";
    std::ofstream out(path, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff), static_cast<unsigned char>(header.size() >> 8)};
    out.write(reinterpret_cast<const char*>(len), 2);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(reinterpret_cast<const char*>(a.data.data()), static_cast<std::streamsize>(a.data.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
}
