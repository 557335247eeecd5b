// Shared I/O for the HLS C-simulation harnesses (tests/cxx/hls_*_harness.cpp).
//
// Protocol: stdin holds records "<instance id> <raw> <raw> ..."; each harness
// knows from the instance's config how many raw codes a record carries. Raw
// codes are the two's-complement integers of the ap_fixed bit patterns; they
// are loaded with range() (no rounding) and written back as the unsigned bit
// pattern of the output type (Python sign-extends with the output format).
#ifndef HWAPPROX_TESTS_HLS_HARNESS_H
#define HWAPPROX_TESTS_HLS_HARNESS_H

#include <iostream>

#include "ap_fixed.h"
#include "ap_int.h"
#include "hls_stream.h"

namespace harness {

template <class T>
T from_raw(long long r) {
    T x;
    x.range(T::width - 1, 0) = r;
    return x;
}

template <class T>
unsigned long long to_raw(const T& x) {
    return x.range(T::width - 1, 0).to_uint64();
}

template <class T>
void read_array(std::istream& in, T* x, int n) {
    for (int i = 0; i < n; i++) {
        long long r = 0;
        in >> r;
        x[i] = from_raw<T>(r);
    }
}

template <class T>
void write_array(std::ostream& out, const T* x, int n) {
    for (int i = 0; i < n; i++) out << to_raw<T>(x[i]) << (i + 1 < n ? ' ' : '\n');
}

// n raw codes from in onto the stream s (the io_stream entry points)
template <class T>
void read_stream(std::istream& in, hls::stream<T>& s, int n) {
    for (int i = 0; i < n; i++) {
        long long r = 0;
        in >> r;
        s.write(from_raw<T>(r));
    }
}

// n values from the stream s as raw codes, each followed by a space
template <class T>
void write_stream(std::ostream& out, hls::stream<T>& s, int n) {
    for (int i = 0; i < n; i++) out << to_raw<T>(s.read()) << ' ';
}

}  // namespace harness

// The harness's main(): reads "<instance id> ..." records and dispatches each
// to RUN<CFG>(std::cin, std::cout) of the generated instance table
// HWAPPROX_INSTANCES(X) (hwapprox_instances.h, entries X(ID, RUN, CFG));
// exit status 2 on an unknown id. Expand once, after the instances header.
#define HWAPPROX_HARNESS_CASE_(ID, RUN, CFG) \
    case ID:                                 \
        RUN<CFG>(std::cin, std::cout);       \
        break;
#define HWAPPROX_HARNESS_MAIN()                                         \
    int main() {                                                        \
        int id;                                                         \
        while (std::cin >> id) {                                        \
            switch (id) {                                               \
                HWAPPROX_INSTANCES(HWAPPROX_HARNESS_CASE_)              \
                default:                                                \
                    std::cerr << "unknown instance id " << id << "\n";  \
                    return 2;                                           \
            }                                                           \
        }                                                               \
        return 0;                                                       \
    }

#endif  // HWAPPROX_TESTS_HLS_HARNESS_H
